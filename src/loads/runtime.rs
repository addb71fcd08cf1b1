//! What the HIP runtime loads from one bundle for each GPU of a machine: the runtime's own
//! choice, one entry per device (not every entry a device could run, which is
//! [`crate::loads::hip`]'s question).
//!
//! The rule, read from the HIP runtime (CLR's `hip_fatbin.cpp`) and comgr
//! (`comgr-metadata.cpp`):
//! - The runtime makes one set of requests for all the machine's devices, sorted as a
//!   `std::set<std::string>` sorts: each device's full ISA name
//!   (`amdgcn-amd-amdhsa--gfx90a:sramecc+:xnack-`), the generic target its own map gives for
//!   the processor with the device's `sramecc` and `xnack` settings appended again, and the two
//!   SPIR-V names.
//! - Uncompressed bundle: comgr reads the header from the first 4096 bytes only (the runtime
//!   cannot know the bundle's size, so it passes 4096); a header that goes past them is an
//!   error and no device gets anything. Each entry, in bundle order, of kind `hip`, `hipv4` or
//!   `hcc`, fills the first compatible request not yet filled. A request filled by an empty
//!   entry counts as not filled (a later entry may fill it), but it counts towards the end of
//!   the walk, which stops once as many requests were filled as there are.
//! - Compressed bundle: comgr runs clang's bundler on the inflated bundle, asking for
//!   `hipv4-<request>` with missing bundles allowed and `hip`/`openmp` kinds compatible.
//!   Entries go in the bundler's order (that of its hash map, not the file's), each to the
//!   first compatible request in the order of the map of requests, which the entry then
//!   leaves; an empty entry so taken leaves its request without code.
//! - A device takes the entry of its ISA name if one was found, else that of its generic
//!   request, else SPIR-V if either SPIR-V request was found.
//!
//! comgr's compatibility of a request with an entry's ISA name: equal strings; or both read as
//! `amdgcn-amd-amdhsa--PROCESSOR[:FEATURE±]...` (the text split at its first four `-`, so
//! `gfx9-4-generic` stays whole) with a processor comgr knows and features it supports, the
//! same processor, and each feature the entry sets set alike in the request: a request that
//! leaves it out does not match. Here the processors comgr knows are those of the processor
//! table, whichever LLVM release has them; an ISA name with another processor (or an alias)
//! matches only itself.
//!
//! # Example
//!
//! What each GPU of a machine with a gfx90a and a gfx1101 loads from one bundle.
//!
//! ```
//! use offload::loads::runtime::{self, Bundle, Load, Why};
//! use offload::loads::via::Via;
//!
//! let bundle = Bundle::from_entries(
//!     [
//!         ("host-x86_64-unknown-linux-gnu-", 0),
//!         ("hipv4-amdgcn-amd-amdhsa--gfx90a:xnack-", 1000),
//!         ("hipv4-amdgcn-amd-amdhsa--gfx11-generic", 1000),
//!     ],
//!     false,
//! );
//! let devices = [
//!     runtime::parse_device("gfx90a:sramecc+:xnack-").unwrap(),
//!     runtime::parse_device("amdgcn-amd-amdhsa--gfx1101").unwrap(),
//!     runtime::parse_device("gfx90a:xnack+").unwrap(),
//! ];
//! assert_eq!(runtime::isa_name(&devices[0]), "amdgcn-amd-amdhsa--gfx90a:sramecc+:xnack-");
//! assert_eq!(
//!     runtime::loads(&devices, &bundle),
//!     [
//!         Load::Entry(1, Via::Native),
//!         Load::Entry(2, Via::Generic),
//!         Load::Nothing(Why::NoCompatibleEntry),
//!     ]
//! );
//! ```

use std::collections::BTreeSet;

use crate::llvm::adt::string_map::StringMap;
use crate::loads::hip::Via;
use crate::target::entry_id::{EntryId, KindMatching};
use crate::target::processor::{LlvmVersion, Processor, ProcessorKind};
use crate::target::target_id::{TargetId, TargetIdBuf, TargetIdError};

/// The triple the runtime prefixes a device's target ID with in its ISA names.
pub const AMDGCN_ISA_PREFIX: &str = "amdgcn-amd-amdhsa--";

/// The two names under which the runtime asks for SPIR-V: the first one found of the second,
/// then the first, is what it compiles.
pub const SPIRV_ISA_NAMES: [&str; 2] = [
    "spirv64-amd-amdhsa--amdgcnspirv",
    "spirv64-amd-amdhsa-unknown-amdgcnspirv",
];

/// How many bytes of an uncompressed bundle the runtime hands to comgr to read its header.
pub const HEADER_WINDOW: u64 = 4096;

/// The offload kinds comgr takes entries of, in uncompressed bundles.
const COMGR_KINDS: [&str; 3] = ["hip", "hipv4", "hcc"];

/// Size of a bundle header's fixed part: the magic and the entry count.
const HEADER_START: u64 = 32;

/// Size of an entry record's fixed part: offset, size and ID length.
const RECORD_START: u64 = 24;

/// Reads a device as a command line names it: a target ID (`gfx90a:sramecc+:xnack-`) or the
/// runtime's full ISA name (`amdgcn-amd-amdhsa--gfx90a:sramecc+:xnack-`).
pub fn parse_device(text: &str) -> Result<TargetIdBuf, TargetIdError> {
    text.strip_prefix(AMDGCN_ISA_PREFIX).unwrap_or(text).parse()
}

/// One entry of a bundle, as the runtime reads it from the bundle's header.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Entry<'a> {
    /// The entry ID as stored.
    pub id: &'a str,
    /// The size of its code.
    pub size: u64,
}

/// One bundle (one translation unit's code) as the runtime meets it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Bundle<'a> {
    /// Its entries, in bundle order.
    pub entries: Vec<Entry<'a>>,
    /// Whether it is stored compressed (the runtime unbundles those another way).
    pub compressed: bool,
    /// The size of its header: entry count, offsets, sizes and IDs.
    pub header_size: u64,
}

impl<'a> Bundle<'a> {
    /// A bundle of `entries` (ID and size, in bundle order) with the header clang's bundler
    /// writes for them: magic, count, and one record of offset, size, ID length and ID per
    /// entry.
    pub fn from_entries(
        entries: impl IntoIterator<Item = (&'a str, u64)>,
        compressed: bool,
    ) -> Bundle<'a> {
        let entries: Vec<Entry<'a>> = entries
            .into_iter()
            .map(|(id, size)| Entry { id, size })
            .collect();
        let header_size = entries.iter().fold(HEADER_START, |size, e| {
            size.saturating_add(RECORD_START)
                .saturating_add(e.id.len() as u64)
        });
        Bundle {
            entries,
            compressed,
            header_size,
        }
    }
}

/// Why a device loads nothing from a bundle.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Why {
    /// No entry is for it: none for its processor with its features, none for the generic
    /// target the runtime maps it to, no SPIR-V (or other devices' requests took them).
    NoCompatibleEntry,
    /// The entries that would serve it are empty.
    EmptyEntry,
    /// The bundle is stored uncompressed and its header is longer than the 4096 bytes the
    /// runtime lets comgr read: the runtime rejects the whole bundle (`hipErrorInvalidImage`).
    HeaderPastWindow,
}

impl Why {
    /// A short phrase for people.
    pub fn describe(self) -> &'static str {
        match self {
            Why::NoCompatibleEntry => "no compatible entry",
            Why::EmptyEntry => "the compatible entry is empty",
            Why::HeaderPastWindow => {
                "the bundle header is longer than the 4096 bytes the runtime reads"
            }
        }
    }
}

/// What one device loads from one bundle.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Load {
    /// The entry at this index (in bundle order), and how the device came to it.
    Entry(usize, Via),
    /// Nothing: the device has no code in this bundle, for this reason.
    Nothing(Why),
}

/// The runtime's ISA name for `device`: the AMDGCN triple, then its target ID with the
/// processor's canonical name and the features in alphabetical order, as a device reports
/// them.
pub fn isa_name(device: &TargetIdBuf) -> String {
    let id = device.target_id();
    let processor = Processor::named(id.processor).map_or(id.processor, |p| p.name);
    let canonical = TargetId {
        processor,
        features: id.features.clone(),
    }
    .canonical();
    format!("{AMDGCN_ISA_PREFIX}{canonical}")
}

/// The runtime's generic request for a device's ISA name (`TargetToGeneric`): the generic
/// target its own map gives for the processor (the ISA name up to the first `:`), with the
/// device's `sramecc` and then `xnack` settings, found anywhere in the name, appended again.
/// `None` when the map has no entry (gfx908, gfx90a, gfx940 ...).
pub fn generic_isa_name(isa: &str) -> Option<String> {
    let setting = |feature: &str| -> Option<String> {
        if !isa.contains(feature) {
            return None;
        }
        ["+", "-"]
            .iter()
            .map(|sign| format!("{feature}{sign}"))
            .find(|with_sign| isa.contains(with_sign.as_str()))
    };
    let base = isa.split(':').next().unwrap_or(isa);
    let processor = base.strip_prefix(AMDGCN_ISA_PREFIX)?;
    let generic = Processor::named(processor)
        .filter(|p| p.name == processor)?
        .generic_hip?;
    let mut name = format!("{AMDGCN_ISA_PREFIX}{generic}");
    for feature in [setting("sramecc"), setting("xnack")].into_iter().flatten() {
        name.push(':');
        name.push_str(&feature);
    }
    Some(name)
}

/// The runtime's requests for `devices`, sorted and each once: every device's ISA name and
/// generic request, and the SPIR-V names.
pub fn requests(devices: &[TargetIdBuf]) -> Vec<String> {
    let mut set: BTreeSet<String> = SPIRV_ISA_NAMES.iter().map(|s| s.to_string()).collect();
    for device in devices {
        let isa = isa_name(device);
        if let Some(generic) = generic_isa_name(&isa) {
            set.insert(generic);
        }
        set.insert(isa);
    }
    set.into_iter().collect()
}

/// An ISA name as comgr reads it: the processor and the `xnack` and `sramecc` signs it sets.
struct IsaIdent<'a> {
    processor: &'a str,
    xnack: Option<u8>,
    sramecc: Option<u8>,
}

/// Reads `name` as comgr's `parseTargetIdentifier` does; `None` where comgr fails.
fn parse_isa_name(name: &str) -> Option<IsaIdent<'_>> {
    let pieces: Vec<&str> = name.splitn(5, '-').collect();
    let [arch, vendor, os, env, rest] = pieces.as_slice() else {
        return None;
    };
    let mut items = rest.split(':');
    let processor = items.next().unwrap_or("");
    if SPIRV_ISA_NAMES.contains(&name) {
        return Some(IsaIdent {
            processor,
            xnack: None,
            sramecc: None,
        });
    }
    let known = Processor::named(processor).filter(|p| {
        p.name == processor
            && p.kind() != ProcessorKind::Spirv
            && LlvmVersion::ALL.iter().any(|v| p.known_by(*v))
    })?;
    if (*arch, *vendor, *os, *env) != ("amdgcn", "amd", "amdhsa", "") {
        return None;
    }
    let mut ident = IsaIdent {
        processor,
        xnack: None,
        sramecc: None,
    };
    for item in items {
        let (feature, sign) = match item.as_bytes().split_last() {
            Some((&sign, feature)) if sign == b'+' || sign == b'-' => (feature, sign),
            _ => return None,
        };
        match feature {
            b"xnack" if known.xnack => ident.xnack = Some(sign),
            b"sramecc" if known.sramecc => ident.sramecc = Some(sign),
            _ => return None,
        }
    }
    Some(ident)
}

/// Whether comgr finds an entry whose ISA name is `entry` compatible with the request
/// `request` (`isCompatibleIsaName`).
pub fn is_compatible_isa_name(request: &str, entry: &str) -> bool {
    if request == entry {
        return true;
    }
    let (Some(code), Some(asked)) = (parse_isa_name(entry), parse_isa_name(request)) else {
        return false;
    };
    code.processor == asked.processor
        && code.xnack.is_none_or(|s| asked.xnack == Some(s))
        && code.sramecc.is_none_or(|s| asked.sramecc == Some(s))
}

/// What one request got from a bundle.
#[derive(Debug, Clone, Copy, Default)]
struct Filled {
    /// The entry, if one with code was found.
    entry: Option<usize>,
    /// Whether an empty compatible entry was met.
    empty: bool,
}

/// comgr's `lookUpCodeObject` over the header of an uncompressed bundle, read from the
/// runtime's 4096-byte window.
fn lookup_uncompressed(requests: &[String], bundle: &Bundle<'_>) -> Result<Vec<Filled>, Why> {
    let mut filled = vec![Filled::default(); requests.len()];
    let mut seen = 0usize;
    let mut read = HEADER_START;
    for (index, entry) in bundle.entries.iter().enumerate() {
        read = read
            .saturating_add(RECORD_START)
            .saturating_add(entry.id.len() as u64);
        if read > HEADER_WINDOW {
            return Err(Why::HeaderPastWindow);
        }
        let id = entry.id.trim_end_matches('\0');
        let (kind, isa) = id.split_once('-').unwrap_or((id, ""));
        if !COMGR_KINDS.contains(&kind) {
            continue;
        }
        let open = filled
            .iter_mut()
            .zip(requests)
            .find(|(slot, request)| slot.entry.is_none() && is_compatible_isa_name(request, isa));
        if let Some((slot, _)) = open {
            if entry.size == 0 {
                slot.empty = true;
            } else {
                slot.entry = Some(index);
            }
            seen += 1;
        }
        if seen == requests.len() {
            break;
        }
    }
    Ok(filled)
}

/// clang's bundler unbundling an inflated compressed bundle for `hipv4-<request>`, as comgr
/// runs it for the runtime: entries in the order of the bundler's map of the header (an ID
/// stored twice counts once, with its last record), each to the first compatible request in
/// the order of the map of requests.
fn unbundle_compressed(requests: &[String], bundle: &Bundle<'_>) -> Vec<Filled> {
    let mut filled = vec![Filled::default(); requests.len()];
    let mut entries: StringMap<usize> = StringMap::new();
    for (index, entry) in bundle.entries.iter().enumerate() {
        entries.insert(entry.id.as_bytes(), index);
    }
    let mut worklist: StringMap<usize> = StringMap::new();
    let names: Vec<String> = requests.iter().map(|r| format!("hipv4-{r}")).collect();
    for (index, name) in names.iter().enumerate() {
        worklist.insert(name.as_bytes(), index);
    }
    for (_, &index) in entries.iter() {
        if worklist.is_empty() {
            break;
        }
        let Some(entry) = bundle.entries.get(index) else {
            continue;
        };
        let code = EntryId::parse_as(LlvmVersion::V22, entry.id);
        let taker = worklist.iter().find_map(|(name, &request)| {
            let name = std::str::from_utf8(name).ok()?;
            let target = EntryId::parse_as(LlvmVersion::V22, name);
            code.is_compatible_with(&target, KindMatching::HipOpenmpCompatible)
                .then(|| (name.as_bytes().to_vec(), request))
        });
        let Some((name, request)) = taker else {
            continue;
        };
        worklist.remove(&name);
        if let Some(slot) = filled.get_mut(request) {
            if entry.size == 0 {
                slot.empty = true;
            } else {
                slot.entry = Some(index);
            }
        }
    }
    filled
}

/// What each of `devices` (the machine's GPUs, in the runtime's order) loads from `bundle`.
pub fn loads(devices: &[TargetIdBuf], bundle: &Bundle<'_>) -> Vec<Load> {
    let requests = requests(devices);
    let filled = if bundle.compressed {
        unbundle_compressed(&requests, bundle)
    } else {
        match lookup_uncompressed(&requests, bundle) {
            Ok(filled) => filled,
            Err(why) => return vec![Load::Nothing(why); devices.len()],
        }
    };
    let of = |name: &str| -> Filled {
        requests
            .iter()
            .position(|r| r == name)
            .and_then(|i| filled.get(i).copied())
            .unwrap_or_default()
    };
    let spirv = [of(SPIRV_ISA_NAMES[1]), of(SPIRV_ISA_NAMES[0])];
    devices
        .iter()
        .map(|device| {
            let isa = isa_name(device);
            let native = of(&isa);
            let generic = generic_isa_name(&isa).map(|g| of(&g)).unwrap_or_default();
            let tries = [
                (native, Via::Native),
                (generic, Via::Generic),
                (spirv[0], Via::Spirv),
                (spirv[1], Via::Spirv),
            ];
            if let Some((index, via)) = tries.iter().find_map(|(f, via)| Some((f.entry?, *via))) {
                return Load::Entry(index, via);
            }
            if tries.iter().any(|(f, _)| f.empty) {
                Load::Nothing(Why::EmptyEntry)
            } else {
                Load::Nothing(Why::NoCompatibleEntry)
            }
        })
        .collect()
}

#[cfg(test)]
#[allow(clippy::indexing_slicing)]
mod tests {
    use super::*;

    fn devices(names: &[&str]) -> Vec<TargetIdBuf> {
        names.iter().map(|n| parse_device(n).unwrap()).collect()
    }

    fn bundle<'a>(entries: &[(&'a str, u64)], compressed: bool) -> Bundle<'a> {
        Bundle::from_entries(entries.iter().copied(), compressed)
    }

    fn plain<'a>(entries: &[(&'a str, u64)]) -> Bundle<'a> {
        bundle(entries, false)
    }

    const MI200: &str = "amdgcn-amd-amdhsa--gfx90a:sramecc+:xnack-";

    #[test]
    fn devices_read_in_both_spellings_and_name_canonically() {
        let d = parse_device(MI200).unwrap();
        assert_eq!(d.as_str(), "gfx90a:sramecc+:xnack-");
        assert_eq!(
            isa_name(&parse_device("gfx90a:xnack-:sramecc+").unwrap()),
            MI200
        );
        assert_eq!(
            isa_name(&parse_device("fiji").unwrap()),
            "amdgcn-amd-amdhsa--gfx803"
        );
    }

    #[test]
    fn requests_are_sorted_with_the_runtime_generic_and_spirv() {
        assert_eq!(
            requests(&devices(&["gfx1101", "gfx942:sramecc+:xnack-"])),
            [
                "amdgcn-amd-amdhsa--gfx11-generic",
                "amdgcn-amd-amdhsa--gfx1101",
                "amdgcn-amd-amdhsa--gfx9-4-generic:sramecc+:xnack-",
                "amdgcn-amd-amdhsa--gfx942:sramecc+:xnack-",
                "spirv64-amd-amdhsa--amdgcnspirv",
                "spirv64-amd-amdhsa-unknown-amdgcnspirv",
            ]
        );
        assert_eq!(
            generic_isa_name("amdgcn-amd-amdhsa--gfx940:sramecc+:xnack-"),
            None
        );
        assert_eq!(generic_isa_name(MI200), None);
        assert_eq!(
            generic_isa_name("amdgcn-amd-amdhsa--gfx906:sramecc-:xnack+").as_deref(),
            Some("amdgcn-amd-amdhsa--gfx9-generic:sramecc-:xnack+")
        );
    }

    #[test]
    fn comgr_compatibility_needs_each_entry_feature_in_the_request() {
        let ok = is_compatible_isa_name;
        assert!(ok(MI200, "amdgcn-amd-amdhsa--gfx90a"));
        assert!(ok(MI200, "amdgcn-amd-amdhsa--gfx90a:xnack-"));
        assert!(!ok(MI200, "amdgcn-amd-amdhsa--gfx90a:xnack+"));
        assert!(!ok(
            "amdgcn-amd-amdhsa--gfx90a",
            "amdgcn-amd-amdhsa--gfx90a:xnack-"
        ));
        assert!(!ok(MI200, "amdgcn-amd-amdhsa--gfx908"));
        // Generic names keep their dashes: the split stops at the fourth.
        assert!(ok(
            "amdgcn-amd-amdhsa--gfx9-4-generic:sramecc+:xnack-",
            "amdgcn-amd-amdhsa--gfx9-4-generic:xnack-"
        ));
        // A feature the processor lacks, another triple, an alias, an unknown processor: only
        // equal strings match.
        assert!(!ok(
            "amdgcn-amd-amdhsa--gfx803:xnack-",
            "amdgcn-amd-amdhsa--gfx803"
        ));
        assert!(!ok(MI200, "amdgcn-amd-amdhsa-unknown-gfx90a"));
        assert!(!ok("amdgcn-amd-amdhsa--gfx803", "amdgcn-amd-amdhsa--fiji"));
        assert!(ok(
            "amdgcn-amd-amdhsa--gfx9999",
            "amdgcn-amd-amdhsa--gfx9999"
        ));
        assert!(!ok(
            "amdgcn-amd-amdhsa--gfx9999:xnack-",
            "amdgcn-amd-amdhsa--gfx9999"
        ));
        assert!(ok(
            SPIRV_ISA_NAMES[0],
            "spirv64-amd-amdhsa-unknown-amdgcnspirv"
        ));
    }

    #[test]
    fn the_first_compatible_entry_in_bundle_order_wins() {
        let d = devices(&[MI200]);
        let any_first = plain(&[
            ("host-x86_64-unknown-linux-gnu-", 0),
            ("hipv4-amdgcn-amd-amdhsa--gfx90a", 10),
            ("hipv4-amdgcn-amd-amdhsa--gfx90a:xnack-", 10),
        ]);
        assert_eq!(loads(&d, &any_first), [Load::Entry(1, Via::Native)]);
        let specific_first = plain(&[
            ("hipv4-amdgcn-amd-amdhsa--gfx90a:xnack-", 10),
            ("hipv4-amdgcn-amd-amdhsa--gfx90a", 10),
        ]);
        assert_eq!(loads(&d, &specific_first), [Load::Entry(0, Via::Native)]);
    }

    #[test]
    fn a_device_named_without_a_feature_loads_only_entries_without_it() {
        let set = plain(&[("hipv4-amdgcn-amd-amdhsa--gfx90a:xnack-", 10)]);
        assert_eq!(
            loads(&devices(&["gfx90a"]), &set),
            [Load::Nothing(Why::NoCompatibleEntry)]
        );
        let any = plain(&[("hipv4-amdgcn-amd-amdhsa--gfx90a", 10)]);
        assert_eq!(
            loads(&devices(&["gfx90a"]), &any),
            [Load::Entry(0, Via::Native)]
        );
        let featureless = plain(&[
            ("hipv4-amdgcn-amd-amdhsa--gfx1030", 10),
            ("hipv4-amdgcn-amd-amdhsa--gfx1100", 10),
        ]);
        assert_eq!(
            loads(&devices(&["gfx1100", "gfx1030"]), &featureless),
            [Load::Entry(1, Via::Native), Load::Entry(0, Via::Native)]
        );
    }

    #[test]
    fn an_empty_entry_gives_nothing_unless_a_later_one_fills_the_request() {
        let d = devices(&[MI200]);
        let only_empty = plain(&[("hipv4-amdgcn-amd-amdhsa--gfx90a", 0)]);
        assert_eq!(loads(&d, &only_empty), [Load::Nothing(Why::EmptyEntry)]);
        // comgr leaves a request an empty entry filled open for later entries.
        let then_full = plain(&[
            ("hipv4-amdgcn-amd-amdhsa--gfx90a", 0),
            ("hipv4-amdgcn-amd-amdhsa--gfx90a:xnack-", 10),
        ]);
        assert_eq!(loads(&d, &then_full), [Load::Entry(1, Via::Native)]);
        // The bundler gives the request to the empty entry for good.
        let compressed = bundle(&[("hipv4-amdgcn-amd-amdhsa--gfx90a", 0)], true);
        assert_eq!(loads(&d, &compressed), [Load::Nothing(Why::EmptyEntry)]);
    }

    #[test]
    fn only_hip_kinds_and_the_amdhsa_triple_count_uncompressed() {
        let d = devices(&[MI200]);
        for other in [
            "openmp-amdgcn-amd-amdhsa--gfx90a",
            "hip-amdgcn-amd-amdhsa-unknown-gfx90a",
            "hip-amdgcn-amd-amdpal--gfx90a",
            "hipv5-amdgcn-amd-amdhsa--gfx90a",
            "host-x86_64-unknown-linux-gnu-",
        ] {
            assert_eq!(
                loads(&d, &plain(&[(other, 10)])),
                [Load::Nothing(Why::NoCompatibleEntry)],
                "{other}"
            );
        }
        assert_eq!(
            loads(&d, &plain(&[("hcc-amdgcn-amd-amdhsa--gfx90a", 10)])),
            [Load::Entry(0, Via::Native)]
        );
    }

    #[test]
    fn compressed_bundles_follow_the_bundler_kinds_and_triples() {
        let d = devices(&[MI200]);
        for taken in [
            "openmp-amdgcn-amd-amdhsa--gfx90a",
            "hip-amdgcn-amd-amdhsa-unknown-gfx90a",
            "hipv4-amdgcn-amd-amdhsa--gfx90a:xnack-",
        ] {
            assert_eq!(
                loads(&d, &bundle(&[(taken, 10)], true)),
                [Load::Entry(0, Via::Native)],
                "{taken}"
            );
        }
        assert_eq!(
            loads(&d, &bundle(&[("hcc-amdgcn-amd-amdhsa--gfx90a", 10)], true)),
            [Load::Nothing(Why::NoCompatibleEntry)]
        );
    }

    #[test]
    fn generic_code_only_through_the_runtime_map() {
        let generic = plain(&[("hipv4-amdgcn-amd-amdhsa--gfx9-4-generic", 10)]);
        assert_eq!(
            loads(
                &devices(&["gfx942:sramecc+:xnack-", "gfx940:sramecc+:xnack-"]),
                &generic
            ),
            [
                Load::Entry(0, Via::Generic),
                Load::Nothing(Why::NoCompatibleEntry)
            ]
        );
        let native_beside = plain(&[
            ("hipv4-amdgcn-amd-amdhsa--gfx11-generic", 10),
            ("hipv4-amdgcn-amd-amdhsa--gfx1100", 10),
        ]);
        assert_eq!(
            loads(&devices(&["gfx1100", "gfx1101"]), &native_beside),
            [Load::Entry(1, Via::Native), Load::Entry(0, Via::Generic)]
        );
        // The generic request carries the device's sramecc, which gfx9-generic lacks: comgr
        // cannot read it, and only an entry spelled the same would match.
        let gfx9 = plain(&[("hipv4-amdgcn-amd-amdhsa--gfx9-generic:xnack-", 10)]);
        assert_eq!(
            loads(
                &devices(&["gfx906:sramecc+:xnack-", "gfx900:xnack-"]),
                &gfx9
            ),
            [
                Load::Nothing(Why::NoCompatibleEntry),
                Load::Entry(0, Via::Generic)
            ]
        );
    }

    #[test]
    fn spirv_serves_every_device_without_native_or_generic_code() {
        let spirv = plain(&[
            ("hipv4-amdgcn-amd-amdhsa--gfx1100", 10),
            ("hip-spirv64-amd-amdhsa--amdgcnspirv", 10),
        ]);
        assert_eq!(
            loads(&devices(&["gfx1100", MI200, "gfx1201"]), &spirv),
            [
                Load::Entry(0, Via::Native),
                Load::Entry(1, Via::Spirv),
                Load::Entry(1, Via::Spirv)
            ]
        );
        let unknown_env = plain(&[("hipv4-spirv64-amd-amdhsa-unknown-amdgcnspirv", 10)]);
        assert_eq!(
            loads(&devices(&[MI200]), &unknown_env),
            [Load::Entry(0, Via::Spirv)]
        );
    }

    #[test]
    fn one_any_entry_serves_only_the_first_request_it_fits() {
        let both = devices(&["gfx90a:sramecc+:xnack-", "gfx90a:sramecc+:xnack+"]);
        let any = plain(&[("hipv4-amdgcn-amd-amdhsa--gfx90a", 10)]);
        // `+` sorts before `-`: the xnack+ device's request comes first and takes the entry.
        assert_eq!(
            loads(&both, &any),
            [
                Load::Nothing(Why::NoCompatibleEntry),
                Load::Entry(0, Via::Native)
            ]
        );
        let compressed = bundle(&[("hipv4-amdgcn-amd-amdhsa--gfx90a", 10)], true);
        let got = loads(&both, &compressed);
        assert_eq!(
            got.iter().filter(|l| matches!(l, Load::Entry(..))).count(),
            1
        );
    }

    #[test]
    fn a_header_past_4096_bytes_gives_nothing_to_anyone() {
        let ids: Vec<String> = (0..60)
            .map(|i| format!("hipv4-amdgcn-amd-amdhsa--gfx90a:sramecc+:xnack-{i:040}"))
            .collect();
        let mut entries: Vec<(&str, u64)> = vec![("hipv4-amdgcn-amd-amdhsa--gfx90a", 10)];
        entries.extend(ids.iter().map(|id| (id.as_str(), 10)));
        let big = plain(&entries);
        assert!(big.header_size > HEADER_WINDOW);
        let d = devices(&[MI200, "gfx1100"]);
        assert_eq!(loads(&d, &big), [Load::Nothing(Why::HeaderPastWindow); 2]);
        // Compressed, the whole bundle is read.
        assert_eq!(
            loads(&d, &bundle(&entries, true))[1],
            Load::Nothing(Why::NoCompatibleEntry)
        );
        // comgr stops reading once every request is filled, before the window ends.
        let mut filled: Vec<(&str, u64)> = vec![
            ("hipv4-amdgcn-amd-amdhsa--gfx90a", 10),
            ("hipv4-spirv64-amd-amdhsa--amdgcnspirv", 10),
            ("hipv4-spirv64-amd-amdhsa-unknown-amdgcnspirv", 10),
        ];
        filled.extend(ids.iter().map(|id| (id.as_str(), 10)));
        assert_eq!(
            loads(&devices(&[MI200]), &plain(&filled)),
            [Load::Entry(0, Via::Native)]
        );
    }
}
