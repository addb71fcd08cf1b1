//! Heterogeneous device archives: unbundling an archive of bundled objects into one
//! device-specific archive per target, as `clang-offload-bundler -unbundle -type=a` does, with
//! the members processed in parallel and the output kept in LLVM's order.

use crate::error::{Error, Result};
use crate::format::ccob;
use crate::host::archive::{read_members, write_archive_reporting, ArchiveMember};
use crate::host::objcopy;
use crate::io::slice::offset_within;
use crate::io::{Input, Output};
use crate::llvm::adt::string_map::Probing;
use crate::ops::bundler::entries::{entries_in, EntriesError, ReadEntry};
use crate::ops::bundler::{BundleKind, BundlerConfig};
use crate::target::entry_id::{self, EntryId};
use crate::target::processor::LlvmVersion;
use crate::target::target_id::conflicting_pair;
use rayon::prelude::*;
use std::borrow::Cow;
use std::io::Write;
use std::path::{Path, PathBuf};

/// An entry extracted for one target: the member name it gets in the device archive and its
/// bytes.
struct Extracted<'a> {
    target: usize,
    name: String,
    data: Cow<'a, [u8]>,
}

/// The name LLVM 19 gives an entry of member `member` in a device archive:
/// `<stem>-<entry ID><stem><ext>` with every `:` made `_`, where `ext` is `.bc` for AMDGPU
/// target IDs, `.cubin` for NVPTX ones and the member's own extension otherwise.
pub fn device_member_name(member: &str, entry_id: &str, target_id: &str) -> String {
    let file = Path::new(member);
    let stem = file
        .file_stem()
        .map(|s| s.to_string_lossy())
        .unwrap_or_default();
    let ext = if target_id.contains("gfx") {
        ".bc".to_string()
    } else if target_id.contains("sm_") {
        ".cubin".to_string()
    } else {
        file.extension()
            .map(|e| format!(".{}", e.to_string_lossy()))
            .unwrap_or_default()
    };
    format!("{stem}-{entry_id}{stem}{ext}").replace(':', "_")
}

/// A member's bundle decompressed when it is compressed (`None` when it is not), and the kind
/// of bundle it holds.
fn member_bundle(
    archive: &Path,
    member: &ArchiveMember<'_>,
    config: &BundlerConfig,
) -> Result<(Option<Vec<u8>>, BundleKind)> {
    let data: &[u8] = &member.data;
    if !ccob::is_compressed(data) {
        return Ok((None, BundleKind::of(&config.file_type, data)?));
    }
    let failed = |e| member_error(archive, &member.name, "Failed to decompress code object", e);
    // A member holds one compressed bundle; what follows it is not read, as in LLVM 19.
    let plain = match ccob::split(data).next() {
        Some(Ok((_, bundle))) => match bundle.inflate_bundle(config.max_decompressed) {
            Ok(Ok(plain)) => plain,
            Ok(Err(damage)) => {
                return Err(member_error(archive, &member.name, "bad bundle", damage))
            }
            Err(e) => return Err(failed(e)),
        },
        Some(Err(e)) => return Err(failed(e)),
        None => Vec::new(),
    };
    let kind = BundleKind::of(&config.file_type, &plain)?;
    Ok((Some(plain), kind))
}

/// An error in member `member` of `archive`, as LLVM words it: `what`, where, and why (a
/// format or container error, which read alike).
fn member_error(archive: &Path, member: &str, what: &str, e: impl std::fmt::Display) -> Error {
    Error::msg(format!(
        "{what}: '{}': member '{member}': {e}",
        archive.display()
    ))
}

/// The entries of a member's bundle `data`, of `kind`, in LLVM's order.
fn member_entries<'a>(
    archive: &Path,
    member: &str,
    kind: BundleKind,
    data: &'a [u8],
    probing: Probing,
) -> Result<Vec<ReadEntry<'a>>> {
    entries_in(kind, data, probing).map_err(|e| match e {
        EntriesError::Object(message) => {
            Error::file(archive, format!("member '{member}': {message}"))
        }
        EntriesError::Bundle(e) => member_error(archive, member, "bad bundle", e),
    })
}

/// Processes one member: every entry goes, as a copy, to every target it is compatible with,
/// in `-targets` order.
fn extract_member<'a>(
    archive: &Path,
    member: &'a ArchiveMember<'a>,
    config: &BundlerConfig,
    targets: &[EntryId],
) -> Result<Vec<Extracted<'a>>> {
    let (plain, kind) = member_bundle(archive, member, config)?;
    let mut out = Vec::new();
    let data: &[u8] = plain.as_deref().unwrap_or(&member.data);
    for entry in member_entries(archive, &member.name, kind, data, config.probing())? {
        if config.llvm >= LlvmVersion::V22 && !entry_id::is_well_formed(entry.id) {
            return Err(Error::msg("Invalid bundle id read from code object"));
        }
        let code = EntryId::parse_as(config.llvm, entry.id);
        let wanted_by: Vec<usize> = (0..targets.len())
            .filter(|&t| code.is_compatible_with(&targets[t], config.kind_matching()))
            .collect();
        if wanted_by.is_empty() {
            continue;
        }
        // In an object, an entry of one zero byte stands for the object itself: its copy is
        // the object without its bundle sections.
        let bytes: Cow<'a, [u8]> = if kind == BundleKind::Object && entry.data == [0] {
            let prefix = crate::host::BUNDLE_SECTION_PREFIX.as_bytes();
            let host =
                objcopy::remove_sections(data, &|name| name.starts_with(prefix)).map_err(|e| {
                    member_error(archive, &member.name, "cannot extract the host object", e)
                })?;
            Cow::Owned(host.to_vec())
        } else {
            // The entry borrows the member's bytes unless it was decompressed.
            match offset_within(&member.data, entry.data) {
                Some(offset) if plain.is_none() => {
                    Cow::Borrowed(&member.data[offset..][..entry.data.len()])
                }
                _ => Cow::Owned(entry.data.to_vec()),
            }
        };
        for target in wanted_by {
            out.push(Extracted {
                target,
                name: device_member_name(&member.name, entry.id, &code.target_id),
                data: bytes.clone(),
            });
        }
    }
    Ok(out)
}

/// The composition check of `-check-input-archive`: in each member, the bundle entry IDs must
/// not mix "any" and explicit settings of a feature for one processor.
fn check_members(
    archive: &Path,
    members: &[ArchiveMember<'_>],
    config: &BundlerConfig,
) -> Result<()> {
    for member in members {
        let (plain, kind) = member_bundle(archive, member, config)?;
        let data: &[u8] = plain.as_deref().unwrap_or(&member.data);
        let ids: Vec<&str> = member_entries(archive, &member.name, kind, data, config.probing())?
            .iter()
            .map(|e| e.id)
            .collect();
        if let Some((a, b)) = conflicting_pair(ids) {
            return Err(Error::msg(format!(
                "conflicting TargetIDs [{a}, {b}] found in {} of {}",
                member.name,
                archive.display()
            )));
        }
    }
    Ok(())
}

/// Whether `data` starts as an archive (regular or thin) does.
fn is_archive(data: &[u8]) -> bool {
    data.starts_with(b"!<arch>\n") || data.starts_with(b"!<thin>\n")
}

/// Unbundles the heterogeneous archive named by the one input into one device archive per
/// target. Every output is written only if all of them can be.
#[tracing::instrument(skip_all, fields(file = ?config.inputs, targets = ?targets))]
pub(super) fn unbundle_archive(
    config: &BundlerConfig,
    targets: &[String],
    log: &mut dyn Write,
) -> Result<()> {
    let path: &PathBuf = &config.inputs[0];
    let input = Input::open(path)?;
    if !is_archive(&input) {
        // LLVM says so of any file that is not an archive, whatever its size.
        return Err(Error::msg("file too small to be an archive"));
    }
    let members = read_members(path, &input)?;
    if config.check_input_archive {
        check_members(path, &members, config)?;
    }
    let wanted: Vec<EntryId> = targets
        .iter()
        .map(|n| EntryId::parse_as(config.llvm, n))
        .collect();
    let per_member: Vec<Vec<Extracted<'_>>> = members
        .par_iter()
        .map(|m| extract_member(path, m, config, &wanted))
        .collect::<Result<_>>()?;
    let mut by_target: Vec<Vec<(&str, &[u8])>> = vec![Vec::new(); targets.len()];
    for extracted in per_member.iter().flatten() {
        by_target[extracted.target].push((&extracted.name, &extracted.data));
    }
    for (target, members) in targets.iter().zip(&by_target) {
        if members.is_empty() && !config.allow_missing_bundles {
            return Err(Error::msg(format!(
                "no compatible code object found for the target '{target}' in heterogeneous archive library: {}",
                path.display()
            )));
        }
    }
    let archives: Vec<_> = by_target
        .par_iter()
        .zip(&config.outputs)
        .map(|(members, output)| write_archive_reporting(output, members))
        .collect::<Result<_>>()?;
    let mut outputs = Vec::with_capacity(archives.len());
    for ((bytes, unreadable), path) in archives.iter().zip(&config.outputs) {
        // LLVM's archive writer lists no symbols for such a member and warns, in these words.
        for problem in unreadable {
            let _ = writeln!(log, "warning: '{}': {}", problem.member, problem.error);
        }
        let mut out = Output::create(path)?;
        out.write_bytes(bytes)?;
        outputs.push(out);
    }
    Ok(crate::io::commit_all(outputs)?)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn member_names_follow_llvm_19() {
        assert_eq!(
            device_member_name("m1.o", "hipv4-amdgcn-amd-amdhsa--gfx906", "gfx906"),
            "m1-hipv4-amdgcn-amd-amdhsa--gfx906m1.bc"
        );
        assert_eq!(
            device_member_name(
                "m1.o",
                "hipv4-amdgcn-amd-amdhsa--gfx90a:xnack+",
                "gfx90a:xnack+"
            ),
            "m1-hipv4-amdgcn-amd-amdhsa--gfx90a_xnack+m1.bc"
        );
        assert_eq!(
            device_member_name("k.o", "openmp-nvptx64-nvidia-cuda--sm_70", "sm_70"),
            "k-openmp-nvptx64-nvidia-cuda--sm_70k.cubin"
        );
        assert_eq!(
            device_member_name(
                "m1.o",
                "openmp-x86_64-unknown-linux-gnu-",
                "openmp-x86_64-unknown-linux-gnu-"
            ),
            "m1-openmp-x86_64-unknown-linux-gnu-m1.o"
        );
    }
}
