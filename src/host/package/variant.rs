//! Per-architecture variants of CUDA packages: how a wheel or conda package stripped down to
//! some compute capabilities is named and what its metadata says, so that a resolver tells
//! it apart from the fat package and from the other variants.
//!
//! - A wheel's version gets a local version label (PEP 440): `2.15.0` becomes `2.15.0+sm90`,
//!   and a version with a label already gets the new one appended (`2.15.0+cu130` becomes
//!   `2.15.0+cu130.sm90`; several SMs `+sm80.sm86`). The file name, the `.dist-info` and
//!   `.data` folders, `METADATA`'s `Version` and `RECORD`'s paths all take it. (The wheel
//!   variant labels of PEP 817/825 need a `packaging` that knows them; none released does.)
//! - A conda package's build string gets `_sm90` (`_sm80_sm86`), in its file name, in the
//!   names of a `.conda`'s tarballs and in `info/index.json`, whose `depends` gains the
//!   `__cuda_arch` constraint (CEP 46: the virtual package's version is the lowest compute
//!   capability of the machine's devices, `{major}.{minor}`): `__cuda_arch >=9.0,<10.0`, from
//!   the lowest SM kept to the end of the highest major version kept, the devices whose cubins
//!   the package carries.
//!
//! # Example
//!
//! ```
//! use offload::host::package::variant::Variant;
//!
//! let variant = Variant::of_targets(&["sm_86", "sm_80"]).unwrap();
//! assert_eq!(variant.wheel_label(), "sm80.sm86");
//! assert_eq!(variant.version(b"2.15.0+cu130"), b"2.15.0+cu130.sm80.sm86");
//! assert_eq!(variant.cuda_arch(), "__cuda_arch >=8.0,<9.0");
//! assert_eq!(
//!     variant.file_name(b"torch-2.15.0-cp312-cp312-manylinux_2_28_x86_64.whl").unwrap(),
//!     b"torch-2.15.0+sm80.sm86-cp312-cp312-manylinux_2_28_x86_64.whl"
//! );
//! assert_eq!(
//!     variant.file_name(b"cupy-13.6.0-py312h1234_0.conda").unwrap(),
//!     b"cupy-13.6.0-py312h1234_0_sm80_sm86.conda"
//! );
//! assert!(Variant::of_targets(&["gfx90a"]).is_err());
//! ```

use crate::loads::cuda::{self, Sm};

/// The compute capabilities a variant is made for.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Variant {
    /// The SMs kept, by number, without repeats.
    sms: Vec<Sm>,
}

/// The name endings of the packages a variant is made of.
const CONDA_ENDINGS: [&[u8]; 2] = [b".conda", b".tar.bz2"];

impl Variant {
    /// The variant for the target IDs kept (`sm_80`, `sm_90a`); an error naming the first
    /// that is no CUDA SM (`gfx90a`, `compute_90`).
    pub fn of_targets(targets: &[&str]) -> Result<Variant, String> {
        let mut sms = Vec::new();
        for &target in targets {
            let sm = target
                .starts_with("sm_")
                .then(|| cuda::Sm::parse(target))
                .flatten()
                .ok_or_else(|| {
                    format!(
                        "--variant makes packages for CUDA devices: `{target}` is no CUDA SM (sm_XY)"
                    )
                })?;
            if !sms.contains(&sm) {
                sms.push(sm);
            }
        }
        if sms.is_empty() {
            return Err("--variant needs at least one --keep sm_XY".into());
        }
        sms.sort_by_key(|sm| (sm.major, sm.minor, sm.variant));
        Ok(Variant { sms })
    }

    /// The SMs' names without the underscore, joined by `separator`: `sm80.sm86`.
    fn label(&self, separator: &str) -> String {
        self.sms
            .iter()
            .map(|sm| sm.to_string().replace('_', ""))
            .collect::<Vec<_>>()
            .join(separator)
    }

    /// The SMs, as `--keep` names them: `sm_80, sm_86`.
    pub fn names(&self) -> String {
        self.sms
            .iter()
            .map(Sm::to_string)
            .collect::<Vec<_>>()
            .join(", ")
    }

    /// The local version label a wheel gets: `sm90`, `sm80.sm86`.
    pub fn wheel_label(&self) -> String {
        self.label(".")
    }

    /// What a conda build string gets after an underscore: `sm90`, `sm80_sm86`.
    pub fn conda_label(&self) -> String {
        self.label("_")
    }

    /// The `__cuda_arch` dependency of a conda package: from the lowest SM kept to the end of
    /// the highest major version kept (`__cuda_arch >=8.0,<10.0` for sm_80 and sm_90).
    pub fn cuda_arch(&self) -> String {
        let (low, high) = match (self.sms.first(), self.sms.last()) {
            (Some(low), Some(high)) => (low, high),
            _ => return "__cuda_arch".into(),
        };
        format!(
            "__cuda_arch >={}.{},<{}.0",
            low.major,
            low.minor,
            high.major.saturating_add(1)
        )
    }

    /// A wheel's version with the label: `2.15.0+sm90`, `2.15.0+cu130.sm90`.
    pub fn version(&self, version: &[u8]) -> Vec<u8> {
        let mut new = version.to_vec();
        new.push(if version.contains(&b'+') { b'.' } else { b'+' });
        new.extend_from_slice(self.wheel_label().as_bytes());
        new
    }

    /// A conda build string with the label: `py312_0_sm90`.
    pub fn build(&self, build: &str) -> String {
        format!("{build}_{}", self.conda_label())
    }

    /// The variant's file name for the package named `name` (a wheel's, a `.conda`'s or a
    /// conda `.tar.bz2`'s, as their specifications name them); `None` for a name of none of
    /// them.
    pub fn file_name(&self, name: &[u8]) -> Option<Vec<u8>> {
        if let Some(stem) = name.strip_suffix(b".whl") {
            let parts: Vec<&[u8]> = stem.split(|&b| b == b'-').collect();
            if !(5..=6).contains(&parts.len()) || parts.iter().any(|p| p.is_empty()) {
                return None;
            }
            let mut new = Vec::new();
            for (k, part) in parts.iter().enumerate() {
                if k > 0 {
                    new.push(b'-');
                }
                match k {
                    1 => new.extend_from_slice(&self.version(part)),
                    _ => new.extend_from_slice(part),
                }
            }
            new.extend_from_slice(b".whl");
            return Some(new);
        }
        let (stem, ending) = CONDA_ENDINGS
            .iter()
            .find_map(|e| Some((name.strip_suffix(*e)?, *e)))?;
        let stem = self.conda_stem(stem)?;
        Some([stem.as_slice(), ending].concat())
    }

    /// A conda package's name without its ending (`cupy-13.6.0-py312h1234_0`) with the label
    /// on its build string; `None` when it is not `name-version-build`.
    pub fn conda_stem(&self, stem: &[u8]) -> Option<Vec<u8>> {
        let parts: Vec<&[u8]> = stem.rsplitn(3, |&b| b == b'-').collect();
        if parts.len() != 3 || parts.iter().any(|p| p.is_empty()) {
            return None;
        }
        let mut new = stem.to_vec();
        new.push(b'_');
        new.extend_from_slice(self.conda_label().as_bytes());
        Some(new)
    }

    /// A wheel's `METADATA` with the variant's version: the `Version` field of its header
    /// (before the first empty line) given the label, every other byte as it was.
    pub fn metadata(&self, data: &[u8]) -> Result<Vec<u8>, String> {
        let mut at = 0;
        for line in data.split_inclusive(|&b| b == b'\n') {
            let text = line.strip_suffix(b"\n").unwrap_or(line);
            let text = text.strip_suffix(b"\r").unwrap_or(text);
            if text.is_empty() {
                break;
            }
            if let Some(value) = text.strip_prefix(b"Version:") {
                let version = value.trim_ascii();
                let start = at
                    + (text.len() - value.len())
                    + (value.len() - value.trim_ascii_start().len());
                let mut new = data.get(..start).unwrap_or_default().to_vec();
                new.extend_from_slice(&self.version(version));
                new.extend_from_slice(data.get(start + version.len()..).unwrap_or_default());
                return Ok(new);
            }
            at += line.len();
        }
        Err("METADATA has no Version field in its header".into())
    }

    /// A conda package's `info/index.json` for the variant: the build string given the label,
    /// and `depends` the `__cuda_arch` constraint (in place of any it had). Written as
    /// conda-build writes it: keys sorted, indented by two spaces.
    pub fn index_json(&self, data: &[u8]) -> Result<Vec<u8>, String> {
        use serde_json::Value;
        let wrong = |e: serde_json::Error| format!("index.json: {e}");
        let mut index: serde_json::Map<String, Value> =
            serde_json::from_slice(data).map_err(wrong)?;
        let build = match index.get("build") {
            Some(Value::String(build)) => self.build(build),
            _ => return Err("index.json has no build string".into()),
        };
        index.insert("build".into(), Value::String(build));
        let mut depends = match index.remove("depends") {
            Some(Value::Array(depends)) => depends,
            None => Vec::new(),
            Some(_) => return Err("index.json's depends is not a list".into()),
        };
        depends.retain(|d| {
            d.as_str()
                .is_none_or(|d| d.split(' ').next() != Some("__cuda_arch"))
        });
        depends.push(Value::String(self.cuda_arch()));
        index.insert("depends".into(), Value::Array(depends));
        let sorted: std::collections::BTreeMap<_, _> = index.into_iter().collect();
        let mut out = serde_json::to_vec_pretty(&sorted).map_err(wrong)?;
        if data.ends_with(b"\n") {
            out.push(b'\n');
        }
        Ok(out)
    }
}

/// The names of a wheel's own folders, before and after: `torch-2.15.0` and
/// `torch-2.15.0+sm90`, for `torch-2.15.0.dist-info/` and `torch-2.15.0.data/`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct WheelFolders {
    old: Vec<u8>,
    new: Vec<u8>,
}

impl WheelFolders {
    /// The folders of the wheel whose `RECORD` is the member `record`
    /// (`torch-2.15.0.dist-info/RECORD`); `None` when it is no such name.
    pub fn of_record(record: &[u8], variant: &Variant) -> Option<WheelFolders> {
        let old = record.strip_suffix(b".dist-info/RECORD")?;
        let dash = old.iter().rposition(|&b| b == b'-')?;
        let (name, version) = (old.get(..dash)?, old.get(dash + 1..)?);
        if name.is_empty() || version.is_empty() || old.contains(&b'/') {
            return None;
        }
        let new = [name, b"-", &variant.version(version)].concat();
        Some(WheelFolders {
            old: old.to_vec(),
            new,
        })
    }

    /// The name the member `name` gets: a member of the `.dist-info` or `.data` folder moves
    /// to the new one; `None` for every other.
    pub fn renamed(&self, name: &[u8]) -> Option<Vec<u8>> {
        let rest = name.strip_prefix(self.old.as_slice())?;
        [b".dist-info/".as_slice(), b".data/"]
            .iter()
            .any(|folder| rest.starts_with(folder))
            .then(|| [self.new.as_slice(), rest].concat())
    }

    /// Whether `name` is the wheel's `METADATA`.
    pub fn is_metadata(&self, name: &[u8]) -> bool {
        name.strip_prefix(self.old.as_slice()) == Some(b".dist-info/METADATA")
    }
}

#[cfg(test)]
#[allow(clippy::indexing_slicing)]
mod tests {
    use super::*;

    #[test]
    fn names_and_versions_take_the_label() {
        let v = Variant::of_targets(&["sm_90"]).unwrap();
        assert_eq!(v.version(b"2.15.0"), b"2.15.0+sm90");
        assert_eq!(v.version(b"2.15.0+cu130"), b"2.15.0+cu130.sm90");
        assert_eq!(
            v.file_name(b"demo-1.0-1-py3-none-linux_x86_64.whl")
                .unwrap(),
            b"demo-1.0+sm90-1-py3-none-linux_x86_64.whl"
        );
        assert_eq!(v.file_name(b"demo-1.0.whl"), None);
        assert_eq!(v.file_name(b"demo.tar.bz2"), None);
        assert_eq!(
            v.file_name(b"demo-1.0-h0_0.tar.bz2").unwrap(),
            b"demo-1.0-h0_0_sm90.tar.bz2"
        );
        assert_eq!(v.cuda_arch(), "__cuda_arch >=9.0,<10.0");
        let a = Variant::of_targets(&["sm_90a", "sm_120", "sm_90a"]).unwrap();
        assert_eq!(a.wheel_label(), "sm90a.sm120");
        assert_eq!(a.names(), "sm_90a, sm_120");
        assert_eq!(a.cuda_arch(), "__cuda_arch >=9.0,<13.0");
        for bad in ["compute_90", "gfx90a", "sm_9"] {
            assert!(Variant::of_targets(&[bad]).unwrap_err().contains(bad));
        }
    }

    #[test]
    fn metadata_gets_the_version_and_nothing_else() {
        let v = Variant::of_targets(&["sm_80"]).unwrap();
        let text =
            b"Metadata-Version: 2.1\r\nName: demo\r\nVersion:  1.0+cu1 \r\n\r\nVersion: body\n";
        assert_eq!(
            v.metadata(text).unwrap(),
            b"Metadata-Version: 2.1\r\nName: demo\r\nVersion:  1.0+cu1.sm80 \r\n\r\nVersion: body\n"
        );
        assert!(v.metadata(b"Name: demo\n\nVersion: 1\n").is_err());
    }

    #[test]
    fn index_json_gets_the_build_and_the_constraint() {
        let v = Variant::of_targets(&["sm_86"]).unwrap();
        let index = br#"{"name": "demo", "build": "h0_0", "depends": ["libgcc >=13", "__cuda_arch >=7.0"]}"#;
        let new: serde_json::Value = serde_json::from_slice(&v.index_json(index).unwrap()).unwrap();
        assert_eq!(new["build"], "h0_0_sm86");
        assert_eq!(
            new["depends"],
            serde_json::json!(["libgcc >=13", "__cuda_arch >=8.6,<9.0"])
        );
        assert!(v.index_json(b"{}").is_err());
        assert!(v.index_json(b"[").is_err());
    }

    #[test]
    fn only_the_wheels_own_folders_move() {
        let v = Variant::of_targets(&["sm_90"]).unwrap();
        let folders = WheelFolders::of_record(b"demo-1.0.dist-info/RECORD", &v).unwrap();
        assert_eq!(
            folders.renamed(b"demo-1.0.dist-info/METADATA").unwrap(),
            b"demo-1.0+sm90.dist-info/METADATA"
        );
        assert_eq!(
            folders.renamed(b"demo-1.0.data/scripts/x").unwrap(),
            b"demo-1.0+sm90.data/scripts/x"
        );
        assert_eq!(folders.renamed(b"demo-1.0.dist-infox/y"), None);
        assert_eq!(folders.renamed(b"demo/lib.so"), None);
        assert!(folders.is_metadata(b"demo-1.0.dist-info/METADATA"));
        assert_eq!(WheelFolders::of_record(b"a/b-1.dist-info/RECORD", &v), None);
    }
}
