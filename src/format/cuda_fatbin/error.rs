//! What can be wrong in the entries of a CUDA fat binary.
//!
//! # Example
//!
//! An entry that claims more bytes than its fat binary holds.
//!
//! ```
//! use offload::format::cuda_fatbin::{self, CudaError};
//! use offload::format::ErrorKind;
//!
//! let mut entry = vec![0u8; 64];
//! entry[..2].copy_from_slice(&2u16.to_le_bytes()); // a cubin
//! entry[4..8].copy_from_slice(&64u32.to_le_bytes()); // header size
//! entry[8..16].copy_from_slice(&1000u64.to_le_bytes()); // payload size: past the end
//! let mut fatbin = cuda_fatbin::MAGIC.to_vec();
//! fatbin.extend(1u16.to_le_bytes());
//! fatbin.extend(16u16.to_le_bytes());
//! fatbin.extend((entry.len() as u64).to_le_bytes());
//! fatbin.extend(&entry);
//!
//! let error = cuda_fatbin::entries(&fatbin).next().unwrap().unwrap_err();
//! assert_eq!(
//!     error.kind,
//!     ErrorKind::Cuda(CudaError::EntryPastEnd { size: 1000, available: 0 })
//! );
//! assert_eq!(error.offset, 16 + 8);
//! ```

/// What is wrong with a CUDA fat binary's entries.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum CudaError {
    /// Fewer bytes than an entry's fixed header.
    #[error("CUDA fat binary entry of {available} bytes, shorter than its {needed}-byte header")]
    EntryTruncated {
        /// The fixed header's size.
        needed: u64,
        /// The bytes there are.
        available: u64,
    },
    /// An entry header smaller than its fixed part.
    #[error("CUDA fat binary entry header of {size} bytes, shorter than its 64 fixed bytes")]
    EntryHeaderTooShort {
        /// The size it gives.
        size: u64,
    },
    /// An entry's payload runs past the end of its fat binary.
    #[error(
        "CUDA fat binary entry payload of {size} bytes runs past the end of its fat \
         binary ({available} bytes left)"
    )]
    EntryPastEnd {
        /// The payload size it gives.
        size: u64,
        /// The bytes left after its header.
        available: u64,
    },
    /// A compressed payload inflates to a size other than its header's.
    #[error("CUDA fat binary entry inflates to {actual} bytes, but its header says {declared}")]
    InflatedSize {
        /// What the header says.
        declared: u64,
        /// What it inflated to (or would at least).
        actual: u64,
    },
    /// An LZ-compressed payload is damaged.
    #[error("CUDA fat binary entry's compressed payload is damaged: {0}")]
    LzDamaged(&'static str),
}
