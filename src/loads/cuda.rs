//! Which CUDA code a device of a given compute capability runs, as NVIDIA documents it (CUDA
//! Programming Guide, "Binary Compatibility" and "PTX Compatibility"; nvcc's guide on
//! arch-specific and family-specific targets):
//! - a cubin for `sm_XY` runs on devices of compute capability X.Z with Z >= Y, never across a
//!   major version;
//! - a family cubin (`sm_XYf`, CUDA 12.9 on) runs on the same devices as `sm_XY`, the family
//!   being the major version;
//! - an arch-specific cubin (`sm_XYa`, CUDA 12.0 on) runs on X.Y alone;
//! - PTX for `compute_XY` is compiled by the driver for any device of X.Y or later, across
//!   major versions; `compute_XYf` PTX within its major version; `compute_XYa` PTX on X.Y
//!   alone.
//!
//! The driver's choice among them ([`driver_pick`]) is not documented beyond "a compatible
//! cubin, else PTX compiled at load time": we take the cubin closest to the device (the
//! highest minor version not above it; at equal SM, arch-specific before family before
//! plain, the most specific first), else the newest PTX that may run. That order is ours,
//! stated where it is used.
//!
//! # Example
//!
//! What the CUDA driver loads from a fat binary of a cubin for sm_80 and PTX for compute_90.
//!
//! ```
//! use offload::loads::cuda::{self, Sm, Variant};
//! use offload::loads::via::Via;
//!
//! let unit = ["sm_80", "compute_90"];
//! // An sm_89 runs the sm_80 cubin; an sm_90 cannot, and compiles the PTX.
//! assert_eq!(cuda::driver_load("sm_89", &unit), Some((0, Via::Forward)));
//! assert_eq!(cuda::driver_load("sm_90", &unit), Some((1, Via::Ptx)));
//! // An sm_75 runs neither.
//! assert_eq!(cuda::driver_load("sm_75", &unit), None);
//!
//! assert_eq!(Sm::parse("sm_90a"), Some(Sm { major: 9, minor: 0, variant: Variant::ArchSpecific }));
//! assert!(cuda::is_cuda_target("sm_80") && !cuda::is_cuda_target("gfx90a"));
//! ```

use std::fmt;

use crate::format::cuda_fatbin::{Entry, EntryKind};
use crate::loads::via::Via;

/// How far an SM's code reaches beyond its own SM.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub enum Variant {
    /// Later minor versions (and, for PTX, later major versions): `sm_80`.
    Plain,
    /// Later minor versions of the same major version: `sm_100f`.
    Family,
    /// This SM alone: `sm_90a`.
    ArchSpecific,
}

/// A compute capability, as an SM name gives it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Sm {
    /// The major version (10 for `sm_100`).
    pub major: u32,
    /// The minor version (3 for `sm_103`).
    pub minor: u32,
    /// What its code reaches.
    pub variant: Variant,
}

impl Sm {
    /// The SM of an entry of a fat binary.
    pub fn of_entry(entry: &Entry<'_>) -> Sm {
        let variant = match entry.sm().chars().last() {
            Some('a') => Variant::ArchSpecific,
            Some('f') => Variant::Family,
            _ => Variant::Plain,
        };
        Sm::from_number(entry.arch, variant)
    }

    /// The SM with number `number` (86 for 8.6, 100 for 10.0).
    pub fn from_number(number: u32, variant: Variant) -> Sm {
        Sm {
            major: number / 10,
            minor: number % 10,
            variant,
        }
    }

    /// Parses `sm_86`, `sm_90a`, `sm_100f`, `compute_90` or `8.6`; `None` for anything else.
    pub fn parse(text: &str) -> Option<Sm> {
        if let Some((major, minor)) = text.split_once('.') {
            let (major, minor) = (major.parse().ok()?, minor.parse::<u32>().ok()?);
            return (minor < 10).then_some(Sm {
                major,
                minor,
                variant: Variant::Plain,
            });
        }
        let rest = text
            .strip_prefix("sm_")
            .or_else(|| text.strip_prefix("compute_"))?;
        let (digits, variant) = match rest.strip_suffix('a') {
            Some(digits) => (digits, Variant::ArchSpecific),
            None => match rest.strip_suffix('f') {
                Some(digits) => (digits, Variant::Family),
                None => (rest, Variant::Plain),
            },
        };
        if digits.len() < 2 || !digits.bytes().all(|b| b.is_ascii_digit()) {
            return None;
        }
        Some(Sm::from_number(digits.parse().ok()?, variant))
    }

    /// Whether code of `kind` for this SM runs on `device` (a compute capability: its variant
    /// is not asked).
    pub fn runs_on(&self, kind: EntryKind, device: Sm) -> bool {
        let same_major = self.major == device.major;
        match (self.variant, kind) {
            (Variant::ArchSpecific, _) => same_major && self.minor == device.minor,
            (Variant::Family, _) | (Variant::Plain, EntryKind::Elf) => {
                same_major && self.minor <= device.minor
            }
            (Variant::Plain, EntryKind::Ptx) => {
                (self.major, self.minor) <= (device.major, device.minor)
            }
            (Variant::Plain, EntryKind::Other(_)) => false,
        }
    }
}

impl fmt::Display for Sm {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let suffix = match self.variant {
            Variant::Plain => "",
            Variant::Family => "f",
            Variant::ArchSpecific => "a",
        };
        write!(f, "sm_{}{suffix}", self.major * 10 + self.minor)
    }
}

/// What a CUDA target name stands for: the kind of code (`sm_XX`: a cubin, `compute_XX`: PTX)
/// and its SM. `None` for a name of no CUDA target.
pub fn target_of_name(name: &str) -> Option<(EntryKind, Sm)> {
    let kind = if name.starts_with("sm_") {
        EntryKind::Elf
    } else if name.starts_with("compute_") {
        EntryKind::Ptx
    } else {
        return None;
    };
    Some((kind, Sm::parse(name)?))
}

/// Whether `name` is a CUDA target's (`sm_80`, `compute_90a`).
pub fn is_cuda_target(name: &str) -> bool {
    target_of_name(name).is_some()
}

/// Whether `name` is the target of PTX (`compute_90`).
pub fn is_ptx_target(name: &str) -> bool {
    matches!(target_of_name(name), Some((EntryKind::Ptx, _)))
}

/// For each image of one fat binary (its target name: `sm_80`, `compute_90`; `None` for
/// images of no CUDA target), whether the device `device` runs it, and how. A device named
/// `sm_XY` (a compute capability; an `a` or `f` it carries is not asked) runs the cubins for
/// its own SM ([`Via::Native`]), those of earlier SMs it runs ([`Via::Forward`]) and the PTX
/// it may compile ([`Via::Ptx`]); one named `compute_XY` stands for that PTX alone. `None` when
/// `device` is no CUDA target.
pub fn loaded_by(device: &str, unit: &[Option<&str>]) -> Option<Vec<Option<Via>>> {
    let (device_kind, device_sm) = target_of_name(device)?;
    Some(
        unit.iter()
            .map(|image| {
                let (kind, sm) = target_of_name((*image)?)?;
                let same = (sm.major, sm.minor) == (device_sm.major, device_sm.minor);
                match (device_kind, kind) {
                    (EntryKind::Ptx, EntryKind::Ptx) => {
                        (same && sm.variant == device_sm.variant).then_some(Via::Native)
                    }
                    (EntryKind::Elf, _) if !sm.runs_on(kind, device_sm) => None,
                    (EntryKind::Elf, EntryKind::Elf) if same => Some(Via::Native),
                    (EntryKind::Elf, EntryKind::Elf) => Some(Via::Forward),
                    (EntryKind::Elf, EntryKind::Ptx) => Some(Via::Ptx),
                    _ => None,
                }
            })
            .collect(),
    )
}

/// What the driver loads on the device named `device` (`sm_89`) from one fat binary whose
/// entries have the target names `unit` (`sm_80`, `compute_90`), in order: the index of the
/// entry ([`driver_pick`]) and how the device runs it. `None` when the device runs nothing
/// there, or `device` or an entry is no CUDA target.
pub fn driver_load(device: &str, unit: &[&str]) -> Option<(usize, Via)> {
    let (_, sm) = target_of_name(device)?;
    let targets: Vec<(EntryKind, Sm)> = unit
        .iter()
        .map(|name| target_of_name(name))
        .collect::<Option<_>>()?;
    let pick = driver_pick(&targets, sm)?;
    let via = loaded_by(device, &[unit.get(pick).copied()])?
        .first()
        .copied()
        .flatten()?;
    Some((pick, via))
}

/// The entries (by their index in `entries`, with their kind and SM) a device of `device`'s
/// compute capability may run.
pub fn runnable(entries: &[(EntryKind, Sm)], device: Sm) -> Vec<usize> {
    entries
        .iter()
        .enumerate()
        .filter(|(_, (kind, sm))| sm.runs_on(*kind, device))
        .map(|(k, _)| k)
        .collect()
}

/// The entry the driver loads on `device`: the cubin closest to it (highest minor version
/// not above the device's; at the same SM the most specific), else the newest PTX that may
/// run (compiled at load time); `None` when nothing runs. Ties go to the first in order.
pub fn driver_pick(entries: &[(EntryKind, Sm)], device: Sm) -> Option<usize> {
    let best_of = |wanted: EntryKind| {
        entries
            .iter()
            .enumerate()
            .filter(|(_, (kind, sm))| *kind == wanted && sm.runs_on(*kind, device))
            // max_by_key keeps the last of equals: reversed, the first in order.
            .rev()
            .max_by_key(|(_, (_, sm))| (sm.major, sm.minor, sm.variant))
            .map(|(k, _)| k)
    };
    best_of(EntryKind::Elf).or_else(|| best_of(EntryKind::Ptx))
}

#[cfg(test)]
#[allow(clippy::indexing_slicing)]
mod tests {
    use super::*;

    fn sm(text: &str) -> Sm {
        Sm::parse(text).unwrap()
    }

    #[test]
    fn names_parse_and_print_back() {
        for name in ["sm_80", "sm_90a", "sm_100f", "sm_121"] {
            assert_eq!(sm(name).to_string(), name);
        }
        assert_eq!(sm("8.6"), sm("sm_86"));
        assert_eq!(sm("compute_90"), sm("sm_90"));
        for bad in ["sm_8", "sm_", "gfx90a", "sm_90x", "8.10", "sm_9a0"] {
            assert_eq!(Sm::parse(bad), None, "{bad}");
        }
    }

    #[test]
    fn cubins_run_within_their_major_version_and_ptx_forward() {
        let elf = EntryKind::Elf;
        let ptx = EntryKind::Ptx;
        assert!(sm("sm_80").runs_on(elf, sm("8.6")));
        assert!(!sm("sm_86").runs_on(elf, sm("8.0")));
        assert!(!sm("sm_80").runs_on(elf, sm("9.0")));
        assert!(sm("sm_90a").runs_on(elf, sm("9.0")));
        assert!(!sm("sm_100a").runs_on(elf, sm("10.3")));
        assert!(sm("sm_100f").runs_on(elf, sm("10.3")));
        assert!(!sm("sm_100f").runs_on(elf, sm("12.0")));
        assert!(sm("compute_80").runs_on(ptx, sm("12.0")));
        assert!(!sm("compute_90").runs_on(ptx, sm("8.9")));
        assert!(!sm("compute_100f").runs_on(ptx, sm("12.0")));
        assert!(!sm("compute_90a").runs_on(ptx, sm("10.0")));
    }

    #[test]
    fn the_driver_takes_the_closest_cubin_else_the_newest_ptx() {
        let elf = EntryKind::Elf;
        let ptx = EntryKind::Ptx;
        let entries = [
            (elf, sm("sm_80")),
            (elf, sm("sm_86")),
            (ptx, sm("compute_80")),
            (elf, sm("sm_90")),
            (elf, sm("sm_90a")),
            (ptx, sm("compute_90")),
        ];
        assert_eq!(driver_pick(&entries, sm("8.9")), Some(1));
        assert_eq!(driver_pick(&entries, sm("8.0")), Some(0));
        assert_eq!(driver_pick(&entries, sm("9.0")), Some(4));
        assert_eq!(driver_pick(&entries, sm("12.0")), Some(5));
        assert_eq!(driver_pick(&entries, sm("7.5")), None);
        assert_eq!(runnable(&entries, sm("8.6")), [0, 1, 2]);
    }

    #[test]
    fn a_device_runs_its_own_cubins_earlier_ones_and_ptx() {
        let unit = [
            Some("sm_80"),
            Some("sm_86"),
            Some("compute_80"),
            Some("sm_90a"),
            Some("compute_90"),
            Some("gfx90a"),
            None,
        ];
        let (n, f, p) = (Some(Via::Native), Some(Via::Forward), Some(Via::Ptx));
        assert_eq!(
            loaded_by("sm_86", &unit).unwrap(),
            [f, n, p, None, None, None, None]
        );
        assert_eq!(
            loaded_by("sm_90", &unit).unwrap(),
            [None, None, p, n, p, None, None]
        );
        assert_eq!(
            loaded_by("compute_90", &unit).unwrap(),
            [None, None, None, None, n, None, None]
        );
        assert_eq!(loaded_by("gfx90a", &unit), None);
        assert!(is_ptx_target("compute_90a") && !is_ptx_target("sm_90"));
        assert!(is_cuda_target("sm_100f") && !is_cuda_target("gfx1100"));
    }
}
