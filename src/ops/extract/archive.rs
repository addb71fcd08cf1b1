//! Writing the chosen images as the members of one device archive (`-o NAME.a`), named as
//! the bundler names the members of the device archives it unbundles.

use crate::error::{Error, Result};
use crate::host::archive::write_archive_into;
use crate::host::kpack::ArchiveFiles;
use crate::io::spill::{Shelf, Shelved};
use crate::io::{Input, Output};
use crate::ops::bundler::device_member_name;
use crate::ops::extract::chosen::{Bytes, Chosen, Extracted};
use crate::ops::extract::inflate::shelve_chosen;
use crate::ops::extract::names::{safe_name, stem};
use crate::ops::extract::options::ExtractConfig;

/// The name of the member that holds `c`.
fn member_name(config: &ExtractConfig, c: &Chosen) -> String {
    let arch = &c.image.target_id;
    match c.image.source.kpack() {
        // A code object of a kpack archive: named as the bundle entry it was, after its key
        // (no `/` may stay in a member's name).
        Some(k) => {
            let member = safe_name(&k.key).replace('.', "_");
            let entry = format!("hipv4-{}--{arch}", c.image.triple.as_str());
            device_member_name(&member, &entry, arch)
        }
        None => {
            let member = c
                .member
                .clone()
                // A member's name is text to the archive writer.
                .unwrap_or_else(|| stem(&config.files[c.input]).to_string_lossy().into_owned());
            device_member_name(&member, &c.label, arch)
        }
    }
}

/// Writes the chosen images as the members of one device archive, `config.output`. Those
/// not in an input as they are go to a scratch file as they are inflated, and are read from
/// it mapped, so that the members take no memory however large.
pub(super) fn write_device_archive(
    config: &ExtractConfig,
    inputs: &[Input],
    archives: &ArchiveFiles,
    chosen: Vec<Chosen>,
) -> Result<Vec<Extracted>> {
    let shelf = Shelf::new().map_err(|e| Error::io(&config.output, e))?;
    let places = shelve_chosen(config, inputs, archives, &chosen, &shelf)?;
    let scratch = shelf
        .into_input()
        .map_err(|e| Error::io(&config.output, e))?;
    let members: Vec<(String, &[u8])> = chosen
        .iter()
        .zip(&places)
        .map(|(c, place)| {
            let bytes = match place {
                Some(place) => shelved_bytes(&scratch, *place, config)?,
                None => c.bytes(inputs),
            };
            Ok((member_name(config, c), bytes))
        })
        .collect::<Result<_>>()?;
    for (name, _) in &members {
        tracing::info!(archive = %config.output.display(), "writing member {name}");
    }
    let refs: Vec<(&str, &[u8])> = members.iter().map(|(n, d)| (n.as_str(), *d)).collect();
    // Written through a temporary file: the archive's bytes are not held besides its
    // members'.
    let mut out = Output::create(&config.output)?;
    write_archive_into(&config.output, &refs, &mut out)?;
    out.commit()?;
    Ok(chosen
        .into_iter()
        .zip(places)
        .map(|(mut c, place)| {
            match (place, &c.bytes) {
                (Some(place), _) => c.image.size = place.len,
                (None, Bytes::Owned(bytes)) => c.image.size = bytes.len() as u64,
                (None, _) => {}
            }
            c.extracted(config.output.clone())
        })
        .collect())
}

/// The bytes of the scratch file `scratch` at `place`.
fn shelved_bytes<'s>(
    scratch: &'s Input,
    place: Shelved,
    config: &ExtractConfig,
) -> Result<&'s [u8]> {
    usize::try_from(place.at)
        .ok()
        .zip(usize::try_from(place.len).ok())
        .and_then(|(at, len)| scratch.get(at..at.checked_add(len)?))
        .ok_or_else(|| {
            Error::file(
                &config.output,
                "an inflated member is missing from its scratch file",
            )
        })
}
