//! The offload containers, declared once: how each is recognised (its magic), how many bytes
//! it occupies (from its header), and whether a scan looks for it in any section or only
//! where it is known to live. The scanner and the rewriter both match on [`Container`]
//! exhaustively, so a container added here is one neither can forget.

use super::error::Result;
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

/// The position of the first magic, in `data`, of a container a scan finds by its magic.
pub fn next_magic(data: &[u8]) -> Option<usize> {
    CONTAINERS
        .into_iter()
        .filter(|c| c.found_by_magic())
        .filter_map(|c| memchr::memmem::find(data, c.magic()))
        .min()
}

#[cfg(test)]
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
