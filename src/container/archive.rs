//! Archives: reading the members of GNU, BSD, thin and COFF archives, and writing GNU
//! archives with the symbol table LLVM's archive writer gives them.

use crate::error::{Error, Result};
use ar_archive_writer::{ArchiveKind, NewArchiveMember, ObjectReader};
use object::read::archive::ArchiveFile;
use std::borrow::Cow;
use std::path::Path;

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
/// symbol table of the members' defined symbols, byte for byte as LLVM 19's archive writer
/// makes it (device archives, the packager's `--archive`). `output` names the file in errors.
pub fn write_archive(output: &Path, members: &[(&str, &[u8])]) -> Result<Vec<u8>> {
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
