//! One device image as the operations see it, typed: what it is for (producer, triple,
//! target ID), where it came from (file, archive member, section, and the container record
//! that held it), its sizes, and where its bytes lie when they are not plain in the file. `ls`
//! renders its rows from it, `extract` says with it what it chose, `du` counts it.

use std::path::{Path, PathBuf};

use serde::{Serialize, Serializer};

use crate::format::bare::BareKind;
use crate::format::cuda_fatbin::{Compression, Entry, EntryKind};
use crate::format::image_target::{ImageTarget, Producer};
use crate::format::kpack::Scheme;
use crate::format::offload_binary::ImageKind;
use crate::host::kpack::StoredCodeObject;
use crate::host::package::PackageMember;
use crate::host::scan::{DeviceImage, Origin};
use crate::target::processor::processor_class;
use crate::target::target_id::TargetId;
use crate::target::triple::Triple;

/// The triple of the code objects `.kpack` archives hold.
const KPACK_TRIPLE: &str = "amdgcn-amd-amdhsa";

/// One device image found in a file or a `.kpack` archive.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ImageRecord {
    /// The file, as named on the command line, as text (a name that is not UTF-8 with
    /// replacement characters: [`ImageRecord::path`] is exact).
    pub file: String,
    /// The file, as named on the command line: its exact name; for an image in a package's
    /// member, the member's name `PACKAGE!member/path` ([`ImageRecord::package`]).
    pub path: PathBuf,
    /// The package member that holds the image, when the file is a package (a wheel, a
    /// Debian or conda package, a tarball); `offset` and `section` are then the member's.
    pub package: Option<PackageMember>,
    /// The archive member that holds the image (the innermost, for archives in archives).
    pub member: Option<String>,
    /// The section that holds the image.
    pub section: Option<String>,
    /// Byte offset of the image in the file; `None` inside a compressed container.
    pub offset: Option<u64>,
    /// Size of the image in bytes.
    pub size: u64,
    /// What produced it.
    pub producer: Producer,
    /// The target triple, without the empty pieces a bundle entry ID pads it with.
    pub triple: Triple,
    /// The target ID as stored (`gfx90a:xnack+`, `sm_80`); empty when the image names none.
    /// [`ImageRecord::target_id`] parses it.
    pub target_id: String,
    /// The record that held it: a bundle entry, an offload binary image, a CUDA fat binary's
    /// entry or a `.kpack` archive's code object.
    pub source: Source,
    /// Whether the image is stored compressed.
    pub compressed: bool,
    /// For an image inside a compressed bundle stored as such in the file: where that
    /// compressed bundle lies, and where the image lies in what it inflates to.
    pub compressed_bundle: Option<CompressedPlace>,
    /// The translation unit it belongs to, unique within the scan of its file; 0 for a code
    /// object of a `.kpack` archive, whose unit is its key.
    pub unit: usize,
}

/// The record that held an image.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Source {
    /// An entry of a clang offload bundle, with its entry ID.
    BundleEntry(String),
    /// An image of an offload binary, holding this kind.
    OffloadImage(ImageKind),
    /// An entry of a CUDA fat binary: what it holds and what its header says.
    CudaEntry(EntryKind, CudaPlace),
    /// A code object of a `.kpack` archive, and where it is.
    Kpack(KpackPlace),
    /// A bare device image, in no container.
    Bare(BareKind),
}

impl Source {
    /// For an offload binary image or a CUDA entry, what it holds, as `ls` names it: `o`,
    /// `bc`, `cubin`, `fatbin`, `s`, `spv`, `none`, `unknown-N`; `ptx`, `cubin`, `kind-N`.
    pub fn image_kind(&self) -> Option<String> {
        match self {
            Source::OffloadImage(ImageKind::None) => Some("none".into()),
            Source::OffloadImage(ImageKind::Unknown(raw)) => Some(format!("unknown-{raw}")),
            Source::OffloadImage(kind) => Some(kind.name().into()),
            Source::CudaEntry(EntryKind::Ptx, _) => Some("ptx".into()),
            Source::CudaEntry(EntryKind::Elf, _) => Some("cubin".into()),
            Source::CudaEntry(EntryKind::Other(kind), _) => Some(format!("kind-{kind}")),
            Source::Bare(kind) => Some(kind.image_kind().into()),
            Source::BundleEntry(_) | Source::Kpack(_) => None,
        }
    }

    /// For a bundle entry, its entry ID.
    pub fn entry_id(&self) -> Option<&str> {
        match self {
            Source::BundleEntry(id) => Some(id),
            _ => None,
        }
    }

    /// For a CUDA entry, what its header says.
    pub fn cuda(&self) -> Option<&CudaPlace> {
        match self {
            Source::CudaEntry(_, place) => Some(place),
            _ => None,
        }
    }

    /// For a code object of a `.kpack` archive, where it is.
    pub fn kpack(&self) -> Option<&KpackPlace> {
        match self {
            Source::Kpack(place) => Some(place),
            _ => None,
        }
    }
}

/// What the header of a CUDA fat binary's entry says.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct CudaPlace {
    /// How the payload is stored: `none`, `lz` (NVIDIA's LZ4-like scheme) or `zstd`.
    #[serde(serialize_with = "compression_name")]
    pub compression: Compression,
    /// Byte offset of the stored payload (the compressed stream, if compressed) in the file;
    /// `None` when it is not in the file as such.
    pub stored_offset: Option<u64>,
    /// Size of the stored payload.
    pub stored_size: u64,
    /// The code version, `major.minor` (the PTX ISA version, for PTX).
    pub code_version: String,
    /// The entry's flags.
    pub flags: u64,
    /// The identifier the header names (often the source file), if any.
    pub identifier: Option<String>,
}

impl CudaPlace {
    /// What the header of `entry` says, its payload stored at `stored_offset` in the file.
    fn of(entry: &Entry<'_>, stored_offset: Option<u64>) -> CudaPlace {
        CudaPlace {
            compression: entry.compression(),
            stored_offset,
            stored_size: entry.payload.len() as u64,
            code_version: format!("{}.{}", entry.version.0, entry.version.1),
            flags: entry.flags,
            identifier: entry.name.map(|n| {
                let n = n.split(|&b| b == 0).next().unwrap_or_default();
                String::from_utf8_lossy(n).into_owned()
            }),
        }
    }
}

/// Where a code object in a `.kpack` archive lies.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct KpackPlace {
    /// The archive, as found (relative paths from the binary's folder or the environment), as
    /// text (a name that is not UTF-8 with U+FFFD for each invalid sequence).
    pub archive: String,
    /// The archive's path in base64, present only when it is not UTF-8: its exact bytes.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub archive_bytes: Option<String>,
    /// The archive's path as found, its bytes as they are (`archive` is for people).
    #[serde(skip)]
    pub archive_path: std::path::PathBuf,
    /// The archive's key: `"<binary>#<code-object index>"`.
    pub key: String,
    /// The code-object index: the HIP wrapper's that the loader asks with.
    pub index: Option<u64>,
    /// How the archive stores it: `none` or `zstd-per-kernel`.
    #[serde(serialize_with = "scheme_name")]
    pub scheme: Scheme,
    /// Offset of its stored bytes (a zstd frame, if compressed) in the archive.
    pub stored_offset: u64,
    /// Size of its stored bytes.
    pub stored_size: u64,
}

/// Where a compressed image lies: the compressed bundle's byte range in the file, and the
/// image's offset in the bundle it inflates to.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
pub struct CompressedPlace {
    /// Byte offset of the compressed bundle (its `CCOB` magic) in the file.
    pub offset: u64,
    /// Size of the compressed bundle: header and payload.
    pub size: u64,
    /// Offset of the image in the inflated bundle.
    pub entry_offset: u64,
}

fn compression_name<S: Serializer>(compression: &Compression, s: S) -> Result<S::Ok, S::Error> {
    s.serialize_str(compression.name())
}

fn scheme_name<S: Serializer>(scheme: &Scheme, s: S) -> Result<S::Ok, S::Error> {
    s.serialize_str(scheme.name())
}

impl ImageRecord {
    /// The record of `image`, found by a scan of the file named `file`.
    pub(crate) fn found(file: &Path, image: &DeviceImage<'_>) -> ImageRecord {
        let target = image.target;
        let source = match image.origin {
            Origin::BundleEntry(id) => Source::BundleEntry(id.to_string()),
            Origin::OffloadImage(entry) => Source::OffloadImage(entry.image_kind),
            Origin::CudaEntry(entry) => {
                Source::CudaEntry(entry.kind, CudaPlace::of(entry, image.stored_offset))
            }
            Origin::Bare(bare) => Source::Bare(bare.kind),
        };
        let path = image.package.map_or(file, |p| p.name.as_path());
        ImageRecord {
            file: path.to_string_lossy().into_owned(),
            path: path.to_path_buf(),
            package: image.package.cloned(),
            member: image.members.last().cloned(),
            section: image.section.map(str::to_string),
            offset: image.offset,
            size: image.size,
            producer: target.producer.clone(),
            triple: Triple::new(&target.triple),
            target_id: target.target_id.clone(),
            source,
            compressed: image.compressed,
            // A compressed offload binary's image has no entry ID to name it by.
            compressed_bundle: image
                .stream
                .filter(|_| image.origin.entry_id().is_some())
                .and_then(|s| {
                    Some(CompressedPlace {
                        offset: s.offset?,
                        size: s.container.len() as u64,
                        entry_offset: s.start,
                    })
                }),
            unit: image.unit,
        }
    }

    /// The record of a code object of a `.kpack` archive, listed under the name `file` (the
    /// archive itself, or the split binary that refers to it).
    pub(crate) fn archived(file: &Path, code: &StoredCodeObject) -> ImageRecord {
        let in_archive = file == code.archive;
        let plain = code.scheme == Scheme::None;
        ImageRecord {
            file: file.to_string_lossy().into_owned(),
            path: file.to_path_buf(),
            package: None,
            member: None,
            section: None,
            offset: (in_archive && plain).then_some(code.stored_offset),
            size: code.size,
            producer: Producer::Hip,
            triple: Triple::new(KPACK_TRIPLE),
            target_id: code.arch.clone(),
            source: Source::Kpack(KpackPlace {
                archive: code.archive.to_string_lossy().into_owned(),
                archive_bytes: crate::io::bytes_unless_text(&code.archive),
                archive_path: code.archive.clone(),
                key: code.key.clone(),
                index: code.index,
                scheme: code.scheme,
                stored_offset: code.stored_offset,
                stored_size: code.stored_size,
            }),
            compressed: !plain,
            compressed_bundle: None,
            unit: 0,
        }
    }

    /// What the image is for as a bare code object: how a code object of a `.kpack` archive
    /// is judged, each a whole file a runtime loads.
    pub(crate) fn code_object_target(&self) -> ImageTarget {
        ImageTarget::of_bare(
            crate::format::bare::BareKind::CodeObject,
            self.triple.as_str(),
            &self.target_id,
        )
    }

    /// The target ID, parsed; `None` when there is none or it does not parse.
    pub fn target_id(&self) -> Option<TargetId<'_>> {
        if self.target_id.is_empty() {
            return None;
        }
        TargetId::parse_syntax(&self.target_id)
    }

    /// For AMDGPU code, what its processor is: `native`, `generic`, `spirv` or `unknown` (a
    /// processor the processor table lacks); `None` for other images.
    pub fn processor(&self) -> Option<&'static str> {
        processor_class(&self.target_id)
    }

    /// The name its target goes by in totals: its target ID, else its triple.
    pub fn target_name(&self) -> &str {
        if self.target_id.is_empty() {
            self.triple.as_str()
        } else {
            &self.target_id
        }
    }
}
