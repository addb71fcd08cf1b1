//! Bundle entry IDs: `<offload-kind>-<triple>[-<target-id>]`, parsed as LLVM 19 or LLVM 22
//! parses them.
//!
//! LLVM 19 splits an entry ID at its last `-` (before any `:`) and takes what follows as the
//! start of the target ID only when it is a processor name its offload-arch table knows; the
//! triple is then rebuilt from four `-`-separated pieces. The name it writes into bundles (the
//! "standardised" name) follows from that, quirks included: `host-x86_64-unknown-linux-gnu`
//! becomes `host-x86_64-unknown-linux-gnu-`, `hipv4-amdgcn-amd-amdhsa-gfx906` becomes
//! `hipv4-amdgcn-amd-amdhsa--gfx906`. Matching these quirks is what makes bundles written here
//! byte-identical to LLVM's and lets each tool read the other's.
//!
//! LLVM 20 and later split an ID into exactly five or six `-` pieces instead: kind, the four
//! pieces of the triple, and an optional target ID, kept only when its processor is in their
//! offload-arch table; the triple is written normalised (`amdgcn-amd-amdhsa-` for AMDHSA).
//! Here a processor an older release knew (gfx940, gfx941) is kept too: LLVM 22 drops it and
//! then takes one such entry for another.
//!
//! # Example
//!
//! ```
//! use offload::target::entry_id::EntryId;
//!
//! let id = EntryId::parse("hipv4-amdgcn-amd-amdhsa--gfx90a:sramecc+:xnack-");
//! assert_eq!(id.kind, "hipv4");
//! assert_eq!(id.triple.as_str(), "amdgcn-amd-amdhsa-");
//! assert_eq!(id.target_id, "gfx90a:sramecc+:xnack-");
//! assert!(id.is_kind_valid() && id.is_triple_valid() && !id.is_host());
//!
//! let host = EntryId::parse("host-x86_64-unknown-linux-gnu");
//! assert!(host.is_host());
//! assert_eq!(host.triple.arch_name(), "x86_64");
//! assert_eq!(host.target_id, "");
//! ```

use crate::target::processor::{LlvmVersion, Processor};
use crate::target::target_id::ProcessorTable;
use crate::target::target_id::{is_offload_arch, is_offload_arch_in, target_ids_compatible_in};
use crate::target::triple::{Os, Triple};
use std::fmt;

/// The offload kinds LLVM 19's bundler accepts.
pub const OFFLOAD_KINDS: &[&str] = &["host", "openmp", "hip", "hipv4"];

/// Which offload kinds match, as the bundler's `-hip-openmp-compatible` option chooses.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum KindMatching {
    /// Equal kinds, and `hip` with `hipv4`.
    Exact,
    /// Also any `hip*` kind with `openmp`, both ways.
    HipOpenmpCompatible,
}

/// A bundle entry ID taken apart: offload kind, triple (always four pieces) and target ID.
#[derive(Debug, Clone)]
pub struct EntryId {
    /// The offload kind: `host`, `openmp`, `hip` or `hipv4` when valid.
    pub kind: String,
    /// The target triple, rebuilt from four pieces.
    pub triple: Triple,
    /// The target ID with its features, as written; empty when the ID has none.
    pub target_id: String,
    /// The LLVM release whose rules parsed it, which also decide how it is written and
    /// which processors its target ID may name.
    pub rules: LlvmVersion,
}

/// The first character of `text` that no bundle entry ID written here may hold: a control
/// character (U+0000 to U+001F, U+007F). A text bundle keeps its IDs on marker lines, which a
/// line end would cut (LLVM 19 writes such a marker, then cannot find the entry again); the
/// bundler's `-list` prints one ID a line; no command line can pass a NUL to `-targets=`.
/// LLVM 22 itself never writes one: it drops a target ID it does not know and normalizes the
/// triple's pieces.
pub fn unwritable_char(text: &str) -> Option<char> {
    text.chars().find(char::is_ascii_control)
}

/// Whether `text` has the shape LLVM 20 and later require of a bundle entry ID
/// (`checkOffloadBundleID`): five or six `-` pieces when split at most five times, that is a
/// kind, four triple pieces and an optional target ID.
pub fn is_well_formed(text: &str) -> bool {
    text.matches('-').count() >= 4
}

/// The processor of a target ID piece (before any `:`) when LLVM 22 reads the piece as a
/// target ID: its offload-arch table knows it, or an older release did (kept here so that
/// retired processors are not mistaken for each other).
fn is_target_id_processor_22(processor: &str) -> bool {
    is_offload_arch_in(LlvmVersion::V22, processor)
        || Processor::named(processor)
            .is_some_and(|p| p.name == processor && p.known_by(LlvmVersion::V19))
}

impl EntryId {
    /// Parses `text` the way LLVM 19's bundler does. Never fails: validity is asked
    /// separately ([`EntryId::is_kind_valid`], [`EntryId::is_triple_valid`]).
    pub fn parse(text: &str) -> EntryId {
        EntryId::parse_as(LlvmVersion::V19, text)
    }

    /// Parses `text` the way LLVM `version`'s bundler does. Never fails; for LLVM 22 an ID
    /// that is not [`is_well_formed`] gets empty pieces where pieces are missing.
    pub fn parse_as(version: LlvmVersion, text: &str) -> EntryId {
        match version {
            LlvmVersion::V19 => EntryId::parse_19(text),
            LlvmVersion::V22 | LlvmVersion::V23 => EntryId::parse_22(text),
        }
    }

    /// The target ID piece of `text` under LLVM 22's rules that names a processor neither
    /// LLVM 22 nor an older release knows, which LLVM 22 silently drops from the ID.
    pub fn unknown_processor_22(text: &str) -> Option<&str> {
        let piece = text.splitn(6, '-').nth(5)?;
        let processor = piece.split_once(':').map_or(piece, |(p, _)| p);
        (!processor.is_empty() && !is_target_id_processor_22(processor)).then_some(processor)
    }

    fn parse_22(text: &str) -> EntryId {
        let mut pieces = text.splitn(6, '-');
        let kind = pieces.next().unwrap_or("");
        let mut triple_pieces = [""; 4];
        for piece in &mut triple_pieces {
            *piece = pieces.next().unwrap_or("");
        }
        let with_features = pieces.next().unwrap_or("");
        let processor = with_features
            .split_once(':')
            .map_or(with_features, |(p, _)| p);
        let target_id = if !processor.is_empty() && is_target_id_processor_22(processor) {
            with_features
        } else {
            ""
        };
        let whole = Triple::new(&triple_pieces.join("-"));
        let triple = Triple::from_parts(
            whole.arch_name(),
            whole.vendor_name(),
            whole.os_name(),
            whole.environment_name(),
        );
        EntryId {
            kind: kind.to_string(),
            triple,
            target_id: target_id.to_string(),
            rules: LlvmVersion::V22,
        }
    }

    /// The triple as LLVM 22 writes it: normalised, with `unknown` for empty pieces; for the
    /// AMDHSA OS, three pieces and an empty environment. (LLVM also moves pieces written in
    /// the wrong place, such as `x86_64-linux-gnu-unknown`; that is not done here.)
    fn normalised_triple(&self) -> String {
        let piece = |p: &str| {
            if p.is_empty() {
                "unknown".to_string()
            } else {
                p.to_string()
            }
        };
        let t = &self.triple;
        let three = format!(
            "{}-{}-{}",
            piece(t.arch_name()),
            piece(t.vendor_name()),
            piece(t.os_name())
        );
        if t.os() == Os::AmdHsa {
            format!("{three}-")
        } else {
            format!("{three}-{}", piece(t.environment_name()))
        }
    }

    fn parse_19(text: &str) -> EntryId {
        let before_features = text.split_once(':').map_or(text, |(a, _)| a);
        let (left, last) = before_features
            .rsplit_once('-')
            .unwrap_or((before_features, ""));
        let (kind_and_triple, target_id) = if is_offload_arch(last) {
            // The target ID starts at the first occurrence of that piece anywhere in the
            // text (LLVM 19 searches the whole string, which duplicates text in odd IDs).
            let start = text.find(last).unwrap_or(0);
            (left, &text[start..])
        } else {
            (before_features, "")
        };
        let (kind, triple_text) = kind_and_triple
            .split_once('-')
            .unwrap_or((kind_and_triple, ""));
        let pieces = Triple::new(triple_text);
        let triple = Triple::from_parts(
            pieces.arch_name(),
            pieces.vendor_name(),
            pieces.os_name(),
            pieces.environment_name(),
        );
        EntryId {
            kind: kind.to_string(),
            triple,
            target_id: target_id.to_string(),
            rules: LlvmVersion::V19,
        }
    }

    /// Whether the offload kind is one LLVM 19 accepts.
    pub fn is_kind_valid(&self) -> bool {
        OFFLOAD_KINDS.contains(&self.kind.as_str())
    }

    /// Whether the triple's architecture is known.
    pub fn is_triple_valid(&self) -> bool {
        !self.triple.as_str().is_empty()
            && self.triple.arch() != crate::target::triple::Arch::UnknownArch
    }

    /// Whether this is the host entry.
    pub fn is_host(&self) -> bool {
        self.kind == "host"
    }

    /// `<kind>-<triple>`: the group LLVM checks for conflicting target IDs.
    pub fn kind_and_triple(&self) -> String {
        format!("{}-{}", self.kind, self.triple.as_str())
    }

    /// Whether an entry of this kind may be given to a target of kind `target`: equal kinds,
    /// `hip` with `hipv4`, and with [`KindMatching::HipOpenmpCompatible`] any `hip*` kind with
    /// `openmp`.
    pub fn is_kind_compatible(&self, target: &str, matching: KindMatching) -> bool {
        let kind = self.kind.as_str();
        if kind == target || matches!((kind, target), ("hip", "hipv4") | ("hipv4", "hip")) {
            return true;
        }
        let starts_hip = |s: &str| {
            s.as_bytes()
                .get(..3)
                .is_some_and(|b| b.eq_ignore_ascii_case(b"hip"))
        };
        matching == KindMatching::HipOpenmpCompatible
            && ((starts_hip(kind) && target == "openmp")
                || (kind == "openmp" && starts_hip(target)))
    }

    /// Whether the code object of this entry can serve the requested `target`, as LLVM's
    /// bundler decides: an exact match of kind, triple and target ID; or compatible kinds,
    /// compatible triples, the same processor, and every feature this entry sets set alike
    /// in the target. Processors are those of the target's LLVM release for LLVM 19, and
    /// those of any release for LLVM 22, so that retired processors stay apart.
    pub fn is_compatible_with(&self, target: &EntryId, matching: KindMatching) -> bool {
        if self.kind == target.kind
            && self.triple.is_compatible_with(&target.triple)
            && self.target_id == target.target_id
        {
            return true;
        }
        if !self.is_kind_compatible(&target.kind, matching)
            || !self.triple.is_compatible_with(&target.triple)
        {
            return false;
        }
        let table = match target.rules {
            LlvmVersion::V19 => ProcessorTable::Release(LlvmVersion::V19),
            LlvmVersion::V22 | LlvmVersion::V23 => ProcessorTable::AnyRelease,
        };
        target_ids_compatible_in(
            table,
            &self.triple,
            &self.target_id,
            &target.triple,
            &target.target_id,
        )
    }
}

/// The standardised name LLVM writes: `<kind>-<four-piece triple>-<target ID>`.
impl fmt::Display for EntryId {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let triple = match self.rules {
            LlvmVersion::V19 => self.triple.as_str().to_string(),
            LlvmVersion::V22 | LlvmVersion::V23 => self.normalised_triple(),
        };
        write!(f, "{}-{triple}-{}", self.kind, self.target_id)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn kinds_that_are_not_ascii_compare_without_panicking() {
        let entry = EntryId::parse("pv\u{553}v2rm63f");
        assert!(!entry.is_kind_compatible("openmp", KindMatching::HipOpenmpCompatible));
        assert!(EntryId::parse("HIPx-amdgcn-amd-amdhsa--gfx90a")
            .is_kind_compatible("openmp", KindMatching::HipOpenmpCompatible));
    }

    fn std_name(s: &str) -> String {
        EntryId::parse(s).to_string()
    }

    #[test]
    fn standardised_names_match_llvm_19() {
        let cases = [
            (
                "host-x86_64-unknown-linux-gnu",
                "host-x86_64-unknown-linux-gnu-",
            ),
            ("host-x86_64-unknown-linux", "host-x86_64-unknown-linux--"),
            ("openmp-x86_64", "openmp-x86_64----"),
            (
                "hipv4-amdgcn-amd-amdhsa-gfx906",
                "hipv4-amdgcn-amd-amdhsa--gfx906",
            ),
            (
                "hipv4-amdgcn-amd-amdhsa--gfx906",
                "hipv4-amdgcn-amd-amdhsa--gfx906",
            ),
            (
                "hipv4-amdgcn-amd-amdhsa-unknown-gfx906",
                "hipv4-amdgcn-amd-amdhsa-unknown-gfx906",
            ),
            (
                "openmp-nvptx64-nvidia-cuda-sm_70",
                "openmp-nvptx64-nvidia-cuda--sm_70",
            ),
            (
                "hipv4-amdgcn-amd-amdhsa--gfx90a:sramecc-:xnack+",
                "hipv4-amdgcn-amd-amdhsa--gfx90a:sramecc-:xnack+",
            ),
            (
                "hipv4-amdgcn-amd-amdhsa--gfx9000",
                "hipv4-amdgcn-amd-amdhsa--gfx9000-",
            ),
            (
                "hipv4-amdgcn-amd-amdhsa--gfx906-extra",
                "hipv4-amdgcn-amd-amdhsa--gfx906-extra-",
            ),
            (
                "hipv4-amdgcn-amd-amdhsa--gfx906-gfx906",
                "hipv4-amdgcn-amd-amdhsa--gfx906-gfx906-gfx906",
            ),
            (
                "host-x86_64-unknown-linux-gnu-",
                "host-x86_64-unknown-linux-gnu-host-x86_64-unknown-linux-gnu-",
            ),
            (
                "hip-amdgcn-amd-amdhsa-gfx90a",
                "hip-amdgcn-amd-amdhsa--gfx90a",
            ),
        ];
        for (input, expected) in cases {
            assert_eq!(std_name(input), expected, "for {input}");
        }
    }

    #[test]
    fn generic_targets_are_misparsed_as_llvm_19_does() {
        let e = EntryId::parse("hipv4-amdgcn-amd-amdhsa--gfx9-generic");
        assert_eq!(e.target_id, "generic");
        assert_eq!(e.to_string(), "hipv4-amdgcn-amd-amdhsa--gfx9-generic");
        assert_eq!(e.triple.as_str(), "amdgcn-amd-amdhsa--gfx9");
    }

    fn std_name_22(s: &str) -> String {
        EntryId::parse_as(LlvmVersion::V22, s).to_string()
    }

    #[test]
    fn standardised_names_match_llvm_22() {
        let cases = [
            (
                "host-x86_64-unknown-linux-gnu",
                "host-x86_64-unknown-linux-gnu-",
            ),
            (
                "host-x86_64-unknown-linux-gnu-",
                "host-x86_64-unknown-linux-gnu-",
            ),
            (
                "host-x86_64-unknown-linux--",
                "host-x86_64-unknown-linux-unknown-",
            ),
            (
                "hipv4-amdgcn-amd-amdhsa-gfx906",
                "hipv4-amdgcn-amd-amdhsa--",
            ),
            (
                "hipv4-amdgcn-amd-amdhsa-unknown-gfx906",
                "hipv4-amdgcn-amd-amdhsa--gfx906",
            ),
            (
                "hipv4-amdgcn--amdhsa--gfx906",
                "hipv4-amdgcn-unknown-amdhsa--gfx906",
            ),
            (
                "hipv4-amdgcn-amd-amdhsa--gfx9-generic",
                "hipv4-amdgcn-amd-amdhsa--gfx9-generic",
            ),
            (
                "hipv4-amdgcn-amd-amdhsa--gfx950:xnack+",
                "hipv4-amdgcn-amd-amdhsa--gfx950:xnack+",
            ),
            (
                "hipv4-amdgcn-amd-amdhsa--gfx906-extra",
                "hipv4-amdgcn-amd-amdhsa--",
            ),
            (
                "hip-spirv64-amd-amdhsa-unknown-amdgcnspirv",
                "hip-spirv64-amd-amdhsa--amdgcnspirv",
            ),
            (
                "hipv4-amdgcn-amd-linux--gfx906",
                "hipv4-amdgcn-amd-linux-unknown-gfx906",
            ),
            // Kept here, dropped by LLVM 22: a processor an older release knew.
            (
                "hipv4-amdgcn-amd-amdhsa--gfx941:xnack+",
                "hipv4-amdgcn-amd-amdhsa--gfx941:xnack+",
            ),
        ];
        for (input, expected) in cases {
            assert_eq!(std_name_22(input), expected, "for {input}");
        }
        assert!(is_well_formed("a-b-c-d-e"));
        assert!(!is_well_formed("host-x86_64-unknown-linux"));
        assert_eq!(
            EntryId::unknown_processor_22("hipv4-amdgcn-amd-amdhsa--gfx9000:xnack+"),
            Some("gfx9000")
        );
        assert_eq!(
            EntryId::unknown_processor_22("hipv4-amdgcn-amd-amdhsa--gfx940"),
            None
        );
    }

    #[test]
    fn retired_processors_stay_apart_under_llvm_22() {
        let parse = |s: &str| EntryId::parse_as(LlvmVersion::V22, s);
        let gfx940 = parse("hipv4-amdgcn-amd-amdhsa--gfx940");
        let gfx941 = parse("hipv4-amdgcn-amd-amdhsa--gfx941:xnack+");
        assert!(!gfx941.is_compatible_with(&gfx940, KindMatching::Exact));
        assert!(gfx940.is_compatible_with(&gfx940, KindMatching::Exact));
        let gfx950 = parse("hipv4-amdgcn-amd-amdhsa--gfx950:xnack+");
        assert!(parse("hipv4-amdgcn-amd-amdhsa--gfx950")
            .is_compatible_with(&gfx950, KindMatching::Exact));
    }

    #[test]
    fn validity_of_kinds_and_triples() {
        let bad = EntryId::parse("foo");
        assert!(!bad.is_kind_valid());
        assert!(!bad.is_triple_valid());
        assert_eq!(bad.triple.as_str(), "---");
        let upper = EntryId::parse("hipv4-AMDGCN-amd-amdhsa--gfx906");
        assert!(upper.is_kind_valid());
        assert!(!upper.is_triple_valid());
        assert_eq!(upper.triple.as_str(), "AMDGCN-amd-amdhsa-");
        assert!(EntryId::parse("cuda-nvptx64-nvidia-cuda--sm_70").is_triple_valid());
        assert!(!EntryId::parse("cuda-nvptx64-nvidia-cuda--sm_70").is_kind_valid());
    }

    fn compatible(entry: &str, target: &str) -> bool {
        let t = EntryId::parse(&std_name(target));
        EntryId::parse(entry).is_compatible_with(&t, KindMatching::Exact)
    }

    #[test]
    fn compatibility_matches_llvm_19() {
        assert!(compatible(
            "hipv4-amdgcn-amd-amdhsa--gfx906",
            "hipv4-amdgcn-amd-amdhsa--gfx906:xnack+"
        ));
        assert!(compatible(
            "hip-amdgcn-amd-amdhsa--gfx906",
            "hipv4-amdgcn-amd-amdhsa--gfx906"
        ));
        assert!(compatible(
            "hipv4-amdgcn-amd-amdhsa--gfx90a:xnack+",
            "hipv4-amdgcn-amd-amdhsa--gfx90a:xnack+:sramecc+"
        ));
        assert!(!compatible(
            "hipv4-amdgcn-amd-amdhsa--gfx90a:xnack+",
            "hipv4-amdgcn-amd-amdhsa--gfx90a"
        ));
        assert!(compatible(
            "openmp-nvptx64-nvidia-cuda--sm_70",
            "openmp-nvptx64-nvidia-cuda-sm_70"
        ));
        assert!(!compatible(
            "openmp-nvptx64-nvidia-cuda--sm_70",
            "openmp-nvptx64-nvidia-cuda--sm_70:xnack+"
        ));
        assert!(compatible(
            "host-x86_64-unknown-linux-gnu-",
            "host-x86_64-unknown-linux-gnu"
        ));
        // An entry without a target ID written by older LLVM is not found by LLVM 19.
        assert!(!compatible(
            "host-x86_64-unknown-linux-gnu",
            "host-x86_64-unknown-linux-gnu"
        ));
        assert!(compatible(
            "hipv4-amdgcn-amd-amdhsa-unknown-gfx906",
            "hipv4-amdgcn-amd-amdhsa--gfx906"
        ));
        assert!(!compatible(
            "openmp-amdgcn-amd-amdhsa--gfx906",
            "hipv4-amdgcn-amd-amdhsa--gfx906"
        ));
    }

    #[test]
    fn hip_openmp_compatibility_needs_the_flag() {
        let entry = EntryId::parse("hipv4-amdgcn-amd-amdhsa--gfx906");
        let target = EntryId::parse("openmp-amdgcn-amd-amdhsa--gfx906");
        assert!(!entry.is_compatible_with(&target, KindMatching::Exact));
        assert!(entry.is_compatible_with(&target, KindMatching::HipOpenmpCompatible));
        assert!(target.is_compatible_with(&entry, KindMatching::HipOpenmpCompatible));
    }
}
