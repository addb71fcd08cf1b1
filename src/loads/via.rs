//! How a device comes to load an image: natively, through a generic target, as SPIR-V, or,
//! for CUDA, a cubin of an earlier SM or PTX. The HIP runtime's rules (`hip`) and the CUDA
//! driver's (`cuda`) both answer with it.
//!
//! # Example
//!
//! ```
//! use offload::loads::via::Via;
//!
//! assert_eq!(Via::Generic.name(), "generic");
//! // The order is the preference: native code first, then generic code, then SPIR-V.
//! let mut ways = [Via::Spirv, Via::Native, Via::Generic];
//! ways.sort();
//! assert_eq!(ways, [Via::Native, Via::Generic, Via::Spirv]);
//! ```

/// How a device comes to load an image.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum Via {
    /// The image is for the device's own processor (or is named by what was asked for).
    Native,
    /// The unit has no native code for the device, and the image is for a generic target that
    /// covers its processor.
    Generic,
    /// The unit has neither, and the image is SPIR-V, compiled for the device when loaded.
    Spirv,
    /// A CUDA cubin for an earlier SM of the device's major version, which it runs.
    Forward,
    /// CUDA PTX, compiled for the device when loaded.
    Ptx,
    /// LLVM bitcode a program registers, which the OpenMP runtime compiles for the device when
    /// it loads it.
    Jit,
}

impl Via {
    /// `native`, `generic`, `spirv`, `forward`, `ptx` or `jit`.
    pub fn name(self) -> &'static str {
        match self {
            Via::Native => "native",
            Via::Generic => "generic",
            Via::Spirv => "spirv",
            Via::Forward => "forward",
            Via::Ptx => "ptx",
            Via::Jit => "jit",
        }
    }
}
