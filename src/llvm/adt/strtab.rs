//! String tables laid out as LLVM's `StringTableBuilder` lays them out when it optimises:
//! strings sorted by their reversed bytes, greatest first, and a string that ends the one
//! placed before it shares that string's bytes (tail merging).
//!
//! ELF section and symbol name tables and the string table of an OffloadBinary are built this
//! way.

use std::collections::HashMap;

/// The flavour of table, which fixes what comes before the first string.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Flavor {
    /// ELF: one NUL byte; the empty string is at offset 0.
    Elf,
    /// COFF: a four-byte little-endian size of the whole table.
    Coff,
}

/// The 32-bit offset or size of a table: both ELF and COFF hold them in 32 bits. A table past
/// 4 GiB cannot be addressed, and its offsets saturate at `u32::MAX` rather than wrap to a
/// wrong string.
fn offset32(value: usize) -> u32 {
    u32::try_from(value).unwrap_or(u32::MAX)
}

/// A finished string table.
#[derive(Debug, Clone)]
pub struct StringTable {
    offsets: HashMap<Vec<u8>, u32>,
    /// The table's bytes.
    pub bytes: Vec<u8>,
}

impl StringTable {
    /// Lays out `strings` (duplicates are kept once).
    pub fn build<'s>(strings: impl IntoIterator<Item = &'s [u8]>, flavor: Flavor) -> Self {
        let mut unique: Vec<&[u8]> = strings.into_iter().collect();
        unique.sort_unstable();
        unique.dedup();
        // Greatest reversed string first; a string that is a suffix of another sorts after it.
        unique.sort_unstable_by(|a, b| b.iter().rev().cmp(a.iter().rev()));
        let mut bytes = match flavor {
            Flavor::Elf => vec![0],
            Flavor::Coff => vec![0; 4],
        };
        let mut offsets = HashMap::with_capacity(unique.len() + 1);
        let mut previous: &[u8] = &[];
        for s in unique {
            if previous.ends_with(s) {
                let at = bytes.len() - s.len() - 1;
                offsets.insert(s.to_vec(), offset32(at));
                continue;
            }
            offsets.insert(s.to_vec(), offset32(bytes.len()));
            bytes.extend_from_slice(s);
            bytes.push(0);
            previous = s;
        }
        match flavor {
            Flavor::Elf => {
                offsets.insert(Vec::new(), 0);
            }
            Flavor::Coff => {
                let size = offset32(bytes.len());
                if let Some(size_field) = bytes.first_chunk_mut::<4>() {
                    *size_field = size.to_le_bytes();
                }
            }
        }
        StringTable { offsets, bytes }
    }

    /// The offset of `s`, which must have been given to [`StringTable::build`] (or, for an
    /// ELF table, be empty).
    ///
    /// # Panics
    ///
    /// When `s` is not in the table.
    #[allow(clippy::indexing_slicing)]
    pub fn offset(&self, s: &[u8]) -> u32 {
        // bounds: the caller's promise, documented above; `get` is the checked form.
        self.offsets[s]
    }

    /// The offset of `s`, or `None` when it is not in the table.
    #[cfg(any(test, feature = "internals"))]
    pub fn get(&self, s: &[u8]) -> Option<u32> {
        self.offsets.get(s).copied()
    }
}

#[cfg(test)]
#[allow(clippy::indexing_slicing, clippy::cast_possible_truncation)]
mod tests {
    use super::*;

    #[test]
    fn sorts_by_reversed_bytes_and_merges_tails() {
        let t = StringTable::build(
            [&b".text"[..], b".rela.text", b".data", b"", b".text"],
            Flavor::Elf,
        );
        assert_eq!(t.bytes, b"\0.rela.text\0.data\0");
        assert_eq!(t.offset(b".text"), 6);
        assert_eq!(t.offset(b".rela.text"), 1);
        assert_eq!(t.offset(b".data"), 12);
        assert_eq!(t.offset(b""), 0);
    }

    #[test]
    fn coff_tables_start_with_their_size() {
        let t = StringTable::build([&b"long_section_name"[..], b"name"], Flavor::Coff);
        assert_eq!(&t.bytes[..4], &(t.bytes.len() as u32).to_le_bytes());
        assert_eq!(t.offset(b"long_section_name"), 4);
        assert_eq!(t.offset(b"name"), 4 + 13);
    }
}
