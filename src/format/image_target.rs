//! What a device image is for, read once from where it was stored: the programming model
//! that produced it, its target triple and its target ID. A bundle entry says it in its entry
//! ID, an offload binary image in its kind and string table; other containers say it in their
//! own modules.
//!
//! # Example
//!
//! What the image of a bundle entry is for.
//!
//! ```
//! use offload::format::image_target::{ImageTarget, Producer};
//!
//! let target = ImageTarget::of_bundle_entry("hipv4-amdgcn-amd-amdhsa--gfx90a:xnack+");
//! assert_eq!(target.producer, Producer::Hip);
//! assert_eq!(target.triple, "amdgcn-amd-amdhsa");
//! assert_eq!(target.target_id, "gfx90a:xnack+");
//! assert_eq!(target.target_id().unwrap().processor, "gfx90a");
//!
//! let host = ImageTarget::of_bundle_entry("host-x86_64-unknown-linux-gnu-");
//! assert_eq!(host.producer, Producer::Host);
//! assert!(host.target_id().is_none());
//! ```

use crate::format::bare::BareKind;
use crate::format::offload_binary::{OffloadEntry, OffloadKind};
use crate::target::entry_id::EntryId;
use crate::target::target_id::TargetId;

/// The programming model that produced an image.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub enum Producer {
    /// A bundle's host entry.
    Host,
    /// HIP (`hip`, `hipv4` in entry IDs).
    Hip,
    /// OpenMP offloading.
    OpenMp,
    /// CUDA.
    Cuda,
    /// SYCL.
    Sycl,
    /// None that it says: a bare device image of this kind, whoever compiled it.
    Bare(BareKind),
    /// An offload binary that names no kind.
    None,
    /// Any other name, as stored.
    Other(String),
}

impl Producer {
    /// The producer a name denotes: an entry ID's offload kind or a command line's `--kind`.
    /// Never fails: an unknown name is [`Producer::Other`].
    pub fn from_name(name: &str) -> Producer {
        match name {
            "host" => Producer::Host,
            "hip" | "hipv4" => Producer::Hip,
            "openmp" => Producer::OpenMp,
            "cuda" => Producer::Cuda,
            "sycl" => Producer::Sycl,
            "none" => Producer::None,
            other => match BareKind::from_name(other) {
                Some(kind) => Producer::Bare(kind),
                None => Producer::Other(other.to_string()),
            },
        }
    }

    /// The producer of an offload binary image of `kind`.
    pub fn of_offload_kind(kind: OffloadKind) -> Producer {
        match kind {
            // LLVM names a kind no version defines `none` too.
            OffloadKind::None | OffloadKind::Unknown(_) => Producer::None,
            OffloadKind::OpenMp => Producer::OpenMp,
            OffloadKind::Cuda => Producer::Cuda,
            OffloadKind::Hip(_) => Producer::Hip,
            OffloadKind::Sycl => Producer::Sycl,
        }
    }

    /// The name `offload ls` prints.
    pub fn name(&self) -> &str {
        match self {
            Producer::Host => "host",
            Producer::Hip => "hip",
            Producer::OpenMp => "openmp",
            Producer::Cuda => "cuda",
            Producer::Sycl => "sycl",
            Producer::Bare(kind) => kind.name(),
            Producer::None => "none",
            Producer::Other(name) => name,
        }
    }
}

impl std::str::FromStr for Producer {
    type Err = std::convert::Infallible;

    fn from_str(name: &str) -> Result<Producer, Self::Err> {
        Ok(Producer::from_name(name))
    }
}

/// What a device image is for.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ImageTarget {
    /// Who produced it.
    pub producer: Producer,
    /// The target triple, without the empty pieces a bundle entry ID pads it with.
    pub triple: String,
    /// The target ID as stored (`gfx90a:xnack+`); empty for host entries and CUDA fat
    /// binaries, whose images carry their own.
    pub target_id: String,
}

impl ImageTarget {
    /// The target of the bundle entry with entry ID `id`.
    pub fn of_bundle_entry(id: &str) -> ImageTarget {
        let parsed = EntryId::parse(id);
        let producer = Producer::from_name(&parsed.kind);
        // A host entry's target ID is the whole entry ID, which is no target ID.
        if parsed.is_host() {
            return ImageTarget {
                producer,
                triple: trimmed_triple(&parsed),
                target_id: String::new(),
            };
        }
        // LLVM 19 finds no target ID after a processor its table lacks, or takes the whole ID
        // for one when the ID ends in `-`.
        if parsed.target_id.is_empty() || !looks_like_processor(&parsed.target_id) {
            if let Some((triple, target_id)) = split_unknown_processor(id) {
                return ImageTarget {
                    producer,
                    triple,
                    target_id,
                };
            }
        }
        ImageTarget {
            producer,
            triple: trimmed_triple(&parsed),
            target_id: parsed.target_id.clone(),
        }
    }

    /// The target of a bare device image of `kind`.
    pub fn of_bare(kind: BareKind, triple: &str, target_id: &str) -> ImageTarget {
        ImageTarget {
            producer: Producer::Bare(kind),
            triple: triple.into(),
            target_id: target_id.into(),
        }
    }

    /// The target of an offload binary image.
    pub fn of_offload_entry(entry: &OffloadEntry<'_>) -> ImageTarget {
        ImageTarget {
            producer: Producer::of_offload_kind(entry.offload_kind),
            triple: String::from_utf8_lossy(entry.triple()).into_owned(),
            target_id: String::from_utf8_lossy(entry.arch()).into_owned(),
        }
    }

    /// The target ID, parsed; `None` when there is none or it does not parse.
    pub fn target_id(&self) -> Option<TargetId<'_>> {
        if self.target_id.is_empty() {
            return None;
        }
        TargetId::parse_syntax(&self.target_id)
    }
}

/// The triple of an entry ID without the empty pieces the bundler pads it with
/// (`amdgcn-amd-amdhsa-`).
fn trimmed_triple(parsed: &EntryId) -> String {
    parsed.triple.to_string().trim_end_matches('-').to_string()
}

/// For an entry ID whose processor LLVM 19's table does not know (`gfx950`, `gfx1250`, a
/// generic target, a processor of years to come): the triple's pieces and the target ID that
/// follows them, when what follows parses as one. `kind-arch-vendor-os--TARGET` (the empty
/// environment that LLVM writes) and `kind-arch-vendor-os-TARGET` (a processor where the
/// environment would be) are both read; the `-` LLVM 19 appends to an unknown processor is
/// dropped.
fn split_unknown_processor(id: &str) -> Option<(String, String)> {
    let (_, rest) = id.split_once('-')?;
    let mut pieces = rest.splitn(4, '-');
    let (arch, vendor, os, tail) = (
        pieces.next()?,
        pieces.next()?,
        pieces.next()?,
        pieces.next()?,
    );
    let (environment, target) = match tail.strip_prefix('-') {
        Some(target) => ("", target),
        None if looks_like_processor(tail) => ("", tail),
        None => tail.split_once('-')?,
    };
    // A target ID may end in `-` (`gfx950:xnack-`); otherwise the `-` is one LLVM 19 appended.
    let target = match TargetId::parse_syntax(target) {
        Some(id) if !id.processor.ends_with('-') => target,
        _ => target.trim_end_matches('-'),
    };
    let parsed = TargetId::parse_syntax(target)?;
    if parsed.processor.is_empty() || !looks_like_processor(target) {
        return None;
    }
    let triple = [arch, vendor, os, environment]
        .iter()
        .filter(|p| !p.is_empty())
        .copied()
        .collect::<Vec<_>>()
        .join("-");
    Some((triple, target.to_string()))
}

/// Whether `text` names a GPU processor of a family offload targets use: AMDGPU (`gfx…`, its
/// generic targets, SPIR-V for AMD) or NVPTX (`sm_…`).
fn looks_like_processor(text: &str) -> bool {
    let processor = text.split(':').next().unwrap_or(text);
    processor.len() > 3
        && (processor.starts_with("gfx")
            || processor.starts_with("sm_")
            || processor == "amdgcnspirv")
}

#[cfg(test)]
#[allow(clippy::indexing_slicing, clippy::cast_possible_truncation)]
mod tests {
    use super::*;

    #[test]
    fn processors_llvm_19_does_not_know_are_still_processors() {
        let cases = [
            (
                "hipv4-amdgcn-amd-amdhsa--gfx950",
                "amdgcn-amd-amdhsa",
                "gfx950",
            ),
            (
                "hipv4-amdgcn-amd-amdhsa--gfx950-",
                "amdgcn-amd-amdhsa",
                "gfx950",
            ),
            (
                "hipv4-amdgcn-amd-amdhsa--gfx1250:xnack+",
                "amdgcn-amd-amdhsa",
                "gfx1250:xnack+",
            ),
            (
                "hipv4-amdgcn-amd-amdhsa--gfx950:xnack-",
                "amdgcn-amd-amdhsa",
                "gfx950:xnack-",
            ),
            (
                "hipv4-amdgcn-amd-amdhsa--gfx9-4-generic:sramecc+:xnack-",
                "amdgcn-amd-amdhsa",
                "gfx9-4-generic:sramecc+:xnack-",
            ),
            (
                "hipv4-amdgcn-amd-amdhsa--gfx1399:sramecc-",
                "amdgcn-amd-amdhsa",
                "gfx1399:sramecc-",
            ),
            (
                "hip-amdgcn-amd-amdhsa-gfx1399",
                "amdgcn-amd-amdhsa",
                "gfx1399",
            ),
            (
                "hipv4-amdgcn-amd-amdhsa--gfx11-generic",
                "amdgcn-amd-amdhsa",
                "gfx11-generic",
            ),
            (
                "hipv4-spirv64-amd-amdhsa--amdgcnspirv",
                "spirv64-amd-amdhsa",
                "amdgcnspirv",
            ),
            (
                "hipv4-amdgcn-amd-amdhsa--gfx90a:xnack-",
                "amdgcn-amd-amdhsa",
                "gfx90a:xnack-",
            ),
        ];
        for (id, triple, target_id) in cases {
            let target = ImageTarget::of_bundle_entry(id);
            assert_eq!(
                (target.triple.as_str(), target.target_id.as_str()),
                (triple, target_id),
                "{id}"
            );
            assert_eq!(target.producer, Producer::Hip, "{id}");
        }
        let host = ImageTarget::of_bundle_entry("host-x86_64-unknown-linux-gnu");
        assert_eq!(
            (host.triple.as_str(), host.target_id.as_str()),
            ("x86_64-unknown-linux-gnu", "")
        );
    }

    #[test]
    fn bundle_entries_say_what_they_are_for() {
        let device = ImageTarget::of_bundle_entry("hipv4-amdgcn-amd-amdhsa--gfx90a:xnack+");
        assert_eq!(device.producer, Producer::Hip);
        assert_eq!(device.triple, "amdgcn-amd-amdhsa");
        assert_eq!(device.target_id, "gfx90a:xnack+");
        assert_eq!(device.target_id().unwrap().processor, "gfx90a");
        let host = ImageTarget::of_bundle_entry("host-x86_64-unknown-linux-gnu-");
        assert_eq!(host.producer, Producer::Host);
        assert_eq!(host.target_id, "");
        assert!(host.target_id().is_none());
        assert_eq!(Producer::from_name("hipv4").name(), "hip");
        assert_eq!(Producer::from_name("fortran").name(), "fortran");
    }
}
