//! Where the HIP wrappers of a `.hipFatBinSegment` are. A plain build stores them back to back,
//! 24 bytes each; a host built with AddressSanitizer pads each global to its own 64-byte block,
//! the wrapper first and a zero redzone after it, so the runtime's `&__hip_fatbin_wrapper`
//! lands on every 64th byte.
//!
//! # Example
//!
//! Two HIP wrappers back to back, then the same two as AddressSanitizer pads them.
//!
//! ```
//! use offload::format::kpack::wrapper::ASAN_WRAPPER_STRIDE;
//! use offload::format::kpack::{HipWrapper, HIPF_MAGIC};
//!
//! let mut wrapper = HIPF_MAGIC.to_le_bytes().to_vec();
//! wrapper.extend(1u32.to_le_bytes());
//! wrapper.resize(24, 0);
//!
//! let plain = [wrapper.clone(), wrapper.clone()].concat();
//! assert_eq!(HipWrapper::offsets(&plain), [0, 24]);
//!
//! let mut padded = wrapper.clone();
//! padded.resize(ASAN_WRAPPER_STRIDE, 0);
//! padded.extend(&wrapper);
//! padded.resize(2 * ASAN_WRAPPER_STRIDE, 0);
//! assert_eq!(HipWrapper::stride(&padded), 64);
//! assert_eq!(HipWrapper::offsets(&padded), [0, 64]);
//! ```

use crate::format::kpack::{HipWrapper, HIPF_MAGIC, HIPK_MAGIC};

/// The block AddressSanitizer gives each wrapper: the wrapper, then its redzone.
pub const ASAN_WRAPPER_STRIDE: usize = 64;

impl HipWrapper {
    /// The distance between the wrappers of the section `bytes`: 24 when they are back to
    /// back, [`ASAN_WRAPPER_STRIDE`] when the section is a whole number of 64-byte blocks
    /// each holding a wrapper (`HIPF` or `HIPK`) followed by zeros and is not read as well as
    /// back-to-back wrappers. Anything else is read as back to back, so that a damaged
    /// wrapper is reported where it is.
    pub fn stride(bytes: &[u8]) -> usize {
        if back_to_back(bytes) || !padded(bytes) {
            HipWrapper::SIZE
        } else {
            ASAN_WRAPPER_STRIDE
        }
    }

    /// The offset of each wrapper in the section `bytes`, in order (see [`HipWrapper::stride`]).
    pub fn offsets(bytes: &[u8]) -> Vec<usize> {
        let stride = HipWrapper::stride(bytes);
        (0..bytes.len() / stride).map(|k| k * stride).collect()
    }
}

fn has_wrapper_magic(block: &[u8]) -> bool {
    block
        .get(..4)
        .and_then(|m| m.try_into().ok())
        .map(u32::from_le_bytes)
        .is_some_and(|m| m == HIPF_MAGIC || m == HIPK_MAGIC)
}

/// Whether `bytes` is a whole number of wrappers, every one with a wrapper's magic.
fn back_to_back(bytes: &[u8]) -> bool {
    bytes.len() % HipWrapper::SIZE == 0
        && bytes.chunks_exact(HipWrapper::SIZE).all(has_wrapper_magic)
}

/// Whether `bytes` is a whole number (at least one) of 64-byte blocks, each a wrapper and a
/// zero redzone.
fn padded(bytes: &[u8]) -> bool {
    !bytes.is_empty()
        && bytes.len() % ASAN_WRAPPER_STRIDE == 0
        && bytes.chunks_exact(ASAN_WRAPPER_STRIDE).all(|block| {
            has_wrapper_magic(block)
                && block
                    .get(HipWrapper::SIZE..)
                    .is_some_and(|redzone| redzone.iter().all(|&b| b == 0))
        })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn wrapper(magic: u32, pointer: u64) -> Vec<u8> {
        let mut w = magic.to_le_bytes().to_vec();
        w.extend_from_slice(&1u32.to_le_bytes());
        w.extend_from_slice(&pointer.to_le_bytes());
        w.extend_from_slice(&[0; 8]);
        w
    }

    #[test]
    fn padded_wrappers_are_found_every_64_bytes() {
        let mut section = wrapper(HIPF_MAGIC, 0);
        section.resize(64, 0);
        section.extend(wrapper(HIPK_MAGIC, 0x1000));
        section.resize(128, 0);
        assert_eq!(HipWrapper::offsets(&section), [0, 64]);
        // Back to back, 24 bytes apart, whatever their number.
        let plain: Vec<u8> = (0..8).flat_map(|_| wrapper(HIPF_MAGIC, 0)).collect();
        assert_eq!(
            HipWrapper::offsets(&plain),
            [0, 24, 48, 72, 96, 120, 144, 168]
        );
        // A redzone that is not zeros: read back to back, so the damage is reported.
        if let Some(byte) = section.get_mut(100) {
            *byte = 1;
        }
        assert_eq!(HipWrapper::offsets(&section), [0, 24, 48, 72, 96]);
        assert_eq!(HipWrapper::offsets(&[]), Vec::<usize>::new());
    }
}
