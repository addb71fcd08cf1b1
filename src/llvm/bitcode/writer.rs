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
    pub const FIXED: u64 = 1;
    pub const VBR: u64 = 2;
    pub const ARRAY: u64 = 3;
    pub const CHAR6: u64 = 4;
    pub const BLOB: u64 = 5;
}

/// The encoding of one field, or of each element of an array.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Field {
    /// This many bits.
    Fixed(u32),
    /// Chunks of this many bits.
    Vbr(u32),
    /// A character of `[a-zA-Z0-9._]` in 6 bits.
    Char6,
}

impl Field {
    /// How many bits `value` takes in this encoding.
    #[cfg(any(test, feature = "internals"))]
    pub fn bits(self, value: u64) -> u64 {
        match self {
            Field::Fixed(width) => u64::from(width),
            Field::Char6 => 6,
            Field::Vbr(width) => {
                let payload = u64::from(width - 1);
                let used = u64::from(64 - value.leading_zeros()).max(1);
                used.div_ceil(payload) * u64::from(width)
            }
        }
    }
}

/// An operand of an abbreviation.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum AbbrevOp {
    /// A value every record of the abbreviation has, not written.
    Literal(u64),
    /// One field.
    Scalar(Field),
    /// The rest of the operands, a count then the elements.
    Array(Field),
}

/// An abbreviation: how the code and operands of a record are written.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Abbrev(pub Vec<AbbrevOp>);

/// The value of a 6-bit character, if it is one of `[a-zA-Z0-9._]`.
pub fn char6(c: u8) -> Option<u64> {
    match c {
        b'a'..=b'z' => Some(u64::from(c - b'a')),
        b'A'..=b'Z' => Some(u64::from(c - b'A') + 26),
        b'0'..=b'9' => Some(u64::from(c - b'0') + 52),
        b'.' => Some(62),
        b'_' => Some(63),
        _ => None,
    }
}

/// A place in the stream of bits an array's elements fill later, one element a byte of a
/// file: the stream holds everything around it, and the bits before it in the same byte.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ElementHole {
    /// The caller's name for the bytes.
    pub id: usize,
    /// How each byte is written.
    pub element: Field,
    /// How many bytes, from the first.
    pub count: u64,
    /// Their length in bits.
    pub bits: u64,
    /// The bits of the stream before the hole in its first byte, and how many.
    pub lead: (u8, u32),
}

/// Writes the bytes of an [`ElementHole`] as its elements, one chunk at a time.
#[derive(Debug)]
pub struct ElementEncoder {
    element: Field,
    pending: u64,
    pending_bits: u32,
    out: Vec<u8>,
}

impl ElementEncoder {
    /// An encoder of `hole`'s elements, starting with its lead bits.
    pub fn new(hole: &ElementHole) -> ElementEncoder {
        ElementEncoder {
            element: hole.element,
            pending: u64::from(hole.lead.0),
            pending_bits: hole.lead.1,
            out: Vec::new(),
        }
    }

    fn put(&mut self, value: u64, width: u32) {
        self.pending |= value << self.pending_bits;
        self.pending_bits += width;
        while self.pending_bits >= 8 {
            self.out.push(self.pending.to_le_bytes()[0]);
            self.pending >>= 8;
            self.pending_bits -= 8;
        }
    }

    /// Encodes `bytes`; the whole bytes made are in [`ElementEncoder::take`].
    pub fn push(&mut self, bytes: &[u8]) {
        self.out.reserve(bytes.len() + 8);
        if self.element == Field::Fixed(8) {
            self.push_bytes(bytes);
            return;
        }
        for &byte in bytes {
            let value = u64::from(byte);
            match self.element {
                Field::Fixed(width) => self.put(value, width),
                Field::Char6 => self.put(char6(byte).unwrap_or(0), 6),
                Field::Vbr(width) => {
                    let more = 1u64 << (width - 1);
                    let mut v = value;
                    while v >= more {
                        self.put(v & (more - 1) | more, width);
                        v >>= width - 1;
                    }
                    self.put(v, width);
                }
            }
        }
    }

    /// Encodes `bytes` as 8-bit elements: each byte of the stream is the high bits of one
    /// byte and the low bits of the next, made in a loop the compiler turns into vector
    /// instructions, where one bit at a time would run at a fifth of the disk's pace.
    fn push_bytes(&mut self, bytes: &[u8]) {
        // Fewer than 8 bits wait between calls, and 8 more make a whole byte each.
        let shift = self.pending_bits;
        let (Some(&first), Some(&last)) = (bytes.first(), bytes.last()) else {
            return;
        };
        if shift == 0 {
            self.out.extend_from_slice(bytes);
            return;
        }
        self.out
            .push(self.pending.to_le_bytes()[0] | (first << shift));
        let next = bytes.get(1..).unwrap_or_default();
        (self.out).extend(
            bytes
                .iter()
                .zip(next)
                .map(|(a, b)| (a >> (8 - shift)) | (b << shift)),
        );
        self.pending = u64::from(last >> (8 - shift));
    }

    /// Hands the whole bytes encoded so far to `sink`, keeping their room for the next ones
    /// (a fresh megabyte for every chunk would be faulted in page by page).
    pub fn drain<R>(&mut self, sink: impl FnOnce(&[u8]) -> R) -> R {
        let result = sink(&self.out);
        self.out.clear();
        result
    }

    /// The bits left, fewer than 8, and how many: the low bits of the next byte of the
    /// stream, which holds zeros there.
    pub fn finish(self) -> (u8, u32) {
        (self.pending.to_le_bytes()[0], self.pending_bits)
    }
}

/// Where a 32-bit field to fill in later is.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Placeholder {
    part: usize,
    byte: usize,
    shift: u32,
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
    /// The place of the elements of an array filled from bytes the caller supplies; the
    /// next [`Part::Bytes`] starts in the hole's last byte, with zeros where the hole's bits go.
    Elements(ElementHole),
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
                Part::Elements(hole) => (hole.lead.1 as u64 + hole.bits) / 8,
            })
            .sum()
    }

    /// Whether the stream is empty.
    #[cfg(any(test, feature = "internals"))]
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// The stream as bytes, each hole filled by `blob(id)`, which must be as long as the hole.
    #[cfg(any(test, feature = "internals"))]
    pub fn to_bytes<'a>(&self, blob: impl Fn(usize) -> &'a [u8]) -> Vec<u8> {
        let mut out = Vec::new();
        let mut tail = (0u8, 0u32);
        for part in &self.parts {
            match part {
                Part::Bytes(bytes) => {
                    let at = out.len();
                    out.extend_from_slice(bytes);
                    if let Some(first) = out.get_mut(at) {
                        *first |= tail.0;
                    }
                    tail = (0, 0);
                }
                Part::Hole { id, .. } => out.extend_from_slice(blob(*id)),
                Part::Elements(hole) => {
                    let bytes = blob(hole.id);
                    let mut encoder = ElementEncoder::new(hole);
                    let count = usize::try_from(hole.count).unwrap_or(usize::MAX);
                    encoder.push(bytes.get(..count).unwrap_or(bytes));
                    encoder.drain(|bytes| out.extend_from_slice(bytes));
                    tail = encoder.finish();
                }
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
#[cfg(any(test, feature = "internals"))]
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
    /// How many abbreviations the BLOCKINFO block gives each block ID.
    blockinfo: Vec<(u64, u64)>,
    /// The block the BLOCKINFO block's definitions are for now.
    blockinfo_target: Option<u64>,
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
            blockinfo: Vec::new(),
            blockinfo_target: None,
        }
    }

    /// The position in bits from the start, holes included.
    pub fn bit_position(&self) -> u64 {
        self.bit
    }

    /// How many abbreviations the BLOCKINFO block defined for block `id`.
    fn blockinfo_count(&self, id: u64) -> u64 {
        self.blockinfo
            .iter()
            .find(|(block, _)| *block == id)
            .map_or(0, |(_, n)| *n)
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
        self.abbrevs = self.blockinfo_count(id);
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

    /// Writes the fields of an abbreviation's definition.
    fn abbrev_definition(&mut self, abbrev: &Abbrev) {
        self.fixed(abbrev_id::DEFINE_ABBREV, self.width);
        let count: usize = abbrev
            .0
            .iter()
            .map(|op| {
                if matches!(op, AbbrevOp::Array(_)) {
                    2
                } else {
                    1
                }
            })
            .sum();
        self.vbr(count as u64, 5);
        let field = |w: &mut Self, f: Field| match f {
            Field::Fixed(width) => {
                w.fixed(0, 1);
                w.fixed(encoding::FIXED, 3);
                w.vbr(u64::from(width), 5);
            }
            Field::Vbr(width) => {
                w.fixed(0, 1);
                w.fixed(encoding::VBR, 3);
                w.vbr(u64::from(width), 5);
            }
            Field::Char6 => {
                w.fixed(0, 1);
                w.fixed(encoding::CHAR6, 3);
            }
        };
        for op in &abbrev.0 {
            match *op {
                AbbrevOp::Literal(value) => {
                    self.fixed(1, 1);
                    self.vbr(value, 8);
                }
                AbbrevOp::Scalar(f) => field(self, f),
                AbbrevOp::Array(f) => {
                    self.fixed(0, 1);
                    self.fixed(encoding::ARRAY, 3);
                    field(self, f);
                }
            }
        }
    }

    /// Defines `abbrev` in the current block; returns its ID.
    pub fn define(&mut self, abbrev: &Abbrev) -> u64 {
        self.abbrev_definition(abbrev);
        self.abbrevs += 1;
        abbrev_id::FIRST_APPLICATION + self.abbrevs - 1
    }

    /// In the BLOCKINFO block (entered with [`BitstreamWriter::enter_block`] as block 0),
    /// defines `abbrev` for every block `block`; returns its ID there.
    pub fn define_for_block(&mut self, block: u64, abbrev: &Abbrev) -> u64 {
        const SETBID: u64 = 1;
        if self.blockinfo_target != Some(block) {
            self.record(SETBID, &[block]);
            self.blockinfo_target = Some(block);
        }
        self.abbrev_definition(abbrev);
        let count = self.blockinfo_count(block) + 1;
        match self.blockinfo.iter_mut().find(|(b, _)| *b == block) {
            Some(entry) => entry.1 = count,
            None => self.blockinfo.push((block, count)),
        }
        abbrev_id::FIRST_APPLICATION + count - 1
    }

    fn field(&mut self, field: Field, value: u64) {
        match field {
            Field::Fixed(width) => self.fixed(value, width),
            Field::Vbr(width) => self.vbr(value, width),
            Field::Char6 => self.fixed(value, 6),
        }
    }

    /// Writes the record `values` (its code first) with the abbreviation `id`, `abbrev`.
    pub fn abbreviated(&mut self, id: u64, abbrev: &Abbrev, values: &[u64]) {
        self.fixed(id, self.width);
        let mut rest = values;
        for op in &abbrev.0 {
            match *op {
                AbbrevOp::Literal(_) => rest = rest.get(1..).unwrap_or_default(),
                AbbrevOp::Scalar(f) => {
                    let (&value, tail) = rest.split_first().unwrap_or((&0, &[]));
                    self.field(f, value);
                    rest = tail;
                }
                AbbrevOp::Array(f) => {
                    self.vbr(rest.len() as u64, 6);
                    for &value in rest {
                        self.field(f, value);
                    }
                    rest = &[];
                }
            }
        }
    }

    /// Leaves the place of `count` elements of `element`, `bits` long, for the caller to
    /// fill from its bytes `id`.
    fn element_hole(&mut self, id: usize, element: Field, count: u64, bits: u64) {
        let lead = (self.pending.to_le_bytes()[0], self.pending_bits);
        self.parts
            .push(Part::Bytes(std::mem::take(&mut self.bytes)));
        self.parts.push(Part::Elements(ElementHole {
            id,
            element,
            count,
            bits,
            lead,
        }));
        self.pending = 0;
        // Fewer than 8: the conversion cannot fail.
        self.pending_bits = u32::try_from((u64::from(lead.1) + bits) % 8).unwrap_or_default();
        self.bit += bits;
    }

    /// Writes a record of the abbreviation `id`, `abbrev` (a literal code, then an array of
    /// `element`s) whose `count` elements, `bits` long, are the first bytes of `hole`.
    pub fn abbreviated_hole(
        &mut self,
        id: u64,
        element: Field,
        hole: usize,
        count: u64,
        bits: u64,
    ) {
        self.fixed(id, self.width);
        self.vbr(count, 6);
        self.element_hole(hole, element, count, bits);
    }

    /// Writes an unabbreviated record of `code` whose `count` operands, `bits` long as
    /// 6-bit VBRs, are the first bytes of `hole`.
    pub fn unabbreviated_hole(&mut self, code: u64, hole: usize, count: u64, bits: u64) {
        self.fixed(abbrev_id::UNABBREV_RECORD, self.width);
        self.vbr(code, 6);
        self.vbr(count, 6);
        self.element_hole(hole, Field::Vbr(6), count, bits);
    }

    /// Writes the ID of an abbreviation, whose operands the caller writes.
    pub fn abbrev_id(&mut self, id: u64) {
        self.fixed(id, self.width);
    }

    /// Writes 32 zero bits to fill in later with [`BitstreamWriter::backpatch`].
    pub fn placeholder(&mut self) -> Placeholder {
        let at = Placeholder {
            part: self.parts.len(),
            byte: self.bytes.len(),
            shift: self.pending_bits,
        };
        self.fixed(0, 32);
        at
    }

    /// Fills in the 32 bits of `at` with `value`; more bits must have been written since.
    pub fn backpatch(&mut self, at: Placeholder, value: u32) {
        let bytes = match self.parts.get_mut(at.part) {
            Some(Part::Bytes(bytes)) => bytes,
            _ => &mut self.bytes,
        };
        let shifted = u64::from(value) << at.shift;
        let count = (at.shift as usize + 32).div_ceil(8);
        for (i, byte) in shifted.to_le_bytes().iter().take(count).enumerate() {
            if let Some(target) = bytes.get_mut(at.byte + i) {
                *target |= byte;
            }
        }
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
    #[cfg(any(test, feature = "internals"))]
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
    #[cfg(any(test, feature = "internals"))]
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

    /// A stream with a 3-bit field, then an abbreviated array record of `bytes` in
    /// `element`s, written inline or as a hole, then a 5-bit field and a placeholder.
    fn array_stream(element: Field, bytes: &[u8], hole: bool) -> Vec<u8> {
        let mut w = BitstreamWriter::new(*b"BC\xc0\xde");
        w.enter_block(11, 4);
        let abbrev = Abbrev(vec![AbbrevOp::Literal(9), AbbrevOp::Array(element)]);
        let id = w.define(&abbrev);
        w.fixed(0b101, 3);
        let value = |b: u8| match element {
            Field::Char6 => char6(b).unwrap(),
            _ => u64::from(b),
        };
        if hole {
            let bits: u64 = bytes.iter().map(|&b| element.bits(value(b))).sum();
            w.abbreviated_hole(id, element, 0, bytes.len() as u64, bits);
        } else {
            let values: Vec<u64> = std::iter::once(9)
                .chain(bytes.iter().map(|&b| value(b)))
                .collect();
            w.abbreviated(id, &abbrev, &values);
        }
        w.fixed(0b11011, 5);
        let at = w.placeholder();
        w.fixed(0x3f, 6);
        w.end_block().unwrap();
        w.backpatch(at, 0xdead_beef);
        w.finish().to_bytes(|_| bytes)
    }

    #[test]
    fn arrays_filled_later_are_the_arrays_written_at_once() {
        for (element, bytes) in [
            (Field::Fixed(8), &b"\x00\xffhello"[..]),
            (Field::Fixed(7), b"hello world\n"),
            (Field::Char6, b"abc.XY_09"),
            (Field::Vbr(6), b"\xff\x01\x1f\x20hi"),
            (Field::Fixed(8), b""),
        ] {
            let inline = array_stream(element, bytes, false);
            assert_eq!(array_stream(element, bytes, true), inline, "{element:?}");
            // The placeholder sits at an odd bit offset: find it by shifting the stream.
            let bits: Vec<bool> = inline
                .iter()
                .flat_map(|b| (0..8).map(move |i| b >> i & 1 == 1))
                .collect();
            let found = bits
                .windows(32)
                .any(|w| w.iter().rev().fold(0u32, |v, &b| v << 1 | u32::from(b)) == 0xdead_beef);
            assert!(found, "{element:?}");
        }
    }

    #[test]
    fn bytes_are_shifted_by_the_lead_as_one_bit_at_a_time_would() {
        let bytes: Vec<u8> = (0..300u32).map(|i| (i * 73 + i / 7) as u8).collect();
        for lead_bits in 0..8 {
            let hole = ElementHole {
                id: 0,
                element: Field::Fixed(8),
                count: bytes.len() as u64,
                bits: 8 * bytes.len() as u64,
                lead: (0b1010_1010 & ((1 << lead_bits) - 1), lead_bits),
            };
            let mut one_by_one = ElementEncoder::new(&hole);
            for &byte in &bytes {
                one_by_one.put(u64::from(byte), 8);
            }
            let want = one_by_one.drain(<[u8]>::to_vec);
            let mut got = Vec::new();
            let mut encoder = ElementEncoder::new(&hole);
            for piece in [&bytes[..1], &bytes[1..1], &bytes[1..150], &bytes[150..]] {
                encoder.push(piece);
                encoder.drain(|bytes| got.extend_from_slice(bytes));
            }
            assert_eq!(got, want, "{lead_bits} bits before");
            let (got_tail, want_tail) = (encoder.finish(), one_by_one.finish());
            assert_eq!(got_tail, want_tail, "{lead_bits} bits before");
        }
    }

    #[test]
    fn vbr_fields_know_their_width() {
        assert_eq!(Field::Vbr(6).bits(0), 6);
        assert_eq!(Field::Vbr(6).bits(31), 6);
        assert_eq!(Field::Vbr(6).bits(32), 12);
        assert_eq!(Field::Vbr(6).bits(255), 12);
        assert_eq!(Field::Fixed(7).bits(100), 7);
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
