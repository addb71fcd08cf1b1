//! Archives: reading the members of GNU, BSD, thin and COFF archives, and writing GNU
//! archives with the symbol table LLVM's archive writer gives them.

use crate::error::{Error, Result};
use crate::llvm::bitcode::reader as bitcode;
use ar_archive_writer::{ArchiveKind, NewArchiveMember, ObjectReader};
use object::read::archive::ArchiveFile;
use std::borrow::Cow;
use std::os::unix::ffi::OsStrExt;
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
    let bad = |what: String| Error::file(path, what);
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
            // The member's name as its bytes: the file it names, not one its text would name.
            let raw = std::ffi::OsStr::from_bytes(member.name());
            let file = path.parent().unwrap_or(Path::new(".")).join(raw);
            // Opened as any input: a FIFO or a device in a member's place is not waited on.
            Cow::Owned(crate::io::Input::open(&file)?.to_vec())
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
    while let Some(header) = data.get(at..).and_then(<[u8]>::first_chunk::<60>) {
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
    if bitcode::is_bitcode(buf) {
        return match bitcode::archive_symbols(buf) {
            Ok(names) => {
                for name in names {
                    f(name)?;
                }
                Ok(true)
            }
            // The member is listed without symbols; `bitcode_problems` reports why.
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

/// A bitcode member whose symbols cannot be read. The archive lists none for it, as LLVM's
/// archive writer does for a GNU archive, warning about it.
#[derive(Debug, Clone)]
pub struct UnreadableBitcode {
    /// The member's place among the members, from 0.
    pub index: usize,
    /// The member's name.
    pub member: String,
    /// Why its symbols cannot be read.
    pub error: bitcode::Error,
}

/// A GNU archive of `members` (name, bytes): deterministic (time, owner 0, mode 644) with a
/// symbol table of the members' defined symbols, byte for byte as LLVM 19's archive writer
/// makes it (device archives, the packager's `--archive`). `output` names the file in errors.
/// Bitcode members whose symbols cannot be read are logged.
pub fn write_archive(output: &Path, members: &[(&str, &[u8])]) -> Result<Vec<u8>> {
    let (bytes, unreadable) = write_archive_reporting(output, members)?;
    log_unreadable(output, unreadable);
    Ok(bytes)
}

/// [`write_archive`] written to `out` as it is made rather than held: the archive goes
/// through an unnamed temporary file, so that its bytes take no memory however large.
pub fn write_archive_into(
    output: &Path,
    members: &[(&str, &[u8])],
    out: &mut dyn std::io::Write,
) -> Result<()> {
    use std::io::{Read, Seek, SeekFrom};
    let io = |e| Error::io(output, e);
    let mut file = std::io::BufWriter::with_capacity(1 << 16, tempfile::tempfile().map_err(io)?);
    let unreadable = write_members(output, members, &mut file)?;
    let mut file = file.into_inner().map_err(|e| io(e.into_error()))?;
    file.seek(SeekFrom::Start(0)).map_err(io)?;
    let mut head = Vec::with_capacity(68);
    (&mut file).take(68).read_to_end(&mut head).map_err(io)?;
    let dropped = dropped_table(&head, members, &unreadable);
    file.seek(SeekFrom::Start(0)).map_err(io)?;
    if let Some(end) = dropped {
        let mut magic = [0u8; 8];
        file.read_exact(&mut magic).map_err(io)?;
        out.write_all(&magic).map_err(io)?;
        file.seek(SeekFrom::Start(end as u64)).map_err(io)?;
    }
    std::io::copy(&mut std::io::BufReader::with_capacity(1 << 16, file), out).map_err(io)?;
    log_unreadable(output, unreadable);
    Ok(())
}

/// Logs the bitcode members of the archive `output` whose symbols could not be read.
fn log_unreadable(output: &Path, unreadable: Vec<UnreadableBitcode>) {
    for problem in unreadable {
        tracing::warn!(
            archive = %output.display(),
            member = %problem.member,
            "no symbols listed for a bitcode member: {}",
            problem.error
        );
    }
}

/// [`write_archive`], giving back beside the bytes the bitcode members whose symbols cannot be
/// read, for a caller to report as LLVM's archive writer does (`warning: 'MEMBER': ...`).
pub fn write_archive_reporting(
    output: &Path,
    members: &[(&str, &[u8])],
) -> Result<(Vec<u8>, Vec<UnreadableBitcode>)> {
    let mut bytes = std::io::Cursor::new(Vec::new());
    let unreadable = write_members(output, members, &mut bytes)?;
    let mut bytes = bytes.into_inner();
    if let Some(end) = dropped_table(&bytes, members, &unreadable) {
        bytes.drain(8..end.min(bytes.len()));
    }
    Ok((bytes, unreadable))
}

/// Writes the archive of `members` to `stream` as the writer crate makes it, and gives the
/// bitcode members whose symbols cannot be read.
fn write_members<W: std::io::Write + std::io::Seek>(
    output: &Path,
    members: &[(&str, &[u8])],
    stream: &mut W,
) -> Result<Vec<UnreadableBitcode>> {
    let new_members: Vec<NewArchiveMember<'_>> = members
        .iter()
        .map(|(name, data)| NewArchiveMember::new(*data, &DEVICE_OBJECT_READER, name.to_string()))
        .collect();
    ar_archive_writer::write_archive_to_stream(stream, &new_members, ArchiveKind::Gnu, false, None)
        .map_err(|e| Error::io(output, e))?;
    Ok(bitcode_problems(output, members))
}

/// Where the symbol table the writer crate made ends, when LLVM would write none: LLVM writes
/// an empty symbol table only when some member is an object file or bitcode it can read; the
/// writer crate writes one for any member. `head` is the archive's first bytes (68 or more);
/// the table to drop is the bytes from 8 to the end given.
fn dropped_table(
    head: &[u8],
    members: &[(&str, &[u8])],
    unreadable: &[UnreadableBitcode],
) -> Option<usize> {
    let damaged = |index: usize| unreadable.iter().any(|u| u.index == index);
    let symbolic = |index: usize, data: &[u8]| {
        (bitcode::is_bitcode(data) && !damaged(index)) || object::File::parse(data).is_ok()
    };
    let any_symbolic = (members.iter().enumerate()).any(|(index, (_, data))| symbolic(index, data));
    let header = head.get(8..).and_then(<[u8]>::first_chunk::<60>)?;
    if any_symbolic || !header.starts_with(b"/ ") {
        return None;
    }
    let size: usize = std::str::from_utf8(&header[48..58])
        .ok()
        .and_then(|s| s.trim_end().parse().ok())
        .expect("the writer's symbol table header has a decimal size");
    Some(8 + 60 + size + size % 2)
}

/// The bitcode members LLVM cannot read either. LLVM's archive writer reads the modules, not
/// the IR symbol table this reader uses: a file without a module gives no symbols and no
/// warning, and a symbol table this reader cannot use (none, another version, another module
/// count, entries out of bounds) is no damage to LLVM, which lists the module's symbols where
/// this archive lists none, so that is only logged.
fn bitcode_problems(output: &Path, members: &[(&str, &[u8])]) -> Vec<UnreadableBitcode> {
    let mut unreadable = Vec::new();
    for (index, (name, data)) in members.iter().enumerate() {
        if !bitcode::is_bitcode(data) {
            continue;
        }
        let Err(error) = bitcode::archive_symbols(data) else {
            continue;
        };
        match error {
            bitcode::Error::NoModule => {}
            bitcode::Error::NoSymbolTable
            | bitcode::Error::UnsupportedVersion { .. }
            | bitcode::Error::ModuleCountMismatch { .. }
            | bitcode::Error::OutOfBounds { .. } => tracing::warn!(
                archive = %output.display(),
                member = %name,
                "symbols of a bitcode member not listed, unlike LLVM's archive writer: {error}"
            ),
            bitcode::Error::NotBitcode
            | bitcode::Error::LengthNotWordMultiple { .. }
            | bitcode::Error::BadWrapper { .. }
            | bitcode::Error::BadMagic { .. }
            | bitcode::Error::Bitstream { .. } => unreadable.push(UnreadableBitcode {
                index,
                member: name.to_string(),
                error,
            }),
        }
    }
    unreadable
}

#[cfg(test)]
#[allow(clippy::indexing_slicing, clippy::cast_possible_truncation)]
mod tests {
    use super::*;

    #[test]
    fn damaged_bitcode_is_reported_and_listed_as_llvm_lists_it() {
        // The bitcode magic and 11 bytes: not a whole number of 32-bit words.
        let damaged: &[u8] = b"BC\xc0\xde\x35\x14\x00\x00\x05\x00\x00";
        let (bytes, unreadable) =
            write_archive_reporting(Path::new("out.a"), &[("k.bc", damaged)]).unwrap();
        assert_eq!(unreadable.len(), 1);
        assert_eq!(
            (unreadable[0].index, unreadable[0].member.as_str()),
            (0, "k.bc")
        );
        // LLVM writes no symbol table when no member is an object or readable bitcode.
        assert!(bytes.starts_with(b"!<arch>\n"));
        assert!(!bytes[8..].starts_with(b"/ "));
        assert_eq!(
            write_archive(Path::new("out.a"), &[("k.bc", damaged)]).unwrap(),
            bytes
        );
    }

    #[test]
    fn bitcode_without_a_module_is_listed_without_symbols() {
        // LLVM reads this as a symbolic file with no symbols: an empty symbol table, no warning.
        let empty: &[u8] = b"BC\xc0\xde\x35\x14\x00\x00\x05\x00\x00\x00";
        let (bytes, unreadable) =
            write_archive_reporting(Path::new("out.a"), &[("k.bc", empty)]).unwrap();
        assert!(unreadable.is_empty());
        assert!(bytes[8..].starts_with(b"/ "));
    }
}
