//! Finding the bundle entries of a bundler input: decompressing what is compressed, then
//! reading the entries of each buffer in the order LLVM 19 visits them, whatever holds them (a
//! binary bundle, a text bundle, or the sections of a host object).

use crate::error::{Error, Result};
use crate::format::bundle::Bundle;
use crate::format::ccob;
use crate::format::text_bundle;
use crate::io::Input;
use crate::llvm::adt::string_map::Probing;
use crate::ops::bundler::report;
use crate::ops::bundler::{BundleKind, BundlerConfig};
use std::io::Write;
use std::path::Path;
use std::time::Instant;

/// One entry read from a bundle, borrowing the (possibly decompressed) input.
#[derive(Debug, Clone, Copy)]
pub(super) struct ReadEntry<'a> {
    /// The entry ID as stored.
    pub id: &'a str,
    /// The payload.
    pub data: &'a [u8],
}

/// Why the entries of a buffer could not be read.
pub(super) enum EntriesError {
    /// The host object that holds the entries as sections cannot be read.
    Object(crate::host::BundleSectionsError),
    /// The bundle is damaged.
    Bundle(crate::format::Error),
}

/// Reads the entries of `data`, which holds a bundle of `kind`, in the order LLVM 19 visits
/// them: hash-map order for binary bundles, file order for text bundles and object sections.
/// A buffer that is not a bundle has no entries.
pub(super) fn entries_in(
    kind: BundleKind,
    data: &[u8],
    probing: Probing,
) -> std::result::Result<Vec<ReadEntry<'_>>, EntriesError> {
    let entries = match kind {
        BundleKind::Object => crate::host::bundle_sections(data)
            .map_err(EntriesError::Object)?
            .into_iter()
            .map(|(id, data)| ReadEntry { id, data })
            .collect(),
        BundleKind::Text(comment) => text_bundle::parse(data, comment)
            .map_err(EntriesError::Bundle)?
            .into_iter()
            .map(|e| ReadEntry {
                id: e.id,
                data: e.data,
            })
            .collect(),
        BundleKind::Binary => match Bundle::parse(data).map_err(EntriesError::Bundle)? {
            None => Vec::new(),
            Some(b) => b
                .entries_in_llvm_order(probing)
                .into_iter()
                .map(|e| ReadEntry {
                    id: e.id,
                    data: e.data,
                })
                .collect(),
        },
    };
    Ok(entries)
}

/// The entries of every buffer of `contents`, read from `path`, one buffer after another.
pub(super) fn entries_of<'a>(
    path: &Path,
    contents: &'a Contents<'_>,
    config: &BundlerConfig,
) -> Result<Vec<ReadEntry<'a>>> {
    let mut all = Vec::new();
    for (context, data) in contents.buffers() {
        let kind = BundleKind::of(&config.file_type, data)?;
        let entries = entries_in(kind, data, config.probing()).map_err(|e| match e {
            EntriesError::Object(e) => Error::file(path, e.to_string()),
            EntriesError::Bundle(e) => match &context {
                None => Error::format(path, e),
                Some(c) => Error::format_in(path, c, e),
            },
        })?;
        all.extend(entries);
    }
    Ok(all)
}

/// The contents of a bundler input once decompressed: the file itself, or the decompressed
/// bundles of the compressed bundles it holds one after another.
pub(super) enum Contents<'a> {
    /// The input was not compressed.
    Plain(&'a [u8]),
    /// Each compressed bundle decompressed, with its offset in the input.
    Decompressed(Vec<(u64, Vec<u8>)>),
}

impl Contents<'_> {
    /// Each buffer with a description of where it came from (for error messages).
    pub(super) fn buffers(&self) -> Vec<(Option<String>, &[u8])> {
        match self {
            Contents::Plain(data) => vec![(None, *data)],
            Contents::Decompressed(parts) => parts
                .iter()
                .map(|(at, data)| {
                    (
                        Some(format!("compressed bundle at {at:#x}, decompressed")),
                        data.as_slice(),
                    )
                })
                .collect(),
        }
    }
}

/// Decompresses `data` (read from `path`) if it is compressed, checking each bundle's size
/// and hash. Compressed bundles placed one after another are all decompressed.
pub(super) fn decompress_input<'a>(
    path: &Path,
    data: &'a [u8],
    config: &BundlerConfig,
    log: &mut dyn Write,
) -> Result<Contents<'a>> {
    if !ccob::is_compressed(data) {
        if config.verbose {
            let _ = writeln!(log, "Uncompressed bundle.");
        }
        return Ok(Contents::Plain(data));
    }
    let mut parts = Vec::new();
    // A damaged bundle inside is reported after every stream is checked, as it would be when
    // its entries are read.
    let mut damage = None;
    for part in ccob::split(data) {
        let (at, compressed) = part.map_err(|e| decompress_error(path, e))?;
        let start = Instant::now();
        let plain = compressed
            .inflate_bundle(config.max_decompressed)
            .map_err(|e| decompress_error(path, e.rebased(at)))?;
        if config.verbose {
            report::decompression(log, &compressed, start.elapsed().as_secs_f64());
        }
        match plain {
            Ok(plain) => parts.push((at, plain)),
            Err(e) => {
                damage.get_or_insert_with(|| {
                    Error::format_in(
                        path,
                        format!("compressed bundle at {at:#x}, decompressed"),
                        e,
                    )
                });
            }
        }
    }
    match damage {
        Some(e) => Err(e),
        None => Ok(Contents::Decompressed(parts)),
    }
}

/// A compressed input that cannot be decompressed, reported as LLVM words it, with the file and
/// the offset.
fn decompress_error(path: &Path, e: crate::format::Error) -> Error {
    Error::msg(format!(
        "Failed to decompress input: {} (in '{}' at offset {:#x})",
        e.kind,
        path.display(),
        e.offset
    ))
}

/// The bundles placed one after another at the start of `data` (with zero padding between, as
/// a linker leaves them in `.hip_fatbin`): each bundle's slice, the first one whole from there
/// to the end of `data` (as LLVM reads it), the others from their start. Damage in a later
/// bundle is an error at its offset.
fn bundles_one_after_another(data: &[u8]) -> std::result::Result<Vec<&[u8]>, crate::format::Error> {
    let mut bundles = vec![data];
    let mut pos = match Bundle::parse(data) {
        Ok(Some(first)) => first.size() as usize,
        _ => return Ok(bundles),
    };
    while let Some(rest) = data.get(pos..) {
        let Some(skip) = rest.iter().position(|&b| b != 0) else {
            break;
        };
        let start = pos + skip;
        let here = &data[start..];
        if !crate::format::bundle::is_bundle(here) {
            break;
        }
        match Bundle::parse(here).map_err(|e| e.rebased(start as u64))? {
            Some(bundle) => {
                pos = start + (bundle.size() as usize).max(1);
                bundles.push(here);
            }
            None => break,
        }
    }
    Ok(bundles)
}

/// Lists the entry IDs of the one input, one per line, in LLVM 19's order.
#[tracing::instrument(skip_all, fields(files = ?config.inputs))]
pub fn list(config: &BundlerConfig, out: &mut dyn Write, log: &mut dyn Write) -> Result<()> {
    let path = &config.inputs[0];
    let input = Input::open(path)?;
    let contents = decompress_input(path, &input, config, log)?;
    let mut entries = entries_of(path, &contents, config)?;
    // LLVM lists only the first of several bundles one after another; the others' entries are
    // listed too, in their bundles' order.
    if let Contents::Plain(data) = contents {
        if BundleKind::of(&config.file_type, data)? == BundleKind::Binary {
            let bundles = bundles_one_after_another(data).map_err(|e| Error::format(path, e))?;
            for later in bundles.into_iter().skip(1) {
                let more = entries_in(BundleKind::Binary, later, config.probing()).map_err(
                    |e| match e {
                        EntriesError::Bundle(e) => Error::format(path, e),
                        EntriesError::Object(e) => Error::msg(e.to_string()),
                    },
                )?;
                entries.extend(more);
            }
        }
    }
    let mut text = String::new();
    for entry in entries {
        text.push_str(entry.id);
        text.push('\n');
    }
    out.write_all(text.as_bytes())
        .map_err(|e| Error::io("<stdout>", e))
}
