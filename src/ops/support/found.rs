//! The files a walk found ([`Found`]), and the list of them ([`FoundList`]): held compactly
//! and out of memory, so that a walk of a hundred thousand files does not hold a hundred
//! thousand paths.
//!
//! Each file is a record of bytes: its path, where in the path its relative path starts (a
//! file found in a folder is the folder's path and its relative path after it), the target
//! of a link kept, and whether the walk reached it through a link. The records are kept in
//! memory while they are few, then written to an unnamed temporary file as the walk goes;
//! once the walk is done the file is mapped (page cache, not the process's own memory) and
//! read back in order, whole or in groups.

use std::ffi::OsStr;
use std::fs::File;
use std::io::{self, BufWriter, Write};
use std::os::unix::ffi::OsStrExt;
use std::path::{Path, PathBuf};

use crate::io::Input;

/// A file to work on.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Found {
    /// The path to open.
    pub path: PathBuf,
    /// The path relative to the folder named (for a file named: its file name), what an
    /// output folder mirrors.
    pub relative: PathBuf,
    /// For a symbolic link kept as one: what it points to.
    pub link: Option<PathBuf>,
    /// Whether the walk reached it through a symbolic link it followed: the file may lie
    /// outside the tree, and is never written over or removed.
    pub through_link: bool,
}

/// The records held in memory before they move to a temporary file.
const IN_MEMORY: usize = 32 << 10;

/// The flag of a record whose file was reached through a link followed.
const THROUGH_LINK: u8 = 1;
/// The flag of a record of a link kept: the link's target follows.
const LINK: u8 = 2;
/// The flag of a record whose relative path is no suffix of its path: it follows whole.
const RELATIVE: u8 = 4;

/// The files of a walk, in the order found: added one at a time while the walk goes, then
/// [`FoundList::seal`]ed and read back ([`FoundList::iter`], [`FoundList::chunks`]).
#[derive(Default)]
pub struct FoundList {
    records: Records,
    len: usize,
}

/// Records of bytes, in the order added: held in memory while they are few, then written to
/// an unnamed temporary file; once [`Records::seal`]ed, mapped and read back. What a list of
/// the files of a tree (or of anything made for each of them) is kept in.
#[derive(Default)]
pub struct Records(Store);

/// Where the records are.
enum Store {
    /// Being added, in memory.
    Memory(Vec<u8>),
    /// Being added, past [`IN_MEMORY`]: in an unnamed temporary file.
    File(BufWriter<File>, u64),
    /// Read back: the records, mapped or held.
    Sealed(Input),
}

impl Default for Store {
    fn default() -> Self {
        Store::Memory(Vec::new())
    }
}

impl std::fmt::Debug for FoundList {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_list().entries(self.iter()).finish()
    }
}

impl FoundList {
    /// An empty list, being added to.
    pub fn new() -> FoundList {
        FoundList::default()
    }

    /// The number of files.
    pub fn len(&self) -> usize {
        self.len
    }

    /// Whether there are none.
    pub fn is_empty(&self) -> bool {
        self.len == 0
    }

    /// Adds the file at `path`, `relative` below the folder named, the link's target `link`
    /// for a link kept, `through_link` when the walk reached it through a link followed.
    /// When the temporary file cannot be written, the error is returned and the list is left
    /// empty: what it held is lost.
    pub fn push(
        &mut self,
        path: &Path,
        relative: &Path,
        link: Option<&Path>,
        through_link: bool,
    ) -> io::Result<()> {
        let mut record = Vec::with_capacity(path.as_os_str().len() + 8);
        encode(&mut record, path, relative, link, through_link);
        match self.append(&record) {
            Ok(()) => {
                self.len += 1;
                Ok(())
            }
            Err(e) => {
                *self = FoundList::new();
                Err(e)
            }
        }
    }

    /// Adds `found` (see [`FoundList::push`]).
    pub fn push_found(&mut self, found: &Found) -> io::Result<()> {
        self.push(
            &found.path,
            &found.relative,
            found.link.as_deref(),
            found.through_link,
        )
    }

    /// Appends the bytes of one record.
    fn append(&mut self, record: &[u8]) -> io::Result<()> {
        self.records.append(record)
    }

    /// Ends the adding: the records are read back from here on, mapped when they are in a
    /// file. When the file cannot be written or mapped, the error is returned and the list
    /// is left empty.
    pub fn seal(&mut self) -> io::Result<()> {
        let sealed = self.records.seal();
        if sealed.is_err() {
            *self = FoundList::new();
        }
        sealed
    }

    /// The bytes of the records: those added so far, or none while they are being written
    /// to a file.
    fn bytes(&self) -> &[u8] {
        self.records.bytes()
    }

    /// The files, in order (none while the list is being written to a file).
    pub fn iter(&self) -> Iter<'_> {
        Iter {
            bytes: self.bytes(),
        }
    }

    /// The files in groups of `size` (at least one), in order.
    pub fn chunks(&self, size: usize) -> impl Iterator<Item = Vec<Found>> + '_ {
        let mut files = self.iter();
        std::iter::from_fn(move || {
            let chunk: Vec<Found> = files.by_ref().take(size.max(1)).collect();
            (!chunk.is_empty()).then_some(chunk)
        })
    }

    /// The paths of the files in groups of `size` (at least one), in order.
    pub fn path_chunks(&self, size: usize) -> impl Iterator<Item = Vec<PathBuf>> + '_ {
        self.chunks(size)
            .map(|chunk| chunk.into_iter().map(|f| f.path).collect())
    }

    /// The paths of the files, in order.
    pub fn paths(&self) -> impl Iterator<Item = PathBuf> + '_ {
        self.iter().map(|f| f.path)
    }
}

impl Records {
    /// Appends the bytes of one record; past [`IN_MEMORY`], the records move to an unnamed
    /// temporary file (or stay in memory, when none can be made). Once sealed, an error.
    pub fn append(&mut self, record: &[u8]) -> io::Result<()> {
        match &mut self.0 {
            Store::Memory(held) => {
                held.extend_from_slice(record);
                if held.len() > IN_MEMORY {
                    match tempfile::tempfile() {
                        Ok(file) => {
                            let mut file = BufWriter::with_capacity(IN_MEMORY, file);
                            file.write_all(held)?;
                            let len = held.len() as u64;
                            self.0 = Store::File(file, len);
                        }
                        Err(e) => tracing::debug!("list of files kept in memory: {e}"),
                    }
                }
                Ok(())
            }
            Store::File(file, len) => {
                file.write_all(record)?;
                *len += record.len() as u64;
                Ok(())
            }
            Store::Sealed(_) => Err(io::Error::other("records added to a list read back")),
        }
    }

    /// Ends the adding: the records are read back from here on, mapped when they are in a
    /// file. When the file cannot be written or mapped, the error is returned and the
    /// records are left empty.
    pub fn seal(&mut self) -> io::Result<()> {
        let store = std::mem::take(&mut self.0);
        let sealed = match store {
            Store::Memory(held) => Ok(Input::from_bytes(held)),
            Store::File(file, len) => file
                .into_inner()
                .map_err(io::IntoInnerError::into_error)
                .and_then(|file| Input::from_temporary(file, len)),
            Store::Sealed(input) => Ok(input),
        };
        match sealed {
            Ok(input) => {
                self.0 = Store::Sealed(input);
                Ok(())
            }
            Err(e) => {
                *self = Records::default();
                Err(e)
            }
        }
    }

    /// The bytes of the records: those added so far, or none while they are being written
    /// to a file.
    pub fn bytes(&self) -> &[u8] {
        match &self.0 {
            Store::Memory(held) => held,
            Store::File(..) => &[],
            Store::Sealed(input) => input,
        }
    }
}

impl<'a> IntoIterator for &'a FoundList {
    type Item = Found;
    type IntoIter = Iter<'a>;

    fn into_iter(self) -> Iter<'a> {
        self.iter()
    }
}

impl IntoIterator for FoundList {
    type Item = Found;
    type IntoIter = std::vec::IntoIter<Found>;

    /// The files, taken out of the list: for the few commands that hold them all anyway.
    fn into_iter(self) -> std::vec::IntoIter<Found> {
        self.iter().collect::<Vec<Found>>().into_iter()
    }
}

impl FromIterator<Found> for FoundList {
    /// A sealed list of `files` (an error writing its temporary file leaves it shorter, with
    /// a message in the log).
    fn from_iter<I: IntoIterator<Item = Found>>(files: I) -> FoundList {
        let mut list = FoundList::new();
        for found in files {
            if let Err(e) = list.push_found(&found) {
                tracing::warn!("list of files: {e}");
            }
        }
        if let Err(e) = list.seal() {
            tracing::warn!("list of files: {e}");
        }
        list
    }
}

/// The files of a [`FoundList`], decoded one at a time.
pub struct Iter<'a> {
    bytes: &'a [u8],
}

impl Iterator for Iter<'_> {
    type Item = Found;

    fn next(&mut self) -> Option<Found> {
        let (found, rest) = decode(self.bytes)?;
        self.bytes = rest;
        Some(found)
    }
}

/// Appends to `record` the record of one file (see the module's comment).
fn encode(
    record: &mut Vec<u8>,
    path: &Path,
    relative: &Path,
    link: Option<&Path>,
    through_link: bool,
) {
    let path = path.as_os_str().as_bytes();
    let relative = relative.as_os_str().as_bytes();
    let suffix = path.ends_with(relative);
    let flag = |on: bool, flag: u8| if on { flag } else { 0 };
    let flags =
        flag(through_link, THROUGH_LINK) | flag(link.is_some(), LINK) | flag(!suffix, RELATIVE);
    record.push(flags);
    put_bytes(record, path);
    if suffix {
        put_number(record, relative.len());
    } else {
        put_bytes(record, relative);
    }
    if let Some(link) = link {
        put_bytes(record, link.as_os_str().as_bytes());
    }
}

/// The file of the record at the start of `bytes`, and the bytes after it; `None` at the end.
fn decode(bytes: &[u8]) -> Option<(Found, &[u8])> {
    let (&flags, rest) = bytes.split_first()?;
    let (path, rest) = take_bytes(rest)?;
    let (relative, rest) = if flags & RELATIVE != 0 {
        take_bytes(rest)?
    } else {
        let (len, rest) = take_number(rest)?;
        (path.get(path.len().checked_sub(len)?..)?, rest)
    };
    let (link, rest) = if flags & LINK != 0 {
        let (link, rest) = take_bytes(rest)?;
        (Some(owned(link)), rest)
    } else {
        (None, rest)
    };
    let found = Found {
        path: owned(path),
        relative: owned(relative),
        link,
        through_link: flags & THROUGH_LINK != 0,
    };
    Some((found, rest))
}

/// A path of bytes.
pub(crate) fn owned(bytes: &[u8]) -> PathBuf {
    PathBuf::from(OsStr::from_bytes(bytes))
}

/// Appends `n` in seven bits a byte, the lowest first, the high bit set but on the last.
pub(crate) fn put_number(record: &mut Vec<u8>, mut n: usize) {
    while n >= 0x80 {
        record.push((n & 0x7f) as u8 | 0x80);
        n >>= 7;
    }
    record.push(n as u8);
}

/// Appends `bytes`, their length first.
pub(crate) fn put_bytes(record: &mut Vec<u8>, bytes: &[u8]) {
    put_number(record, bytes.len());
    record.extend_from_slice(bytes);
}

/// The number at the start of `bytes` (see [`put_number`]) and the bytes after it.
pub(crate) fn take_number(bytes: &[u8]) -> Option<(usize, &[u8])> {
    let mut n = 0usize;
    for (k, &byte) in bytes.iter().enumerate().take(10) {
        n |= usize::from(byte & 0x7f).checked_shl(7 * k as u32)?;
        if byte & 0x80 == 0 {
            return Some((n, bytes.get(k + 1..)?));
        }
    }
    None
}

/// The bytes at the start of `bytes`, their length first, and the bytes after them.
pub(crate) fn take_bytes(bytes: &[u8]) -> Option<(&[u8], &[u8])> {
    let (len, rest) = take_number(bytes)?;
    (rest.len() >= len).then(|| rest.split_at(len))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn found(path: &str, relative: &str, link: Option<&str>, through_link: bool) -> Found {
        Found {
            path: path.into(),
            relative: relative.into(),
            link: link.map(PathBuf::from),
            through_link,
        }
    }

    #[test]
    fn files_come_back_as_added_from_memory_and_from_a_file() {
        let odd = OsStr::from_bytes(b"tree/caf\xe9/\xff.so");
        let mut files = vec![
            found("tree/a/b.so", "a/b.so", None, false),
            found("x.so/", "x.so", None, false),
            found("tree/l", "l", Some("../elsewhere/\u{e9}"), false),
            found("tree/t/u.so", "t/u.so", None, true),
            found("..", "..", None, false),
        ];
        files.push(Found {
            path: odd.into(),
            relative: OsStr::from_bytes(b"caf\xe9/\xff.so").into(),
            link: None,
            through_link: false,
        });
        for count in [1, 6, 40_000] {
            let expected: Vec<Found> = files.iter().cycle().take(count).cloned().collect();
            let list: FoundList = expected.iter().cloned().collect();
            assert_eq!(list.len(), count);
            assert!(matches!(list.records.0, Store::Sealed(_)));
            assert_eq!(list.iter().collect::<Vec<_>>(), expected);
            let chunks: Vec<Vec<Found>> = list.chunks(256).collect();
            assert_eq!(chunks.len(), count.div_ceil(256));
            assert_eq!(chunks.concat(), expected);
            assert_eq!(list.paths().count(), count);
        }
    }

    #[test]
    fn a_large_list_is_kept_out_of_memory() {
        let mut list = FoundList::new();
        for k in 0..10_000 {
            let path = PathBuf::from(format!("tree/{k}/lib.so"));
            list.push(&path, Path::new(&format!("{k}/lib.so")), None, false)
                .unwrap();
            // The first records are held; past 32 KiB of them they go to the file.
            if k == 0 {
                assert!(matches!(list.records.0, Store::Memory(_)));
            }
        }
        assert!(matches!(list.records.0, Store::File(..)));
        list.seal().unwrap();
        assert_eq!(list.len(), 10_000);
        let last = list.iter().nth(9_999).unwrap();
        assert_eq!(last.relative, Path::new("9999/lib.so"));
        assert_eq!(last.path, Path::new("tree/9999/lib.so"));
        let mut empty = FoundList::new();
        empty.seal().unwrap();
        assert!(empty.is_empty());
        assert_eq!(empty.iter().count(), 0);
    }
}
