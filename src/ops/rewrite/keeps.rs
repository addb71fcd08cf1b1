//! Which images of one translation unit a strip keeps ([`RewriteConfig::keeps`]): what the
//! change asks (a kept device's images, as `loads::hip` says it loads them; of a CUDA fat
//! binary's cubins, only those the driver loads), then CUDA PTX as `--ptx` says.

use crate::format::bare::BareKind;
use crate::format::cuda_fatbin::EntryKind;
use crate::format::image_target::{ImageTarget, Producer};
use crate::loads::cuda;
use crate::loads::hip::{loaded_by, Via};
use crate::ops::rewrite::{Change, Ptx, RewriteConfig};
use crate::target::target_id::{TargetId, TargetIdBuf};

impl RewriteConfig {
    /// Which images of one translation unit stay: as the change asks, then CUDA PTX as
    /// [`RewriteConfig::ptx`] says. A bare image that names no processor (SPIR-V, bitcode:
    /// compiled for whichever device takes it) always stays.
    pub fn keeps(&self, unit: &[ImageTarget]) -> Vec<bool> {
        let mut keep = self.keeps_asked(unit);
        for (k, image) in keep.iter_mut().zip(unit) {
            *k |= matches!(image.producer, Producer::Bare(_)) && image.target_id.is_empty();
        }
        let ptx = match (&self.change, self.ptx) {
            (Change::Keep(_) | Change::Remove(_), Ptx::Keep) => true,
            (Change::Keep(_) | Change::Remove(_), Ptx::Drop) => false,
            _ => return keep,
        };
        for (k, image) in keep.iter_mut().zip(unit) {
            let cuda = matches!(
                image.producer,
                Producer::Cuda | Producer::Bare(BareKind::Ptx)
            );
            if cuda && cuda::is_ptx_target(&image.target_id) {
                *k = ptx;
            }
        }
        keep
    }

    /// Which images of one translation unit the change itself keeps.
    fn keeps_asked(&self, unit: &[ImageTarget]) -> Vec<bool> {
        let ids: Vec<Option<TargetId<'_>>> = unit.iter().map(ImageTarget::target_id).collect();
        let loaded = |asked: &TargetIdBuf| loaded_by(&asked.target_id(), &ids);
        match &self.change {
            Change::Keep(asked) => {
                let mut keep = vec![false; unit.len()];
                for q in asked {
                    let mut vias = loaded(q);
                    if cuda::is_cuda_target(q.target_id().processor) {
                        closest_cubins(unit, &mut vias);
                    }
                    for (k, via) in keep.iter_mut().zip(vias) {
                        *k |= via.is_some();
                    }
                }
                keep
            }
            Change::Remove(asked) => {
                let mut keep = vec![true; unit.len()];
                for q in asked {
                    for (k, via) in keep.iter_mut().zip(loaded(q)) {
                        *k &= via != Some(Via::Native);
                    }
                }
                keep
            }
            Change::Compress(_) | Change::CompressPlain(_) | Change::Decompress => {
                vec![true; unit.len()]
            }
        }
    }
}

/// Of the cubins a CUDA device runs in one fat binary (`vias`, by image of `unit`), keeps only
/// those the driver loads: the closest SM to the device (the highest minor version not above
/// its own, every variant of it: `sm_90` and `sm_90a` alike); a device of 8.9 given sm_80 and
/// sm_86 runs sm_86, and sm_80 goes. The PTX it may compile stays.
pub(super) fn closest_cubins(unit: &[ImageTarget], vias: &mut [Option<Via>]) {
    let cubin_sm = |image: Option<&ImageTarget>| match cuda::target_of_name(&image?.target_id)? {
        (EntryKind::Elf, sm) => Some((sm.major, sm.minor)),
        _ => None,
    };
    let closest = vias
        .iter()
        .enumerate()
        .filter(|(_, via)| via.is_some())
        .filter_map(|(k, _)| cubin_sm(unit.get(k)))
        .max();
    for (k, via) in vias.iter_mut().enumerate() {
        if let (Some(sm), Some(closest)) = (cubin_sm(unit.get(k)), closest) {
            if sm < closest {
                *via = None;
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Which images of a fat binary of `names` a strip keeping `kept` keeps.
    fn kept(kept: &[&str], names: &[&str], ptx: Ptx) -> Vec<bool> {
        let config = RewriteConfig {
            change: Change::Keep(kept.iter().map(|k| k.parse().unwrap()).collect()),
            allow_empty: false,
            max_decompressed: u64::MAX,
            ptx,
        };
        let unit: Vec<ImageTarget> = names
            .iter()
            .map(|name| ImageTarget {
                producer: Producer::Cuda,
                triple: "nvptx64-nvidia-cuda".into(),
                target_id: (*name).into(),
            })
            .collect();
        config.keeps(&unit)
    }

    #[test]
    fn a_kept_cuda_device_keeps_the_cubins_the_driver_loads() {
        let unit = ["sm_80", "sm_86", "sm_90", "sm_90a", "compute_90"];
        let (t, f) = (true, false);
        let asked = Ptx::AsAsked;
        assert_eq!(kept(&["sm_89"], &unit, asked), [f, t, f, f, f]);
        assert_eq!(kept(&["sm_80"], &unit, asked), [t, f, f, f, f]);
        assert_eq!(kept(&["sm_90"], &unit, asked), [f, f, t, t, t]);
        assert_eq!(kept(&["sm_80", "sm_86"], &unit, asked), [t, t, f, f, f]);
        assert_eq!(kept(&["sm_120"], &unit, asked), [f, f, f, f, t]);
        assert_eq!(kept(&["sm_89"], &unit, Ptx::Keep), [f, t, f, f, t]);
        assert_eq!(kept(&["sm_90"], &unit, Ptx::Drop), [f, f, t, t, f]);
        // Only sm_80 of major 8: an 8.9 device runs it.
        assert_eq!(kept(&["sm_89"], &["sm_80", "sm_90"], asked), [t, f]);
    }
}
