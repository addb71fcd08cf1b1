//! clang-offload-bundler's operations: bundle, unbundle and list, with LLVM 19's checks, orders
//! and messages, on binary, text and compressed bundles, bundles held in host objects, and
//! heterogeneous device archives.
//!
//! This module holds the options ([`BundlerConfig`]) and the checks LLVM makes before it reads
//! any input ([`BundlerConfig::check`]); [`bundle`] writes, [`unbundle`] reads, `entries`
//! finds a file's bundle entries, `archive` unbundles archives and `report` prints the
//! verbose statistics and the `-###` commands.
//!
//! # Example
//!
//! Bundle a host file and two device files, list the bundle's entries, and unbundle one, as
//! `clang-offload-bundler -type=o` does.
//!
//! ```
//! use offload::ops::bundler::{self, BundlerConfig};
//!
//! # fn main() -> Result<(), Box<dyn std::error::Error>> {
//! let dir = tempfile::tempdir()?;
//! let path = |name: &str| dir.path().join(name);
//! std::fs::write(path("host.bin"), b"")?;
//! std::fs::write(path("gfx90a.co"), b"code for gfx90a")?;
//! std::fs::write(path("gfx1100.co"), b"code for gfx1100")?;
//! let targets = [
//!     "host-x86_64-unknown-linux-gnu",
//!     "hipv4-amdgcn-amd-amdhsa--gfx90a",
//!     "hipv4-amdgcn-amd-amdhsa--gfx1100",
//! ];
//! let config = BundlerConfig {
//!     file_type: "o".into(),
//!     targets: targets.map(String::from).to_vec(),
//!     inputs: vec![path("host.bin"), path("gfx90a.co"), path("gfx1100.co")],
//!     outputs: vec![path("kernels.hipfb")],
//!     ..Default::default()
//! };
//! let mut log = Vec::new();
//! bundler::bundle(&config, &mut log)?;
//!
//! let listing = BundlerConfig { inputs: vec![path("kernels.hipfb")], ..config.clone() };
//! let mut listed = Vec::new();
//! bundler::list(&listing, &mut listed, &mut log)?;
//! // Listed in the order the bundle stores them: the host entry, its ID in full, last.
//! let listed = String::from_utf8(listed)?;
//! let expected = [targets[1], targets[2], "host-x86_64-unknown-linux-gnu-"];
//! assert_eq!(listed.lines().collect::<Vec<_>>(), expected);
//!
//! let unbundling = BundlerConfig {
//!     targets: vec![targets[2].into()],
//!     inputs: vec![path("kernels.hipfb")],
//!     outputs: vec![path("out.co")],
//!     ..config
//! };
//! bundler::unbundle(&unbundling, &mut log)?;
//! assert_eq!(std::fs::read(path("out.co"))?, b"code for gfx1100");
//! # Ok(())
//! # }
//! ```

mod archive;
mod bundle;
mod entries;
mod report;
mod unbundle;

use crate::llvm::adt::string_map::Probing;
pub use archive::device_member_name;
pub use bundle::bundle;
pub use entries::list;
pub use unbundle::unbundle;

use crate::error::{Error, Result};
use crate::format::ccob::{self, CompressOptions};
use crate::format::text_bundle;
use crate::target::entry_id::{self, EntryId, KindMatching};
use crate::target::processor::LlvmVersion;
use crate::target::target_id::conflicting_pair;
use std::collections::{BTreeMap, BTreeSet};
use std::path::PathBuf;

/// Everything a bundler run needs, as clang-offload-bundler's options give it.
#[derive(Debug, Clone)]
pub struct BundlerConfig {
    /// The `-type` value.
    pub file_type: String,
    /// The `-targets` values, as given.
    pub targets: Vec<String>,
    /// Input files.
    pub inputs: Vec<PathBuf>,
    /// Output files.
    pub outputs: Vec<PathBuf>,
    /// Alignment of entry payloads in binary bundles.
    pub bundle_align: u64,
    /// Write empty outputs instead of failing when targets are missing.
    pub allow_missing_bundles: bool,
    /// Treat `hip*` and `openmp` entries as compatible.
    pub hip_openmp_compatible: bool,
    /// Compress bundled output with these settings.
    pub compress: Option<CompressOptions>,
    /// Print compression statistics.
    pub verbose: bool,
    /// `-check-input-archive`.
    pub check_input_archive: bool,
    /// The largest decompressed bundle accepted.
    pub max_decompressed: u64,
    /// `-###`: for host objects, print the `llvm-objcopy` command clang-offload-bundler would
    /// run instead of writing the object (the output is left empty, as LLVM leaves it).
    pub dry_run: bool,
    /// The LLVM release whose clang-offload-bundler this stands in for: it decides how entry
    /// IDs are parsed and written, which processors are known, and the compressed bundle
    /// version written by default.
    pub llvm: LlvmVersion,
}

impl Default for BundlerConfig {
    fn default() -> Self {
        BundlerConfig {
            file_type: String::new(),
            targets: Vec::new(),
            inputs: Vec::new(),
            outputs: Vec::new(),
            bundle_align: 1,
            allow_missing_bundles: false,
            hip_openmp_compatible: false,
            compress: None,
            verbose: false,
            check_input_archive: false,
            max_decompressed: ccob::DEFAULT_MAX_DECOMPRESSED,
            dry_run: false,
            llvm: LlvmVersion::DEFAULT,
        }
    }
}

/// What the bundler is asked to do, which decides the checks it makes.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Mode {
    /// Many inputs into one bundle.
    Bundle,
    /// One bundle into an output per target.
    Unbundle,
}

/// How a file of some `-type` holds its bundle entries, in LLVM's terms the file handler.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum BundleKind {
    /// A text bundle: entries between comment lines with this comment marker.
    Text(&'static str),
    /// A binary bundle: a header followed by payloads.
    Binary,
    /// Entries as `__CLANG_OFFLOAD_BUNDLE__` sections of a host object file.
    Object,
}

impl BundleKind {
    /// The kind for `file_type` given the reference buffer (the host input when bundling, the
    /// input when unbundling): `o` and `a` hold an object bundle only when the buffer is an
    /// object file, as LLVM decides, and a binary bundle otherwise.
    pub fn of(file_type: &str, reference: &[u8]) -> Result<BundleKind> {
        if let Some(comment) = text_bundle::comment_for_type(file_type) {
            return Ok(BundleKind::Text(comment));
        }
        match file_type {
            "bc" | "gch" | "ast" => Ok(BundleKind::Binary),
            "o" | "a" if crate::host::is_object_file(reference) => Ok(BundleKind::Object),
            "o" | "a" => Ok(BundleKind::Binary),
            other => Err(Error::msg(format!(
                "'{other}': invalid file type specified"
            ))),
        }
    }
}

/// The result of checking the targets: their parsed and standardised forms.
#[derive(Debug, Clone)]
pub struct CheckedTargets {
    /// Each target parsed, in `-targets` order.
    pub parsed: Vec<EntryId>,
    /// The standardised name of each target (what LLVM writes into bundles).
    pub names: Vec<String>,
    /// Index of the host target, if any.
    pub host_index: Option<usize>,
    /// Whether every target is `hip` or `hipv4`, which makes a host target optional.
    pub hip_only: bool,
}

impl CheckedTargets {
    /// The input whose type decides how a bundle is written: the host's, or the first when
    /// every target is HIP (or no host is given).
    fn reference_input(&self) -> usize {
        if self.hip_only {
            0
        } else {
            self.host_index.unwrap_or(0)
        }
    }
}

impl BundlerConfig {
    /// How the release's `StringMap`s probe: they order the entries of a binary bundle and
    /// the targets an entry is matched against.
    pub(crate) fn probing(&self) -> Probing {
        match self.llvm {
            LlvmVersion::V19 | LlvmVersion::V22 => Probing::Quadratic,
            LlvmVersion::V23 => Probing::Linear,
        }
    }

    /// The checks clang-offload-bundler 19 makes before it reads any input, in its order and
    /// with its messages: options that do not go together, counts of inputs, outputs and
    /// targets, duplicate and invalid targets, conflicting target IDs, the host target.
    pub fn check(&self, mode: Mode) -> Result<CheckedTargets> {
        self.check_options(mode)?;
        let checked = self.parse_targets()?;
        let host_count = checked.parsed.iter().filter(|id| id.is_host()).count();
        let wrong_host_count = match mode {
            Mode::Bundle => host_count != 1 && !checked.hip_only,
            Mode::Unbundle => host_count > 1,
        };
        if wrong_host_count {
            return Err(Error::msg(format!(
                "expecting exactly one host target but got {host_count}"
            )));
        }
        self.check_spellings(&checked.names)?;
        Ok(checked)
    }

    /// Which entry kinds serve which target kinds, as `-hip-openmp-compatible` says.
    pub fn kind_matching(&self) -> KindMatching {
        if self.hip_openmp_compatible {
            KindMatching::HipOpenmpCompatible
        } else {
            KindMatching::Exact
        }
    }

    /// Options that do not go together, and the counts of inputs, outputs and targets.
    fn check_options(&self, mode: Mode) -> Result<()> {
        if self.check_input_archive {
            if mode == Mode::Bundle {
                return Err(Error::msg(
                    "-check-input-archive cannot be used while bundling",
                ));
            }
            if self.file_type != "a" {
                return Err(Error::msg(
                    "-check-input-archive can only be used for unbundling archives (-type=a)",
                ));
            }
        }
        if self.outputs.is_empty() {
            return Err(Error::msg("no output file specified!"));
        }
        if self.targets.is_empty() {
            return Err(Error::msg(
                "for the --targets option: must be specified at least once!",
            ));
        }
        match mode {
            Mode::Unbundle => self.check_unbundle_counts(),
            Mode::Bundle => self.check_bundle_counts(),
        }
    }

    fn check_unbundle_counts(&self) -> Result<()> {
        if self.inputs.len() != 1 {
            return Err(Error::msg(
                "only one input file supported in unbundling mode",
            ));
        }
        if self.outputs.len() != self.targets.len() {
            return Err(Error::msg(
                "number of output files and targets should match in unbundling mode",
            ));
        }
        Ok(())
    }

    fn check_bundle_counts(&self) -> Result<()> {
        if self.file_type == "a" {
            return Err(Error::msg(
                "Archive files are only supported for unbundling",
            ));
        }
        if self.outputs.len() != 1 {
            return Err(Error::msg(
                "only one output file supported in bundling mode",
            ));
        }
        if self.inputs.len() != self.targets.len() {
            return Err(Error::msg(
                "number of input files and targets should match in bundling mode",
            ));
        }
        Ok(())
    }

    /// Parses every target, refusing duplicates, IDs holding a control character (see
    /// [`entry_id::unwritable_char`]), invalid kinds and triples, and target IDs
    /// that conflict within one kind and triple.
    fn parse_targets(&self) -> Result<CheckedTargets> {
        let mut seen = BTreeSet::new();
        let mut groups: BTreeMap<String, BTreeSet<String>> = BTreeMap::new();
        let mut parsed = Vec::with_capacity(self.targets.len());
        let mut host_index = None;
        let mut hip_only = true;
        for (index, target) in self.targets.iter().enumerate() {
            if !seen.insert(target.as_str()) {
                return Err(Error::msg("Duplicate targets are not allowed"));
            }
            if let Some(c) = entry_id::unwritable_char(target) {
                return Err(Error::msg(format!(
                    "invalid target '{}': a bundle entry ID cannot hold the control character U+{:04X}",
                    crate::io::shown(target),
                    u32::from(c)
                )));
            }
            if self.llvm >= LlvmVersion::V22 && !entry_id::is_well_formed(target) {
                return Err(Error::msg(MALFORMED_TARGET_22));
            }
            let id = EntryId::parse_as(self.llvm, target);
            check_valid(target, &id)?;
            self.check_processor_known(target)?;
            groups
                .entry(id.kind_and_triple())
                .or_default()
                .insert(id.target_id.clone());
            if id.is_host() {
                host_index = Some(index);
            }
            hip_only &= id.kind == "hip" || id.kind == "hipv4";
            parsed.push(id);
        }
        for (group, ids) in &groups {
            if let Some((a, b)) = conflicting_pair(ids.iter().map(String::as_str)) {
                return Err(Error::msg(format!(
                    "Cannot bundle inputs with conflicting targets: '{group}-{a}' and '{group}-{b}'"
                )));
            }
        }
        let names = parsed.iter().map(ToString::to_string).collect();
        Ok(CheckedTargets {
            parsed,
            names,
            host_index,
            hip_only,
        })
    }

    /// LLVM 22 and 23 drop a processor their table lacks from the ID they write and match, so that
    /// `...--gfx9000` is written as `...--` and found as any entry without a target ID; such a
    /// target is refused here instead.
    fn check_processor_known(&self, target: &str) -> Result<()> {
        if self.llvm < LlvmVersion::V22 {
            return Ok(());
        }
        match EntryId::unknown_processor_22(target) {
            Some(processor) => Err(Error::msg(format!(
                "invalid target '{target}', unknown processor '{processor}' (LLVM 22 and 23 would drop it from the bundle entry ID)"
            ))),
            None => Ok(()),
        }
    }

    /// Two spellings of one target (`...-gfx906` and `...--gfx906`) would be written under one
    /// ID; LLVM 19 then writes a bundle whose records point at the wrong payloads.
    fn check_spellings(&self, names: &[String]) -> Result<()> {
        for (i, name) in names.iter().enumerate() {
            if let Some(j) = names[..i].iter().position(|n| n == name) {
                return Err(Error::msg(format!(
                    "Duplicate targets are not allowed: '{}' and '{}' are both written as '{name}'",
                    self.targets[j], self.targets[i]
                )));
            }
        }
        Ok(())
    }
}

/// LLVM 22's message for a target that is not `<kind>-<arch>-<vendor>-<os>-<env>[-<target id>]`.
pub const MALFORMED_TARGET_22: &str = "Targets need to follow the format '<offload kind>-<target triple>', where '<target triple>' follows the format '<kind>-<arch>-<vendor>-<os>-<env>[-<target id>[:target features]]'.";

/// LLVM's message for a target whose offload kind or triple is not known.
fn check_valid(target: &str, id: &EntryId) -> Result<()> {
    let (kind_ok, triple_ok) = (id.is_kind_valid(), id.is_triple_valid());
    if kind_ok && triple_ok {
        return Ok(());
    }
    let mut msg = format!("invalid target '{target}'");
    if !kind_ok {
        msg += &format!(", unknown offloading kind '{}'", id.kind);
    }
    if !triple_ok {
        msg += &format!(", unknown target triple '{}'", id.triple.as_str());
    }
    Err(Error::msg(msg))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn config(targets: &[&str], inputs: usize) -> BundlerConfig {
        BundlerConfig {
            file_type: "bc".into(),
            targets: targets.iter().map(|s| s.to_string()).collect(),
            inputs: (0..inputs)
                .map(|i| PathBuf::from(format!("in{i}")))
                .collect(),
            outputs: vec![PathBuf::from("out")],
            llvm: LlvmVersion::V19,
            ..Default::default()
        }
    }

    #[test]
    fn llvm_22_checks_the_shape_and_normalises_the_triple() {
        let as_22 = |targets: &[&str]| BundlerConfig {
            llvm: LlvmVersion::V22,
            ..config(targets, targets.len())
        };
        assert_eq!(
            check_err(&as_22(&["host-x86_64-unknown-linux"]), Mode::Bundle),
            MALFORMED_TARGET_22
        );
        assert_eq!(
            check_err(&as_22(&["hipv4-AMDGCN-amd-amdhsa--gfx906"]), Mode::Bundle),
            "invalid target 'hipv4-AMDGCN-amd-amdhsa--gfx906', unknown target triple 'AMDGCN-amd-amdhsa-'"
        );
        let checked = as_22(&[
            "hipv4-amdgcn-amd-amdhsa-unknown-gfx906",
            "hipv4-amdgcn--amdhsa--gfx950:xnack+",
            "hipv4-amdgcn-amd-amdhsa--gfx940",
            "hipv4-amdgcn-amd-amdhsa--gfx941:xnack+",
        ])
        .check(Mode::Bundle)
        .unwrap();
        assert_eq!(
            checked.names,
            [
                "hipv4-amdgcn-amd-amdhsa--gfx906",
                "hipv4-amdgcn-unknown-amdhsa--gfx950:xnack+",
                "hipv4-amdgcn-amd-amdhsa--gfx940",
                "hipv4-amdgcn-amd-amdhsa--gfx941:xnack+",
            ]
        );
        assert_eq!(
            check_err(&as_22(&["hipv4-amdgcn-amd-amdhsa--gfx9000"]), Mode::Bundle),
            "invalid target 'hipv4-amdgcn-amd-amdhsa--gfx9000', unknown processor 'gfx9000' (LLVM 22 and 23 would drop it from the bundle entry ID)"
        );
    }

    fn check_err(c: &BundlerConfig, mode: Mode) -> String {
        c.check(mode).unwrap_err().to_string()
    }

    #[test]
    fn checks_give_llvm_messages() {
        let c = config(
            &[
                "host-x86_64-unknown-linux-gnu",
                "host-x86_64-unknown-linux-gnu",
            ],
            2,
        );
        assert_eq!(
            check_err(&c, Mode::Bundle),
            "Duplicate targets are not allowed"
        );
        let c = config(&["foo"], 1);
        assert_eq!(
            check_err(&c, Mode::Bundle),
            "invalid target 'foo', unknown offloading kind 'foo', unknown target triple '---'"
        );
        let c = config(
            &[
                "host-x86_64-unknown-linux-gnu",
                "hipv4-amdgcn-amd-amdhsa--gfx90a",
                "hipv4-amdgcn-amd-amdhsa--gfx90a:xnack+",
            ],
            3,
        );
        assert_eq!(
            check_err(&c, Mode::Bundle),
            "Cannot bundle inputs with conflicting targets: 'hipv4-amdgcn-amd-amdhsa--gfx90a' and 'hipv4-amdgcn-amd-amdhsa--gfx90a:xnack+'"
        );
        let c = config(&["openmp-amdgcn-amd-amdhsa--gfx906"], 1);
        assert_eq!(
            check_err(&c, Mode::Bundle),
            "expecting exactly one host target but got 0"
        );
        assert!(c.check(Mode::Unbundle).is_ok());
        let c = config(
            &[
                "hipv4-amdgcn-amd-amdhsa--gfx906",
                "hip-amdgcn-amd-amdhsa--gfx90a",
            ],
            2,
        );
        let checked = c.check(Mode::Bundle).unwrap();
        assert!(checked.hip_only);
        assert_eq!(
            checked.names,
            [
                "hipv4-amdgcn-amd-amdhsa--gfx906",
                "hip-amdgcn-amd-amdhsa--gfx90a"
            ]
        );
        let c = config(&["host-x86_64-unknown-linux-gnu"], 2);
        assert_eq!(
            check_err(&c, Mode::Bundle),
            "number of input files and targets should match in bundling mode"
        );
    }
}
