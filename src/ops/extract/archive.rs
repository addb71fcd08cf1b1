//! Writing the chosen images as the members of one device archive (`-o NAME.a`), named as
//! the bundler names the members of the device archives it unbundles.

use crate::error::Result;
use crate::host::archive::write_archive_into;
use crate::host::kpack::ArchiveFiles;
use crate::io::{Input, Output};
use crate::ops::bundler::device_member_name;
use crate::ops::extract::chosen::{Bytes, Chosen, Extracted};
use crate::ops::extract::inflate::inflate_chosen;
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

/// Writes the chosen images as the members of one device archive, `config.output`.
pub(super) fn write_device_archive(
    config: &ExtractConfig,
    inputs: &[Input],
    archives: &ArchiveFiles,
    mut chosen: Vec<Chosen>,
) -> Result<Vec<Extracted>> {
    inflate_chosen(config, inputs, archives, &mut chosen)?;
    let members: Vec<(String, &[u8])> = chosen
        .iter()
        .map(|c| (member_name(config, c), c.bytes(inputs)))
        .collect();
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
        .map(|mut c| {
            if let Bytes::Owned(bytes) = &c.bytes {
                c.image.size = bytes.len() as u64;
            }
            c.extracted(config.output.clone())
        })
        .collect())
}
