//! Target IDs: `processor(:feature(+|-))*`, as in `gfx90a:sramecc+:xnack-`.
//!
//! Parsing in two strengths (format only, and against a triple's processor table), the
//! canonical form, the composition check that rejects bundles mixing "any" and explicit
//! settings of a feature for one processor, and the list of processor names that LLVM 19's
//! bundle entry ID parser recognises.
//!
//! # Example
//!
//! Parse `gfx90a:xnack+`: its processor and features, and which images a device of that target
//! ID can load.
//!
//! ```
//! use offload::target::target_id::{FeatureSetting, TargetId, TargetIdBuf};
//!
//! let id = TargetId::parse_syntax("gfx90a:xnack+").unwrap();
//! assert_eq!(id.processor, "gfx90a");
//! assert_eq!(id.features, [("xnack", FeatureSetting::On)]);
//! assert_eq!(id.feature("sramecc"), None, "a feature left out is any");
//!
//! let device: TargetIdBuf = "gfx90a:xnack+".parse().unwrap();
//! assert!(device.can_load("gfx90a"));
//! assert!(device.can_load("gfx90a:sramecc-:xnack+"));
//! assert!(!device.can_load("gfx90a:xnack-"));
//! assert!(!device.can_load("gfx908"));
//! assert!("gfx90a:fast+".parse::<TargetIdBuf>().is_err());
//! ```

use crate::target::processor::{LlvmVersion, Processor, SPIRV};
use crate::target::triple::Triple;

/// A feature's setting in a target ID.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum FeatureSetting {
    /// `+`: the code requires the feature on.
    On,
    /// `-`: the code requires the feature off.
    Off,
}

impl FeatureSetting {
    /// `+` or `-`.
    pub fn sign(self) -> char {
        match self {
            FeatureSetting::On => '+',
            FeatureSetting::Off => '-',
        }
    }
}

/// A target ID split into its processor and the features it sets, in the order written.
/// Features it leaves out are "any".
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TargetId<'a> {
    /// The processor as written (before any alias is resolved).
    pub processor: &'a str,
    /// The features set, each at most once, in the order written.
    pub features: Vec<(&'a str, FeatureSetting)>,
}

impl<'a> TargetId<'a> {
    /// Checks only the syntax: a non-empty processor, then `:name+` or `:name-` items, each
    /// name at most once. An empty string gives an empty processor (which no processor table
    /// accepts). `gfx906:` is accepted with no features, as LLVM accepts it.
    pub fn parse_syntax(id: &'a str) -> Option<TargetId<'a>> {
        if id.is_empty() {
            return Some(TargetId {
                processor: "",
                features: Vec::new(),
            });
        }
        let (processor, mut rest) = id.split_once(':').unwrap_or((id, ""));
        if processor.is_empty() {
            return None;
        }
        let mut features: Vec<(&str, FeatureSetting)> = Vec::new();
        while !rest.is_empty() {
            let (item, tail) = rest.split_once(':').unwrap_or((rest, ""));
            let setting = match item.as_bytes().last() {
                Some(b'+') => FeatureSetting::On,
                Some(b'-') => FeatureSetting::Off,
                _ => return None,
            };
            let name = &item[..item.len() - 1];
            if features.iter().any(|(n, _)| *n == name) {
                return None;
            }
            features.push((name, setting));
            rest = tail;
        }
        Some(TargetId {
            processor,
            features,
        })
    }

    /// Parses `id` for `triple`: the syntax, then the processor (aliases resolved to the
    /// canonical name for AMDGPU triples) and every feature must be one that processor
    /// supports. Returns the canonical processor and the features.
    pub fn parse(
        triple: &Triple,
        id: &'a str,
    ) -> Option<(&'a str, Vec<(&'a str, FeatureSetting)>)> {
        TargetId::parse_in(ProcessorTable::DEFAULT, triple, id)
    }

    /// [`TargetId::parse`] against the AMDGCN processors of `table`.
    pub fn parse_in(
        table: ProcessorTable,
        triple: &Triple,
        id: &'a str,
    ) -> Option<(&'a str, Vec<(&'a str, FeatureSetting)>)> {
        let parsed = TargetId::parse_syntax(id)?;
        let processor: &'a str = if triple.is_amdgpu() {
            amdgpu_processor_in(table, triple, parsed.processor)?.name
        } else {
            parsed.processor
        };
        if processor.is_empty() {
            return None;
        }
        let supported = supported_features_in(table, triple, processor);
        if parsed
            .features
            .iter()
            .any(|(name, _)| !supported.contains(name))
        {
            return None;
        }
        Some((processor, parsed.features))
    }

    /// The canonical form: the processor, then the features in alphabetical order.
    pub fn canonical(&self) -> String {
        let mut features = self.features.clone();
        features.sort_by(|a, b| a.0.cmp(b.0));
        let mut out = self.processor.to_string();
        for (name, setting) in features {
            out.push(':');
            out.push_str(name);
            out.push(setting.sign());
        }
        out
    }

    /// The setting of `feature`, or `None` for "any".
    pub fn feature(&self, name: &str) -> Option<FeatureSetting> {
        self.features
            .iter()
            .find(|(n, _)| *n == name)
            .map(|(_, s)| *s)
    }
}

impl TargetId<'_> {
    /// Whether a device with this target ID can load an image built for `image`: the same
    /// processor, and every feature set in both set alike (a feature either leaves out
    /// matches any setting). The one rule behind `extract --arch`, `strip --keep`/`--remove`
    /// and the linker plugin.
    pub fn can_load(&self, image: &TargetId<'_>) -> bool {
        !self.processor.is_empty()
            && self.processor == image.processor
            && self
                .features
                .iter()
                .all(|(name, setting)| image.feature(name).is_none_or(|s| s == *setting))
    }

    /// Whether both name the same processor with the same features, in any order.
    pub fn same_as(&self, other: &TargetId<'_>) -> bool {
        self.canonical() == other.canonical()
    }
}

/// Why a target ID given on a command line is not one.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum TargetIdError {
    /// Nothing was given.
    #[error("invalid target ID '': it is empty")]
    Empty,
    /// A feature without `+` or `-`, or a repeated one, or no processor.
    #[error("invalid target ID '{0}': expected PROCESSOR(:FEATURE+|:FEATURE-)*, each feature once, as in gfx90a:xnack+")]
    Syntax(String),
    /// A feature the processor does not have.
    #[error("invalid target ID '{id}': {processor} has no feature '{feature}' (it has: {known})")]
    UnknownFeature {
        /// The target ID as given.
        id: String,
        /// Its processor.
        processor: String,
        /// The feature it names.
        feature: String,
        /// The features the processor has, or `none`.
        known: String,
    },
}

/// A target ID owned and checked where it enters (a command-line value, a plugin option):
/// its syntax, and its features: `xnack` and `sramecc` for `gfx` processors, none for any
/// other processor (such as `sm_80`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TargetIdBuf {
    text: String,
}

impl TargetIdBuf {
    /// The target ID, borrowed.
    pub fn target_id(&self) -> TargetId<'_> {
        TargetId::parse_syntax(&self.text).unwrap_or(TargetId {
            processor: "",
            features: Vec::new(),
        })
    }

    /// The target ID as given.
    pub fn as_str(&self) -> &str {
        &self.text
    }

    /// Whether a device with this target ID can load an image built for `image` (a target ID
    /// as stored in a container; one that does not parse is never loaded).
    pub fn can_load(&self, image: &str) -> bool {
        TargetId::parse_syntax(image).is_some_and(|image| self.target_id().can_load(&image))
    }
}

impl std::str::FromStr for TargetIdBuf {
    type Err = TargetIdError;

    fn from_str(text: &str) -> Result<TargetIdBuf, TargetIdError> {
        if text.is_empty() {
            return Err(TargetIdError::Empty);
        }
        let parsed =
            TargetId::parse_syntax(text).ok_or_else(|| TargetIdError::Syntax(text.to_string()))?;
        let known = known_features(parsed.processor);
        if let Some((feature, _)) = parsed.features.iter().find(|(f, _)| !known.contains(f)) {
            return Err(TargetIdError::UnknownFeature {
                id: text.to_string(),
                processor: parsed.processor.to_string(),
                feature: feature.to_string(),
                known: if known.is_empty() {
                    "none".to_string()
                } else {
                    known.join(", ")
                },
            });
        }
        Ok(TargetIdBuf {
            text: text.to_string(),
        })
    }
}

impl std::fmt::Display for TargetIdBuf {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.text)
    }
}

/// The features a processor named on a command line may set: the AMDGPU target features for
/// `gfx` processors (LLVM's bundler stores them for any such processor, whether or not its
/// table gives the processor the feature), none for any other processor.
fn known_features(processor: &str) -> &'static [&'static str] {
    if processor.starts_with("gfx") {
        &["sramecc", "xnack"]
    } else {
        &[]
    }
}

/// The canonical form of `id` for `triple` (aliases resolved, features sorted), or `None` if
/// `id` is not a valid target ID for it.
pub fn canonical_target_id(triple: &Triple, id: &str) -> Option<String> {
    canonical_target_id_in(ProcessorTable::DEFAULT, triple, id)
}

/// [`canonical_target_id`] against the AMDGCN processors of `table`.
pub fn canonical_target_id_in(table: ProcessorTable, triple: &Triple, id: &str) -> Option<String> {
    let (processor, features) = TargetId::parse_in(table, triple, id)?;
    Some(
        TargetId {
            processor,
            features,
        }
        .canonical(),
    )
}

/// Whether code built for `code` (features it sets must be set alike in `device`; features it
/// leaves out match any setting) can run on `device`. Both are compared by canonical
/// processor for `triple`; invalid IDs are never compatible.
pub fn is_target_id_compatible(triple: &Triple, code: &str, device: &str) -> bool {
    target_ids_compatible(triple, code, triple, device)
}

/// [`is_target_id_compatible`] with each target ID parsed for its own triple (the triples'
/// own compatibility is the caller's to check).
pub fn target_ids_compatible(
    code_triple: &Triple,
    code: &str,
    device_triple: &Triple,
    device: &str,
) -> bool {
    target_ids_compatible_in(
        ProcessorTable::DEFAULT,
        code_triple,
        code,
        device_triple,
        device,
    )
}

/// [`target_ids_compatible`] against the AMDGCN processors of `table`.
pub fn target_ids_compatible_in(
    table: ProcessorTable,
    code_triple: &Triple,
    code: &str,
    device_triple: &Triple,
    device: &str,
) -> bool {
    let (Some((code_proc, code_features)), Some((dev_proc, dev_features))) = (
        TargetId::parse_in(table, code_triple, code),
        TargetId::parse_in(table, device_triple, device),
    ) else {
        return false;
    };
    code_proc == dev_proc
        && code_features.len() <= dev_features.len()
        && code_features
            .iter()
            .all(|f| dev_features.iter().any(|d| d == f))
}

/// The composition check LLVM 19 applies to a set of target IDs: walking them in byte order
/// and keeping the first ID seen for each processor (the text before the first `:`, not
/// canonicalised), a later ID with the same processor that sets a feature the first one leaves
/// out is a conflict. Returns the first conflicting pair (first seen, later). IDs whose syntax
/// is invalid are skipped (LLVM 19's behaviour on them is undefined).
pub fn conflicting_pair<'a, I>(ids: I) -> Option<(&'a str, &'a str)>
where
    I: IntoIterator<Item = &'a str>,
{
    let mut sorted: Vec<&str> = ids.into_iter().collect();
    sorted.sort_unstable();
    sorted.dedup();
    // The first ID seen for each processor, parsed, and as written.
    let mut firsts: Vec<(TargetId<'a>, &'a str)> = Vec::new();
    for id in sorted {
        let Some(parsed) = TargetId::parse_syntax(id) else {
            continue;
        };
        match firsts
            .iter()
            .find(|(first, _)| first.processor == parsed.processor)
        {
            None => firsts.push((parsed, id)),
            Some((first, first_text)) => {
                if parsed
                    .features
                    .iter()
                    .any(|(name, _)| first.feature(name).is_none())
                {
                    return Some((first_text, id));
                }
            }
        }
    }
    None
}

/// An AMDGPU processor: its canonical name and the target features it supports.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct AmdgpuProcessor {
    /// The canonical name, e.g. `gfx803`.
    pub name: &'static str,
    /// Whether it supports `xnack`.
    pub xnack: bool,
    /// Whether it supports `sramecc`.
    pub sramecc: bool,
}

const fn gpu(name: &'static str, xnack: bool, sramecc: bool) -> AmdgpuProcessor {
    AmdgpuProcessor {
        name,
        xnack,
        sramecc,
    }
}

/// LLVM 19's R600 processor table: (name as written, canonical name). No R600 processor
/// supports target features.
const R600: &[(&str, &str)] = &[
    ("r600", "r600"),
    ("rv630", "r600"),
    ("rv635", "r600"),
    ("r630", "r630"),
    ("rs880", "rs880"),
    ("rs780", "rs880"),
    ("rv610", "rs880"),
    ("rv620", "rs880"),
    ("rv670", "rv670"),
    ("rv710", "rv710"),
    ("rv730", "rv730"),
    ("rv770", "rv770"),
    ("rv740", "rv770"),
    ("cedar", "cedar"),
    ("palm", "cedar"),
    ("cypress", "cypress"),
    ("hemlock", "cypress"),
    ("juniper", "juniper"),
    ("redwood", "redwood"),
    ("sumo", "sumo"),
    ("sumo2", "sumo"),
    ("barts", "barts"),
    ("caicos", "caicos"),
    ("cayman", "cayman"),
    ("aruba", "cayman"),
    ("turks", "turks"),
];

/// Which AMDGCN processors a target ID may name.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ProcessorTable {
    /// Those one LLVM release knows, as that release's tools decide.
    Release(LlvmVersion),
    /// Those any release knows, retired ones included: for reading what older tools wrote
    /// (a bundle entry for gfx940 stays a gfx940 entry after LLVM dropped gfx940).
    AnyRelease,
}

impl ProcessorTable {
    /// The table of callers that name none: LLVM 19's, which the bundle readers were written
    /// against.
    pub const DEFAULT: ProcessorTable = ProcessorTable::Release(LlvmVersion::V19);

    /// The row of `name` (canonical or alias) in this table.
    pub fn named(self, name: &str) -> Option<&'static Processor> {
        match self {
            ProcessorTable::Release(version) => Processor::named_in(version, name),
            ProcessorTable::AnyRelease => {
                Processor::named(name).filter(|p| LlvmVersion::ALL.iter().any(|v| p.known_by(*v)))
            }
        }
    }
}

/// The AMDGPU processor `name` (canonical or alias) denotes for `triple`: LLVM 19's AMDGCN
/// processors for `amdgcn`, the R600 table for `r600`.
pub fn amdgpu_processor(triple: &Triple, name: &str) -> Option<AmdgpuProcessor> {
    amdgpu_processor_in(ProcessorTable::DEFAULT, triple, name)
}

/// [`amdgpu_processor`] with the AMDGCN processors of `table`.
pub fn amdgpu_processor_in(
    table: ProcessorTable,
    triple: &Triple,
    name: &str,
) -> Option<AmdgpuProcessor> {
    if triple.is_amdgcn() {
        table.named(name).map(|p| gpu(p.name, p.xnack, p.sramecc))
    } else if triple.is_r600() {
        R600.iter()
            .find(|(n, _)| *n == name)
            .map(|(_, canonical)| gpu(canonical, false, false))
    } else {
        None
    }
}

/// The target features `processor` supports on `triple`, in alphabetical order.
pub fn supported_features(triple: &Triple, processor: &str) -> Vec<&'static str> {
    supported_features_in(ProcessorTable::DEFAULT, triple, processor)
}

/// [`supported_features`] with the AMDGCN processors of `table`.
pub fn supported_features_in(
    table: ProcessorTable,
    triple: &Triple,
    processor: &str,
) -> Vec<&'static str> {
    let Some(p) = amdgpu_processor_in(table, triple, processor) else {
        return Vec::new();
    };
    let mut out = Vec::new();
    if p.sramecc {
        out.push("sramecc");
    }
    if p.xnack {
        out.push("xnack");
    }
    out
}

/// The names other than AMDGPU processors in LLVM 19's offload-arch table (`OffloadArch`):
/// NVPTX processors, `generic`, and the empty name. The table's AMDGPU processors are those of
/// [`Processor`] that LLVM 19 knows, and `amdgcnspirv`.
const OTHER_OFFLOAD_ARCHES_19: &[&str] = &[
    "", "generic", "sm_20", "sm_21", "sm_30", "sm_32", "sm_35", "sm_37", "sm_50", "sm_52", "sm_53",
    "sm_60", "sm_61", "sm_62", "sm_70", "sm_72", "sm_75", "sm_80", "sm_86", "sm_87", "sm_89",
    "sm_90", "sm_90a",
];

/// The same for LLVM 22, as clang-offload-bundler-22 keeps them in a bundle entry ID (probed
/// one by one): the newer CUDA processors added, the empty name no longer in it.
const OTHER_OFFLOAD_ARCHES_22: &[&str] = &[
    "generic", "sm_20", "sm_21", "sm_30", "sm_32", "sm_35", "sm_37", "sm_50", "sm_52", "sm_53",
    "sm_60", "sm_61", "sm_62", "sm_70", "sm_72", "sm_75", "sm_80", "sm_86", "sm_87", "sm_88",
    "sm_89", "sm_90", "sm_90a", "sm_100", "sm_100a", "sm_101", "sm_101a", "sm_103", "sm_103a",
    "sm_110", "sm_110a", "sm_120", "sm_120a", "sm_121", "sm_121a",
];

/// Whether LLVM 19's offload-arch table knows `name`. When the last `-`-separated piece of a
/// bundle entry ID (before any `:`) is one of these, LLVM 19's entry ID parser takes it as the
/// start of the target ID.
pub fn is_offload_arch(name: &str) -> bool {
    is_offload_arch_in(LlvmVersion::V19, name)
}

/// Whether LLVM `version`'s offload-arch table knows `name`: an AMDGPU processor its
/// processor table has (by canonical name), `amdgcnspirv`, or one of its other names.
pub fn is_offload_arch_in(version: LlvmVersion, name: &str) -> bool {
    let others = match version {
        LlvmVersion::V19 => OTHER_OFFLOAD_ARCHES_19,
        LlvmVersion::V22 | LlvmVersion::V23 => OTHER_OFFLOAD_ARCHES_22,
    };
    others.contains(&name)
        || name == SPIRV
        || Processor::named_in(version, name).is_some_and(|p| p.name == name)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_device_loads_what_agrees_with_it() {
        let loads =
            |device: &str, image: &str| device.parse::<TargetIdBuf>().unwrap().can_load(image);
        assert!(loads("gfx90a", "gfx90a"));
        assert!(loads("gfx90a", "gfx90a:xnack+"));
        assert!(loads("gfx90a", "gfx90a:xnack-"));
        assert!(loads("gfx90a:xnack+", "gfx90a"));
        assert!(loads("gfx90a:xnack+", "gfx90a:xnack+"));
        assert!(!loads("gfx90a:xnack+", "gfx90a:xnack-"));
        assert!(loads("gfx90a:xnack+:sramecc-", "gfx90a:sramecc-"));
        assert!(!loads("gfx90a", "gfx906"));
        assert!(!loads("gfx90", "gfx90a"));
        assert!(!loads("gfx90a", "gfx90a:xnack"));
        let same = |a: &str, b: &str| {
            TargetId::parse_syntax(a)
                .unwrap()
                .same_as(&TargetId::parse_syntax(b).unwrap())
        };
        assert!(same("gfx908:xnack-:sramecc+", "gfx908:sramecc+:xnack-"));
        assert!(!same("gfx908", "gfx908:xnack-"));
    }

    #[test]
    fn command_line_target_ids_are_checked_where_they_enter() {
        let error = |text: &str| text.parse::<TargetIdBuf>().unwrap_err().to_string();
        assert_eq!(
            error("gfx90a:xnack"),
            "invalid target ID 'gfx90a:xnack': expected PROCESSOR(:FEATURE+|:FEATURE-)*, each feature once, as in gfx90a:xnack+"
        );
        assert_eq!(
            error("gfx90a:foo+"),
            "invalid target ID 'gfx90a:foo+': gfx90a has no feature 'foo' (it has: sramecc, xnack)"
        );
        assert_eq!(
            error("sm_80:xnack+"),
            "invalid target ID 'sm_80:xnack+': sm_80 has no feature 'xnack' (it has: none)"
        );
        assert_eq!(error(""), "invalid target ID '': it is empty");
        assert_eq!(error(":xnack+"), "invalid target ID ':xnack+': expected PROCESSOR(:FEATURE+|:FEATURE-)*, each feature once, as in gfx90a:xnack+");
        for good in [
            "gfx90a",
            "gfx90a:xnack+",
            "gfx950:sramecc-",
            "sm_80",
            "gfx1010:xnack-",
        ] {
            assert_eq!(good.parse::<TargetIdBuf>().unwrap().as_str(), good);
        }
    }

    fn amdgcn() -> Triple {
        Triple::new("amdgcn-amd-amdhsa")
    }

    #[test]
    fn syntax_accepts_features_and_rejects_bad_items() {
        let t = TargetId::parse_syntax("gfx908:sramecc+:xnack-").unwrap();
        assert_eq!(t.processor, "gfx908");
        assert_eq!(
            t.features,
            [
                ("sramecc", FeatureSetting::On),
                ("xnack", FeatureSetting::Off)
            ]
        );
        assert_eq!(TargetId::parse_syntax("gfx906:").unwrap().features, []);
        assert_eq!(TargetId::parse_syntax("").unwrap().processor, "");
        assert!(TargetId::parse_syntax(":xnack+").is_none());
        assert!(TargetId::parse_syntax("gfx90a:xnack").is_none());
        assert!(TargetId::parse_syntax("gfx90a::xnack+").is_none());
        assert!(TargetId::parse_syntax("gfx90a:xnack+:xnack-").is_none());
    }

    #[test]
    fn parse_resolves_aliases_and_checks_features() {
        let t = amdgcn();
        assert_eq!(TargetId::parse(&t, "fiji").unwrap().0, "gfx803");
        assert_eq!(TargetId::parse(&t, "gfx90a:xnack+").unwrap().0, "gfx90a");
        assert!(TargetId::parse(&t, "gfx906:foo+").is_none());
        assert!(TargetId::parse(&t, "gfx1030:xnack+").is_none());
        assert!(TargetId::parse(&t, "gfx9000").is_none());
        assert!(TargetId::parse(&t, "").is_none());
        let nv = Triple::new("nvptx64-nvidia-cuda");
        assert_eq!(TargetId::parse(&nv, "sm_70").unwrap().0, "sm_70");
        assert!(TargetId::parse(&nv, "sm_70:xnack+").is_none());
    }

    #[test]
    fn canonical_form_sorts_features_and_resolves_aliases() {
        let t = amdgcn();
        assert_eq!(
            canonical_target_id(&t, "gfx908:xnack-:sramecc+").unwrap(),
            "gfx908:sramecc+:xnack-"
        );
        assert_eq!(canonical_target_id(&t, "tahiti").unwrap(), "gfx600");
        assert_eq!(canonical_target_id(&t, "bogus"), None);
    }

    #[test]
    fn compatibility_follows_any_on_off() {
        let t = amdgcn();
        assert!(is_target_id_compatible(&t, "gfx906", "gfx906:xnack+"));
        assert!(is_target_id_compatible(
            &t,
            "gfx90a:xnack+",
            "gfx90a:xnack+:sramecc+"
        ));
        assert!(!is_target_id_compatible(&t, "gfx90a:xnack+", "gfx90a"));
        assert!(!is_target_id_compatible(
            &t,
            "gfx90a:xnack+",
            "gfx90a:xnack-"
        ));
        assert!(!is_target_id_compatible(&t, "gfx906", "gfx908"));
        assert!(is_target_id_compatible(&t, "fiji", "gfx803"));
    }

    #[test]
    fn conflicts_are_one_directional_in_byte_order() {
        assert_eq!(
            conflicting_pair(["gfx90a:xnack+", "gfx90a"]),
            Some(("gfx90a", "gfx90a:xnack+"))
        );
        assert_eq!(conflicting_pair(["gfx90a:xnack+", "gfx90a:xnack-"]), None);
        assert_eq!(
            conflicting_pair(["gfx90a:sramecc+:xnack+", "gfx90a:xnack+"]),
            None
        );
        assert_eq!(conflicting_pair(["gfx906", "gfx90a:xnack+"]), None);
        assert_eq!(conflicting_pair(["gfx90a:xnack", "gfx90a"]), None);
    }

    #[test]
    fn processor_tables_differ_by_release() {
        let t = amdgcn();
        let v22 = ProcessorTable::Release(LlvmVersion::V22);
        assert!(TargetId::parse_in(v22, &t, "gfx950:xnack+").is_some());
        assert!(TargetId::parse_in(v22, &t, "gfx940").is_none());
        assert!(TargetId::parse(&t, "gfx940").is_some());
        assert!(TargetId::parse(&t, "gfx950").is_none());
        assert!(TargetId::parse_in(ProcessorTable::AnyRelease, &t, "gfx940").is_some());
        assert!(TargetId::parse_in(ProcessorTable::AnyRelease, &t, "gfx950").is_some());
        assert!(is_offload_arch_in(LlvmVersion::V22, "gfx9-4-generic"));
        assert!(!is_offload_arch_in(LlvmVersion::V22, "gfx941"));
        assert!(!is_offload_arch_in(LlvmVersion::V22, ""));
    }

    #[test]
    fn offload_arch_table_has_the_empty_name_and_no_newer_targets() {
        assert!(is_offload_arch(""));
        assert!(is_offload_arch("gfx90a"));
        assert!(is_offload_arch("gfx10-3-generic"));
        assert!(!is_offload_arch("gfx950"));
        assert!(!is_offload_arch("sm_100"));
    }
}
