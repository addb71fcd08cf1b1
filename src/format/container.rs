//! The offload containers, declared once: how each is recognised (its magic), how many bytes
//! it occupies (from its header), whether a scan looks for it in any section or only where it
//! is known to live, what it holds ([`Container::open`]: device images, or inflated bytes
//! that hold more containers), and how it is rewritten without some of its images or with
//! its bundles stored otherwise ([`Container::rewrite`]). The scanner and the rewriter reach
//! every container through this module alone, so a new container is its own format module
//! and an entry here.
//!
//! # Example
//!
//! Tell a container by its first bytes, and open it to list its device images.
//!
//! ```
//! use offload::format::bundle;
//! use offload::format::container::{Container, Contents};
//!
//! let bytes = bundle::to_vec(&[("hipv4-amdgcn-amd-amdhsa--gfx1100", b"code")], 8);
//! let container = Container::at_start(&bytes).expect("a container");
//! assert_eq!(container, Container::Bundle);
//! assert_eq!(container.size(&bytes).unwrap(), bytes.len() as u64);
//!
//! let opened = container.open(&bytes, 1 << 20).unwrap();
//! assert_eq!(opened.size, bytes.len() as u64);
//! let Contents::Records(records) = opened.contents else { panic!("a bundle holds images") };
//! assert_eq!(records.len(), 1);
//! assert_eq!(records[0].origin().entry_id(), Some("hipv4-amdgcn-amd-amdhsa--gfx1100"));
//! assert_eq!(records[0].data(), b"code");
//! ```

use crate::format::bare::BareImage;
use crate::format::bundle::Bundle;
use crate::format::bundle::EntryRecord;
use crate::format::ccob::{CompressOptions, Decoding, Head};
use crate::format::error::{Error, ErrorKind, Result};
use crate::format::image_target::ImageTarget;
use crate::format::image_target::Producer;
use crate::format::offload_binary::{ImageKind, OffloadEntry};
use crate::format::{bundle, ccob, cuda_fatbin, offload_binary};
use crate::target::entry_id::EntryId;

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

    /// The names of the sections this container is read from by name (a name ending in `*`
    /// is a prefix): there, damage is reported rather than taken for chance bytes.
    fn section_names(self) -> &'static [&'static str] {
        match self {
            Container::Bundle | Container::CompressedBundle => {
                &[".hip_fatbin", ".hip_fat", "__hip_fatbin"]
            }
            Container::OffloadBinary => &[".llvm.offloading*", "__offloading"],
            Container::CudaFatbin => &[".nv_fatbin", "__nv_relfatbin", ".nv_fatb", "__nv_fatbin"],
        }
    }

    /// The container whose section `name` is, if any.
    pub fn of_section(name: &str) -> Option<Container> {
        CONTAINERS.into_iter().find(|c| {
            c.section_names()
                .iter()
                .any(|known| match known.strip_suffix('*') {
                    Some(prefix) => name.starts_with(prefix),
                    None => name == *known,
                })
        })
    }

    /// For a container a scan does not find by its magic: the containers of this kind placed
    /// one after another at the start of `region`, each with its offset, read by the
    /// container's own rule. `None` for the others, which a scan finds by their magics.
    pub fn consecutive(self, region: &[u8]) -> Option<Consecutive<'_>> {
        match self {
            Container::CudaFatbin => Some(Box::new(cuda_fatbin::split(region))),
            Container::Bundle | Container::CompressedBundle | Container::OffloadBinary => None,
        }
    }

    /// The boundary containers of this kind lie on one after another, when the format fixes
    /// one: CUDA fat binaries are back to back on 8-byte boundaries, and a reader steps from
    /// one to the next by its size. `None`: any boundary (zero padding is skipped).
    pub fn boundary(self) -> Option<usize> {
        match self {
            Container::CudaFatbin => Some(8),
            Container::Bundle | Container::CompressedBundle | Container::OffloadBinary => None,
        }
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

/// Where linked programs and shared libraries keep one runtime's containers: the section of
/// the containers and the section of the wrappers (each `{magic: u32, version: u32, data:
/// u64, unused: u64}`) whose `data` points at one of them, registering it with the runtime.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ProgramSection {
    /// The section of the containers.
    pub section: &'static str,
    /// The section of the wrappers.
    pub wrappers: &'static str,
    /// The magic a wrapper starts with.
    pub wrapper_magic: u32,
}

/// The places of containers in linked programs: the HIP runtime's bundles (`.hip_fatbin`,
/// wrappers `"FPIH"`) and the CUDA runtime's fat binaries (`.nv_fatbin`, and `__nv_relfatbin`
/// for relocatable device code; wrappers `0x466243B1` as `fatbinary_section.h` defines them,
/// one section of wrappers for both).
pub const PROGRAM_SECTIONS: [ProgramSection; 3] = [
    ProgramSection {
        section: ".hip_fatbin",
        wrappers: ".hipFatBinSegment",
        wrapper_magic: 0x4849_5046,
    },
    ProgramSection {
        section: ".nv_fatbin",
        wrappers: ".nvFatBinSegment",
        wrapper_magic: 0x4662_43b1,
    },
    ProgramSection {
        section: "__nv_relfatbin",
        wrappers: ".nvFatBinSegment",
        wrapper_magic: 0x4662_43b1,
    },
];

/// The record a device image is stored under in its container.
#[derive(Debug, Clone, Copy)]
pub enum Origin<'a> {
    /// An image of an offload binary, with its metadata.
    OffloadImage(&'a OffloadEntry<'a>),
    /// An entry of a clang offload bundle, with its entry ID.
    BundleEntry(&'a str),
    /// An entry of a CUDA fat binary (a cubin or PTX), with its header.
    CudaEntry(&'a cuda_fatbin::Entry<'a>),
    /// A bare device image, in no container.
    Bare(&'a BareImage<'a>),
}

impl Origin<'_> {
    /// What the image is for, as its record says.
    pub fn target(&self) -> ImageTarget {
        match self {
            Origin::OffloadImage(entry) => ImageTarget::of_offload_entry(entry),
            Origin::BundleEntry(id) => ImageTarget::of_bundle_entry(id),
            Origin::CudaEntry(entry) => entry.target(),
            Origin::Bare(image) => {
                ImageTarget::of_bare(image.kind, &image.triple, &image.target_id)
            }
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
            Origin::CudaEntry(entry) => Some(entry.kind_name()),
            Origin::Bare(image) => Some(image.kind.image_kind().into()),
        }
    }

    /// The bundle entry ID, for a bundle entry.
    pub fn entry_id(&self) -> Option<&str> {
        match self {
            Origin::BundleEntry(id) => Some(id),
            Origin::OffloadImage(_) | Origin::CudaEntry(_) | Origin::Bare(_) => None,
        }
    }

    /// Whether the record stores the image compressed itself (a CUDA fat binary's entry),
    /// beside whatever compressed container holds the record.
    pub fn stored_compressed(&self) -> bool {
        matches!(self, Origin::CudaEntry(entry) if entry.is_compressed())
    }

    /// The size of the image whose stored bytes are `stored`: what a compressed CUDA entry
    /// inflates to, else the stored bytes'.
    pub fn image_size(&self, stored: &[u8]) -> u64 {
        match self {
            Origin::CudaEntry(entry) => entry.inflated_size,
            Origin::OffloadImage(entry) => entry.image_size,
            Origin::BundleEntry(_) | Origin::Bare(_) => stored.len() as u64,
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
    /// An entry of a CUDA fat binary.
    CudaEntry(cuda_fatbin::Entry<'a>),
}

impl<'a> Record<'a> {
    /// The record the image is stored under.
    pub fn origin(&self) -> Origin<'_> {
        match self {
            Record::OffloadImage(entry) => Origin::OffloadImage(entry),
            Record::BundleEntry { id, .. } => Origin::BundleEntry(id),
            Record::CudaEntry(entry) => Origin::CudaEntry(entry),
        }
    }

    /// The image's bytes.
    pub fn data(&self) -> &'a [u8] {
        match self {
            Record::OffloadImage(entry) => entry.image,
            Record::BundleEntry { data, .. } => data,
            Record::CudaEntry(entry) => entry.payload,
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
    /// The entries of the bundle a compressed bundle's stream starts with, read from its
    /// header alone ([`Reading::Headers`]): where each lies in the stream, not its bytes.
    Listed(Listed<'a>),
    /// The entries of a compressed offload binary, read from its head alone
    /// ([`Reading::Headers`]): where each image lies in the inflated binary, not its bytes.
    ListedBinary(ListedBinary<'a>),
}

/// The entries of a compressed offload binary, read from its head.
#[derive(Debug)]
pub struct ListedBinary<'a> {
    /// The compressed binary, header and payload, as stored.
    pub stored: &'a [u8],
    /// Its head: the entries, their strings and each image's first bytes.
    pub head: offload_binary::ListedHead,
}

/// The entries of a compressed bundle, read from the header of the bundle its stream starts
/// with.
#[derive(Debug)]
pub struct Listed<'a> {
    /// The compressed bundle.
    pub compressed: ccob::CompressedBundle<'a>,
    /// Its bundle's entries, in header order, each with its place in the inflated stream.
    pub entries: Vec<bundle::EntryRecord>,
}

/// How much of a compressed container (a compressed bundle or offload binary) opening it
/// inflates.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum Reading {
    /// All of it, checked against its size (and hash): its images' bytes are at hand.
    #[default]
    Whole,
    /// Only up to the end of its bundle's header (of its offload binary's entries and
    /// strings): the entries' IDs or metadata, offsets and sizes, what a listing or a choice
    /// of images needs. A stream whose bundle does not start it, an offload binary whose
    /// images hold containers, and a stream whose declared size is within a window are
    /// still inflated whole.
    Headers,
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
        self.open_reading(data, limit, Reading::Whole)
    }

    /// [`Container::open`], inflating a compressed bundle as far as `reading` says.
    pub fn open_reading(self, data: &[u8], limit: u64, reading: Reading) -> Result<Opened<'_>> {
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
                let contents = match reading {
                    Reading::Whole => Contents::Inflated(compressed.inflate_bundle(limit)??),
                    Reading::Headers => match compressed.inflate_head(limit)? {
                        ccob::Head::Bundle { entries, .. } => Contents::Listed(Listed {
                            compressed,
                            entries,
                        }),
                        ccob::Head::Whole(plain) => Contents::Inflated(plain),
                    },
                };
                Opened {
                    size: compressed.size(),
                    contents,
                }
            }
            Container::OffloadBinary => {
                let binary = offload_binary::OffloadBinary::parse(data)?;
                let contents = match (binary.compressed(), reading) {
                    (Some(payload), Reading::Whole) => Contents::Inflated(payload.inflate(limit)?),
                    (Some(payload), Reading::Headers) => {
                        let holds_more = |peek: &[u8]| Container::at_start(peek).is_some();
                        match payload.inflate_head(limit, holds_more)? {
                            offload_binary::PayloadHead::Whole(plain) => Contents::Inflated(plain),
                            offload_binary::PayloadHead::Listed(head) => {
                                Contents::ListedBinary(ListedBinary {
                                    stored: binary.bytes(),
                                    head,
                                })
                            }
                        }
                    }
                    (None, _) => Contents::Records(
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
                let fatbin = data
                    .get(..usize::try_from(size).unwrap_or(usize::MAX))
                    .unwrap_or(data);
                let records = cuda_fatbin::entries(fatbin)
                    .map(|entry| entry.map(Record::CudaEntry))
                    .collect::<Result<_>>()?;
                Opened {
                    size,
                    contents: Contents::Records(records),
                }
            }
        })
    }
}

/// Containers one after another in a region, each with its offset there.
pub type Consecutive<'a> = Box<dyn Iterator<Item = Result<(usize, &'a [u8])>> + 'a>;

/// How a bundle is to be stored by a rewrite.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum BundleStorage {
    /// As it is.
    AsIs,
    /// Compressed (a bundle that is not yet); a compressed bundle gets these options (a
    /// new header for another version, a new stream for another method).
    Compress(CompressOptions),
    /// Compressed (a bundle that is not yet); a compressed bundle stays as it is, whatever
    /// its method and version.
    CompressPlain(CompressOptions),
    /// Decompressed (a compressed bundle).
    Decompress,
}

/// What a rewrite keeps and how it stores bundles.
pub struct Rules<'r> {
    /// Which images of one translation unit stay, given the targets of its device images in
    /// order: a device chooses among them together (its native code, else a generic
    /// target's, else SPIR-V). Host entries and bundle entries without a target ID are not
    /// asked: they stay. An offload binary stays whole while one of its images does.
    pub keeps: &'r dyn Fn(&[ImageTarget]) -> Vec<bool>,
    /// The images of all the offload binaries that lie side by side with the one rewritten
    /// (those of one section), which form one translation unit; empty: the binary alone.
    pub offload_unit: &'r [ImageTarget],
    /// How bundles are stored.
    pub storage: BundleStorage,
    /// The most a compressed container may inflate to.
    pub limit: u64,
    /// Room for large compressed bundles made by the layer that writes them (a mapped
    /// temporary file), so that they are not held in memory; `None`: made in memory.
    pub room: Option<&'r MakeRoom<'r>>,
    /// The hashes of the bundles compressed, when they are taken elsewhere (on a thread of
    /// their own): asked for the bytes of a bundle (exactly those bytes: the same slice) once
    /// they are compressed, it gives their [`ccob::truncated_md5`], waiting for it, or `None`
    /// when it is not taking it. `None`: each bundle is hashed as it is compressed.
    pub hashed: Option<&'r HashedAhead<'r>>,
}

pub use crate::format::cuda_fatbin::Copied;
/// The hashes of bundles taken elsewhere: see [`Rules::hashed`].
pub type HashedAhead<'a> = dyn Fn(&[u8]) -> Option<u64> + Sync + 'a;

pub use crate::format::inflate::{MakeRoom, Room};

/// The bundles compressed into [`Rules::room`], when there is one: those of 4 MiB or more
/// (smaller ones are made in memory, where they cost less than a file).
pub const ROOM_FROM: usize = 4 << 20;

/// What became of a container.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Rewrite {
    /// The bytes it occupied.
    pub size: u64,
    /// Its new bytes: `None` when it stays as it was, empty when it goes.
    pub new: Option<NewBytes>,
    /// Device images before.
    pub images_before: usize,
    /// Device images after.
    pub images_after: usize,
    /// What was done to it, in words (`stripped`, `compressed`, ...).
    pub done: &'static str,
    /// Compressed bundles left as they were because they were compressed as asked already
    /// (0 or 1).
    pub already_compressed: usize,
    /// Whether the new bytes are a compressed bundle compressed here, from the bytes its header
    /// hashes: sound by how it was made, it needs no inflating to be checked once written.
    pub fresh_stream: bool,
}

/// The new bytes of a container that changes.
pub enum NewBytes {
    /// Made in memory (empty: the container goes).
    Made(Vec<u8>),
    /// Made in the room [`Rules::room`] gave.
    Placed(Box<dyn Room>),
    /// The bundle a compressed bundle holds, its first `size` bytes inflated: too large to
    /// hold, they are written where they go by [`write_inflated`].
    Inflated(u64),
    /// A short head made in memory, then stretches of the container's own bytes as they were
    /// (a CUDA fat binary's kept entries): a writer copies those from the file.
    Copied(Copied),
}

impl NewBytes {
    /// How many bytes they are.
    pub fn len(&self) -> u64 {
        match self {
            NewBytes::Made(bytes) => bytes.len() as u64,
            NewBytes::Placed(room) => room.bytes().len() as u64,
            NewBytes::Inflated(size) => *size,
            NewBytes::Copied(copied) => copied.len(),
        }
    }

    /// The bytes, when they are made whole (not inflated later, nor copied from the file).
    pub fn bytes(&self) -> Option<&[u8]> {
        match self {
            NewBytes::Made(bytes) => Some(bytes),
            NewBytes::Placed(room) => Some(room.bytes()),
            NewBytes::Inflated(_) | NewBytes::Copied(_) => None,
        }
    }

    /// Whether there are none: the container goes.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }
}

impl std::fmt::Debug for NewBytes {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            NewBytes::Made(bytes) => write!(f, "Made({} bytes)", bytes.len()),
            NewBytes::Placed(room) => write!(f, "Placed({} bytes)", room.bytes().len()),
            NewBytes::Inflated(size) => write!(f, "Inflated({size})"),
            NewBytes::Copied(copied) => write!(f, "Copied({} bytes)", copied.len()),
        }
    }
}

/// A copy in memory, for bytes made in a room as well.
impl Clone for NewBytes {
    fn clone(&self) -> Self {
        match self {
            NewBytes::Inflated(size) => NewBytes::Inflated(*size),
            NewBytes::Copied(copied) => NewBytes::Copied(copied.clone()),
            made => NewBytes::Made(made.bytes().unwrap_or_default().to_vec()),
        }
    }
}

/// The same bytes, wherever they were made.
impl PartialEq for NewBytes {
    fn eq(&self, other: &Self) -> bool {
        match (self, other) {
            (NewBytes::Inflated(a), NewBytes::Inflated(b)) => a == b,
            (NewBytes::Copied(a), NewBytes::Copied(b)) => a == b,
            (a, b) => a.bytes().is_some() && a.bytes() == b.bytes(),
        }
    }
}

impl Eq for NewBytes {}

/// Why [`write_inflated`] failed.
#[derive(Debug)]
pub enum InflateFailed {
    /// The stream is damaged (offsets from the compressed bundle's start).
    Format(Error),
    /// The sink refused the bytes.
    Sink(std::io::Error),
}

/// Hands `sink` the bundle held by the compressed bundle at the start of `data`, its first
/// `size` bytes (as [`NewBytes::Inflated`] says), piece by piece as its stream is inflated,
/// never holding more than a window. The whole stream is inflated, its size and hash
/// checked, even past those bytes.
pub fn write_inflated(
    data: &[u8],
    size: u64,
    limit: u64,
    decoding: Decoding<'_>,
    sink: &mut dyn FnMut(&[u8]) -> std::io::Result<()>,
) -> std::result::Result<(), InflateFailed> {
    let compressed = match ccob::CompressedBundle::parse(data) {
        Ok(Some(compressed)) => compressed,
        Ok(None) => {
            return Err(InflateFailed::Format(Error::new(
                0,
                ErrorKind::NotAContainer,
            )))
        }
        Err(e) => return Err(InflateFailed::Format(e)),
    };
    let mut refused = None;
    let end = compressed.uncompressed_size;
    let inflated = compressed.inflate_prefix(limit, end, decoding, |position, piece| {
        let wanted = size.saturating_sub(position);
        match crate::format::inflate::at_most(piece, wanted) {
            [] => Ok(()),
            bytes => sink(bytes).map_err(|e| {
                refused = Some(e);
                // Stops the inflation; the sink's own error is the one returned.
                Error::new(0, ErrorKind::Decompress("stopped".into()))
            }),
        }
    });
    match (refused, inflated) {
        (Some(e), _) => Err(InflateFailed::Sink(e)),
        (None, result) => result.map_err(InflateFailed::Format),
    }
}

impl Container {
    /// The container's name, in messages.
    pub fn name(self) -> &'static str {
        match self {
            Container::Bundle => "bundle",
            Container::CompressedBundle => "compressed bundle",
            Container::OffloadBinary => "offload binary",
            Container::CudaFatbin => "CUDA fat binary",
        }
    }

    /// Rewrites the container at the start of `data` by `rules`.
    pub fn rewrite(self, data: &[u8], rules: &Rules<'_>) -> Result<Rewrite> {
        self.rewrite_decoding(data, rules, Decoding::Fresh)
    }

    /// [`Container::rewrite`], inflating a compressed bundle that is stripped with the
    /// decoder `decoding` says.
    pub fn rewrite_decoding(
        self,
        data: &[u8],
        rules: &Rules<'_>,
        decoding: Decoding<'_>,
    ) -> Result<Rewrite> {
        match self {
            Container::Bundle => rewrite_bundle(data, rules),
            Container::CompressedBundle => rewrite_compressed_bundle(data, rules, decoding),
            Container::OffloadBinary => rewrite_offload_binary(data, rules),
            Container::CudaFatbin => rewrite_cuda_fatbin(data, rules, Making::Copied),
        }
    }
}

impl Rules<'_> {
    /// Which entries of one bundle stay, given their IDs in order, wherever the entries are
    /// stored (in a bundle, or as the `__CLANG_OFFLOAD_BUNDLE__` sections of a host object).
    pub fn keeps_entries(&self, ids: &[&str]) -> Vec<bool> {
        let targets: Vec<ImageTarget> = ids
            .iter()
            .map(|id| ImageTarget::of_bundle_entry(id))
            .collect();
        let asked = |t: &ImageTarget| t.producer != Producer::Host && !t.target_id.is_empty();
        let devices: Vec<ImageTarget> = targets.iter().filter(|t| asked(t)).cloned().collect();
        let mut verdicts = (self.keeps)(&devices).into_iter();
        targets
            .iter()
            .map(|t| !asked(t) || verdicts.next().unwrap_or(true))
            .collect()
    }

    /// Which of an offload binary's images stay, judged with the images of the binaries beside
    /// it when there are any.
    fn keeps_offload_images(&self, targets: &[ImageTarget]) -> Vec<bool> {
        if self.offload_unit.is_empty() {
            return (self.keeps)(targets);
        }
        let verdicts = (self.keeps)(self.offload_unit);
        targets
            .iter()
            .map(|t| {
                self.offload_unit
                    .iter()
                    .zip(&verdicts)
                    .any(|(other, kept)| *kept && other == t)
            })
            .collect()
    }
}

/// Whether the bundle entry `id` is device code (not the host's).
pub fn is_device_entry(id: &str) -> bool {
    !EntryId::parse(id).is_host()
}

/// The device (not host) entries among `ids`.
fn count_devices<'a>(ids: impl Iterator<Item = &'a str>) -> usize {
    ids.filter(|id| is_device_entry(id)).count()
}

/// The alignment a bundle's payloads were written with: 4096 when every payload starts on a
/// 4096 boundary (what the HIP driver asks for), else 1.
fn alignment_of(parsed: &Bundle<'_>) -> u64 {
    let mut payloads = parsed
        .entries()
        .iter()
        .filter(|e| !e.data.is_empty())
        .peekable();
    let any = payloads.peek().is_some();
    if any && payloads.all(|e| e.offset % 4096 == 0) {
        4096
    } else {
        1
    }
}

/// The bundle without the entries `rules` drop, as LLVM lays bundles out (entries in their
/// order, the same alignment); `None` when every entry stays. Also the number of device
/// entries kept.
fn strip_bundle(parsed: &Bundle<'_>, rules: &Rules<'_>) -> (Option<Vec<u8>>, usize) {
    let ids: Vec<&str> = parsed.entries().iter().map(|e| e.id).collect();
    let kept: Vec<(&str, &[u8])> = parsed
        .entries()
        .iter()
        .zip(rules.keeps_entries(&ids))
        .filter(|(_, keep)| *keep)
        .map(|(e, _)| (e.id, e.data))
        .collect();
    let devices = count_devices(kept.iter().map(|(id, _)| *id));
    if kept.len() == parsed.entries().len() {
        return (None, devices);
    }
    (Some(bundle::to_vec(&kept, alignment_of(parsed))), devices)
}

/// How the new bytes of a CUDA fat binary are given.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Making {
    /// Whole, in memory ([`NewBytes::Made`]).
    Whole,
    /// As a new header and the kept entries' stretches of the old bytes ([`NewBytes::Copied`]).
    Copied,
}

/// The CUDA fat binary at the start of `data` without the entries `rules` drop, the kept ones
/// as they were stored; a fat binary that keeps none keeps its header, since a wrapper points
/// at it (the runtime then finds no code in it). Compressing or decompressing leaves it as
/// it is.
fn rewrite_cuda_fatbin(data: &[u8], rules: &Rules<'_>, making: Making) -> Result<Rewrite> {
    let size = cuda_fatbin::size(data)?;
    let fatbin = data
        .get(..usize::try_from(size).unwrap_or(usize::MAX))
        .unwrap_or(data);
    let entries: Vec<cuda_fatbin::Entry<'_>> =
        cuda_fatbin::entries(fatbin).collect::<Result<_>>()?;
    let targets: Vec<ImageTarget> = entries.iter().map(cuda_fatbin::Entry::target).collect();
    let keeps = match rules.storage {
        BundleStorage::AsIs => (rules.keeps)(&targets),
        BundleStorage::Compress(_)
        | BundleStorage::CompressPlain(_)
        | BundleStorage::Decompress => {
            vec![true; entries.len()]
        }
    };
    let kept: Vec<cuda_fatbin::Entry<'_>> = entries
        .iter()
        .zip(keeps.iter().chain(std::iter::repeat(&true)))
        .filter(|(_, keep)| **keep)
        .map(|(entry, _)| *entry)
        .collect();
    let stripped = kept.len() != entries.len();
    Ok(Rewrite {
        size,
        new: stripped.then(|| {
            let copied = (making == Making::Copied)
                .then(|| cuda_fatbin::kept_stretches(fatbin, &kept))
                .flatten();
            match copied {
                Some(copied) => NewBytes::Copied(copied),
                None => NewBytes::Made(cuda_fatbin::write_kept(fatbin, &kept)),
            }
        }),
        images_before: entries.len(),
        images_after: kept.len(),
        done: if stripped { "stripped" } else { "kept" },
        already_compressed: 0,
        fresh_stream: false,
    })
}

fn rewrite_bundle(data: &[u8], rules: &Rules<'_>) -> Result<Rewrite> {
    let Some(parsed) = Bundle::parse(data)? else {
        return Err(Error::new(0, ErrorKind::NotAContainer));
    };
    let (stripped, kept) = strip_bundle(&parsed, rules);
    let size = parsed.size();
    let new = match rules.storage {
        BundleStorage::Compress(options) | BundleStorage::CompressPlain(options) => {
            refuse_unwritable_ids(&parsed)?;
            let whole = data
                .get(..usize::try_from(size).unwrap_or(usize::MAX))
                .unwrap_or(data);
            Some(compressed(
                stripped.as_deref().unwrap_or(whole),
                &options,
                rules,
            )?)
        }
        BundleStorage::AsIs | BundleStorage::Decompress => stripped.map(NewBytes::Made),
    };
    let fresh = matches!(
        rules.storage,
        BundleStorage::Compress(_) | BundleStorage::CompressPlain(_)
    );
    Ok(Rewrite {
        size,
        new,
        images_before: count_devices(parsed.entries().iter().map(|e| e.id)),
        images_after: kept,
        done: match rules.storage {
            BundleStorage::Compress(_) | BundleStorage::CompressPlain(_) => "compressed",
            BundleStorage::AsIs | BundleStorage::Decompress => "stripped",
        },
        already_compressed: 0,
        fresh_stream: fresh,
    })
}

/// `plain` compressed as `options` say: a large bundle into room [`Rules::room`] gives, when
/// it gives any, the rest in memory; the same bytes either way.
fn compressed(plain: &[u8], options: &CompressOptions, rules: &Rules<'_>) -> Result<NewBytes> {
    let bound = ccob::compressed_bound(plain.len(), options);
    let ahead = rules.hashed.map(|hashed| move || hashed(plain));
    let hash = ahead.as_ref().map(|f| f as &ccob::HashElsewhere<'_>);
    let (Some(make), Some(bound), true) = (rules.room, bound, plain.len() >= ROOM_FROM) else {
        return Ok(NewBytes::Made(
            ccob::compress_hashed(plain, options, hash)?.0,
        ));
    };
    let mut room = make(bound).map_err(|e| {
        Error::new(
            0,
            ErrorKind::Decompress(format!("no room for the compressed bundle: {e}")),
        )
    })?;
    let (len, _) = ccob::compress_into_hashed(plain, options, room.space(), hash)?;
    room.keep(len);
    Ok(NewBytes::Placed(room))
}

/// Refuses a bundle one of whose entry IDs no bundle is written with
/// ([`crate::target::entry_id::unwritable_char`]).
fn refuse_unwritable_ids(parsed: &Bundle<'_>) -> Result<()> {
    for (index, entry) in parsed.entries().iter().enumerate() {
        if let Some(c) = crate::target::entry_id::unwritable_char(entry.id) {
            let kind = ErrorKind::EntryIdUnwritable {
                index: index as u64,
                code: u32::from(c),
            };
            return Err(Error::new(0, kind));
        }
    }
    Ok(())
}

fn rewrite_compressed_bundle(
    data: &[u8],
    rules: &Rules<'_>,
    decoding: Decoding<'_>,
) -> Result<Rewrite> {
    let Some(compressed) = ccob::CompressedBundle::parse(data)? else {
        return Err(Error::new(0, ErrorKind::NotAContainer));
    };
    match rules.storage {
        BundleStorage::Compress(options) if options.method == compressed.method => {
            recompress_header(&compressed, &options, rules.limit)
        }
        // Left as it is: the header of its own version and method.
        BundleStorage::CompressPlain(options) => {
            let own = CompressOptions {
                method: compressed.method,
                version: compressed.version,
                ..options
            };
            recompress_header(&compressed, &own, rules.limit)
        }
        BundleStorage::AsIs => strip_compressed_bundle(&compressed, rules, decoding),
        // The bundle only: what the stream holds after it is no part of it (nor of LLVM's
        // reading), and is not written back when decompressing.
        BundleStorage::Decompress => decompress_bundle(&compressed, rules),
        BundleStorage::Compress(_) => {
            let plain = compressed.inflate_bundle(rules.limit)??;
            rewrite_inflated(&compressed, plain, rules)
        }
    }
}

/// A compressed bundle decompressed: its bundle, read from its header alone and inflated later
/// where it goes ([`NewBytes::Inflated`]). A stream no longer than a window, or that holds no
/// bundle, is inflated and checked whole here, as [`rewrite_inflated`] does.
fn decompress_bundle(
    compressed: &ccob::CompressedBundle<'_>,
    rules: &Rules<'_>,
) -> Result<Rewrite> {
    let (entries, end) = match compressed.inflate_head(rules.limit)? {
        Head::Bundle { entries, end } => (entries, end),
        Head::Whole(plain) => return rewrite_inflated(compressed, plain, rules),
    };
    let images = count_devices(entries.iter().map(|e| e.id.as_str()));
    Ok(Rewrite {
        size: compressed.size(),
        new: Some(NewBytes::Inflated(end)),
        images_before: images,
        images_after: images,
        done: "decompressed",
        already_compressed: 0,
        fresh_stream: false,
    })
}

/// A compressed bundle stripped as it is stored: its stream is inflated to its end and checked
/// (size and hash) as the entries that stay are taken from it, so that no code is kept from a
/// damaged stream, and those entries are compressed again as [`rewrite_inflated`] compresses
/// them. A bundle that keeps every entry is inflated through a window and checked, never held.
fn strip_compressed_bundle(
    compressed: &ccob::CompressedBundle<'_>,
    rules: &Rules<'_>,
    decoding: Decoding<'_>,
) -> Result<Rewrite> {
    let entries = match compressed.inflate_head(rules.limit)? {
        Head::Bundle { entries, .. } => entries,
        Head::Whole(plain) => return rewrite_inflated(compressed, plain, rules),
    };
    let ids: Vec<&str> = entries.iter().map(|e| e.id.as_str()).collect();
    let keeps = rules.keeps_entries(&ids);
    let kept: Vec<&EntryRecord> = entries
        .iter()
        .zip(&keeps)
        .filter(|(_, keep)| **keep)
        .map(|(e, _)| e)
        .collect();
    let new = if kept.len() == entries.len() {
        compressed.verify(rules.limit, decoding)?;
        None
    } else {
        let payloads = inflate_entries(compressed, &kept, rules.limit, decoding)?;
        let pairs: Vec<(&str, &[u8])> = kept
            .iter()
            .zip(&payloads)
            .map(|(e, data)| (e.id.as_str(), data.as_slice()))
            .collect();
        let stripped = bundle::to_vec(&pairs, alignment_of_records(&entries));
        Some(self::compressed(&stripped, &again(compressed), rules)?)
    };
    let fresh = new.is_some();
    Ok(Rewrite {
        size: compressed.size(),
        new,
        images_before: count_devices(ids.iter().copied()),
        images_after: count_devices(kept.iter().map(|e| e.id.as_str())),
        done: "stripped and compressed again",
        already_compressed: 0,
        fresh_stream: fresh,
    })
}

/// The payloads of `entries` (records of the bundle `compressed` holds), inflating its
/// whole stream and checking it (size and hash) on the way: a stream damaged past the last of
/// them is refused all the same.
fn inflate_entries(
    compressed: &ccob::CompressedBundle<'_>,
    entries: &[&EntryRecord],
    limit: u64,
    decoding: Decoding<'_>,
) -> Result<Vec<Vec<u8>>> {
    let ranges: Vec<(u64, u64)> = entries
        .iter()
        .map(|e| (e.offset, e.offset.saturating_add(e.size)))
        .collect();
    let mut payloads: Vec<Vec<u8>> = entries
        .iter()
        .map(|e| Vec::with_capacity(usize::try_from(e.size).unwrap_or(0)))
        .collect();
    compressed.inflate_prefix(limit, u64::MAX, decoding, |position, piece| {
        let piece_end = position + piece.len() as u64;
        for (payload, &(start, end)) in payloads.iter_mut().zip(&ranges) {
            let (from, to) = (start.max(position), end.min(piece_end));
            if from >= to {
                continue;
            }
            // Both within the piece, whose length is a usize.
            let at = |p: u64| usize::try_from(p - position).unwrap_or(usize::MAX);
            if let Some(bytes) = piece.get(at(from)..at(to)) {
                payload.extend_from_slice(bytes);
            }
        }
        Ok(())
    })?;
    Ok(payloads)
}

/// [`alignment_of`] from a bundle's records.
fn alignment_of_records(entries: &[EntryRecord]) -> u64 {
    let mut payloads = entries.iter().filter(|e| e.size > 0).peekable();
    let any = payloads.peek().is_some();
    if any && payloads.all(|e| e.offset % 4096 == 0) {
        4096
    } else {
        1
    }
}

/// How a compressed bundle stripped is compressed again: as it was (version 1 carries no
/// size: written as 2), at its method's default level, since a level is not recorded.
fn again(compressed: &ccob::CompressedBundle<'_>) -> CompressOptions {
    CompressOptions {
        version: compressed.version.max(2),
        method: compressed.method,
        level: compressed.method.default_level(),
    }
}

/// A compressed bundle rewritten from `plain`, its inflated bundle (or whole stream).
fn rewrite_inflated(
    compressed: &ccob::CompressedBundle<'_>,
    plain: Vec<u8>,
    rules: &Rules<'_>,
) -> Result<Rewrite> {
    let (stripped, kept, images_before) = {
        let parsed = Bundle::parse(&plain)?.ok_or(Error::new(0, ErrorKind::NoBundleInside))?;
        let (stripped, kept) = strip_bundle(&parsed, rules);
        let images_before = count_devices(parsed.entries().iter().map(|e| e.id));
        (stripped, kept, images_before)
    };
    let new = match (rules.storage, stripped) {
        // The inflated bundle itself, not a copy: a bundle of 100 MB costs 100 MB.
        (BundleStorage::Decompress, _) => Some(NewBytes::Made(plain)),
        // Another method: compressed again from the whole bundle, as asked.
        (BundleStorage::Compress(options) | BundleStorage::CompressPlain(options), stripped) => {
            let bytes = stripped.as_deref().unwrap_or(&plain);
            Some(self::compressed(bytes, &options, rules)?)
        }
        (BundleStorage::AsIs, Some(stripped)) => {
            Some(self::compressed(&stripped, &again(compressed), rules)?)
        }
        (BundleStorage::AsIs, None) => None,
    };
    let fresh = new.is_some() && rules.storage != BundleStorage::Decompress;
    Ok(Rewrite {
        size: compressed.size(),
        new,
        images_before,
        images_after: kept,
        done: match rules.storage {
            BundleStorage::Decompress => "decompressed",
            BundleStorage::Compress(_) | BundleStorage::CompressPlain(_) => {
                "compressed again with another method"
            }
            BundleStorage::AsIs => "stripped and compressed again",
        },
        already_compressed: 0,
        fresh_stream: fresh,
    })
}

/// A compressed bundle asked to be compressed with the method it has: its stream stays as it
/// is, inflated only as far as its bundle's header (to count its images). The same version
/// keeps the bundle whole (a level is not recorded, so any level counts as the same); another
/// version gets only a new header before the same stream.
fn recompress_header(
    compressed: &ccob::CompressedBundle<'_>,
    options: &CompressOptions,
    limit: u64,
) -> Result<Rewrite> {
    let ids = compressed_entry_ids(compressed, limit)?;
    let images = count_devices(ids.iter().map(String::as_str));
    let same = options.version == compressed.version;
    let new = if same {
        None
    } else {
        options.check_size(compressed.uncompressed_size)?;
        let header_len = ccob::header_size(options.version).ok_or(Error::new(
            4,
            ErrorKind::UnknownCompressedVersion(options.version),
        ))?;
        let total = header_len + compressed.payload.len() as u64;
        let mut bytes = ccob::header(
            options,
            total,
            compressed.uncompressed_size,
            compressed.hash,
        )?;
        bytes.extend_from_slice(compressed.payload);
        Some(NewBytes::Made(bytes))
    };
    Ok(Rewrite {
        size: compressed.size(),
        new,
        images_before: images,
        images_after: images,
        done: "given a header of another version",
        already_compressed: usize::from(same),
        fresh_stream: false,
    })
}

/// The entry IDs of the bundle a compressed bundle holds, from the start of its stream alone:
/// inflated only until the bundle's header is complete (a few KiB of a stream of many MiB).
fn compressed_entry_ids(
    compressed: &ccob::CompressedBundle<'_>,
    limit: u64,
) -> Result<Vec<String>> {
    use crate::format::inflate;
    use std::io::Read;
    let at = compressed.header_size();
    let failed = |e: std::io::Error| Error::new(at, ErrorKind::Decompress(e.to_string()));
    let mut reader: Box<dyn Read + '_> = match compressed.method {
        ccob::Method::Zstd => {
            Box::new(zstd::stream::read::Decoder::with_buffer(compressed.payload).map_err(failed)?)
        }
        ccob::Method::Zlib => Box::new(flate2::read::ZlibDecoder::new(compressed.payload)),
    };
    let len = compressed.uncompressed_size.min(limit);
    let mut prefix = Vec::new();
    let mut window = vec![0u8; 64 << 10];
    loop {
        let no_bundle = prefix.len() >= bundle::MAGIC.len() && !bundle::is_bundle(&prefix);
        if no_bundle {
            return Err(Error::new(at, ErrorKind::NoBundleInside));
        }
        if let Some(ids) = bundle::entry_ids(&prefix, len)? {
            return Ok(ids.into_iter().map(str::to_string).collect());
        }
        let n = inflate::read_some(&mut reader, &mut window).map_err(failed)?;
        let room = len.saturating_sub(prefix.len() as u64);
        if n == 0 || room == 0 {
            // The stream ended inside the header, or holds no bundle.
            return Err(Error::new(at, ErrorKind::NoBundleInside));
        }
        let read = inflate::at_most(&window, n as u64);
        inflate::append(&mut prefix, inflate::at_most(read, room), len, at)?;
    }
}

/// An offload binary. An image that holds CUDA fat binaries (kind `fatbin`, as clang's
/// offload driver stores them) is rewritten as `.nv_fatbin` is: each fat binary keeps the
/// entries asked for, as they were stored. The other images are kept or dropped one by one;
/// when any changes, the binary is written again, in its version, as LLVM lays it out (a
/// version 1 binary holds one image, so it stays or goes whole). A binary goes when nothing
/// of it stays.
fn rewrite_offload_binary(data: &[u8], rules: &Rules<'_>) -> Result<Rewrite> {
    let binary = offload_binary::OffloadBinary::parse(data)?;
    let entries = binary.entries();
    let targets: Vec<ImageTarget> = entries
        .iter()
        .filter(|e| !holds_cuda_fatbins(e))
        .map(ImageTarget::of_offload_entry)
        .collect();
    let mut plain_keeps = rules.keeps_offload_images(&targets).into_iter();
    let plain_kept = plain_keeps.clone().filter(|keep| *keep).count();
    let mut images: Vec<Kept> = Vec::with_capacity(entries.len());
    let (mut before, mut after) = (targets.len(), plain_kept);
    for entry in entries {
        if !holds_cuda_fatbins(entry) {
            let keep = plain_keeps.next().unwrap_or(true);
            images.push(if keep { Kept::AsIs } else { Kept::Dropped });
            continue;
        }
        let rewritten = rewrite_fatbins(entry.image, rules)?;
        before += rewritten.before;
        after += rewritten.after;
        images.push(rewritten.new.map_or(Kept::AsIs, Kept::New));
    }
    let drop = after == 0 && !entries.is_empty();
    let new = if drop {
        Some(Vec::new())
    } else if images.iter().any(|kept| *kept != Kept::AsIs) {
        Some(rewritten_offload_binary(&binary, &images)?)
    } else {
        None
    };
    Ok(Rewrite {
        size: binary.size(),
        new: new.map(NewBytes::Made),
        images_before: before,
        images_after: after,
        done: if drop { "dropped" } else { "stripped" },
        already_compressed: 0,
        fresh_stream: false,
    })
}

/// What becomes of an offload binary's image when it is rewritten.
#[derive(Debug, Clone, PartialEq, Eq)]
enum Kept {
    /// It stays as it is.
    AsIs,
    /// It stays, with these bytes instead.
    New(Vec<u8>),
    /// It goes, with its entry.
    Dropped,
}

/// Whether the image of `entry` holds CUDA fat binaries (its bytes start with one).
pub fn holds_cuda_fatbins(entry: &OffloadEntry<'_>) -> bool {
    Container::at_start(entry.image) == Some(Container::CudaFatbin)
}

/// An offload binary's image of CUDA fat binaries, rewritten.
struct FatbinsRewritten {
    /// The new image; `None` when it stays.
    new: Option<Vec<u8>>,
    /// The entries before.
    before: usize,
    /// The entries after.
    after: usize,
}

/// The CUDA fat binaries one after another in `image` (an offload binary's), rewritten by
/// `rules`.
fn rewrite_fatbins(image: &[u8], rules: &Rules<'_>) -> Result<FatbinsRewritten> {
    let mut out = Vec::with_capacity(image.len());
    let (mut before, mut after, mut changed) = (0, 0, false);
    let mut end = 0usize;
    for found in cuda_fatbin::split(image) {
        let (at, fatbin) = found?;
        let rewrite =
            rewrite_cuda_fatbin(fatbin, rules, Making::Whole).map_err(|e| e.rebased(at as u64))?;
        before += rewrite.images_before;
        after += rewrite.images_after;
        out.resize(out.len().next_multiple_of(8), 0);
        match rewrite.new {
            Some(NewBytes::Made(bytes)) => {
                changed = true;
                out.extend_from_slice(&bytes);
            }
            _ => out.extend_from_slice(fatbin),
        }
        end = at + fatbin.len();
    }
    // What follows the last fat binary (padding) stays.
    out.extend_from_slice(image.get(end..).unwrap_or_default());
    Ok(FatbinsRewritten {
        new: changed.then_some(out),
        before,
        after,
    })
}

/// `binary` written again as LLVM lays it out, in its version, without the images `images`
/// drops and with those it gives new bytes replaced, their metadata as it was.
fn rewritten_offload_binary(
    binary: &offload_binary::OffloadBinary<'_>,
    images: &[Kept],
) -> Result<Vec<u8>> {
    let written: Vec<offload_binary::OffloadingImage<'_>> = binary
        .entries()
        .iter()
        .zip(images)
        .filter_map(|(entry, kept)| {
            let image = match kept {
                Kept::AsIs => entry.image,
                Kept::New(bytes) => bytes,
                Kept::Dropped => return None,
            };
            Some(offload_binary::OffloadingImage {
                image_kind: entry.image_kind,
                offload_kind: entry.offload_kind,
                flags: entry.flags,
                strings: &entry.strings,
                image,
            })
        })
        .collect();
    offload_binary::write(binary.version(), &written)
}

/// The position of the first magic, in `data`, of a container a scan finds by its magic.
pub fn next_magic(data: &[u8]) -> Option<usize> {
    crate::format::search::first_magic(data)
}

/// The length of the longest magic of a container a scan finds by its magic (or of the ELF
/// magic [`next_magic`] finds too).
pub fn longest_magic() -> usize {
    crate::format::search::MAGICS
        .iter()
        .map(|m| m.len())
        .max()
        .unwrap_or(0)
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
        // And the start of an embedded ELF file, which a scan reads as a code object or skips.
        assert_eq!(next_magic(b"..\x7fELF.."), Some(2));
    }
}
