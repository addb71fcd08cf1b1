//! Which image of one place's offload binaries (`.llvm.offloading`) a device loads, and
//! which code object `hipModuleLoad` builds for it.
//!
//! The OpenMP runtime (libomptarget, LLVM 21 and later) gives each device the first image, in
//! stored order, it is compatible with: the same processor with each feature the image sets
//! set alike, or a generic target that covers the processor; there is no preference for
//! native code. LLVM bitcode a program registers is compatible with every AMDGPU device and
//! compiled for it when loaded. (LLVM 19 and 20 took the last compatible image, and LLVM 19
//! no generic one.) The images of objects and archives are link inputs: the link gives each
//! device the one for its processor, and HIP's become one bundle, loaded by the HIP runtime's
//! rule ([`crate::loads::hip`]).
//!
//! # Example
//!
//! The OpenMP runtime gives a device the first image it is compatible with; the HIP runtime's
//! rule prefers native code.
//!
//! ```
//! use offload::loads::openmp::{self, Image};
//! use offload::loads::via::Via;
//! use offload::target::target_id::TargetId;
//!
//! let unit = [
//!     Image { target_id: TargetId::parse_syntax("gfx90a:xnack-"), jit: false },
//!     Image { target_id: TargetId::parse_syntax("gfx9-4-generic"), jit: false },
//!     Image { target_id: TargetId::parse_syntax("gfx942"), jit: false },
//! ];
//! let gfx942 = TargetId::parse_syntax("gfx942").unwrap();
//! assert_eq!(openmp::pick(&gfx942, &unit, true), Some((1, Via::Generic)));
//! assert_eq!(openmp::pick(&gfx942, &unit, false), Some((2, Via::Native)));
//! let gfx90a = TargetId::parse_syntax("gfx90a:xnack+").unwrap();
//! assert_eq!(openmp::pick(&gfx90a, &unit, true), None);
//! ```

use crate::loads::hip::{self, Via};
use crate::target::target_id::TargetId;

/// One AMDGPU image of an offload binary, as the rules read it.
#[derive(Debug, Clone)]
pub struct Image<'a> {
    /// Its target ID (`arch`), `None` when it does not parse.
    pub target_id: Option<TargetId<'a>>,
    /// Whether it is bitcode a program registers, which the runtime compiles when loaded.
    pub jit: bool,
}

/// The image of `unit` (one place's images, in stored order) `device` loads, and how: by the
/// OpenMP runtime's rule when `openmp`, else by the HIP runtime's from the bundle the link
/// makes of them (native, else generic, else SPIR-V). `None`: it loads none.
pub fn pick(device: &TargetId<'_>, unit: &[Image<'_>], openmp: bool) -> Option<(usize, Via)> {
    if !openmp {
        let ids: Vec<Option<TargetId<'_>>> = unit.iter().map(|i| i.target_id.clone()).collect();
        let loaded = hip::loaded_by(device, &ids);
        let best = *loaded.iter().flatten().min()?;
        return Some((loaded.iter().position(|l| *l == Some(best))?, best));
    }
    unit.iter().enumerate().find_map(|(i, image)| {
        if image.jit {
            return Some((i, Via::Jit));
        }
        builds(device, &image.target_id).map(|via| (i, via))
    })
}

/// Whether `device` takes the code object for `image` as it is (`hipModuleLoad`, or one image
/// the OpenMP runtime is given), and how: the same processor with each feature the code object
/// sets set alike, or a generic target that covers the processor.
pub fn builds(device: &TargetId<'_>, image: &Option<TargetId<'_>>) -> Option<Via> {
    hip::loaded_by(device, std::slice::from_ref(image))
        .into_iter()
        .next()
        .flatten()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn image(id: &str, jit: bool) -> Image<'_> {
        Image {
            target_id: TargetId::parse_syntax(id),
            jit,
        }
    }

    #[test]
    fn openmp_takes_the_first_compatible_image_and_hip_the_best() {
        let device = TargetId::parse_syntax("gfx90a:sramecc+:xnack-").unwrap();
        let unit = [
            image("gfx9-generic", false),
            image("gfx90a:xnack+", false),
            image("gfx90a", false),
        ];
        // gfx9-generic does not cover gfx90a: the first compatible is the last image.
        assert_eq!(pick(&device, &unit, true), Some((2, Via::Native)));
        let gfx906 = TargetId::parse_syntax("gfx906").unwrap();
        assert_eq!(pick(&gfx906, &unit, true), Some((0, Via::Generic)));
        let unit = [image("gfx11-generic", false), image("gfx1100", false)];
        let gfx1100 = TargetId::parse_syntax("gfx1100").unwrap();
        // No preference for native code in OpenMP; the bundle a link makes prefers it.
        assert_eq!(pick(&gfx1100, &unit, true), Some((0, Via::Generic)));
        assert_eq!(pick(&gfx1100, &unit, false), Some((1, Via::Native)));
        // Registered bitcode: any device.
        let unit = [image("gfx906", true)];
        assert_eq!(pick(&gfx1100, &unit, true), Some((0, Via::Jit)));
        assert_eq!(pick(&gfx1100, &[image("gfx906", false)], true), None);
    }
}
