//! MessagePack, as far as the kpack formats use it: nil, booleans, integers, floats, strings,
//! binary, extension values, arrays and maps.
//!
//! The reader borrows its input and is bounded: nesting deeper than [`MAX_DEPTH`] is an error,
//! and a declared length or element count is checked against the bytes that remain before
//! anything is allocated, so no input makes it allocate more than a small multiple of its own
//! size. Every error carries the byte offset of the value that is wrong. A [`Cursor`] reads a
//! large map or array an element at a time instead of building it.
//!
//! The writer picks the shortest encoding of each value, as msgpack-python and msgpack-c do, so
//! a table written here is byte-for-byte what those libraries write for the same entries in the
//! same order.
//!
//! # Example
//!
//! Write a map and read it back.
//!
//! ```
//! use offload::format::kpack::msgpack::{self, Value};
//!
//! let mut bytes = Vec::new();
//! msgpack::write_map_header(&mut bytes, 2);
//! msgpack::write_str(&mut bytes, "arch");
//! msgpack::write_str(&mut bytes, "gfx90a");
//! msgpack::write_str(&mut bytes, "size");
//! msgpack::write_uint(&mut bytes, 4096);
//!
//! let (value, used) = msgpack::read(&bytes).unwrap();
//! assert_eq!(used, bytes.len());
//! assert_eq!(value.get("arch").and_then(Value::as_str), Some("gfx90a"));
//! assert_eq!(value.get("size").and_then(Value::as_u64), Some(4096));
//! assert_eq!(value.kind(), "map");
//! assert_eq!(value.to_bytes(), bytes);
//! // A string that claims more bytes than there are is an error, not a panic.
//! assert!(msgpack::read(&[0xd9, 200, b'x']).is_err());
//! ```

/// How deeply arrays and maps may nest before the reader gives up.
pub const MAX_DEPTH: usize = 64;

/// One decoded value, borrowing strings and binary data from the input.
#[derive(Debug, Clone, PartialEq)]
pub enum Value<'a> {
    /// `nil`.
    Nil,
    /// `true` or `false`.
    Bool(bool),
    /// A non-negative integer.
    Uint(u64),
    /// A negative integer (non-negative ones decode as [`Value::Uint`]).
    Int(i64),
    /// A 32-bit float.
    F32(f32),
    /// A 64-bit float.
    F64(f64),
    /// A string's bytes; MessagePack does not promise UTF-8, see [`Value::as_str`].
    Str(&'a [u8]),
    /// Binary data.
    Bin(&'a [u8]),
    /// An extension value: its type and its data.
    Ext(i8, &'a [u8]),
    /// An array.
    Array(Vec<Value<'a>>),
    /// A map, its pairs in the order they were read (keys may repeat).
    Map(Vec<(Value<'a>, Value<'a>)>),
}

/// A MessagePack error: the byte offset of the value that is wrong, and what is wrong with it.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("offset {offset:#x}: {kind}")]
pub struct Error {
    /// Byte offset, from the start of the bytes read, of the value that is wrong.
    pub offset: u64,
    /// What is wrong with it.
    pub kind: MsgpackError,
}

/// Result of reading MessagePack.
pub type Result<T> = std::result::Result<T, Error>;

/// What a MessagePack value is wrong about.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum MsgpackError {
    /// A value, or part of one, does not fit in the bytes left.
    #[error("truncated {what}: needs {needed} bytes, {available} left in the file")]
    Truncated {
        /// What was being read.
        what: &'static str,
        /// Bytes it needs.
        needed: u64,
        /// Bytes left.
        available: u64,
    },
    /// The byte 0xc1, which MessagePack never uses.
    #[error("msgpack: reserved type byte 0xc1")]
    ReservedByte,
    /// Arrays and maps nest deeper than [`MAX_DEPTH`].
    #[error("msgpack: arrays and maps nest deeper than {}", MAX_DEPTH)]
    TooDeep,
    /// An array or map declares more elements than the bytes left could hold.
    #[error("msgpack: {what} of {count} elements cannot fit in the {available} bytes left")]
    CountPastEnd {
        /// `"array"` or `"map"`.
        what: &'static str,
        /// The declared number of elements (pairs for a map).
        count: u64,
        /// Bytes left after the header.
        available: u64,
    },
}

impl<'a> Value<'a> {
    /// The string, if this is a string of valid UTF-8.
    pub fn as_str(&self) -> Option<&'a str> {
        match self {
            Value::Str(bytes) => std::str::from_utf8(bytes).ok(),
            _ => None,
        }
    }

    /// The integer, if this is a non-negative integer.
    pub fn as_u64(&self) -> Option<u64> {
        match self {
            Value::Uint(n) => Some(*n),
            _ => None,
        }
    }

    /// The elements, if this is an array.
    pub fn as_array(&self) -> Option<&[Value<'a>]> {
        match self {
            Value::Array(items) => Some(items),
            _ => None,
        }
    }

    /// The pairs, if this is a map.
    pub fn as_map(&self) -> Option<&[(Value<'a>, Value<'a>)]> {
        match self {
            Value::Map(pairs) => Some(pairs),
            _ => None,
        }
    }

    /// The value of the first pair whose key is the string `key`, if this is a map that has
    /// one. The first wins, as in the kpack loader.
    pub fn get(&self, key: &str) -> Option<&Value<'a>> {
        self.as_map()?
            .iter()
            .find(|(k, _)| matches!(k, Value::Str(s) if *s == key.as_bytes()))
            .map(|(_, v)| v)
    }

    /// What kind of value this is, for messages: `"map"`, `"string"`, ...
    pub fn kind(&self) -> &'static str {
        match self {
            Value::Nil => "nil",
            Value::Bool(_) => "boolean",
            Value::Uint(_) => "integer",
            Value::Int(_) => "negative integer",
            Value::F32(_) | Value::F64(_) => "float",
            Value::Str(_) => "string",
            Value::Bin(_) => "binary",
            Value::Ext(..) => "extension",
            Value::Array(_) => "array",
            Value::Map(_) => "map",
        }
    }

    /// This value, encoded.
    pub fn to_bytes(&self) -> Vec<u8> {
        let mut out = Vec::new();
        write_value(&mut out, self);
        out
    }
}

/// Reads the value at the start of `data`; gives it and the number of bytes it took. Bytes
/// after it are not looked at.
pub fn read(data: &[u8]) -> Result<(Value<'_>, usize)> {
    let mut reader = Reader { data, pos: 0 };
    let value = reader.value(0)?;
    Ok((value, reader.pos))
}

/// The start of a value read by a [`Cursor`]: the number of elements of a map (pairs) or an
/// array, which follow; or a whole value of any other kind.
#[derive(Debug, Clone, PartialEq)]
pub enum Head<'a> {
    /// A map of this many pairs.
    Map(usize),
    /// An array of this many elements.
    Array(usize),
    /// A value that is neither.
    Value(Value<'a>),
}

/// Reads values a header at a time: a large map or array is gone through element by element,
/// never built. Counts are checked against the bytes left, as [`read`] checks them.
///
/// ```
/// use offload::format::kpack::msgpack::{self, Cursor, Head, Value};
///
/// let mut bytes = Vec::new();
/// msgpack::write_array_header(&mut bytes, 2);
/// msgpack::write_uint(&mut bytes, 7);
/// msgpack::write_str(&mut bytes, "x");
/// let mut cursor = Cursor::new(&bytes);
/// assert_eq!(cursor.head().unwrap(), Head::Array(2));
/// assert_eq!(cursor.value().unwrap(), Value::Uint(7));
/// assert_eq!(cursor.head().unwrap(), Head::Value(Value::Str(b"x")));
/// assert_eq!(cursor.offset(), bytes.len() as u64);
/// ```
#[derive(Debug, Clone)]
pub struct Cursor<'a> {
    reader: Reader<'a>,
}

impl<'a> Cursor<'a> {
    /// A cursor at the start of `data`.
    pub fn new(data: &'a [u8]) -> Cursor<'a> {
        Cursor {
            reader: Reader { data, pos: 0 },
        }
    }

    /// Where the next value starts, from the start of the bytes.
    pub fn offset(&self) -> u64 {
        self.reader.pos as u64
    }

    /// The next value's head: a map's or an array's count (its elements are read next), or
    /// the whole value.
    pub fn head(&mut self) -> Result<Head<'a>> {
        let reader = &mut self.reader;
        let start = reader.pos;
        let tag = reader.data.get(start).copied();
        if !matches!(tag, Some(0x80..=0x9f | 0xdc..=0xdf)) {
            return Ok(Head::Value(reader.value(0)?));
        }
        reader.pos += 1;
        let (map, count) = match tag {
            Some(0xdc) => (false, reader.uint::<2>("msgpack array length")?),
            Some(0xdd) => (false, reader.uint::<4>("msgpack array length")?),
            Some(0xde) => (true, reader.uint::<2>("msgpack map length")?),
            Some(0xdf) => (true, reader.uint::<4>("msgpack map length")?),
            Some(tag) => (tag < 0x90, u64::from(tag & 0x0f)),
            None => (false, 0),
        };
        Ok(match map {
            true => Head::Map(reader.fits("map", count, 2, start)?),
            false => Head::Array(reader.fits("array", count, 1, start)?),
        })
    }

    /// The next value, whole.
    pub fn value(&mut self) -> Result<Value<'a>> {
        self.reader.value(0)
    }
}

/// A cursor over the input.
#[derive(Debug, Clone)]
struct Reader<'a> {
    data: &'a [u8],
    pos: usize,
}

impl<'a> Reader<'a> {
    fn error(&self, at: usize, kind: MsgpackError) -> Error {
        Error {
            offset: at as u64,
            kind,
        }
    }

    /// The next `n` bytes, which are `what`.
    fn take(&mut self, n: u64, what: &'static str) -> Result<&'a [u8]> {
        let available = self.data.len().saturating_sub(self.pos);
        let bytes = usize::try_from(n)
            .ok()
            .and_then(|n| self.data.get(self.pos..self.pos.checked_add(n)?))
            .ok_or_else(|| {
                self.error(
                    self.pos,
                    MsgpackError::Truncated {
                        what,
                        needed: n,
                        available: available as u64,
                    },
                )
            })?;
        self.pos += bytes.len();
        Ok(bytes)
    }

    /// A big-endian unsigned integer of `N` bytes.
    fn uint<const N: usize>(&mut self, what: &'static str) -> Result<u64> {
        let bytes = self.take(N as u64, what)?;
        Ok(bytes.iter().fold(0u64, |n, b| n << 8 | u64::from(*b)))
    }

    fn value(&mut self, depth: usize) -> Result<Value<'a>> {
        let start = self.pos;
        let tag = *self.take(1, "msgpack type byte")?.first().unwrap_or(&0);
        let value = match tag {
            0x00..=0x7f => Value::Uint(u64::from(tag)),
            0x80..=0x8f => self.map(u64::from(tag & 0x0f), depth, start)?,
            0x90..=0x9f => self.array(u64::from(tag & 0x0f), depth, start)?,
            0xa0..=0xbf => Value::Str(self.take(u64::from(tag & 0x1f), "msgpack string")?),
            0xc0 => Value::Nil,
            0xc1 => return Err(self.error(start, MsgpackError::ReservedByte)),
            0xc2 => Value::Bool(false),
            0xc3 => Value::Bool(true),
            0xc4..=0xc6 => {
                let n = self.length(tag - 0xc4)?;
                Value::Bin(self.take(n, "msgpack binary")?)
            }
            0xc7..=0xc9 => {
                let n = self.length(tag - 0xc7)?;
                self.ext(n)?
            }
            0xca => Value::F32(f32::from_bits(narrow32(self.uint::<4>("msgpack float")?))),
            0xcb => Value::F64(f64::from_bits(self.uint::<8>("msgpack float")?)),
            0xcc => Value::Uint(self.uint::<1>("msgpack integer")?),
            0xcd => Value::Uint(self.uint::<2>("msgpack integer")?),
            0xce => Value::Uint(self.uint::<4>("msgpack integer")?),
            0xcf => Value::Uint(self.uint::<8>("msgpack integer")?),
            0xd0 => signed(self.uint::<1>("msgpack integer")?, 8),
            0xd1 => signed(self.uint::<2>("msgpack integer")?, 16),
            0xd2 => signed(self.uint::<4>("msgpack integer")?, 32),
            0xd3 => signed(self.uint::<8>("msgpack integer")?, 64),
            0xd4..=0xd8 => self.ext(1 << (tag - 0xd4))?,
            0xd9..=0xdb => {
                let n = self.length(tag - 0xd9)?;
                Value::Str(self.take(n, "msgpack string")?)
            }
            0xdc => {
                let n = self.uint::<2>("msgpack array length")?;
                self.array(n, depth, start)?
            }
            0xdd => {
                let n = self.uint::<4>("msgpack array length")?;
                self.array(n, depth, start)?
            }
            0xde => {
                let n = self.uint::<2>("msgpack map length")?;
                self.map(n, depth, start)?
            }
            0xdf => {
                let n = self.uint::<4>("msgpack map length")?;
                self.map(n, depth, start)?
            }
            0xe0..=0xff => Value::Int(i64::from(tag as i8)),
        };
        Ok(value)
    }

    /// A length field of 1, 2 or 4 bytes (`width_code` 0, 1, 2).
    fn length(&mut self, width_code: u8) -> Result<u64> {
        match width_code {
            0 => self.uint::<1>("msgpack length"),
            1 => self.uint::<2>("msgpack length"),
            _ => self.uint::<4>("msgpack length"),
        }
    }

    fn ext(&mut self, n: u64) -> Result<Value<'a>> {
        let kind = *self
            .take(1, "msgpack extension type")?
            .first()
            .unwrap_or(&0);
        Ok(Value::Ext(kind as i8, self.take(n, "msgpack extension")?))
    }

    /// Checks that `count` elements of at least `per` bytes each fit in what is left.
    fn fits(&self, what: &'static str, count: u64, per: u64, start: usize) -> Result<usize> {
        let available = self.data.len().saturating_sub(self.pos) as u64;
        if count.saturating_mul(per) > available {
            let kind = MsgpackError::CountPastEnd {
                what,
                count,
                available,
            };
            return Err(self.error(start, kind));
        }
        Ok(usize::try_from(count).unwrap_or(usize::MAX))
    }

    fn deeper(&self, depth: usize, start: usize) -> Result<usize> {
        if depth >= MAX_DEPTH {
            return Err(self.error(start, MsgpackError::TooDeep));
        }
        Ok(depth + 1)
    }

    fn array(&mut self, count: u64, depth: usize, start: usize) -> Result<Value<'a>> {
        let depth = self.deeper(depth, start)?;
        let n = self.fits("array", count, 1, start)?;
        let mut items = Vec::with_capacity(n);
        for _ in 0..n {
            items.push(self.value(depth)?);
        }
        Ok(Value::Array(items))
    }

    fn map(&mut self, count: u64, depth: usize, start: usize) -> Result<Value<'a>> {
        let depth = self.deeper(depth, start)?;
        let n = self.fits("map", count, 2, start)?;
        let mut pairs = Vec::with_capacity(n);
        for _ in 0..n {
            let key = self.value(depth)?;
            pairs.push((key, self.value(depth)?));
        }
        Ok(Value::Map(pairs))
    }
}

/// The low 32 bits (the reader asked for exactly 4 bytes).
fn narrow32(n: u64) -> u32 {
    u32::try_from(n & 0xffff_ffff).unwrap_or(0)
}

/// A two's-complement integer of `bits` bits, as the value it stands for.
fn signed(raw: u64, bits: u32) -> Value<'static> {
    let shift = 64 - bits;
    let n = ((raw << shift) as i64) >> shift;
    match u64::try_from(n) {
        Ok(u) => Value::Uint(u),
        Err(_) => Value::Int(n),
    }
}

/// Appends the encoding of `value`, shortest form first.
pub fn write_value(out: &mut Vec<u8>, value: &Value<'_>) {
    match value {
        Value::Nil => out.push(0xc0),
        Value::Bool(b) => out.push(if *b { 0xc3 } else { 0xc2 }),
        Value::Uint(n) => write_uint(out, *n),
        Value::Int(n) => write_int(out, *n),
        Value::F32(x) => {
            out.push(0xca);
            out.extend_from_slice(&x.to_bits().to_be_bytes());
        }
        Value::F64(x) => {
            out.push(0xcb);
            out.extend_from_slice(&x.to_bits().to_be_bytes());
        }
        Value::Str(s) => write_str_bytes(out, s),
        Value::Bin(b) => write_bin(out, b),
        Value::Ext(kind, data) => write_ext(out, *kind, data),
        Value::Array(items) => {
            write_array_header(out, items.len());
            items.iter().for_each(|v| write_value(out, v));
        }
        Value::Map(pairs) => {
            write_map_header(out, pairs.len());
            for (k, v) in pairs {
                write_value(out, k);
                write_value(out, v);
            }
        }
    }
}

/// Appends a non-negative integer.
#[allow(clippy::cast_possible_truncation)] // each branch's range fits its cast
pub fn write_uint(out: &mut Vec<u8>, n: u64) {
    match n {
        0..=0x7f => out.push(n as u8),
        0x80..=0xff => out.extend_from_slice(&[0xcc, n as u8]),
        0x100..=0xffff => {
            out.push(0xcd);
            out.extend_from_slice(&(n as u16).to_be_bytes());
        }
        0x1_0000..=0xffff_ffff => {
            out.push(0xce);
            out.extend_from_slice(&(n as u32).to_be_bytes());
        }
        _ => {
            out.push(0xcf);
            out.extend_from_slice(&n.to_be_bytes());
        }
    }
}

/// Appends an integer; non-negative ones as [`write_uint`] does.
#[allow(clippy::cast_possible_truncation)] // each branch's range fits its cast
pub fn write_int(out: &mut Vec<u8>, n: i64) {
    if let Ok(u) = u64::try_from(n) {
        return write_uint(out, u);
    }
    if n >= -32 {
        out.push(n as u8);
    } else if n >= i64::from(i8::MIN) {
        out.extend_from_slice(&[0xd0, n as u8]);
    } else if n >= i64::from(i16::MIN) {
        out.push(0xd1);
        out.extend_from_slice(&(n as i16).to_be_bytes());
    } else if n >= i64::from(i32::MIN) {
        out.push(0xd2);
        out.extend_from_slice(&(n as i32).to_be_bytes());
    } else {
        out.push(0xd3);
        out.extend_from_slice(&n.to_be_bytes());
    }
}

/// Appends a header of `marker` kind for `len`: a fix form for lengths up to `fix_max`, then the
/// 8-bit (if `len8` is given), 16-bit and 32-bit forms.
#[allow(clippy::cast_possible_truncation)] // each branch's range fits its cast
fn write_header(out: &mut Vec<u8>, len: usize, fix: Option<(u8, usize)>, wide: [Option<u8>; 3]) {
    match (fix, wide) {
        (Some((tag, max)), _) if len <= max => out.push(tag | len as u8),
        (_, [Some(tag), _, _]) if len <= 0xff => out.extend_from_slice(&[tag, len as u8]),
        (_, [_, Some(tag), _]) if len <= 0xffff => {
            out.push(tag);
            out.extend_from_slice(&(len as u16).to_be_bytes());
        }
        (_, [_, _, tag]) => {
            out.push(tag.unwrap_or(0));
            out.extend_from_slice(&(len as u32).to_be_bytes());
        }
    }
}

/// Appends a string.
pub fn write_str(out: &mut Vec<u8>, s: &str) {
    write_str_bytes(out, s.as_bytes());
}

fn write_str_bytes(out: &mut Vec<u8>, s: &[u8]) {
    write_header(
        out,
        s.len(),
        Some((0xa0, 31)),
        [Some(0xd9), Some(0xda), Some(0xdb)],
    );
    out.extend_from_slice(s);
}

/// Appends binary data.
pub fn write_bin(out: &mut Vec<u8>, b: &[u8]) {
    write_header(out, b.len(), None, [Some(0xc4), Some(0xc5), Some(0xc6)]);
    out.extend_from_slice(b);
}

#[allow(clippy::cast_possible_truncation)] // each branch's range fits its cast
fn write_ext(out: &mut Vec<u8>, kind: i8, data: &[u8]) {
    match data.len() {
        1 => out.push(0xd4),
        2 => out.push(0xd5),
        4 => out.push(0xd6),
        8 => out.push(0xd7),
        16 => out.push(0xd8),
        n => write_header(out, n, None, [Some(0xc7), Some(0xc8), Some(0xc9)]),
    }
    out.push(kind as u8);
    out.extend_from_slice(data);
}

/// Appends the header of an array of `len` elements; the elements follow.
pub fn write_array_header(out: &mut Vec<u8>, len: usize) {
    write_header(out, len, Some((0x90, 15)), [None, Some(0xdc), Some(0xdd)]);
}

/// Appends the header of a map of `len` pairs; keys and values follow, alternating.
pub fn write_map_header(out: &mut Vec<u8>, len: usize) {
    write_header(out, len, Some((0x80, 15)), [None, Some(0xde), Some(0xdf)]);
}

#[cfg(test)]
#[allow(clippy::indexing_slicing, clippy::cast_possible_truncation)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    /// Any value of the kinds the kpack formats use, nested.
    fn values() -> impl Strategy<Value = Value<'static>> {
        let leaf = prop_oneof![
            Just(Value::Nil),
            any::<bool>().prop_map(Value::Bool),
            any::<u64>().prop_map(Value::Uint),
            (i64::MIN..0).prop_map(Value::Int),
            "[a-z#@:/]{0,40}".prop_map(|s| Value::Str(Box::leak(s.into_boxed_str()).as_bytes())),
            proptest::collection::vec(any::<u8>(), 0..300)
                .prop_map(|b| Value::Bin(Box::leak(b.into_boxed_slice()))),
        ];
        leaf.prop_recursive(4, 64, 20, |inner| {
            prop_oneof![
                proptest::collection::vec(inner.clone(), 0..20).prop_map(Value::Array),
                proptest::collection::vec((inner.clone(), inner), 0..20).prop_map(Value::Map),
            ]
        })
    }

    proptest! {
        #[test]
        fn any_value_survives_write_then_read(value in values()) {
            let bytes = value.to_bytes();
            let (back, used) = read(&bytes).unwrap();
            prop_assert_eq!(back, value);
            prop_assert_eq!(used, bytes.len());
            // Every cut is an error, never a panic.
            for cut in 0..bytes.len() {
                prop_assert!(read(&bytes[..cut]).is_err());
            }
        }
    }

    fn round_trip(value: Value<'_>) -> Vec<u8> {
        let bytes = value.to_bytes();
        let (back, used) = read(&bytes).unwrap();
        assert_eq!(back, value);
        assert_eq!(used, bytes.len());
        bytes
    }

    #[test]
    fn integers_take_the_shortest_form() {
        assert_eq!(round_trip(Value::Uint(5)), [0x05]);
        assert_eq!(round_trip(Value::Uint(200)), [0xcc, 200]);
        assert_eq!(round_trip(Value::Uint(4712)), [0xcd, 0x12, 0x68]);
        assert_eq!(round_trip(Value::Uint(1 << 16)), [0xce, 0, 1, 0, 0]);
        assert_eq!(
            round_trip(Value::Uint(1 << 32)),
            [0xcf, 0, 0, 0, 1, 0, 0, 0, 0]
        );
        assert_eq!(round_trip(Value::Int(-1)), [0xff]);
        assert_eq!(round_trip(Value::Int(-33)), [0xd0, 0xdf]);
        assert_eq!(round_trip(Value::Int(-200)), [0xd1, 0xff, 0x38]);
        assert_eq!(round_trip(Value::Int(i64::MIN))[0], 0xd3);
    }

    #[test]
    fn strings_binary_and_containers() {
        assert_eq!(round_trip(Value::Str(b"toc")), b"\xa3toc");
        let long = [b'x'; 40];
        assert_eq!(&round_trip(Value::Str(&long))[..2], [0xd9, 40]);
        assert_eq!(round_trip(Value::Bin(b"ab")), b"\xc4\x02ab");
        let array = Value::Array(vec![Value::Nil, Value::Bool(true), Value::Bool(false)]);
        assert_eq!(round_trip(array), [0x93, 0xc0, 0xc3, 0xc2]);
        let many = Value::Array(vec![Value::Uint(0); 16]);
        assert_eq!(&round_trip(many)[..3], [0xdc, 0, 16]);
        let map = Value::Map(vec![(Value::Str(b"a"), Value::Uint(1))]);
        assert_eq!(round_trip(map), b"\x81\xa1a\x01");
        round_trip(Value::Ext(-1, &[1, 2, 3, 4]));
        round_trip(Value::Ext(3, &[1, 2, 3]));
        round_trip(Value::F64(1.5));
        round_trip(Value::F32(-2.0));
    }

    #[test]
    fn reads_wide_signed_forms_of_small_numbers() {
        // msgpack-c may write small non-negative numbers in signed forms; they mean the same.
        assert_eq!(read(&[0xd0, 0x05]).unwrap().0, Value::Uint(5));
        assert_eq!(
            read(&[0xd2, 0xff, 0xff, 0xff, 0xfe]).unwrap().0,
            Value::Int(-2)
        );
    }

    #[test]
    fn get_finds_the_first_matching_key() {
        let bytes = b"\x83\x01\x02\xa1k\x03\xa1k\x04";
        let (map, _) = read(bytes).unwrap();
        assert_eq!(map.get("k"), Some(&Value::Uint(3)));
        assert_eq!(map.get("x"), None);
        assert_eq!(Value::Nil.get("k"), None);
    }

    #[test]
    fn trailing_bytes_are_left_alone() {
        assert_eq!(read(b"\xc0rest").unwrap(), (Value::Nil, 1));
    }

    #[test]
    fn errors_give_offsets() {
        let e = read(b"\x92\x01\xa5ab").unwrap_err();
        assert_eq!(
            e.to_string(),
            "offset 0x3: truncated msgpack string: needs 5 bytes, 2 left in the file"
        );
        let e = read(b"\x81\xa1a\xc1").unwrap_err();
        assert_eq!(
            e.to_string(),
            "offset 0x3: msgpack: reserved type byte 0xc1"
        );
        let e = read(b"\xdd\xff\xff\xff\xff\x00").unwrap_err();
        assert_eq!(
            e.to_string(),
            "offset 0x0: msgpack: array of 4294967295 elements cannot fit in the 1 bytes left"
        );
        let e = read(b"\xdf\x00\x00\x00\x02\x00\x00\x00").unwrap_err();
        assert!(e.to_string().contains("map of 2 elements"), "{e}");
        assert_eq!(read(b"").unwrap_err().offset, 0);
    }

    #[test]
    fn nesting_is_bounded() {
        let deep = vec![0x91u8; 100_000];
        let e = read(&deep).unwrap_err();
        assert_eq!(e.offset, MAX_DEPTH as u64);
        assert_eq!(e.kind, MsgpackError::TooDeep);
        let mut ok = vec![0x91u8; MAX_DEPTH];
        ok.push(0xc0);
        assert!(read(&ok).is_ok());
    }
}
