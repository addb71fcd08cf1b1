//! The offload containers, declared once: how each is recognised (its magic), how many bytes
//! it occupies (from its header), whether a scan looks for it in any section or only where it
//! is known to live, and what it holds ([`Container::open`]: device images, or inflated bytes
//! that hold more containers). The scanner reads every container through this module alone,
//! so a new container is its own format module and an entry here.

use super::error::Result;
use super::image_target::ImageTarget;
use super::offload_binary::{ImageKind, OffloadEntry};
use super::{bundle, ccob, cuda_fatbin, offload_binary};

/// A kind of offload container.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Container {
    /// A clang offload bundle (`__CLANG_OFFLOAD_BUNDLE__`).
    Bundle,
    /// A compressed clang offload bundle (`CCOB`).
    CompressedBundle,
    /// An LLVM offload binary (`0x10FF10AD`).
    OffloadBinary,
    /// A CUDA fat binary (`0xBA55ED50`).
    CudaFatbin,
}

/// Every container, in the order magics are tried.
pub const CONTAINERS: [Container; 4] = [
    Container::Bundle,
    Container::CompressedBundle,
    Container::OffloadBinary,
    Container::CudaFatbin,
];

impl Container {
    /// The bytes a container of this kind starts with.
    pub fn magic(self) -> &'static [u8] {
        match self {
            Container::Bundle => bundle::MAGIC,
            Container::CompressedBundle => ccob::MAGIC,
            Container::OffloadBinary => &offload_binary::MAGIC,
            Container::CudaFatbin => &cuda_fatbin::MAGIC,
        }
    }

    /// Whether a scan searches any section for this container's magic. CUDA fat binaries are
    /// read only where they live (`.nv_fatbin`) or as a whole file: their four magic bytes are
    /// too common in code and data to be taken as a container elsewhere.
    pub fn found_by_magic(self) -> bool {
        !matches!(self, Container::CudaFatbin)
    }

    /// The container `data` starts with, if any.
    pub fn at_start(data: &[u8]) -> Option<Container> {
        CONTAINERS.into_iter().find(|c| data.starts_with(c.magic()))
    }

    /// The container `data` starts with, if it is one a scan finds by its magic.
    pub fn found_at_start(data: &[u8]) -> Option<Container> {
        Container::at_start(data).filter(|c| c.found_by_magic())
    }

    /// The bytes the container at the start of `data` occupies, from its header (a version 1
    /// compressed bundle, which records no size, runs to the end of `data`).
    pub fn size(self, data: &[u8]) -> Result<u64> {
        Ok(match self {
            Container::Bundle => bundle::Bundle::parse(data)?.map_or(0, |b| b.size()),
            Container::CompressedBundle => {
                ccob::CompressedBundle::parse(data)?.map_or(0, |c| c.size())
            }
            Container::OffloadBinary => offload_binary::OffloadBinary::parse(data)?.size(),
            Container::CudaFatbin => cuda_fatbin::size(data)?,
        })
    }
}

/// The record a device image is stored under in its container.
#[derive(Debug, Clone, Copy)]
pub enum Origin<'a> {
    /// An image of an offload binary, with its metadata.
    OffloadImage(&'a OffloadEntry<'a>),
    /// An entry of a clang offload bundle, with its entry ID.
    BundleEntry(&'a str),
    /// A CUDA fat binary, whole.
    CudaFatbin,
}

impl Origin<'_> {
    /// What the image is for, as its record says.
    pub fn target(&self) -> ImageTarget {
        match self {
            Origin::OffloadImage(entry) => ImageTarget::of_offload_entry(entry),
            Origin::BundleEntry(id) => ImageTarget::of_bundle_entry(id),
            Origin::CudaFatbin => ImageTarget::of_cuda_fatbin(),
        }
    }

    /// What the image holds, where the record says (`o`, `bc`, `fatbin`, `unknown-N`, ...).
    pub fn image_kind(&self) -> Option<String> {
        match self {
            Origin::OffloadImage(entry) => Some(match entry.image_kind {
                ImageKind::None => "none".into(),
                ImageKind::Unknown(raw) => format!("unknown-{raw}"),
                other => other.name().into(),
            }),
            Origin::BundleEntry(_) => None,
            Origin::CudaFatbin => Some("fatbin".into()),
        }
    }

    /// The bundle entry ID, for a bundle entry.
    pub fn entry_id(&self) -> Option<&str> {
        match self {
            Origin::BundleEntry(id) => Some(id),
            Origin::OffloadImage(_) | Origin::CudaFatbin => None,
        }
    }
}

/// One device image as its container stores it.
#[derive(Debug, Clone)]
pub enum Record<'a> {
    /// An offload binary image; its bytes may themselves be a container.
    OffloadImage(OffloadEntry<'a>),
    /// A bundle entry.
    BundleEntry {
        /// The entry ID.
        id: &'a str,
        /// The entry's bytes.
        data: &'a [u8],
    },
    /// A CUDA fat binary, whole.
    CudaFatbin(&'a [u8]),
}

impl<'a> Record<'a> {
    /// The record the image is stored under.
    pub fn origin(&self) -> Origin<'_> {
        match self {
            Record::OffloadImage(entry) => Origin::OffloadImage(entry),
            Record::BundleEntry { id, .. } => Origin::BundleEntry(id),
            Record::CudaFatbin(_) => Origin::CudaFatbin,
        }
    }

    /// The image's bytes.
    pub fn data(&self) -> &'a [u8] {
        match self {
            Record::OffloadImage(entry) => entry.image,
            Record::BundleEntry { data, .. } => data,
            Record::CudaFatbin(data) => data,
        }
    }

    /// Whether the image's bytes may be a container whose images are the device code (an
    /// offload binary wrapping a bundle); a bundle entry's bytes are always the image.
    pub fn may_be_container(&self) -> bool {
        matches!(self, Record::OffloadImage(_))
    }
}

/// What a container holds.
#[derive(Debug)]
pub enum Contents<'a> {
    /// Device images, in stored order.
    Records(Vec<Record<'a>>),
    /// Inflated bytes that hold more containers (a compressed bundle's bundle, a compressed
    /// offload binary's binaries).
    Inflated(Vec<u8>),
}

/// A container opened: the bytes it occupies, and what it holds.
#[derive(Debug)]
pub struct Opened<'a> {
    /// The bytes it occupies from its start.
    pub size: u64,
    /// What it holds.
    pub contents: Contents<'a>,
}

impl Container {
    /// Opens the container at the start of `data`, inflating it (up to `limit` bytes) when it
    /// is compressed. A bundle or compressed bundle magic that turns out to be no header at all
    /// opens as one byte holding nothing, so that a search steps over it.
    pub fn open(self, data: &[u8], limit: u64) -> Result<Opened<'_>> {
        let nothing = || Opened {
            size: 1,
            contents: Contents::Records(Vec::new()),
        };
        Ok(match self {
            Container::Bundle => {
                let Some(parsed) = bundle::Bundle::parse(data)? else {
                    return Ok(nothing());
                };
                let records = parsed
                    .entries()
                    .iter()
                    .map(|e| Record::BundleEntry {
                        id: e.id,
                        data: e.data,
                    })
                    .collect();
                Opened {
                    size: parsed.size().max(parsed.header_size()),
                    contents: Contents::Records(records),
                }
            }
            Container::CompressedBundle => {
                let Some(compressed) = ccob::CompressedBundle::parse(data)? else {
                    return Ok(nothing());
                };
                // Only the bundle is kept, not what the stream holds after it (LLVM reads no
                // more).
                Opened {
                    size: compressed.size(),
                    contents: Contents::Inflated(compressed.inflate_bundle(limit)??),
                }
            }
            Container::OffloadBinary => {
                let binary = offload_binary::OffloadBinary::parse(data)?;
                let contents = match binary.compressed() {
                    Some(payload) => Contents::Inflated(payload.inflate(limit)?),
                    None => Contents::Records(
                        binary
                            .entries()
                            .iter()
                            .cloned()
                            .map(Record::OffloadImage)
                            .collect(),
                    ),
                };
                Opened {
                    size: binary.size(),
                    contents,
                }
            }
            Container::CudaFatbin => {
                let size = cuda_fatbin::size(data)?;
                Opened {
                    size,
                    contents: Contents::Records(vec![Record::CudaFatbin(
                        data.get(..usize::try_from(size).unwrap_or(usize::MAX))
                            .unwrap_or(data),
                    )]),
                }
            }
        })
    }
}

/// The position of the first magic, in `data`, of a container a scan finds by its magic.
pub fn next_magic(data: &[u8]) -> Option<usize> {
    CONTAINERS
        .into_iter()
        .filter(|c| c.found_by_magic())
        .filter_map(|c| memchr::memmem::find(data, c.magic()))
        .min()
}

#[cfg(test)]
#[allow(clippy::indexing_slicing, clippy::cast_possible_truncation)]
mod tests {
    use super::*;

    #[test]
    fn every_container_is_recognised_by_its_magic() {
        for container in CONTAINERS {
            let mut data = container.magic().to_vec();
            data.extend_from_slice(&[0; 64]);
            assert_eq!(Container::at_start(&data), Some(container));
            assert_eq!(
                Container::found_at_start(&data).is_some(),
                container.found_by_magic()
            );
        }
        assert_eq!(Container::at_start(b"\x7fELF"), None);
        let mut data = vec![0u8; 40];
        data.extend_from_slice(ccob::MAGIC);
        data.extend_from_slice(&cuda_fatbin::MAGIC);
        assert_eq!(next_magic(&data), Some(40));
        assert_eq!(next_magic(&cuda_fatbin::MAGIC), None);
    }
}
