//! Listing the device images of files: where each lies and what it is.
//!
//! # Example
//!
//! List the device images of a bundle file, as `offload ls` and `offload ls --json` do.
//!
//! ```
//! use offload::format::{bundle, ccob::DEFAULT_MAX_DECOMPRESSED};
//! use offload::ops::ls;
//!
//! # fn main() -> Result<(), Box<dyn std::error::Error>> {
//! let dir = tempfile::tempdir()?;
//! let file = dir.path().join("kernels.hipfb");
//! let entries: [(&str, &[u8]); 2] = [
//!     ("host-x86_64-unknown-linux-gnu-", b""),
//!     ("hipv4-amdgcn-amd-amdhsa--gfx90a:xnack+", b"code for gfx90a"),
//! ];
//! std::fs::write(&file, bundle::to_vec(&entries, 4096))?;
//!
//! let (images, damage) = ls::list_file(&file, DEFAULT_MAX_DECOMPRESSED)?;
//! assert!(damage.is_empty());
//! let rows = ls::rows(&images);
//! assert_eq!(rows.len(), 2);
//! assert_eq!(rows[1].offload_kind, "hip");
//! assert_eq!(rows[1].triple, "amdgcn-amd-amdhsa");
//! assert_eq!(rows[1].arch, "gfx90a:xnack+");
//! assert_eq!((rows[1].offset, rows[1].size), (Some(4096), 15));
//! assert!(ls::table(&images).contains("gfx90a:xnack+"));
//! # Ok(())
//! # }
//! ```

use std::ffi::{OsStr, OsString};
use std::os::unix::ffi::OsStrExt;
use std::path::Path;

use serde::Serialize;

use crate::ops::support::columns::{render, Align};

use crate::error::{Error, Result};
use crate::format::kpack::{self as kpack_format, Archive, Scheme};
use crate::host::kpack;
use crate::host::package::PackageMember;
use crate::host::scan::{scan_with_archives, Reading};
use crate::io::Input;
use crate::loads::kpack_search::Environment;
pub use crate::ops::support::image::{CompressedPlace, CudaPlace, ImageRecord, KpackPlace, Source};

/// One device image, as `offload ls --json` reports it: a row rendered from an
/// [`ImageRecord`]. The field names are a public interface.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Image {
    /// The file, as named on the command line (a name that is not UTF-8 with U+FFFD for each
    /// invalid sequence).
    pub file: String,
    /// The file's name in base64, present only when it is not UTF-8: its exact bytes.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub file_bytes: Option<String>,
    /// For an image in a package (a wheel, a Debian or conda package, a tarball), the
    /// package, as named on the command line; `file` is then `PACKAGE!MEMBER`. Left out of
    /// the JSON for other images.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub package: Option<String>,
    /// The package's name in base64, present only when it is not UTF-8.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub package_bytes: Option<String>,
    /// For an image in a package, the member's path in it (members of packages in packages
    /// joined by `!`: `data.tar.xz!usr/lib/libx.so`). Left out of the JSON for other images.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub package_member: Option<String>,
    /// The member's path in base64, present only when it is not UTF-8.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub package_member_bytes: Option<String>,
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

impl Image {
    /// The row `offload ls --json` prints for `image`.
    pub fn of(image: &ImageRecord) -> Image {
        Image {
            file: image.file.clone(),
            file_bytes: crate::io::bytes_unless_text(&image.path),
            package: (image.package.as_ref()).map(|p| p.package.to_string_lossy().into_owned()),
            package_bytes: (image.package.as_ref())
                .and_then(|p| crate::io::bytes_unless_text(&p.package)),
            package_member: (image.package.as_ref())
                .map(|p| String::from_utf8_lossy(&p.member).into_owned()),
            package_member_bytes: (image.package.as_ref())
                .and_then(|p| crate::io::bytes_unless_text(OsStr::from_bytes(&p.member))),
            member: image.member.clone(),
            section: image.section.clone(),
            offset: image.offset,
            size: image.size,
            offload_kind: image.producer.name().to_string(),
            triple: image.triple.as_str().to_string(),
            arch: image.target_id.clone(),
            image_kind: image.source.image_kind(),
            entry_id: image.source.entry_id().map(str::to_string),
            compressed: image.compressed,
            processor: image.processor(),
            compressed_bundle: image.compressed_bundle,
            kpack: image.source.kpack().cloned(),
            cuda: image.source.cuda().cloned(),
        }
    }
}

/// The rows `offload ls --json` prints for `images`, in their order.
pub fn rows(images: &[ImageRecord]) -> Vec<Image> {
    images.iter().map(Image::of).collect()
}

/// The code objects of the `.kpack` archive `data` (at `path`).
pub(crate) fn list_archive(path: &Path, data: &[u8]) -> Result<Vec<ImageRecord>> {
    let archive = Archive::parse(data).map_err(|e| Error::format(path, e))?;
    let codes = kpack::stored_code_objects(path, &archive, &|_| true)?;
    Ok(codes
        .iter()
        .map(|c| ImageRecord::archived(path, c))
        .collect())
}

/// The code objects a split binary's archives hold for it, and the archives that could not be
/// read; nothing for a binary that is not split.
fn list_split(path: &Path, data: &[u8]) -> Result<(Vec<ImageRecord>, Vec<Error>)> {
    let Some(split) = kpack::split_binary(path, data)? else {
        return Ok((Vec::new(), Vec::new()));
    };
    let env = Environment::from_vars(|v| std::env::var(v).ok());
    let (mut codes, problems) = kpack::code_objects_for(path, &split, &env);
    // By code-object index, then as found: how the runtime asks for them.
    codes.sort_by_key(|c| c.index);
    let images = codes
        .iter()
        .map(|c| ImageRecord::archived(path, c))
        .collect();
    Ok((images, problems))
}

/// The images of one file, in file order, and the damage found on the way (each naming the
/// file, member, section and offset). A compressed bundle that declares more than
/// `max_decompressed` bytes is damage. The `Err` is for a file that cannot be read at all.
#[tracing::instrument(skip_all, fields(file = %path.display()))]
pub fn list_file(path: &Path, max_decompressed: u64) -> Result<(Vec<ImageRecord>, Vec<Error>)> {
    let input = Input::open(path)?;
    tracing::debug!(size = input.len(), "scanning");
    if input.starts_with(&kpack_format::MAGIC) {
        let images = list_archive(path, &input)?;
        input.intact()?;
        return Ok((images, Vec::new()));
    }
    let images = std::cell::RefCell::new(Vec::new());
    // A package's member that is a `.kpack` archive lists its code objects, as the archive
    // named alone does.
    let archives = |member: &PackageMember, bytes: &[u8]| -> Result<()> {
        let mut listed = list_archive(&member.name, bytes)?;
        for image in &mut listed {
            image.package = Some(member.clone());
        }
        images.borrow_mut().extend(listed);
        Ok(())
    };
    // Compressed bundles are inflated only up to their bundle's header: their entries' IDs
    // and sizes are all a listing shows.
    let problems = scan_with_archives(
        path,
        &input,
        max_decompressed,
        Reading::Headers,
        &mut |image| {
            let image = ImageRecord::found(path, image);
            tracing::debug!(
                member = image.member,
                section = image.section,
                offset = image.offset,
                size = image.size,
                compressed = image.compressed,
                triple = image.triple.as_str(),
                arch = image.target_id,
                "found {} image",
                image.producer.name()
            );
            images.borrow_mut().push(image);
        },
        &archives,
    )?;
    let mut images = images.into_inner();
    let (split, mut split_problems) = list_split(path, &input)?;
    images.extend(split);
    let mut problems = problems;
    problems.append(&mut split_problems);
    // A file truncated while it was read listed zeros at its end, not its images.
    input.intact()?;
    tracing::info!(images = images.len(), problems = problems.len(), "scanned");
    Ok((images, problems))
}

/// The address of an image of the file at `file`. Stored uncompressed:
/// `file://PATH#offset=N&size=N`, its byte range in the file, as ROCm's tools name code
/// objects inside files. Inside a compressed bundle: `file://PATH#offset=N&size=N&entry=ID`,
/// the compressed bundle's byte range in the file and the ID of the entry in the bundle it
/// inflates to (what `offload extract`, the bundler's `-unbundle -targets=ID` or the HIP
/// runtime read from that range). `None` for an image with no byte range in the file (a
/// compressed bundle inside another compressed container, a thin archive's member).
///
/// The path is made absolute and, with the entry ID, encoded as the code object URI syntax
/// asks ([`uri_encoded`]): no byte of a file name or an ID can end the line, start another
/// fragment or name another range.
pub fn uri(file: &Path, image: &ImageRecord) -> Option<String> {
    if image.package.is_some() {
        // Its offset is the member's, which is no byte range of a file on disk.
        return None;
    }
    if let Some(place) = image.source.kpack().filter(|k| k.scheme == Scheme::None) {
        // Stored plain in an archive: a byte range of the archive.
        return Some(format!(
            "file://{}#offset={}&size={}",
            uri_path(&place.archive_path),
            place.stored_offset,
            place.stored_size
        ));
    }
    let path = uri_path(file);
    if let Some(offset) = image.offset {
        return Some(format!("file://{path}#offset={offset}&size={}", image.size));
    }
    let place = image.compressed_bundle?;
    let entry = image.source.entry_id()?;
    Some(format!(
        "file://{path}#offset={}&size={}&entry={}",
        place.offset,
        place.size,
        uri_encoded(entry.as_bytes())
    ))
}

/// `path` made absolute (symbolic links resolved when it exists), encoded for a URI.
fn uri_path(path: &Path) -> String {
    let absolute = std::fs::canonicalize(path)
        .or_else(|_| std::path::absolute(path))
        .unwrap_or_else(|_| path.to_path_buf());
    uri_encoded(std::os::unix::ffi::OsStrExt::as_bytes(absolute.as_os_str()))
}

/// `bytes` encoded as the code object URI syntax (AMDGPU's "Loaded Code Object Path URI")
/// asks of a path: every byte outside `[a-zA-Z0-9/_.~-]` (RFC 3986's unreserved characters
/// and `/`) as `%` and two upper-case hexadecimal digits; bytes that are not UTF-8 too.
pub fn uri_encoded(bytes: &[u8]) -> String {
    let mut text = String::with_capacity(bytes.len());
    for &b in bytes {
        if b.is_ascii_alphanumeric() || matches!(b, b'/' | b'_' | b'.' | b'~' | b'-') {
            text.push(char::from(b));
        } else {
            text.push_str(&format!("%{b:02X}"));
        }
    }
    text
}

/// The WHERE of a code object in an archive: `ARCHIVE[KEY] @OFFSET` (or `(zstd)`), after
/// `BINARY -> ` when listed with the split binary.
fn kpack_where(image: &ImageRecord, k: &KpackPlace) -> OsString {
    let stored = match k.scheme {
        Scheme::None => format!("@{:#x}", k.stored_offset),
        _ => format!("(zstd, {} bytes at {:#x})", k.stored_size, k.stored_offset),
    };
    let mut inside = k.archive_path.as_os_str().to_owned();
    inside.push(format!("[{}] {stored}", k.key));
    if image.path == k.archive_path {
        return inside;
    }
    let mut place = image.path.as_os_str().to_owned();
    place.push(" -> ");
    place.push(inside);
    place
}

/// Where a compressed CUDA entry is: ` (zstd, N bytes at 0xOFFSET)`.
fn cuda_where(c: &CudaPlace) -> String {
    match c.stored_offset {
        Some(at) => format!(
            " ({}, {} bytes at {at:#x})",
            c.compression.name(),
            c.stored_size
        ),
        None => " (compressed)".to_string(),
    }
}

/// Where `image` lies, as the table says it: file (its exact name), member, section and
/// offset, or where its stored bytes are.
fn place(image: &ImageRecord) -> OsString {
    let mut place = image.path.as_os_str().to_owned();
    if let Some(member) = &image.member {
        place.push(format!("({member})"));
    }
    if let Some(section) = &image.section {
        place.push(format!(" {section}"));
    }
    match (image.source.kpack(), image.source.cuda(), image.offset) {
        (Some(k), _, _) => place = kpack_where(image, k),
        (None, _, Some(at)) => place.push(format!(" @{at:#x}")),
        (None, Some(c), None) => place.push(cuda_where(c)),
        (None, None, None) => place.push(" (compressed)"),
    }
    place
}

/// The table's row for `image`, the `i`th.
pub fn table_row(i: usize, image: &ImageRecord) -> [OsString; 7] {
    let kind = match (image.source.image_kind(), image.source.kpack()) {
        (Some(kind), _) => kind,
        (None, Some(_)) => "kpack".to_string(),
        (None, None) => "bundle".to_string(),
    };
    let arch = match (image.target_id.as_str(), image.processor()) {
        ("", _) => "-".into(),
        (arch, Some("unknown")) => format!("{arch} (unknown processor)"),
        (arch, _) => arch.to_string(),
    };
    [
        i.to_string().into(),
        kind.into(),
        arch.into(),
        image.triple.as_str().into(),
        image.producer.name().into(),
        image.size.to_string().into(),
        place(image),
    ]
}

/// The header of the table `offload ls` prints.
pub const TABLE_HEADER: [&str; 7] = ["#", "KIND", "ARCH", "TRIPLE", "PRODUCER", "SIZE", "WHERE"];

/// How the table's columns are aligned: numbers to the right, words to the left.
pub const TABLE_ALIGN: [Align; 7] = [
    Align::Right,
    Align::Left,
    Align::Left,
    Align::Left,
    Align::Left,
    Align::Right,
    Align::Left,
];

/// The table `offload ls` prints for people.
pub fn table(images: &[ImageRecord]) -> String {
    let rows: Vec<[OsString; 7]> = images
        .iter()
        .enumerate()
        .map(|(i, image)| table_row(i, image))
        .collect();
    render(&TABLE_HEADER, &rows, &TABLE_ALIGN)
}
