//! Where each copy of a code object is, and which files hold each function, for the report of
//! `du --kernels`: written as found, a record at a time, to an unnamed temporary file
//! ([`Records`]: in memory up to 32 KiB, then spilled), each file's name once, each copy a
//! record that points back to the previous copy of the same code object (each file of a
//! function, to the previous file of the same function). What stays in memory is, for each
//! code object and each function, where its last record is: nothing for each file.
//!
//! Once every file is read, the log is mapped and each chain is put in the order found: the
//! records of a chain, last to first, are written (8 bytes each) to a second unnamed file,
//! which is read backwards.

use std::io;

use serde::Serialize;

use crate::ops::support::found::{put_bytes, take_bytes, Records};

/// Where an image is: the file, the package member, the section, the offset.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord, Serialize)]
pub struct Place {
    /// The file, as text (see [`Place::file_bytes`]).
    pub file: String,
    /// The file's name in base64, only when it is not UTF-8: its exact bytes.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub file_bytes: Option<String>,
    /// The package member, when the file is a package.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub member: Option<String>,
    /// The section, inside the archive members that hold it (`member!section`).
    #[serde(skip_serializing_if = "String::is_empty")]
    pub section: String,
    /// Its offset in the file (the member's, for a package), when it is stored as such.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub offset: Option<u64>,
}

/// Where a record is in the log: its offset.
pub(crate) type At = u64;

/// The flags of a record of a copy: what follows its file and section.
const OFFSET: u8 = 1;
const MEMBER: u8 = 2;
const FILE_BYTES: u8 = 4;
const PREVIOUS: u8 = 8;

/// The records of a report's places and files (see the module's comment).
#[derive(Default)]
pub(crate) struct Log {
    records: Records,
    /// The bytes written to `records`.
    len: u64,
    /// Once sealed: the chains put in the order found, each record's place 8 bytes.
    order: Records,
    /// The entries written to `order`.
    entries: u64,
}

impl std::fmt::Debug for Log {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Log")
            .field("len", &self.len)
            .field("entries", &self.entries)
            .finish()
    }
}

impl Log {
    /// Appends one record, giving where it is.
    fn append(&mut self, record: &[u8]) -> io::Result<At> {
        let at = self.len;
        self.records.append(record)?;
        self.len += record.len() as u64;
        Ok(at)
    }

    /// Writes a file's name.
    pub(crate) fn file(&mut self, name: &str) -> io::Result<At> {
        let mut record = Vec::with_capacity(name.len() + 2);
        put_bytes(&mut record, name.as_bytes());
        self.append(&record)
    }

    /// Writes where a copy is: in the file whose name is at `file`, as `place` says (its
    /// `file` is not written again), after the copy at `previous`.
    pub(crate) fn place(
        &mut self,
        file: At,
        place: &Place,
        previous: Option<At>,
    ) -> io::Result<At> {
        let mut record = Vec::with_capacity(place.section.len() + 24);
        put_u64(&mut record, file);
        put_bytes(&mut record, place.section.as_bytes());
        let flag = |on: bool, flag: u8| if on { flag } else { 0 };
        record.push(
            flag(place.offset.is_some(), OFFSET)
                | flag(place.member.is_some(), MEMBER)
                | flag(place.file_bytes.is_some(), FILE_BYTES)
                | flag(previous.is_some(), PREVIOUS),
        );
        if let Some(offset) = place.offset {
            put_u64(&mut record, offset);
        }
        if let Some(member) = &place.member {
            put_bytes(&mut record, member.as_bytes());
        }
        if let Some(bytes) = &place.file_bytes {
            put_bytes(&mut record, bytes.as_bytes());
        }
        if let Some(previous) = previous {
            put_u64(&mut record, previous);
        }
        self.append(&record)
    }

    /// Writes that the file whose name is at `file` holds a function too, after the file at
    /// `previous`.
    pub(crate) fn link(&mut self, file: At, previous: Option<At>) -> io::Result<At> {
        let mut record = Vec::with_capacity(20);
        put_u64(&mut record, file);
        match previous {
            Some(previous) => {
                record.push(PREVIOUS);
                put_u64(&mut record, previous);
            }
            None => record.push(0),
        }
        self.append(&record)
    }

    /// Ends the writing: the records are read back, mapped, from here on.
    pub(crate) fn seal(&mut self) -> io::Result<()> {
        self.records.seal()
    }

    /// The bytes from the record at `at` on (none while the log is being written).
    fn from(&self, at: At) -> &[u8] {
        let at = usize::try_from(at).unwrap_or(usize::MAX);
        self.records.bytes().get(at..).unwrap_or_default()
    }

    /// The name of the file at `at` (empty when there is none).
    pub(crate) fn file_name(&self, at: At) -> &str {
        take_bytes(self.from(at))
            .and_then(|(name, _)| std::str::from_utf8(name).ok())
            .unwrap_or_default()
    }

    /// The copy at `at`: where it is, and where the copy before it is.
    pub(crate) fn copy(&self, at: At) -> Option<(Place, Option<At>)> {
        let (file, rest) = take_u64(self.from(at))?;
        let (section, rest) = take_bytes(rest)?;
        let (&flags, mut rest) = rest.split_first()?;
        let mut offset = None;
        if flags & OFFSET != 0 {
            let (n, more) = take_u64(rest)?;
            (offset, rest) = (Some(n), more);
        }
        let mut text = |flag: u8| -> Option<Option<String>> {
            if flags & flag == 0 {
                return Some(None);
            }
            let (bytes, more) = take_bytes(rest)?;
            rest = more;
            Some(Some(String::from_utf8_lossy(bytes).into_owned()))
        };
        let member = text(MEMBER)?;
        let file_bytes = text(FILE_BYTES)?;
        let previous = match flags & PREVIOUS {
            0 => None,
            _ => Some(take_u64(rest)?.0),
        };
        let place = Place {
            file: self.file_name(file).to_string(),
            file_bytes,
            member,
            section: String::from_utf8_lossy(section).into_owned(),
            offset,
        };
        Some((place, previous))
    }

    /// The link at `at`: the file it names, and the link before it.
    fn link_at(&self, at: At) -> Option<(At, Option<At>)> {
        let (file, rest) = take_u64(self.from(at))?;
        let (&flags, rest) = rest.split_first()?;
        let previous = match flags & PREVIOUS {
            0 => None,
            _ => Some(take_u64(rest)?.0),
        };
        Some((file, previous))
    }

    /// Puts the chain that ends with the record at `last` (of copies, or of links when
    /// `links`) in the order found, once the log is sealed: gives where it starts among the
    /// entries, and how many it has.
    pub(crate) fn put_in_order(&mut self, last: At, links: bool) -> io::Result<(u64, u64)> {
        let start = self.entries;
        let mut next = Some(last);
        while let Some(at) = next {
            let previous = match links {
                true => self.link_at(at).map(|(_, previous)| previous),
                false => self.copy(at).map(|(_, previous)| previous),
            };
            self.order.append(&at.to_le_bytes())?;
            self.entries += 1;
            // A previous record lies before: a damaged log cannot loop.
            next = previous.flatten().filter(|&p| p < at);
        }
        Ok((start, self.entries - start))
    }

    /// Ends the ordering: the entries are read back, mapped, from here on.
    pub(crate) fn seal_order(&mut self) -> io::Result<()> {
        self.order.seal()
    }

    /// The records of the chain put in order at `start` with `count` entries, first to last.
    pub(crate) fn ordered(
        &self,
        (start, count): (u64, u64),
    ) -> impl Iterator<Item = At> + Clone + '_ {
        let entries = self.order.bytes();
        (start..start.saturating_add(count))
            .rev()
            .filter_map(move |k| {
                let from = usize::try_from(k.checked_mul(8)?).ok()?;
                let bytes: [u8; 8] = entries.get(from..from.checked_add(8)?)?.try_into().ok()?;
                Some(u64::from_le_bytes(bytes))
            })
    }

    /// The names of the files of the links put in order at `chain`, first to last.
    pub(crate) fn linked_files(
        &self,
        chain: (u64, u64),
    ) -> impl Iterator<Item = &str> + Clone + '_ {
        self.ordered(chain)
            .filter_map(|at| self.link_at(at).map(|(file, _)| self.file_name(file)))
    }

    /// The places of the copies put in order at `chain`, first to last.
    pub(crate) fn places(&self, chain: (u64, u64)) -> impl Iterator<Item = Place> + Clone + '_ {
        self.ordered(chain)
            .filter_map(|at| self.copy(at).map(|(place, _)| place))
    }
}

/// Appends `n` as [`put_bytes`] writes a length.
fn put_u64(record: &mut Vec<u8>, mut n: u64) {
    while n >= 0x80 {
        record.push((n & 0x7f) as u8 | 0x80);
        n >>= 7;
    }
    record.push(n as u8);
}

/// The number at the start of `bytes` (see [`put_u64`]) and the bytes after it.
fn take_u64(bytes: &[u8]) -> Option<(u64, &[u8])> {
    let mut n = 0u64;
    for (k, &byte) in bytes.iter().enumerate().take(10) {
        n |= u64::from(byte & 0x7f).checked_shl(7 * k as u32)?;
        if byte & 0x80 == 0 {
            return Some((n, bytes.get(k + 1..)?));
        }
    }
    None
}

#[cfg(test)]
mod tests {
    use super::*;

    fn place(file: &str, section: &str, offset: Option<u64>, member: Option<&str>) -> Place {
        Place {
            file: file.to_string(),
            file_bytes: file.contains('\u{fffd}').then(|| "/w==".to_string()),
            member: member.map(str::to_string),
            section: section.to_string(),
            offset,
        }
    }

    #[test]
    fn chains_come_back_in_the_order_found_from_memory_and_from_a_file() {
        for files in [3usize, 5_000] {
            let mut log = Log::default();
            let (mut a, mut b, mut links) = (None, None, None);
            let mut expected = (Vec::new(), Vec::new(), Vec::new());
            for k in 0..files {
                let name = format!("tree/{k}/lib\u{fffd}.so");
                let at = log.file(&name).unwrap();
                let first = place(&name, ".hip_fatbin", Some(k as u64 * 1000), None);
                a = Some(log.place(at, &first, a).unwrap());
                expected.0.push(first);
                if k % 2 == 0 {
                    let second = place(&name, "m.o!.hip_fatbin", None, Some("x/y.so"));
                    b = Some(log.place(at, &second, b).unwrap());
                    expected.1.push(second);
                    links = Some(log.link(at, links).unwrap());
                    expected.2.push(name);
                }
            }
            log.seal().unwrap();
            let a = log.put_in_order(a.unwrap(), false).unwrap();
            let links = log.put_in_order(links.unwrap(), true).unwrap();
            let b = log.put_in_order(b.unwrap(), false).unwrap();
            log.seal_order().unwrap();
            assert_eq!(a.1, files as u64);
            assert_eq!(log.places(a).collect::<Vec<_>>(), expected.0);
            assert_eq!(log.places(b).collect::<Vec<_>>(), expected.1);
            assert_eq!(log.linked_files(links).collect::<Vec<_>>(), expected.2);
        }
    }
}
