//! What can be wrong in the entries of a CUDA fat binary.

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
