//! What a device image is for, read once from where it was stored: the programming model
//! that produced it, its target triple and its target ID. A bundle entry says it in its entry
//! ID, an offload binary image in its kind and string table; other containers say it in their
//! own modules.

use super::entry_id::EntryId;
use super::offload_binary::{OffloadEntry, OffloadKind};
use super::target_id::TargetId;

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
            other => Producer::Other(other.to_string()),
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
        // The bundler keeps four triple pieces (`amdgcn-amd-amdhsa-`); a host entry's target
        // ID is the whole entry ID, which is no target ID.
        let target_id = if parsed.is_host() {
            String::new()
        } else {
            parsed.target_id.clone()
        };
        ImageTarget {
            producer: Producer::from_name(&parsed.kind),
            triple: parsed.triple.to_string().trim_end_matches('-').to_string(),
            target_id,
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

#[cfg(test)]
#[allow(clippy::indexing_slicing, clippy::cast_possible_truncation)]
mod tests {
    use super::*;

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
