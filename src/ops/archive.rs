//! Heterogeneous device archives: unbundling an archive of bundled objects into one
//! device-specific archive per target, as `clang-offload-bundler -unbundle -type=a` does, with
//! the members processed in parallel and the output kept in LLVM's order.

use crate::container::objcopy;
use crate::error::{Error, Result};
use crate::format::ccob;
use crate::format::entry_id::EntryId;
use crate::format::target_id::conflicting_pair;
use crate::io::{Input, Output};
use crate::ops::bundler::{handler_for, read_entries, BundlerConfig, Handler, ReadEntry};
use ar_archive_writer::{ArchiveKind, NewArchiveMember, ObjectReader};
use object::read::archive::ArchiveFile;
use rayon::prelude::*;
use std::borrow::Cow;
use std::path::{Path, PathBuf};

/// One member of an input archive: its name and bytes.
pub struct ArchiveMember<'a> {
    /// The member's name as stored.
    pub name: String,
    /// Its bytes (read from disk for thin archives).
    pub data: Cow<'a, [u8]>,
}

/// Reads the members of the archive `data`, found at `path`, in order. Members of thin
/// archives are read from the files they name, relative to the archive's folder.
pub fn read_members<'a>(path: &Path, data: &'a [u8]) -> Result<Vec<ArchiveMember<'a>>> {
    let bad = |what: String| Error::msg(format!("'{}': {what}", path.display()));
    let magic = [&b"!<arch>\n"[..], b"!<thin>\n", b"<bigaf>\n"];
    if !magic.iter().any(|m| data.starts_with(m)) {
        return Err(bad("not an archive: it does not start with !<arch>".into()));
    }
    let archive = ArchiveFile::parse(data).map_err(|e| bad(format!("damaged archive: {e}")))?;
    let mut members = Vec::new();
    for (index, member) in archive.members().enumerate() {
        let member = member.map_err(|e| {
            let at = member_header_offset(data, index)
                .map_or_else(String::new, |at| format!(" (header at offset {at:#x})"));
            bad(format!("member {index}{at}: {e}"))
        })?;
        let name = String::from_utf8_lossy(member.name()).into_owned();
        let bytes = if archive.is_thin() {
            let file = path.parent().unwrap_or(Path::new(".")).join(&name);
            Cow::Owned(std::fs::read(&file).map_err(|e| Error::io(&file, e))?)
        } else {
            Cow::Borrowed(
                member
                    .data(data)
                    .map_err(|e| bad(format!("member '{name}': {e}")))?,
            )
        };
        members.push(ArchiveMember { name, data: bytes });
    }
    Ok(members)
}

/// Where the header of the `index`th member (symbol and name tables not counted) starts, found
/// by walking the headers from the start of the archive.
fn member_header_offset(data: &[u8], index: usize) -> Option<u64> {
    let thin = data.starts_with(b"!<thin>\n");
    let mut at = 8usize;
    let mut seen = 0;
    while at + 60 <= data.len() {
        let header = &data[at..at + 60];
        let name = &header[..16];
        let size: usize = std::str::from_utf8(&header[48..58])
            .ok()?
            .trim_end()
            .parse()
            .ok()?;
        let special = name.starts_with(b"/ ")
            || name.starts_with(b"// ")
            || name.starts_with(b"/SYM64/ ")
            || name.starts_with(b"__.SYMDEF");
        if !special {
            if seen == index {
                return Some(at as u64);
            }
            seen += 1;
        }
        let inline = if thin && !special { 0 } else { size };
        at = at.checked_add(60 + inline + inline % 2)?;
    }
    None
}

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

/// The entries of one member (decompressed when compressed), in LLVM's order, each with the
/// bytes they borrow. `None` when the member holds no bundle.
fn member_entries(
    archive: &Path,
    member: &ArchiveMember<'_>,
    config: &BundlerConfig,
) -> Result<(Option<Vec<u8>>, Handler)> {
    let data: &[u8] = &member.data;
    if !ccob::is_compressed(data) {
        return Ok((None, handler_for(&config.file_type, data)?));
    }
    let failed = |e| member_error(archive, &member.name, "Failed to decompress code object", e);
    // A member holds one compressed bundle; what follows it is not read, as in LLVM 19.
    let plain = match ccob::split(data).next() {
        Some(Ok((_, bundle))) => bundle.decompress(config.max_decompressed).map_err(failed)?,
        Some(Err(e)) => return Err(failed(e)),
        None => Vec::new(),
    };
    let handler = handler_for(&config.file_type, &plain)?;
    Ok((Some(plain), handler))
}

fn member_error(archive: &Path, member: &str, what: &str, e: crate::format::Error) -> Error {
    Error::msg(format!(
        "{what}: '{}': member '{member}': {e}",
        archive.display()
    ))
}

fn entries_in<'a>(
    archive: &Path,
    member: &str,
    handler: Handler,
    data: &'a [u8],
) -> Result<Vec<ReadEntry<'a>>> {
    match handler {
        Handler::Object => crate::container::bundle_sections(data)
            .map(|s| {
                s.into_iter()
                    .map(|(id, data)| ReadEntry { id, data })
                    .collect()
            })
            .map_err(|e| Error::msg(format!("'{}': member '{member}': {e}", archive.display()))),
        _ => {
            read_entries(handler, data).map_err(|e| member_error(archive, member, "bad bundle", e))
        }
    }
}

/// Processes one member: every entry goes, as a copy, to every target it is compatible with,
/// in `-targets` order.
fn extract_member<'a>(
    archive: &Path,
    member: &'a ArchiveMember<'a>,
    config: &BundlerConfig,
    targets: &[EntryId],
) -> Result<Vec<Extracted<'a>>> {
    let (plain, handler) = member_entries(archive, member, config)?;
    let mut out = Vec::new();
    let data: &[u8] = plain.as_deref().unwrap_or(&member.data);
    for entry in entries_in(archive, &member.name, handler, data)? {
        let code = EntryId::parse(entry.id);
        let wanted_by: Vec<usize> = (0..targets.len())
            .filter(|&t| code.is_compatible_with(&targets[t], config.hip_openmp_compatible))
            .collect();
        if wanted_by.is_empty() {
            continue;
        }
        // In an object, an entry of one zero byte stands for the object itself: its copy is
        // the object without its bundle sections.
        let bytes: Cow<'a, [u8]> = if handler == Handler::Object && entry.data == [0] {
            let prefix = crate::container::BUNDLE_SECTION_PREFIX.as_bytes();
            let host =
                objcopy::remove_sections(data, &|name| name.starts_with(prefix)).map_err(|e| {
                    member_error(archive, &member.name, "cannot extract the host object", e)
                })?;
            Cow::Owned(host.to_vec())
        } else if plain.is_some() {
            Cow::Owned(entry.data.to_vec())
        } else {
            Cow::Borrowed(&member.data[offset_in(&member.data, entry.data)..][..entry.data.len()])
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

/// Where `part`, a slice of `whole`, starts in it.
fn offset_in(whole: &[u8], part: &[u8]) -> usize {
    part.as_ptr() as usize - whole.as_ptr() as usize
}

/// The composition check of `-check-input-archive`: in each member, the bundle entry IDs must
/// not mix "any" and explicit settings of a feature for one processor.
fn check_members(
    archive: &Path,
    members: &[ArchiveMember<'_>],
    config: &BundlerConfig,
) -> Result<()> {
    for member in members {
        let (plain, handler) = member_entries(archive, member, config)?;
        let data: &[u8] = plain.as_deref().unwrap_or(&member.data);
        let ids: Vec<&str> = entries_in(archive, &member.name, handler, data)?
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

/// Reads the symbols an archive symbol table lists for `member`: the defined global symbols
/// of object files and of LLVM bitcode.
fn member_symbols(
    buf: &[u8],
    f: &mut dyn FnMut(&[u8]) -> std::io::Result<()>,
) -> std::io::Result<bool> {
    if crate::format::bitcode::is_bitcode(buf) {
        return match crate::format::bitcode::archive_symbols(buf) {
            Ok(names) => {
                for name in names {
                    f(name)?;
                }
                Ok(true)
            }
            Err(_) => Ok(false),
        };
    }
    use object::{Object, ObjectSymbol, SymbolKind};
    let Ok(file) = object::File::parse(buf) else {
        return Ok(false);
    };
    for sym in file.symbols() {
        let listed = sym.is_global()
            && !sym.is_undefined()
            && !matches!(sym.kind(), SymbolKind::File | SymbolKind::Section);
        if listed {
            if let Ok(name) = sym.name_bytes() {
                f(name)?;
            }
        }
    }
    Ok(true)
}

static DEVICE_OBJECT_READER: ObjectReader = ObjectReader {
    get_symbols: member_symbols,
    ..ar_archive_writer::DEFAULT_OBJECT_READER
};

/// A GNU archive of `members` (name, bytes): deterministic (time, owner 0, mode 644) with a
/// symbol table, as LLVM's archive writer makes device archives.
fn device_archive(output: &Path, members: &[(&str, &[u8])]) -> Result<Vec<u8>> {
    let new_members: Vec<NewArchiveMember<'_>> = members
        .iter()
        .map(|(name, data)| NewArchiveMember::new(*data, &DEVICE_OBJECT_READER, name.to_string()))
        .collect();
    let mut bytes = std::io::Cursor::new(Vec::new());
    ar_archive_writer::write_archive_to_stream(
        &mut bytes,
        &new_members,
        ArchiveKind::Gnu,
        false,
        None,
    )
    .map_err(|e| Error::io(output, e))?;
    let mut bytes = bytes.into_inner();
    // LLVM writes an empty symbol table only when some member is an object or bitcode file;
    // the writer crate writes one for any member, so drop it when no member is either.
    let symbolic =
        |data: &[u8]| crate::format::bitcode::is_bitcode(data) || object::File::parse(data).is_ok();
    if !members.iter().any(|(_, data)| symbolic(data)) && bytes[8..].starts_with(b"/ ") {
        let size: usize = std::str::from_utf8(&bytes[8 + 48..8 + 58])
            .ok()
            .and_then(|s| s.trim_end().parse().ok())
            .expect("the writer's symbol table header has a decimal size");
        let end = 8 + 60 + size + size % 2;
        bytes.drain(8..end);
    }
    Ok(bytes)
}

/// Unbundles the heterogeneous archive named by the one input into one device archive per
/// target. Every output is written only if all of them can be.
pub fn unbundle_archive(config: &BundlerConfig, targets: &[String]) -> Result<()> {
    let path: &PathBuf = &config.inputs[0];
    let input = Input::open(path)?;
    let members = read_members(path, &input)?;
    if config.check_input_archive {
        check_members(path, &members, config)?;
    }
    let wanted: Vec<EntryId> = targets.iter().map(|n| EntryId::parse(n)).collect();
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
    let archives: Vec<Vec<u8>> = by_target
        .par_iter()
        .zip(&config.outputs)
        .map(|(members, output)| device_archive(output, members))
        .collect::<Result<_>>()?;
    let mut outputs = Vec::with_capacity(archives.len());
    for (bytes, path) in archives.iter().zip(&config.outputs) {
        let mut out = Output::create(path)?;
        out.write_bytes(bytes)?;
        outputs.push(out);
    }
    crate::io::commit_all(outputs)
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
