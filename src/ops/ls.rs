//! Listing the device images of files: where each lies and what it is.

use std::path::Path;

use serde::Serialize;

use crate::ops::support::columns::{render, Align};
use crate::target::processor::processor_class;

use crate::error::{Error, Result};
use crate::format::cuda_fatbin::Entry;
use crate::format::kpack::{self as kpack_format, Archive, Scheme};
use crate::host::kpack::{self, StoredCodeObject};
use crate::host::scan::{scan_reading, DeviceImage, Origin, Places, Reading};
use crate::io::Input;
use crate::loads::kpack_search::Environment;

/// One device image, as `offload ls` reports it. The field names are a public interface
/// (`offload ls --json`).
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Image {
    /// The file, as named on the command line.
    pub file: String,
    /// The archive member that holds the image (the innermost, for archives in archives).
    pub member: Option<String>,
    /// The section that holds the image.
    pub section: Option<String>,
    /// Byte offset of the image in the file; `None` inside a compressed container.
    pub offset: Option<u64>,
    /// Size of the image in bytes.
    pub size: u64,
    /// What produced it: `openmp`, `cuda`, `hip`, `sycl`, `none`, or `host`.
    pub offload_kind: String,
    /// The target triple.
    pub triple: String,
    /// The target ID: processor and features (`gfx90a:xnack+`).
    pub arch: String,
    /// For an offload binary image, what it holds: `o`, `bc`, `cubin`, `fatbin`, `s`, `spv`,
    /// `none`, or `unknown-N`. `None` for bundle entries.
    pub image_kind: Option<String>,
    /// For a bundle entry, its entry ID. `None` for offload binary images.
    pub entry_id: Option<String>,
    /// Whether the image is stored compressed.
    pub compressed: bool,
    /// For AMDGPU code, what its processor is: `native`, `generic` (a generic target such as
    /// `gfx11-generic`), `spirv` (`amdgcnspirv`), or `unknown` (a processor the processor table
    /// lacks); `None` for other images.
    pub processor: Option<&'static str>,
    /// For an image inside a compressed bundle stored as such in the file: where that
    /// compressed bundle lies, and where the image lies in what it inflates to. Left out of
    /// the JSON for other images.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub compressed_bundle: Option<CompressedPlace>,
    /// For a code object in a `.kpack` archive (listed with the archive, or with the split
    /// binary that refers to it): where it is. Left out of the JSON for other images.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub kpack: Option<KpackPlace>,
    /// For an entry of a CUDA fat binary: what its header says. Left out of the JSON for
    /// other images.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub cuda: Option<CudaPlace>,
}

/// What the header of a CUDA fat binary's entry says.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct CudaPlace {
    /// How the payload is stored: `none`, `lz` (NVIDIA's LZ4-like scheme) or `zstd`.
    pub compression: &'static str,
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
            compression: entry.compression().name(),
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
    /// The archive, as found (relative paths from the binary's folder or the environment).
    pub archive: String,
    /// The archive's key: `"<binary>#<code-object index>"`.
    pub key: String,
    /// The code-object index: the HIP wrapper's that the loader asks with.
    pub index: Option<u64>,
    /// How the archive stores it: `none` or `zstd-per-kernel`.
    pub scheme: &'static str,
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

/// The fields of an image that say what it is: producer, triple, target ID, image kind and
/// entry ID.
pub fn describe(
    image: &DeviceImage<'_>,
) -> (String, String, String, Option<String>, Option<String>) {
    let target = image.target;
    (
        target.producer.name().to_string(),
        target.triple.clone(),
        target.target_id.clone(),
        image.origin.image_kind(),
        image.origin.entry_id().map(str::to_string),
    )
}

/// The record `offload ls` prints for `image`, found in the file named `file`.
pub fn record(file: &str, image: &DeviceImage<'_>) -> Image {
    let (offload_kind, triple, arch, image_kind, entry_id) = describe(image);
    let processor = processor_class(&arch);
    Image {
        file: file.to_string(),
        member: image.members.last().cloned(),
        section: image.section.map(str::to_string),
        offset: image.offset,
        size: image.size,
        offload_kind,
        triple,
        arch,
        image_kind,
        processor,
        entry_id,
        compressed: image.compressed,
        compressed_bundle: image.stream.and_then(|s| {
            Some(CompressedPlace {
                offset: s.offset?,
                size: s.bundle.len() as u64,
                entry_offset: s.start,
            })
        }),
        kpack: None,
        cuda: match image.origin {
            Origin::CudaEntry(entry) => Some(CudaPlace::of(entry, image.stored_offset)),
            _ => None,
        },
    }
}

/// The record `offload ls` prints for a code object of a `.kpack` archive, listed under the
/// name `file` (the archive itself, or the split binary that refers to it).
pub fn kpack_record(file: &str, code: &StoredCodeObject) -> Image {
    let in_archive = Path::new(file) == code.archive;
    let plain = code.scheme == Scheme::None;
    Image {
        file: file.to_string(),
        member: None,
        section: None,
        offset: (in_archive && plain).then_some(code.stored_offset),
        size: code.size,
        offload_kind: "hip".to_string(),
        triple: "amdgcn-amd-amdhsa".to_string(),
        processor: processor_class(&code.arch),
        arch: code.arch.clone(),
        image_kind: None,
        entry_id: None,
        compressed: !plain,
        compressed_bundle: None,
        cuda: None,
        kpack: Some(KpackPlace {
            archive: code.archive.to_string_lossy().into_owned(),
            key: code.key.clone(),
            index: code.index,
            scheme: code.scheme.name(),
            stored_offset: code.stored_offset,
            stored_size: code.stored_size,
        }),
    }
}

/// The code objects of the `.kpack` archive `data` (at `path`, named `name`).
fn list_archive(path: &Path, name: &str, data: &[u8]) -> Result<Vec<Image>> {
    let archive = Archive::parse(data).map_err(|e| Error::format(path, e))?;
    let codes = kpack::stored_code_objects(path, &archive, &|_| true)?;
    Ok(codes.iter().map(|c| kpack_record(name, c)).collect())
}

/// The code objects a split binary's archives hold for it, and the archives that could not be
/// read; nothing for a binary that is not split.
fn list_split(path: &Path, name: &str, data: &[u8]) -> Result<(Vec<Image>, Vec<Error>)> {
    let Some(split) = kpack::split_binary(path, data)? else {
        return Ok((Vec::new(), Vec::new()));
    };
    let env = Environment::from_vars(|v| std::env::var(v).ok());
    let (mut codes, problems) = kpack::code_objects_for(path, &split, &env);
    // By code-object index, then as found: how the runtime asks for them.
    codes.sort_by_key(|c| c.index);
    let images = codes.iter().map(|c| kpack_record(name, c)).collect();
    Ok((images, problems))
}

/// The images of one file, in file order, and the damage found on the way (each naming the
/// file, member, section and offset). A compressed bundle that declares more than
/// `max_decompressed` bytes is damage. The `Err` is for a file that cannot be read at all.
#[tracing::instrument(skip_all, fields(file = %path.display()))]
pub fn list_file(path: &Path, max_decompressed: u64) -> Result<(Vec<Image>, Vec<Error>)> {
    let input = Input::open(path)?;
    tracing::debug!(size = input.len(), "scanning");
    let name = path.to_string_lossy().into_owned();
    if input.starts_with(&kpack_format::MAGIC) {
        let images = list_archive(path, &name, &input)?;
        input.intact()?;
        return Ok((images, Vec::new()));
    }
    let mut images = Vec::new();
    // Compressed bundles are inflated only up to their bundle's header: their entries' IDs
    // and sizes are all a listing shows.
    let problems = scan_reading(
        path,
        &input,
        Places::Everywhere,
        max_decompressed,
        Reading::Headers,
        &mut |image| {
            let image = record(&name, image);
            tracing::debug!(
                member = image.member,
                section = image.section,
                offset = image.offset,
                size = image.size,
                compressed = image.compressed,
                triple = image.triple,
                arch = image.arch,
                "found {} image",
                image.offload_kind
            );
            images.push(image);
        },
    )?;
    let (split, mut split_problems) = list_split(path, &name, &input)?;
    images.extend(split);
    let mut problems = problems;
    problems.append(&mut split_problems);
    // A file truncated while it was read listed zeros at its end, not its images.
    input.intact()?;
    tracing::info!(images = images.len(), problems = problems.len(), "scanned");
    Ok((images, problems))
}

/// The address of an image. Stored uncompressed: `file://PATH#offset=N&size=N`, its byte
/// range in the file, as ROCm's tools name code objects inside files. Inside a compressed
/// bundle: `file://PATH#offset=N&size=N&entry=ID`, the compressed bundle's byte range in the
/// file and the ID of the entry in the bundle it inflates to (what `offload extract`, the
/// bundler's `-unbundle -targets=ID` or the HIP runtime read from that range). `None` for an
/// image with no byte range in the file (a compressed bundle inside another compressed
/// container, a thin archive's member).
pub fn uri(image: &Image) -> Option<String> {
    let path = std::fs::canonicalize(&image.file)
        .map(|p| p.to_string_lossy().into_owned())
        .unwrap_or_else(|_| image.file.clone());
    if let Some(place) = image.kpack.as_ref().filter(|k| k.scheme == "none") {
        // Stored plain in an archive: a byte range of the archive.
        let archive = std::fs::canonicalize(&place.archive)
            .map(|p| p.to_string_lossy().into_owned())
            .unwrap_or_else(|_| place.archive.clone());
        return Some(format!(
            "file://{archive}#offset={}&size={}",
            place.stored_offset, place.stored_size
        ));
    }
    if let Some(offset) = image.offset {
        return Some(format!("file://{path}#offset={offset}&size={}", image.size));
    }
    let place = image.compressed_bundle?;
    let entry = image.entry_id.as_deref()?;
    Some(format!(
        "file://{path}#offset={}&size={}&entry={entry}",
        place.offset, place.size
    ))
}

/// The WHERE of a code object in an archive: `ARCHIVE[KEY] @OFFSET` (or `(zstd)`), after
/// `BINARY -> ` when listed with the split binary.
fn kpack_where(image: &Image, k: &KpackPlace) -> String {
    let stored = match k.scheme {
        "none" => format!("@{:#x}", k.stored_offset),
        _ => format!("(zstd, {} bytes at {:#x})", k.stored_size, k.stored_offset),
    };
    let inside = format!("{}[{}] {stored}", k.archive, k.key);
    if image.file == k.archive {
        inside
    } else {
        format!("{} -> {inside}", image.file)
    }
}

/// Where a compressed CUDA entry is: ` (zstd, N bytes at 0xOFFSET)`.
fn cuda_where(c: &CudaPlace) -> String {
    match c.stored_offset {
        Some(at) => format!(" ({}, {} bytes at {at:#x})", c.compression, c.stored_size),
        None => " (compressed)".to_string(),
    }
}

/// The table `offload ls` prints for people.
pub fn table(images: &[Image]) -> String {
    let rows: Vec<[String; 7]> = images
        .iter()
        .enumerate()
        .map(|(i, image)| {
            let mut place = image.file.clone();
            if let Some(member) = &image.member {
                place.push_str(&format!("({member})"));
            }
            if let Some(section) = &image.section {
                place.push_str(&format!(" {section}"));
            }
            match (&image.kpack, &image.cuda, image.offset) {
                (Some(k), _, _) => place = kpack_where(image, k),
                (None, _, Some(at)) => place.push_str(&format!(" @{at:#x}")),
                (None, Some(c), None) => place.push_str(&cuda_where(c)),
                (None, None, None) => place.push_str(" (compressed)"),
            }
            [
                i.to_string(),
                match (&image.image_kind, &image.kpack) {
                    (Some(kind), _) => kind.clone(),
                    (None, Some(_)) => "kpack".to_string(),
                    (None, None) => "bundle".to_string(),
                },
                match (image.arch.as_str(), image.processor) {
                    ("", _) => "-".into(),
                    (arch, Some("unknown")) => format!("{arch} (unknown processor)"),
                    (arch, _) => arch.to_string(),
                },
                image.triple.clone(),
                image.offload_kind.clone(),
                image.size.to_string(),
                place,
            ]
        })
        .collect();
    let header = ["#", "KIND", "ARCH", "TRIPLE", "PRODUCER", "SIZE", "WHERE"];
    let (l, r) = (Align::Left, Align::Right);
    render(&header, &rows, &[r, l, l, l, l, r, l])
}
