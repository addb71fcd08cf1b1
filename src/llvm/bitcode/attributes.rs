//! The string attributes of a bitcode module's attribute groups (`"target-cpu"="gfx90a"`),
//! read without parsing the module: its MODULE block is walked for the PARAMATTR_GROUP block,
//! whose records LLVM writes unabbreviated, each a group ID, the index it applies to, then
//! its attributes. Each attribute starts with its kind: 0 an enum attribute (its ID), 1 an
//! integer one (ID, value), 3 a string key and 4 a string key and value (characters, each
//! ended by 0), 5 and 6 a type attribute (ID; and a type), 7 a constant range (ID, bit width,
//! two signed integers, or for more than 64 bits a word with both word counts and the words),
//! 8 a list of ranges (ID, count, bit width, then the ranges).

use super::reader::{abbrev_id, block_id, unwrap, BitCursor, Entry, TOP_LEVEL_ABBREV_WIDTH};

/// The block of attribute groups.
const PARAMATTR_GROUP: u64 = 10;

/// The record of one attribute group.
const GROUP_ENTRY: u64 = 3;

/// The index of an attribute group that applies to the function itself.
const FUNCTION_INDEX: u64 = 0xffff_ffff;

/// Records with more operands than this are not read (no attribute group has so many).
const MAX_OPERANDS: u64 = 1 << 16;

/// A string attribute: its key and its value.
pub type StringAttribute = (Vec<u8>, Vec<u8>);

/// The string attributes of the first function attribute group of the first module that
/// sets `key`; `None` when none does or the bitcode cannot be read that far.
pub fn function_string_attributes(data: &[u8], key: &[u8]) -> Option<Vec<StringAttribute>> {
    let (bitcode, base) = unwrap(data).ok()?;
    let mut stream = BitCursor::new(bitcode, base);
    stream.bit = 32;
    let mut abbrevs = Vec::new();
    loop {
        match stream.advance(TOP_LEVEL_ABBREV_WIDTH, &mut abbrevs).ok()?.1 {
            Entry::SubBlock(block_id::MODULE) => return in_module(&mut stream, key),
            Entry::SubBlock(_) => stream.skip_block().ok()?,
            _ => return None,
        }
    }
}

/// Reads the MODULE block whose header comes next for the attributes.
fn in_module(stream: &mut BitCursor<'_>, key: &[u8]) -> Option<Vec<StringAttribute>> {
    let width = stream.enter_block().ok()?;
    let mut abbrevs = Vec::new();
    loop {
        match stream.advance(width, &mut abbrevs).ok()?.1 {
            Entry::EndBlock => return None,
            Entry::SubBlock(PARAMATTR_GROUP) => return in_groups(stream, key),
            Entry::SubBlock(_) => stream.skip_block().ok()?,
            Entry::Record(id) => {
                stream.read_record(id, &abbrevs).ok()?;
            }
        }
    }
}

/// Reads the PARAMATTR_GROUP block whose header comes next for the attributes.
fn in_groups(stream: &mut BitCursor<'_>, key: &[u8]) -> Option<Vec<StringAttribute>> {
    let width = stream.enter_block().ok()?;
    let mut abbrevs = Vec::new();
    loop {
        match stream.advance(width, &mut abbrevs).ok()?.1 {
            Entry::Record(abbrev_id::UNABBREV_RECORD) => {
                let code = stream.read_vbr32(6, "a record code").ok()?;
                let count = stream.read_vbr32(6, "a record operand count").ok()?;
                if count > MAX_OPERANDS {
                    return None;
                }
                let mut ops = Vec::with_capacity(count as usize);
                for _ in 0..count {
                    ops.push(stream.read_vbr(6, "a record operand").ok()?);
                }
                let function = ops.get(1) == Some(&FUNCTION_INDEX);
                if code == GROUP_ENTRY && function {
                    let strings = string_attributes(ops.get(2..)?);
                    if strings.iter().any(|(name, _)| name == key) {
                        return Some(strings);
                    }
                }
            }
            Entry::Record(id) => {
                stream.read_record(id, &abbrevs).ok()?;
            }
            Entry::SubBlock(_) => stream.skip_block().ok()?,
            Entry::EndBlock => return None,
        }
    }
}

/// The string attributes with values among the attributes `ops` of one group, up to the
/// first attribute of a kind not known.
fn string_attributes(ops: &[u64]) -> Vec<StringAttribute> {
    let mut strings = Vec::new();
    let mut i: usize = 0;
    while let Some(&kind) = ops.get(i) {
        // Every kind takes at least two operands, so the walk advances; a length that does
        // not fit ends it.
        let len = match kind {
            0 | 5 => 2,
            1 | 6 => 3,
            3 | 4 => {
                let Some((name, after)) = string_at(ops, i + 1) else {
                    break;
                };
                if kind == 3 {
                    after - i
                } else {
                    let Some((value, end)) = string_at(ops, after) else {
                        break;
                    };
                    strings.push((name, value));
                    end - i
                }
            }
            _ => match skipped_len(ops, i) {
                Some(len) => len,
                None => break,
            },
        };
        match i.checked_add(len) {
            Some(next) if next > i => i = next,
            _ => break,
        }
    }
    strings
}

/// How many operands the constant range attribute (kind 7) or list of ranges (kind 8) at `i`
/// takes; `None` for another kind.
fn skipped_len(ops: &[u64], i: usize) -> Option<usize> {
    match *ops.get(i)? {
        7 => range_len(ops, i.checked_add(2)?)?.checked_add(2),
        // Ranges of one bit width up to 64 bits, two operands each: a count the record cannot
        // hold ends the walk.
        8 if *ops.get(i.checked_add(3)?)? <= 64 => {
            let count = usize::try_from(*ops.get(i.checked_add(2)?)?).ok()?;
            count.checked_mul(2)?.checked_add(4)
        }
        _ => None,
    }
}

/// The characters from `at` up to the 0 that ends them, and where the next operand is.
fn string_at(ops: &[u64], at: usize) -> Option<(Vec<u8>, usize)> {
    let rest = ops.get(at..)?;
    let end = rest.iter().position(|&c| c == 0)?;
    let text = rest[..end]
        .iter()
        .map(|&c| u8::try_from(c).ok())
        .collect::<Option<Vec<u8>>>()?;
    Some((text, at + end + 1))
}

/// How many operands the constant range at `at` takes: its bit width, then its bounds (two
/// operands up to 64 bits; else a word of both word counts, then the words).
fn range_len(ops: &[u64], at: usize) -> Option<usize> {
    let width = *ops.get(at)?;
    if width <= 64 {
        return Some(3);
    }
    let words = *ops.get(at.checked_add(1)?)?;
    let (lower, upper) = (words >> 32, words & 0xffff_ffff);
    usize::try_from(lower.checked_add(upper)?.checked_add(2)?).ok()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_list_of_ranges_whose_count_wraps_ends_the_walk() {
        // 4 + 2 * (2^63 - 2) wraps to 0 in 64 bits: the walk must stop, not loop on it.
        let ops = [
            4,
            b'a'.into(),
            0,
            b'b'.into(),
            0,
            8,
            0,
            (1 << 63) - 2,
            32,
            1,
            2,
        ];
        let strings = string_attributes(&ops);
        assert_eq!(strings, vec![(b"a".to_vec(), b"b".to_vec())]);
    }

    #[test]
    fn a_constant_range_of_huge_word_counts_ends_the_walk() {
        let ops = [7, 0, 128, u64::MAX, 4, b'k'.into(), 0, b'v'.into(), 0];
        assert_eq!(string_attributes(&ops), Vec::<StringAttribute>::new());
    }

    #[test]
    fn attributes_after_a_list_of_ranges_are_read() {
        let ops = [8, 0, 1, 32, 5, 6, 4, b'k'.into(), 0, b'v'.into(), 0];
        assert_eq!(
            string_attributes(&ops),
            vec![(b"k".to_vec(), b"v".to_vec())]
        );
    }
}
