//! The oldest CUDA driver that can use a fat binary's entry: PTX is compiled by the driver
//! when loaded, and a driver compiles only the PTX ISA versions of its own release and
//! before (newer PTX fails with `CUDA_ERROR_UNSUPPORTED_PTX_VERSION`, minor-version
//! compatibility does not extend to it); an entry stored zstd-compressed needs a driver that
//! inflates zstd (CUDA 12.4, R550). The tables are NVIDIA's: the PTX ISA release history (as
//! `cuda-python`'s `get_minimal_required_cuda_ver_from_ptx_ver` carries it) and the CUDA
//! release notes' "CUDA Toolkit and Corresponding Driver Versions" (the Linux x86_64 column,
//! each release's first driver).
//!
//! # Example
//!
//! ```
//! use offload::loads::cuda_driver::{cuda_of_ptx, linux_driver, Version};
//!
//! let cuda = cuda_of_ptx(Version(8, 4)).unwrap();
//! assert_eq!(cuda, Version(12, 4));
//! assert_eq!(linux_driver(cuda), Some("550.54.14"));
//! assert_eq!("12.4".parse::<Version>().unwrap(), Version(12, 4));
//! ```

use std::fmt;
use std::str::FromStr;

/// A `major.minor` version: of a CUDA release, or of the PTX ISA.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct Version(pub u32, pub u32);

impl fmt::Display for Version {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}.{}", self.0, self.1)
    }
}

impl FromStr for Version {
    type Err = String;

    /// `12.4` (a third part, `12.4.1`, is taken and left out: drivers follow the minor).
    fn from_str(text: &str) -> Result<Version, String> {
        let mut parts = text.trim().split('.');
        let number = |part: Option<&str>| part.and_then(|p| p.parse::<u32>().ok());
        let major = number(parts.next());
        let minor = number(parts.next());
        let rest_ok = parts.all(|p| p.parse::<u32>().is_ok());
        match (major, minor) {
            (Some(major), Some(minor)) if rest_ok => Ok(Version(major, minor)),
            _ => Err(format!(
                "'{text}' is not a version: give MAJOR.MINOR (12.4)"
            )),
        }
    }
}

/// PTX ISA version -> the first CUDA release whose driver compiles it. Through 9.1 NVIDIA's
/// table; 9.2 to 9.5 from the releases that introduced them. PTX ISA 8.6 came with CUDA
/// 12.7 (12.6 still wrote 8.5).
const PTX_TO_CUDA: &[(Version, Version)] = &[
    (Version(2, 3), Version(4, 0)),
    (Version(3, 0), Version(4, 1)),
    (Version(3, 1), Version(5, 0)),
    (Version(3, 2), Version(5, 5)),
    (Version(4, 0), Version(6, 0)),
    (Version(4, 1), Version(6, 5)),
    (Version(4, 2), Version(7, 0)),
    (Version(4, 3), Version(7, 5)),
    (Version(5, 0), Version(8, 0)),
    (Version(6, 0), Version(9, 0)),
    (Version(6, 1), Version(9, 1)),
    (Version(6, 2), Version(9, 2)),
    (Version(6, 3), Version(10, 0)),
    (Version(6, 4), Version(10, 1)),
    (Version(6, 5), Version(10, 2)),
    (Version(7, 0), Version(11, 0)),
    (Version(7, 1), Version(11, 1)),
    (Version(7, 2), Version(11, 2)),
    (Version(7, 3), Version(11, 3)),
    (Version(7, 4), Version(11, 4)),
    (Version(7, 5), Version(11, 5)),
    (Version(7, 6), Version(11, 6)),
    (Version(7, 7), Version(11, 7)),
    (Version(7, 8), Version(11, 8)),
    (Version(8, 0), Version(12, 0)),
    (Version(8, 1), Version(12, 1)),
    (Version(8, 2), Version(12, 2)),
    (Version(8, 3), Version(12, 3)),
    (Version(8, 4), Version(12, 4)),
    (Version(8, 5), Version(12, 5)),
    (Version(8, 6), Version(12, 7)),
    (Version(8, 7), Version(12, 8)),
    (Version(8, 8), Version(12, 9)),
    (Version(9, 0), Version(13, 0)),
    (Version(9, 1), Version(13, 1)),
    (Version(9, 2), Version(13, 2)),
    (Version(9, 3), Version(13, 3)),
    (Version(9, 4), Version(13, 4)),
    (Version(9, 5), Version(13, 5)),
];

/// CUDA release -> the first Linux x86_64 driver of its first (`.0`) version. CUDA 12.7 was
/// never released: its PTX ISA (8.6) needs the driver of 12.8.
const CUDA_TO_LINUX: &[(Version, &str)] = &[
    (Version(9, 0), "384.81"),
    (Version(9, 1), "390.46"),
    (Version(9, 2), "396.26"),
    (Version(10, 0), "410.48"),
    (Version(10, 1), "418.39"),
    (Version(10, 2), "440.33"),
    (Version(11, 0), "450.51.05"),
    (Version(11, 1), "455.23"),
    (Version(11, 2), "460.27.03"),
    (Version(11, 3), "465.19.01"),
    (Version(11, 4), "470.42.01"),
    (Version(11, 5), "495.29.05"),
    (Version(11, 6), "510.39.01"),
    (Version(11, 7), "515.43.04"),
    (Version(11, 8), "520.61.05"),
    (Version(12, 0), "525.60.13"),
    (Version(12, 1), "530.30.02"),
    (Version(12, 2), "535.54.03"),
    (Version(12, 3), "545.23.06"),
    (Version(12, 4), "550.54.14"),
    (Version(12, 5), "555.42.02"),
    (Version(12, 6), "560.28.03"),
    (Version(12, 7), "570.26"),
    (Version(12, 8), "570.26"),
    (Version(12, 9), "575.51.03"),
    (Version(13, 0), "580.65.06"),
    (Version(13, 1), "590.44.01"),
    (Version(13, 2), "595.45.04"),
    (Version(13, 3), "610.43.02"),
];

/// The CUDA release whose driver first inflates zstd-compressed fat binary entries (flag
/// `0x8000`, what `nvcc --compress-mode=size` or `balance` writes): R550. Entries compressed
/// the older way (flags `0x1000`, `0x2000`) ask nothing newer of a driver.
pub const ZSTD_CUDA: Version = Version(12, 4);

/// The first CUDA release whose driver compiles PTX of ISA version `ptx`; `None` for a
/// version the table does not know (newer than any release it knows, or never released).
pub fn cuda_of_ptx(ptx: Version) -> Option<Version> {
    PTX_TO_CUDA
        .iter()
        .find(|(isa, _)| *isa == ptx)
        .map(|&(_, cuda)| cuda)
}

/// The first Linux driver of CUDA release `cuda`, when the table knows it.
pub fn linux_driver(cuda: Version) -> Option<&'static str> {
    CUDA_TO_LINUX
        .iter()
        .find(|(release, _)| *release == cuda)
        .map(|&(_, driver)| driver)
}

/// The PTX ISA version a PTX text declares (`.version 8.5`), from its first `.version`
/// directive.
pub fn ptx_text_version(text: &[u8]) -> Option<Version> {
    let at = text.windows(8).position(|w| w == b".version")?;
    let rest = text.get(at + 8..)?;
    let rest = &rest[..rest.len().min(32)];
    let line = rest.split(|&b| b == b'\n').next()?;
    std::str::from_utf8(line).ok()?.trim().parse().ok()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ptx_versions() {
        assert_eq!(cuda_of_ptx(Version(8, 6)), Some(Version(12, 7)));
        assert_eq!(cuda_of_ptx(Version(9, 0)), Some(Version(13, 0)));
        assert_eq!(cuda_of_ptx(Version(9, 9)), None);
        assert_eq!(linux_driver(Version(13, 5)), None);
        assert_eq!(
            ptx_text_version(b"//\n.version 9.5\n.target sm_90\n"),
            Some(Version(9, 5))
        );
        assert_eq!(ptx_text_version(b".version"), None);
        assert!("12".parse::<Version>().is_err());
        assert_eq!("13.0.1".parse::<Version>(), Ok(Version(13, 0)));
    }
}
