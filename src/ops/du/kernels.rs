//! Which functions take the bytes of device code, per target: read from the symbol tables of
//! AMDGPU code objects (`STT_FUNC` symbols and their sizes; a kernel's `.kd` descriptor is
//! data, not code) and of CUDA cubins (the same, a kernel marked as an entry in `st_other`);
//! and what is stored more than once: code objects whose bytes are the same under different
//! entries or files, and functions whose bytes are the same in different code objects, with
//! the bytes a de-duplication would save. Images stored compressed are inflated one at a time
//! within the cap on inflated sizes.
//!
//! # Example
//!
//! Two copies of one bundle: each code object and each function is stored twice.
//!
//! ```
//! use offload::ops::du::kernels;
//!
//! # fn main() -> Result<(), Box<dyn std::error::Error>> {
//! let samples = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("samples");
//! let file = samples.join("bundles/kernel-hip.o");
//! let one = kernels::file_kernels(&file, 1 << 30)?;
//! let report = kernels::report(&[one.clone(), one], None);
//! assert!(report.code_objects.iter().all(|copies| copies.copies == 2));
//! assert!(report.kernels.iter().any(|k| k.kernel && k.copies == 2));
//! assert_eq!(report.total.saved_code_objects * 2, report.total.code_object_bytes);
//! # Ok(())
//! # }
//! ```

use std::borrow::Cow;
use std::collections::{BTreeSet, HashMap};
use std::path::Path;

use object::read::elf::{ElfFile64, FileHeader};
use object::{Endianness, Object, ObjectSection, ObjectSymbol, SymbolKind};
use rayon::prelude::*;
use serde::Serialize;
use xxhash_rust::xxh3::xxh3_128;

use crate::error::{Error, Result};
use crate::format::ccob::{Decoding, ZstdContext};
use crate::format::container::Origin;
use crate::format::cuda_fatbin::{self, Compression, EntryKind, Stored};
use crate::format::error::{Error as FormatError, ErrorKind};
use crate::format::image_target::Producer;
use crate::host::scan::{scan_with_archives, DeviceImage, Reading};
use crate::io::Input;

/// A CUDA symbol's `st_other` bit saying it is a kernel (an entry point), as `cuobjdump` and
/// `readelf` show it (`[<other: 0x10>]`).
const STO_CUDA_ENTRY: u8 = 0x10;

/// What one file holds: its device images, in the order found.
#[derive(Debug, Clone, Default)]
pub struct Found {
    /// Its images (host entries left out).
    pub images: Vec<FoundImage>,
}

/// One device image of a file, with its functions.
#[derive(Debug, Clone)]
pub struct FoundImage {
    /// Where it is.
    pub place: Place,
    /// Its target, as `du` names it.
    pub target: String,
    /// Its size in bytes, inflated.
    pub size: u64,
    /// The hash of its bytes.
    hash: u128,
    /// Its functions with code (none when it is no ELF file: PTX, bitcode, SPIR-V).
    pub functions: Vec<FoundFunction>,
}

/// One function of a code object or cubin.
#[derive(Debug, Clone)]
pub struct FoundFunction {
    /// Its symbol's name (mangled, as the symbol table holds it).
    pub name: String,
    /// Whether it is a kernel (an entry point), not a device function.
    pub kernel: bool,
    /// Its code's size in bytes (its symbol's `st_size`).
    pub size: u64,
    /// The hash of its bytes (of its size alone when they are not in the file: `SHT_NOBITS`).
    hash: u128,
}

/// Where an image is: the file, the package member, the section, the offset.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord, Serialize)]
pub struct Place {
    /// The file, as text (see [`Place::file_bytes`]).
    pub file: String,
    /// The file's name in base64, only when it is not UTF-8: its exact bytes.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub file_bytes: Option<String>,
    /// The package member, when the file is a package.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub member: Option<String>,
    /// The section, inside the archive members that hold it (`member!section`).
    #[serde(skip_serializing_if = "String::is_empty")]
    pub section: String,
    /// Its offset in the file (the member's, for a package), when it is stored as such.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub offset: Option<u64>,
}

/// The functions of the device images of the file at `path`, each image inflated within
/// `max_decompressed`. A `.kpack` archive's code objects are not read. The CUDA entries lying
/// in the file as such are inflated after the scan, in parallel, one at a time per thread.
pub fn file_kernels(path: &Path, max_decompressed: u64) -> Result<Found> {
    let input = Input::open(path)?;
    let seen = std::cell::RefCell::new(Seen::default());
    let problems = scan_with_archives(
        path,
        &input,
        max_decompressed,
        Reading::Whole,
        &mut |image| {
            seen.borrow_mut()
                .image(path, &input, image, max_decompressed)
        },
        &|_, _| Ok(()),
    )?;
    let Seen {
        mut images,
        pending,
        failed,
    } = seen.into_inner();
    if let Some(problem) = failed.into_iter().chain(problems).next() {
        return Err(problem);
    }
    // Each thread inflates into one buffer with one zstd context, kept from entry to entry:
    // memory the size of the largest entry, not fresh pages for every one.
    let inflated: Vec<Result<(usize, FoundImage)>> = pending
        .into_par_iter()
        .map_init(
            || (Vec::new(), ZstdContext::create()),
            |(held, context), later| {
                let payload = input.get(later.range.clone()).unwrap_or_default();
                let bytes = contents(&later.stored, payload, max_decompressed, held, context)
                    .map_err(|e| {
                        let e = e.rebased(later.range.start as u64);
                        Error::format_in(path, &later.place.section, e)
                    })?;
                Ok((later.slot, found(bytes, later.target, later.place)))
            },
        )
        .collect();
    for result in inflated {
        let (slot, image) = result?;
        if let Some(place) = images.get_mut(slot) {
            *place = Some(image);
        }
    }
    input.intact()?;
    Ok(Found {
        // An empty entry holds no code.
        images: (images.into_iter().flatten())
            .filter(|image| image.size > 0)
            .collect(),
    })
}

/// What a scan of one file gives, in the order found.
#[derive(Default)]
struct Seen {
    /// The images read, a place kept for each one left for later.
    images: Vec<Option<FoundImage>>,
    /// The CUDA entries left to inflate after the scan.
    pending: Vec<Later>,
    /// The first error met.
    failed: Option<Error>,
}

/// A CUDA entry left to inflate after the scan.
struct Later {
    /// Its place among [`Seen::images`].
    slot: usize,
    /// Where its payload lies in the file.
    range: std::ops::Range<usize>,
    /// How it is stored.
    stored: Stored,
    /// Its target.
    target: String,
    /// Where it is.
    place: Place,
}

impl Seen {
    /// Takes in the image `image` of the file at `path` (read as `input`), inflating it within
    /// `limit` now, or later when it is a CUDA entry lying in the file as such.
    fn image(&mut self, path: &Path, input: &[u8], image: &DeviceImage<'_>, limit: u64) {
        if self.failed.is_some() || image.target.producer == Producer::Host {
            return;
        }
        let target = match image.target.target_id.as_str() {
            "" => image.target.triple.clone(),
            id => id.to_string(),
        };
        let mut section: Vec<&str> = image.members.iter().map(String::as_str).collect();
        section.extend(image.section);
        let place = Place {
            file: path.to_string_lossy().into_owned(),
            file_bytes: crate::io::bytes_unless_text(path),
            member: (image.package).map(|p| p.name.to_string_lossy().into_owned()),
            section: section.join("!"),
            offset: image.offset,
        };
        let bytes: Cow<'_, [u8]> = match image.origin {
            Origin::CudaEntry(entry) => {
                if let Some(range) = within(input, entry.payload) {
                    self.pending.push(Later {
                        slot: self.images.len(),
                        range,
                        stored: entry.stored(),
                        target,
                        place,
                    });
                    self.images.push(None);
                    return;
                }
                match entry.contents(limit) {
                    Ok(bytes) => bytes,
                    Err(e) => {
                        self.failed = Some(Error::format_in(path, &place.section, e));
                        return;
                    }
                }
            }
            _ => Cow::Borrowed(image.data),
        };
        self.images.push(Some(found(&bytes, target, place)));
    }
}

/// The contents of the CUDA entry stored as `stored` in `payload` (see
/// [`Stored::contents`]), inflated within `limit` into `held` with `context` when compressed.
fn contents<'a>(
    stored: &Stored,
    payload: &'a [u8],
    limit: u64,
    held: &'a mut Vec<u8>,
    context: &mut ZstdContext,
) -> crate::format::error::Result<&'a [u8]> {
    if stored.compression == Compression::None {
        return Ok(match stored.contents(payload, limit)? {
            Cow::Borrowed(bytes) => bytes,
            Cow::Owned(bytes) => {
                *held = bytes;
                held
            }
        });
    }
    held.clear();
    let cap = stored.inflated_size;
    stored.inflate_to(payload, limit, Decoding::Reusing(context), &mut |piece| {
        // Never past the size the header gives (the stream is checked against it), and memory
        // that cannot be had is an error, not an abort.
        let room = cap.saturating_sub(held.len() as u64);
        let piece = piece.get(..usize::try_from(room).unwrap_or(usize::MAX).min(piece.len()));
        let piece = piece.unwrap_or_default();
        held.try_reserve(piece.len()).map_err(|_| {
            let bytes = (held.len() as u64).saturating_add(piece.len() as u64);
            FormatError::new(0, ErrorKind::OutOfMemory { bytes })
        })?;
        held.extend_from_slice(piece);
        Ok(())
    })?;
    // Cut as NVIDIA's tools cut: a cubin at the extent its headers give, PTX at its NUL.
    let len = match stored.kind {
        EntryKind::Elf => cuda_fatbin::elf_extent(held).unwrap_or(held.len()),
        EntryKind::Ptx => memchr::memchr(0, held).unwrap_or(held.len()),
        EntryKind::Other(_) => held.len(),
    };
    Ok(held.get(..len).unwrap_or_default())
}

/// Where `part` lies in `whole`, when it does.
fn within(whole: &[u8], part: &[u8]) -> Option<std::ops::Range<usize>> {
    let start = (part.as_ptr() as usize).checked_sub(whole.as_ptr() as usize)?;
    let end = start.checked_add(part.len())?;
    (end <= whole.len()).then_some(start..end)
}

/// The image of `target` at `place` whose bytes are `bytes`, with its functions.
fn found(bytes: &[u8], target: String, place: Place) -> FoundImage {
    FoundImage {
        place,
        target,
        size: bytes.len() as u64,
        hash: xxh3_128(bytes),
        functions: functions(bytes),
    }
}

/// The functions with code of the ELF file `bytes` (an AMDGPU code object or a cubin), from
/// its symbol table (else its dynamic one); none when it is no 64-bit ELF file.
pub fn functions(bytes: &[u8]) -> Vec<FoundFunction> {
    let Ok(file) = ElfFile64::<Endianness>::parse(bytes) else {
        return Vec::new();
    };
    let cuda = file.elf_header().e_machine(file.endian()) == object::elf::EM_CUDA;
    let symbols: Vec<_> = match file.symbols().next() {
        Some(_) => file.symbols().collect(),
        None => file.dynamic_symbols().collect(),
    };
    // An AMDGPU kernel has a descriptor beside it, `NAME.kd`.
    let descriptors: BTreeSet<&[u8]> = symbols
        .iter()
        .filter_map(|s| s.name_bytes().ok()?.strip_suffix(b".kd"))
        .collect();
    let mut functions = Vec::new();
    for symbol in &symbols {
        if symbol.kind() != SymbolKind::Text || symbol.size() == 0 {
            continue;
        }
        let Ok(name) = symbol.name_bytes() else {
            continue;
        };
        let kernel = match cuda {
            true => symbol.elf_symbol().st_other.0 & STO_CUDA_ENTRY != 0,
            false => descriptors.contains(name),
        };
        let code = symbol
            .section_index()
            .and_then(|index| file.section_by_index(index).ok())
            .and_then(|section| {
                let start = symbol.address().checked_sub(section.address())?;
                let end = start.checked_add(symbol.size())?;
                let data = section.data().ok()?;
                data.get(usize::try_from(start).ok()?..usize::try_from(end).ok()?)
            });
        let hash = match code {
            Some(code) => xxh3_128(code),
            None => u128::from(symbol.size()),
        };
        functions.push(FoundFunction {
            name: String::from_utf8_lossy(name).into_owned(),
            kernel,
            size: symbol.size(),
            hash,
        });
    }
    functions
}

/// One function of one target, with the same bytes wherever it is stored.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Kernel {
    /// Its symbol's name (mangled).
    pub name: String,
    /// The target of the code objects that hold it.
    pub target: String,
    /// Whether it is a kernel (an entry point); a device function otherwise.
    pub kernel: bool,
    /// Its code's size in bytes.
    pub size: u64,
    /// How many times it is stored.
    pub copies: u64,
    /// The bytes all its copies take: `size * copies`.
    pub bytes: u64,
    /// The bytes keeping one copy would save: `size * (copies - 1)`.
    pub saved: u64,
    /// The files that hold it, in order, each once.
    pub files: Vec<String>,
}

/// A code object (or any device image) whose bytes are stored more than once.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Copies {
    /// Its target (of its first copy).
    pub target: String,
    /// Its size in bytes, inflated.
    pub size: u64,
    /// How many times it is stored.
    pub copies: u64,
    /// The bytes keeping one copy would save: `size * (copies - 1)`.
    pub saved: u64,
    /// Where each copy is, in the order found.
    pub places: Vec<Place>,
}

/// The sums of a report.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize)]
pub struct Totals {
    /// How many device images were read.
    pub code_objects: u64,
    /// Their bytes, inflated.
    pub code_object_bytes: u64,
    /// How many functions with code they hold (each copy counted).
    pub functions: u64,
    /// The bytes of those functions' code (each copy counted).
    pub function_bytes: u64,
    /// The bytes keeping one copy of each code object stored more than once would save.
    pub saved_code_objects: u64,
    /// The bytes keeping one copy of each function stored more than once would save (those
    /// of whole code objects stored more than once included).
    pub saved_functions: u64,
}

/// What `du --kernels` reports.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize)]
pub struct Report {
    /// The functions, most bytes first (then by target and name); the first `top` only when
    /// asked.
    pub kernels: Vec<Kernel>,
    /// The code objects stored more than once, most bytes saved first.
    pub code_objects: Vec<Copies>,
    /// The sums, over every function (not only the first `top`).
    pub total: Totals,
}

/// The report of the files `found`, keeping the `top` functions with the most bytes when
/// asked.
pub fn report(found: &[Found], top: Option<usize>) -> Report {
    let mut total = Totals::default();
    let mut objects: HashMap<u128, Copies> = HashMap::new();
    let mut object_order = Vec::new();
    let mut functions: HashMap<(&str, &str, u128), Kernel> = HashMap::new();
    for image in found.iter().flat_map(|f| &f.images) {
        total.code_objects += 1;
        total.code_object_bytes = total.code_object_bytes.saturating_add(image.size);
        let copies = objects.entry(image.hash).or_insert_with(|| {
            object_order.push(image.hash);
            Copies {
                target: image.target.clone(),
                size: image.size,
                copies: 0,
                saved: 0,
                places: Vec::new(),
            }
        });
        copies.copies += 1;
        copies.places.push(image.place.clone());
        for function in &image.functions {
            total.functions += 1;
            // Sizes are the symbols' own: a damaged table may declare anything.
            total.function_bytes = total.function_bytes.saturating_add(function.size);
            let key = (image.target.as_str(), function.name.as_str(), function.hash);
            let kernel = functions.entry(key).or_insert_with(|| Kernel {
                name: function.name.clone(),
                target: image.target.clone(),
                kernel: function.kernel,
                size: function.size,
                copies: 0,
                bytes: 0,
                saved: 0,
                files: Vec::new(),
            });
            kernel.copies += 1;
            kernel.bytes = kernel.bytes.saturating_add(function.size);
            kernel.saved = kernel.size.saturating_mul(kernel.copies - 1);
            if kernel.files.last() != Some(&image.place.file) {
                kernel.files.push(image.place.file.clone());
            }
        }
    }
    let mut code_objects: Vec<Copies> = object_order
        .iter()
        .filter_map(|hash| objects.remove(hash))
        .filter(|c| c.copies > 1)
        .map(|c| Copies {
            saved: c.size.saturating_mul(c.copies - 1),
            ..c
        })
        .collect();
    code_objects.sort_by_key(|c| std::cmp::Reverse(c.saved));
    total.saved_code_objects = (code_objects.iter()).fold(0, |sum, c| sum.saturating_add(c.saved));
    let mut kernels: Vec<Kernel> = functions.into_values().collect();
    total.saved_functions = (kernels.iter()).fold(0, |sum, k| sum.saturating_add(k.saved));
    kernels.sort_by(|a, b| {
        (b.bytes.cmp(&a.bytes))
            .then_with(|| a.target.cmp(&b.target))
            .then_with(|| a.name.cmp(&b.name))
            .then_with(|| a.size.cmp(&b.size))
    });
    if let Some(top) = top {
        kernels.truncate(top);
    }
    Report {
        kernels,
        code_objects,
        total,
    }
}
