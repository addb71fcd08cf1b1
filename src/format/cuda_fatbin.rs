//! CUDA fat binaries (`.nv_fatbin`, `__nv_fatbin`): a 16-byte header (magic `0xba55ed50`,
//! version, header size, size of what follows) before the entries (cubins and PTX). Several
//! fat binaries placed one after another are each aligned to 8 bytes. Each is read whole here;
//! its entries are its own business.

use object::endian::{LittleEndian as LE, U16, U32, U64};
use object::pod::Pod;

use super::error::{Error, ErrorKind, Result};
use super::image_target::{ImageTarget, Producer};

/// The magic, as stored (little-endian `0xba55ed50`).
pub const MAGIC: [u8; 4] = [0x50, 0xed, 0x55, 0xba];

/// The fixed part of a fat binary's header.
#[derive(Debug, Clone, Copy)]
#[repr(C)]
pub struct Header {
    /// [`MAGIC`].
    pub magic: U32<LE>,
    /// The format version.
    pub version: U16<LE>,
    /// The size of the header, this fixed part included.
    pub header_size: U16<LE>,
    /// The size of what follows the header.
    pub fat_size: U64<LE>,
}

// SAFETY: plain data of unaligned integer fields, no padding.
unsafe impl Pod for Header {}

/// The size of [`Header`].
const FIXED: usize = std::mem::size_of::<Header>();

/// What a whole fat binary is for: CUDA, for NVPTX; its entries carry their own SM versions.
pub fn image_target() -> ImageTarget {
    ImageTarget {
        producer: Producer::Cuda,
        triple: "nvptx64-nvidia-cuda".to_string(),
        target_id: String::new(),
    }
}

/// Whether `data` starts with a fat binary's magic.
pub fn is_fatbin(data: &[u8]) -> bool {
    data.starts_with(&MAGIC)
}

/// The bytes the fat binary at the start of `data` occupies: its header and what follows.
pub fn size(data: &[u8]) -> Result<u64> {
    let (header, _) = object::pod::from_bytes::<Header>(data).map_err(|()| {
        Error::new(
            0,
            ErrorKind::FatbinHeaderTooShort {
                size: data.len() as u64,
                fixed: FIXED as u64,
            },
        )
    })?;
    let header_size = u64::from(header.header_size.get(LE));
    let fat_size = header.fat_size.get(LE);
    if header_size < FIXED as u64 {
        return Err(Error::new(
            6,
            ErrorKind::FatbinHeaderTooShort {
                size: header_size,
                fixed: FIXED as u64,
            },
        ));
    }
    header_size
        .checked_add(fat_size)
        .filter(|&end| end <= data.len() as u64)
        .ok_or_else(|| {
            Error::new(
                0,
                ErrorKind::FatbinPastEnd {
                    size: fat_size,
                    header: header_size,
                },
            )
        })
}

/// The fat binaries in `data`, one after another, each aligned to 8 bytes: the offset and
/// bytes of each. The walk stops where no magic follows; a damaged one is an error at its
/// offset, and ends the walk.
pub fn split(data: &[u8]) -> impl Iterator<Item = Result<(usize, &[u8])>> {
    let mut pos = 0usize;
    let mut failed = false;
    std::iter::from_fn(move || {
        // Fewer bytes than a header, magic or not, end the walk as padding would.
        let here = data
            .get(pos..)
            .filter(|d| !failed && is_fatbin(d) && d.len() >= FIXED)?;
        // The size is checked against the bytes there, so it fits in a usize.
        match size(here).map(|size| usize::try_from(size).unwrap_or(usize::MAX)) {
            Ok(size) => {
                let start = pos;
                let bytes = here.get(..size)?;
                pos = (start + size).next_multiple_of(8);
                Some(Ok((start, bytes)))
            }
            Err(e) => {
                failed = true;
                Some(Err(e.rebased(pos as u64)))
            }
        }
    })
}

#[cfg(test)]
#[allow(clippy::indexing_slicing, clippy::cast_possible_truncation)]
mod tests {
    use super::*;

    fn fatbin(payload: usize) -> Vec<u8> {
        let mut out = MAGIC.to_vec();
        out.extend_from_slice(&1u16.to_le_bytes());
        out.extend_from_slice(&16u16.to_le_bytes());
        out.extend_from_slice(&(payload as u64).to_le_bytes());
        out.resize(16 + payload, 0xcc);
        out
    }

    #[test]
    fn fat_binaries_one_after_another_are_split_on_8_byte_boundaries() {
        let mut data = fatbin(5);
        data.resize(24, 0);
        data.extend(fatbin(8));
        let found: Vec<(usize, usize)> = split(&data)
            .map(|r| r.map(|(at, bytes)| (at, bytes.len())).unwrap())
            .collect();
        assert_eq!(found, [(0, 21), (24, 24)]);
    }

    #[test]
    fn damage_is_an_error_at_its_offset() {
        let mut short = fatbin(4);
        short[6] = 8;
        let e = size(&short).unwrap_err();
        assert_eq!(e.offset, 6);
        assert!(e.to_string().contains("header of 8 bytes"), "{e}");
        let mut long = fatbin(4);
        long[8] = 200;
        let e = split(&long).next().unwrap().unwrap_err();
        assert!(e.to_string().contains("runs past the end"), "{e}");
        assert!(size(&MAGIC).is_err());
    }
}
