//! Writing LLVM bitstreams, the container of bitcode (LLVM's `BitCodeFormat.rst`; the reader
//! is in [`crate::llvm::bitcode::reader`]): fixed-width and variable-width (VBR) fields packed least
//! significant bit first, blocks whose 32-bit length word is filled in when they end,
//! abbreviations, and blob operands.
//!
//! A blob may be left out of the written bytes and supplied later: the stream is then a list
//! of [`Part`]s, runs of written bytes and holes of a known length, so that a caller can copy
//! a large blob from a file straight into place without holding it. Every block's length
//! counts the holes inside it.

use std::fmt;

use crate::llvm::bitcode::reader::{abbrev_id, TOP_LEVEL_ABBREV_WIDTH};

/// The encodings of abbreviation operands, as DEFINE_ABBREV writes them.
mod encoding {
    pub const ARRAY: u64 = 3;
    pub const BLOB: u64 = 5;
}

/// A piece of a written bitstream.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Part {
    /// Bytes written.
    Bytes(Vec<u8>),
    /// The place of the bytes of the blob `id` given to [`BitstreamWriter::blob_hole`],
    /// `len` bytes long; the padding after it is in the next [`Part::Bytes`].
    Hole {
        /// The caller's name for the blob.
        id: usize,
        /// Its length in bytes.
        len: u64,
    },
}

/// A finished bitstream: bytes and holes, in order.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Bitstream {
    /// The pieces of the stream.
    pub parts: Vec<Part>,
}

impl Bitstream {
    /// The length of the whole stream in bytes, holes included.
    pub fn len(&self) -> u64 {
        self.parts
            .iter()
            .map(|part| match part {
                Part::Bytes(bytes) => bytes.len() as u64,
                Part::Hole { len, .. } => *len,
            })
            .sum()
    }

    /// Whether the stream is empty.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// The stream as bytes, each hole filled by `blob(id)`, which must be as long as the hole.
    pub fn to_bytes<'a>(&self, blob: impl Fn(usize) -> &'a [u8]) -> Vec<u8> {
        let mut out = Vec::new();
        for part in &self.parts {
            match part {
                Part::Bytes(bytes) => out.extend_from_slice(bytes),
                Part::Hole { id, .. } => out.extend_from_slice(blob(*id)),
            }
        }
        out
    }
}

/// A block whose length is more 32-bit words than its length field holds (16 GiB).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct BlockTooLong {
    /// The block's ID.
    pub block_id: u64,
    /// Its length in 32-bit words.
    pub words: u64,
}

impl fmt::Display for BlockTooLong {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "bitstream block {} would be {} bytes long, more than its 32-bit length in words holds",
            self.block_id,
            self.words * 4
        )
    }
}

impl std::error::Error for BlockTooLong {}

/// An abbreviation of the current block for records of one code whose only operand is a blob.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct BlobAbbrev(u64);

/// An abbreviation of the current block for records of one code whose only operand is an
/// array of fixed-width elements.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ArrayAbbrev {
    id: u64,
    width: u32,
}

/// A block being written.
#[derive(Debug)]
struct OpenBlock {
    id: u64,
    /// The width of abbreviation IDs around the block.
    outer_width: u32,
    /// Abbreviations defined around the block.
    outer_abbrevs: u64,
    /// Where its length word is: the index of the part and the offset in it.
    length_at: (usize, usize),
    /// The 32-bit word just after its length word.
    start_word: u64,
}

/// Writes a bitstream. Blocks must be ended in the order they were entered.
#[derive(Debug)]
pub struct BitstreamWriter {
    parts: Vec<Part>,
    /// The bytes after the last part.
    bytes: Vec<u8>,
    /// Bits written but not yet a whole byte (fewer than 8).
    pending: u64,
    pending_bits: u32,
    /// Position in bits from the start, holes included.
    bit: u64,
    /// Width of abbreviation IDs here.
    width: u32,
    /// Abbreviations defined in the current block.
    abbrevs: u64,
    blocks: Vec<OpenBlock>,
}

impl BitstreamWriter {
    /// A stream starting with the 4 bytes of `magic`.
    pub fn new(magic: [u8; 4]) -> BitstreamWriter {
        BitstreamWriter {
            parts: Vec::new(),
            bytes: magic.to_vec(),
            pending: 0,
            pending_bits: 0,
            bit: 32,
            width: TOP_LEVEL_ABBREV_WIDTH,
            abbrevs: 0,
            blocks: Vec::new(),
        }
    }

    /// Writes the low `width` bits of `value` (`width` at most 32).
    pub fn fixed(&mut self, value: u64, width: u32) {
        debug_assert!(width <= 32);
        let value = value & ((1u64 << width) - 1);
        self.pending |= value << self.pending_bits;
        self.pending_bits += width;
        self.bit += u64::from(width);
        while self.pending_bits >= 8 {
            self.bytes.push(self.pending.to_le_bytes()[0]);
            self.pending >>= 8;
            self.pending_bits -= 8;
        }
    }

    /// Writes `value` in chunks of `width` bits (2 to 32), the top bit of each saying another
    /// follows.
    pub fn vbr(&mut self, mut value: u64, width: u32) {
        let more = 1u64 << (width - 1);
        while value >= more {
            self.fixed(value & (more - 1) | more, width);
            value >>= width - 1;
        }
        self.fixed(value, width);
    }

    /// Pads with zero bits to the next multiple of 32 bits.
    fn align32(&mut self) {
        // Fewer than 32 bits: the conversion cannot fail.
        let rest = u32::try_from((32 - self.bit % 32) % 32).unwrap_or_default();
        self.fixed(0, rest);
    }

    /// Enters block `id`, whose abbreviation IDs are `width` bits wide.
    pub fn enter_block(&mut self, id: u64, width: u32) {
        self.fixed(abbrev_id::ENTER_SUBBLOCK, self.width);
        self.vbr(id, 8);
        self.vbr(u64::from(width), 4);
        self.align32();
        let length_at = (self.parts.len(), self.bytes.len());
        self.fixed(0, 32);
        self.blocks.push(OpenBlock {
            id,
            outer_width: self.width,
            outer_abbrevs: self.abbrevs,
            length_at,
            start_word: self.bit / 32,
        });
        self.width = width;
        self.abbrevs = 0;
    }

    /// Ends the innermost block and fills in its length.
    ///
    /// # Panics
    ///
    /// When no block is open.
    pub fn end_block(&mut self) -> Result<(), BlockTooLong> {
        self.fixed(abbrev_id::END_BLOCK, self.width);
        self.align32();
        let block = self.blocks.pop().expect("a block to end");
        self.width = block.outer_width;
        self.abbrevs = block.outer_abbrevs;
        let words = self.bit / 32 - block.start_word;
        let length = u32::try_from(words).map_err(|_| BlockTooLong {
            block_id: block.id,
            words,
        })?;
        let (part, offset) = block.length_at;
        let bytes = match self.parts.get_mut(part) {
            Some(Part::Bytes(bytes)) => bytes,
            _ => &mut self.bytes,
        };
        if let Some(field) = bytes
            .get_mut(offset..)
            .and_then(|b| b.first_chunk_mut::<4>())
        {
            *field = length.to_le_bytes();
        }
        Ok(())
    }

    /// Writes a record without an abbreviation: its code and operands as 6-bit VBRs.
    pub fn record(&mut self, code: u64, operands: &[u64]) {
        self.fixed(abbrev_id::UNABBREV_RECORD, self.width);
        self.vbr(code, 6);
        self.vbr(operands.len() as u64, 6);
        for &operand in operands {
            self.vbr(operand, 6);
        }
    }

    /// Starts an abbreviation definition of `count` operands, the first the literal `code`;
    /// returns its ID.
    fn define_abbrev(&mut self, count: u64, code: u64) -> u64 {
        self.fixed(abbrev_id::DEFINE_ABBREV, self.width);
        self.vbr(count, 5);
        self.fixed(1, 1);
        self.vbr(code, 8);
        self.abbrevs += 1;
        abbrev_id::FIRST_APPLICATION + self.abbrevs - 1
    }

    /// Defines, in the current block, the abbreviation `[literal code, blob]`.
    pub fn define_blob_abbrev(&mut self, code: u64) -> BlobAbbrev {
        let id = self.define_abbrev(2, code);
        self.fixed(0, 1);
        self.fixed(encoding::BLOB, 3);
        BlobAbbrev(id)
    }

    /// Defines, in the current block, the abbreviation `[literal code, array of fixed(width)]`.
    pub fn define_array_abbrev(&mut self, code: u64, width: u32) -> ArrayAbbrev {
        let id = self.define_abbrev(3, code);
        self.fixed(0, 1);
        self.fixed(encoding::ARRAY, 3);
        self.fixed(0, 1);
        self.fixed(1, 3);
        self.vbr(u64::from(width), 5);
        ArrayAbbrev { id, width }
    }

    /// Writes a record of `abbrev`'s code whose operand is the array `elements`.
    pub fn array_record(&mut self, abbrev: ArrayAbbrev, elements: &[u64]) {
        self.fixed(abbrev.id, self.width);
        self.vbr(elements.len() as u64, 6);
        for &element in elements {
            self.fixed(element, abbrev.width);
        }
    }

    /// Writes the head of a blob record: the abbreviation ID, the length, the alignment.
    fn blob_head(&mut self, abbrev: BlobAbbrev, len: u64) {
        self.fixed(abbrev.0, self.width);
        self.vbr(len, 6);
        self.align32();
    }

    /// Writes a record of `abbrev`'s code whose operand is the blob `bytes`.
    pub fn blob_record(&mut self, abbrev: BlobAbbrev, bytes: &[u8]) {
        self.blob_head(abbrev, bytes.len() as u64);
        for &byte in bytes {
            self.fixed(u64::from(byte), 8);
        }
        self.align32();
    }

    /// Writes a record of `abbrev`'s code whose operand is a blob of `len` bytes that the
    /// caller supplies later: the stream gets a [`Part::Hole`] named `id` there.
    pub fn blob_hole(&mut self, abbrev: BlobAbbrev, id: usize, len: u64) {
        self.blob_head(abbrev, len);
        // Aligned: no bits are pending.
        self.parts
            .push(Part::Bytes(std::mem::take(&mut self.bytes)));
        self.parts.push(Part::Hole { id, len });
        self.bit += len * 8;
        self.align32();
    }

    /// Ends the stream.
    ///
    /// # Panics
    ///
    /// When a block is still open.
    pub fn finish(mut self) -> Bitstream {
        assert!(self.blocks.is_empty(), "every block ended");
        self.align32();
        self.parts.push(Part::Bytes(self.bytes));
        Bitstream { parts: self.parts }
    }
}

#[cfg(test)]
#[allow(clippy::indexing_slicing)]
mod tests {
    use super::*;

    #[test]
    fn fields_are_packed_least_significant_bit_first() {
        let mut w = BitstreamWriter::new(*b"ABCD");
        w.fixed(0b101, 3);
        w.fixed(0b11111, 5);
        // 300 in 6-bit chunks: 44 | 32 (more), then 9.
        w.vbr(300, 6);
        let stream = w.finish();
        let bytes = stream.to_bytes(|_| &[]);
        assert_eq!(bytes, [b'A', b'B', b'C', b'D', 0xfd, 0x6c, 0x02, 0x00]);
    }

    #[test]
    fn block_lengths_count_words_and_holes() {
        let mut w = BitstreamWriter::new(*b"BC\xc0\xde");
        w.enter_block(8, 3);
        w.record(1, &[2]);
        w.enter_block(11, 4);
        let abbrev = w.define_blob_abbrev(8);
        w.blob_hole(abbrev, 7, 5);
        w.end_block().unwrap();
        w.end_block().unwrap();
        let stream = w.finish();
        assert_eq!(stream.len() % 4, 0);
        assert!(matches!(stream.parts[1], Part::Hole { id: 7, len: 5 }));
        let bytes = stream.to_bytes(|_| b"hello");
        let word = |at: usize| u32::from_le_bytes(bytes[at..at + 4].try_into().unwrap());
        // The outer block: its header word, then its length word at offset 8.
        let outer = word(8) as usize;
        assert_eq!(12 + outer * 4, bytes.len());
        // The blob, padded to 8 bytes, is inside the inner block.
        let at = bytes.windows(5).position(|w| w == b"hello").unwrap();
        assert_eq!(at % 4, 0);
        assert_eq!(&bytes[at + 5..at + 8], [0, 0, 0]);
    }

    #[test]
    fn an_oversized_block_is_an_error_not_a_wrong_length() {
        let mut w = BitstreamWriter::new(*b"BC\xc0\xde");
        w.enter_block(11, 4);
        let abbrev = w.define_blob_abbrev(8);
        w.blob_hole(abbrev, 0, 1 << 34);
        let error = w.end_block().unwrap_err();
        assert_eq!(error.block_id, 11);
        assert!(error.to_string().contains("bitstream block 11"), "{error}");
    }
}
