//! Which code a device loads from one translation unit, by the HIP runtime's rule: the native
//! code for its processor if the unit has any, else the code of a generic target that covers
//! the processor, else SPIR-V, which the runtime compiles for the device. CUDA devices
//! (`sm_86`) and images follow NVIDIA's rules instead ([`crate::loads::cuda`]).
//!
//! A device named without a feature (`gfx90a`) stands for every device of that processor, with
//! the feature on and off; what each of them loads is taken together. The generic targets that
//! cover a processor are LLVM's and the HIP runtime's (they differ for gfx940 and gfx941): an
//! image either calls covering is counted as loaded, so that keeping what a device loads never
//! drops code some runtime would have used.
//!
//! # Example
//!
//! Which entry of a bundle a gfx1101 loads, from the bundle's entry IDs: the generic code, as
//! there is no native code for it; a gfx1100 loads its own.
//!
//! ```
//! use offload::format::image_target::ImageTarget;
//! use offload::loads::hip::{self, Via};
//! use offload::target::target_id::TargetId;
//!
//! let ids = [
//!     "host-x86_64-unknown-linux-gnu-",
//!     "hipv4-amdgcn-amd-amdhsa--gfx1100",
//!     "hipv4-amdgcn-amd-amdhsa--gfx11-generic",
//!     "hipv4-amdgcn-amd-amdhsa--gfx90a",
//! ];
//! let targets: Vec<ImageTarget> = ids.iter().map(|id| ImageTarget::of_bundle_entry(id)).collect();
//! let unit: Vec<Option<TargetId>> = targets.iter().map(ImageTarget::target_id).collect();
//!
//! let gfx1101 = TargetId::parse_syntax("gfx1101").unwrap();
//! assert_eq!(hip::loaded_by(&gfx1101, &unit), [None, None, Some(Via::Generic), None]);
//! let gfx1100 = TargetId::parse_syntax("gfx1100").unwrap();
//! assert_eq!(hip::loaded_by(&gfx1100, &unit), [None, Some(Via::Native), None, None]);
//! // Before a whole unit is seen: a gfx1101 may load generic code, never gfx1100's.
//! assert!(hip::may_load(&gfx1101, &unit[2].clone().unwrap()));
//! assert!(!hip::may_load(&gfx1101, &unit[1].clone().unwrap()));
//! ```

use crate::loads::cuda;
use crate::target::processor::{Processor, ProcessorKind, SPIRV};
use crate::target::target_id::{FeatureSetting, TargetId};

pub use crate::loads::via::Via;

/// The features whose setting decides what a device loads. A device that leaves one out is
/// taken with it on and with it off.
const DECIDING: [&str; 2] = ["sramecc", "xnack"];

/// For each image of one translation unit (its target ID; `None` for host code and images
/// without one), whether a device named by `device` loads it, and how. A device named by a
/// generic target or `amdgcnspirv` loads exactly the images for it.
pub fn loaded_by(device: &TargetId<'_>, unit: &[Option<TargetId<'_>>]) -> Vec<Option<Via>> {
    // CUDA devices and images, by NVIDIA's rules.
    let names: Vec<Option<&str>> = unit
        .iter()
        .map(|image| image.as_ref().map(|i| i.processor))
        .collect();
    if let Some(loaded) = cuda::loaded_by(device.processor, &names) {
        return loaded;
    }
    let mut loaded = vec![None; unit.len()];
    let device_processor = canonical(device.processor);
    if ProcessorKind::of_name(device_processor) != ProcessorKind::Native {
        for (slot, image) in loaded.iter_mut().zip(unit) {
            if image.as_ref().is_some_and(|image| device.can_load(image)) {
                *slot = Some(Via::Native);
            }
        }
        return loaded;
    }
    for variant in variants(device, unit) {
        let marks = one_device(device_processor, &variant, unit);
        for (slot, mark) in loaded.iter_mut().zip(marks) {
            *slot = match (*slot, mark) {
                (Some(a), Some(b)) => Some(a.min(b)),
                (a, b) => a.or(b),
            };
        }
    }
    loaded
}

/// Whether `device` may load `image` in some translation unit: it can run it natively, or it
/// is code for a generic target or SPIR-V, which a device loads when its unit has no native
/// code for it. The test to pass over an image before its unit is seen whole.
pub fn may_load(device: &TargetId<'_>, image: &TargetId<'_>) -> bool {
    if let Some(loaded) = cuda::loaded_by(device.processor, &[Some(image.processor)]) {
        return loaded.first().is_some_and(Option::is_some);
    }
    device.can_load(image) || ProcessorKind::of_name(image.processor) != ProcessorKind::Native
}

/// What one device, whose deciding features are all set in `features`, loads from `unit`.
fn one_device(
    processor: &str,
    features: &[(&str, FeatureSetting)],
    unit: &[Option<TargetId<'_>>],
) -> Vec<Option<Via>> {
    let for_processor = |name: &str| -> Vec<bool> {
        unit.iter()
            .map(|image| {
                image.as_ref().is_some_and(|image| {
                    canonical(image.processor) == name
                        && image
                            .features
                            .iter()
                            .all(|f| features.iter().any(|d| d == f))
                })
            })
            .collect()
    };
    let mark = |hits: Vec<bool>, via: Via| -> Option<Vec<Option<Via>>> {
        hits.contains(&true)
            .then(|| hits.into_iter().map(|hit| hit.then_some(via)).collect())
    };
    if let Some(marks) = mark(for_processor(processor), Via::Native) {
        return marks;
    }
    let generics = Processor::named(processor)
        .into_iter()
        .flat_map(Processor::covering_generics);
    let mut hits = vec![false; unit.len()];
    for generic in generics {
        for (hit, found) in hits.iter_mut().zip(for_processor(generic)) {
            *hit |= found;
        }
    }
    if let Some(marks) = mark(hits, Via::Generic) {
        return marks;
    }
    let spirv = unit
        .iter()
        .map(|image| image.as_ref().is_some_and(|i| i.processor == SPIRV))
        .collect();
    if processor.starts_with("gfx") {
        if let Some(marks) = mark(spirv, Via::Spirv) {
            return marks;
        }
    }
    vec![None; unit.len()]
}

/// The devices `device` stands for: its features as set, and each deciding feature it leaves
/// out (and some image of the unit sets) both on and off.
fn variants<'a>(
    device: &TargetId<'a>,
    unit: &[Option<TargetId<'_>>],
) -> Vec<Vec<(&'a str, FeatureSetting)>> {
    let open: Vec<&'static str> = DECIDING
        .into_iter()
        .filter(|name| device.feature(name).is_none())
        .filter(|name| {
            unit.iter()
                .flatten()
                .any(|image| image.feature(name).is_some())
        })
        .collect();
    let mut all = vec![device.features.clone()];
    for name in open {
        all = all
            .into_iter()
            .flat_map(|features| {
                [FeatureSetting::On, FeatureSetting::Off].map(|setting| {
                    let mut with = features.clone();
                    with.push((name, setting));
                    with
                })
            })
            .collect();
    }
    all
}

/// The canonical name of a processor the table knows under another name (`fiji` is
/// `gfx803`); any other name as it is.
fn canonical(name: &str) -> &str {
    Processor::named(name).map_or(name, |p| p.name)
}

#[cfg(test)]
#[allow(clippy::indexing_slicing)]
mod tests {
    use super::*;

    /// What `device` loads from a unit of `images`, as the names of the images loaded.
    fn loads(device: &str, images: &[&str]) -> Vec<(String, Via)> {
        let unit: Vec<Option<TargetId<'_>>> =
            images.iter().map(|i| TargetId::parse_syntax(i)).collect();
        let device = TargetId::parse_syntax(device).unwrap();
        loaded_by(&device, &unit)
            .into_iter()
            .zip(images)
            .filter_map(|(via, image)| via.map(|via| (image.to_string(), via)))
            .collect()
    }

    fn v(list: &[(&str, Via)]) -> Vec<(String, Via)> {
        list.iter().map(|(n, via)| (n.to_string(), *via)).collect()
    }

    #[test]
    fn native_code_wins_over_generic_and_spirv() {
        let unit = ["gfx1100", "gfx11-generic", "amdgcnspirv", "gfx90a"];
        assert_eq!(loads("gfx1100", &unit), v(&[("gfx1100", Via::Native)]));
        assert_eq!(
            loads("gfx1101", &unit),
            v(&[("gfx11-generic", Via::Generic)])
        );
        assert_eq!(loads("gfx1030", &unit), v(&[("amdgcnspirv", Via::Spirv)]));
        assert_eq!(
            loads("gfx11-generic", &unit),
            v(&[("gfx11-generic", Via::Native)])
        );
        assert_eq!(
            loads("amdgcnspirv", &unit),
            v(&[("amdgcnspirv", Via::Native)])
        );
        assert_eq!(loads("sm_80", &unit), v(&[]));
        assert_eq!(loads("gfx1399", &unit), v(&[("amdgcnspirv", Via::Spirv)]));
        assert_eq!(
            loads("gfx1399", &["gfx1399:xnack+"]),
            v(&[("gfx1399:xnack+", Via::Native)])
        );
    }

    #[test]
    fn a_device_named_without_a_feature_is_every_setting_of_it() {
        // The xnack-off device finds no native code and takes the generic one.
        let unit = ["gfx942:xnack+", "gfx9-4-generic:xnack-"];
        assert_eq!(
            loads("gfx942", &unit),
            v(&[
                ("gfx942:xnack+", Via::Native),
                ("gfx9-4-generic:xnack-", Via::Generic)
            ])
        );
        assert_eq!(
            loads("gfx942:xnack+", &unit),
            v(&[("gfx942:xnack+", Via::Native)])
        );
        assert_eq!(
            loads("gfx942:xnack-", &unit),
            v(&[("gfx9-4-generic:xnack-", Via::Generic)])
        );
        assert_eq!(
            loads("gfx90a", &["gfx90a:xnack+", "gfx90a:xnack-", "gfx90a"]),
            v(&[
                ("gfx90a:xnack+", Via::Native),
                ("gfx90a:xnack-", Via::Native),
                ("gfx90a", Via::Native)
            ])
        );
        assert_eq!(loads("fiji", &["gfx803"]), v(&[("gfx803", Via::Native)]));
    }

    #[test]
    fn generic_coverage_is_llvms_and_the_runtimes() {
        // LLVM's list has gfx940 under gfx9-4-generic; the HIP runtime's does not: kept.
        assert_eq!(
            loads("gfx940", &["gfx9-4-generic"]),
            v(&[("gfx9-4-generic", Via::Generic)])
        );
        assert_eq!(loads("gfx908", &["gfx9-generic"]), v(&[]));
        assert_eq!(
            loads("gfx906", &["gfx9-generic", "gfx10-1-generic"]),
            v(&[("gfx9-generic", Via::Generic)])
        );
    }
}
