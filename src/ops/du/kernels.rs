//! Which functions take the bytes of device code, per target: read from the symbol tables of
//! AMDGPU code objects (`STT_FUNC` symbols and their sizes; a kernel's `.kd` descriptor is
//! data, not code) and of CUDA cubins (the same, a kernel marked as an entry in `st_other`);
//! and what is stored more than once: code objects whose bytes are the same under different
//! entries or files, and functions whose bytes are the same in different code objects, with
//! the bytes a de-duplication would save. Images stored compressed are inflated within the cap
//! on inflated sizes, each stream once, several at a time within the inflation budget; a
//! compressed bundle's code objects are read one at a time as its stream passes them, so
//! that what is held follows the largest code object, not the bundle. The report of a tree's
//! files is [`super::report`]'s.
//!
//! # Example
//!
//! The images of a HIP object and the functions of each, with their sizes.
//!
//! ```
//! use offload::ops::du::kernels;
//!
//! # fn main() -> Result<(), Box<dyn std::error::Error>> {
//! let samples = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("samples");
//! let found = kernels::file_kernels(&samples.join("bundles/kernel-hip.o"), 1 << 30)?;
//! assert!(!found.images.is_empty());
//! for image in &found.images {
//!     assert!(image.place.file.ends_with("kernel-hip.o"));
//!     assert!(image.functions.iter().all(|f| f.size > 0 && !found.name(f).is_empty()));
//! }
//! # Ok(())
//! # }
//! ```

use std::borrow::Cow;
use std::collections::{BTreeSet, HashMap};
use std::path::Path;

use object::read::elf::{ElfFile64, FileHeader};
use object::{Endianness, Object, ObjectSection, ObjectSymbol, SymbolKind};
use rayon::prelude::*;
use xxhash_rust::xxh3::xxh3_128;

use crate::error::{Error, Result};
use crate::format::ccob::{Decoding, ZstdContext};
use crate::format::container::Origin;
use crate::format::cuda_fatbin::{self, Compression, EntryKind, Stored};
use crate::format::error::{Error as FormatError, ErrorKind};
use crate::format::image_target::Producer;
use crate::format::stream::CompressedStream;
use crate::host::scan::{scan_with_archives, DeviceImage, InStream, Reading};
use crate::io::Input;
use crate::ops::support::inflating::{memory_of_stream, Budget};

pub use crate::ops::du::places::Place;

/// A CUDA symbol's `st_other` bit saying it is a kernel (an entry point), as `cuobjdump` and
/// `readelf` show it (`[<other: 0x10>]`).
const STO_CUDA_ENTRY: u8 = 0x10;

/// What one file holds: its device images, in the order found, and the names of their
/// functions, each held once.
#[derive(Debug, Clone, Default)]
pub struct Found {
    /// Its images (host entries left out).
    pub images: Vec<FoundImage>,
    /// The names of the functions of its images, each once.
    names: Names,
}

impl Found {
    /// The name of `function`, one of the functions of this file's images (mangled, as the
    /// symbol table holds it).
    pub fn name(&self, function: &FoundFunction) -> &str {
        self.names.get(function.name)
    }
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
    pub(crate) hash: u128,
    /// Its functions with code (none when it is no ELF file: PTX, bitcode, SPIR-V).
    pub functions: Vec<FoundFunction>,
}

/// One function of a code object or cubin: a few words, its name held once by the file's
/// [`Found`] (a library of 200,000 functions has some 30,000 names).
#[derive(Debug, Clone)]
pub struct FoundFunction {
    /// Its symbol's name, by its number among the file's names ([`Found::name`]).
    name: usize,
    /// Whether it is a kernel (an entry point), not a device function.
    pub kernel: bool,
    /// Its code's size in bytes (its symbol's `st_size`).
    pub size: u64,
    /// The hash of its bytes (of its size alone when they are not in the file: `SHT_NOBITS`).
    pub(crate) hash: u128,
}

/// Names held once each, one after another in one string, found again by their hash.
#[derive(Debug, Clone, Default)]
pub(crate) struct Names {
    /// Every name, one after another.
    text: String,
    /// Where each name ends in `text`, by number.
    ends: Vec<usize>,
    /// The number of the name of each hash (the first name met with it).
    by_hash: HashMap<u64, usize>,
    /// The numbers of names whose hash an earlier name has.
    collided: HashMap<Box<str>, usize>,
}

impl Names {
    /// The name numbered `n` (empty for a number not given).
    pub(crate) fn get(&self, n: usize) -> &str {
        let start = match n.checked_sub(1) {
            Some(before) => self.ends.get(before).copied().unwrap_or(0),
            None => 0,
        };
        let end = self.ends.get(n).copied().unwrap_or(start);
        self.text.get(start..end).unwrap_or_default()
    }

    /// The number of `name`, which is added when new.
    pub(crate) fn intern(&mut self, name: &str) -> usize {
        let hash = xxhash_rust::xxh3::xxh3_64(name.as_bytes());
        match self.by_hash.get(&hash) {
            Some(&n) if self.get(n) == name => n,
            Some(_) => match self.collided.get(name) {
                Some(&n) => n,
                None => {
                    let n = self.push(name);
                    self.collided.insert(name.into(), n);
                    n
                }
            },
            None => {
                let n = self.push(name);
                self.by_hash.insert(hash, n);
                n
            }
        }
    }

    /// Adds `name`, giving its number.
    fn push(&mut self, name: &str) -> usize {
        self.text.push_str(name);
        self.ends.push(self.text.len());
        self.ends.len() - 1
    }
}

/// The functions of the device images of the file at `path`, each image inflated within
/// `max_decompressed`. A `.kpack` archive's code objects are not read. The compressed
/// containers are read to the end of their headers while the file is scanned, and their
/// streams inflated after it, in parallel within the inflation budget, each code object
/// handed on as soon as the stream has passed it. The CUDA entries lying
/// in the file as such are inflated after the scan too, one at a time per thread.
pub fn file_kernels(path: &Path, max_decompressed: u64) -> Result<Found> {
    let input = Input::open(path)?;
    let names = std::sync::Mutex::new(Names::default());
    let seen = std::cell::RefCell::new(Seen::default());
    let problems = scan_with_archives(
        path,
        &input,
        max_decompressed,
        Reading::Headers,
        &mut |image| {
            seen.borrow_mut()
                .image(path, &input, image, max_decompressed, &names)
        },
        &|_, _| Ok(()),
    )?;
    let Seen {
        mut images,
        pending,
        streams,
        failed,
        ..
    } = seen.into_inner();
    if let Some(problem) = failed.into_iter().chain(problems).next() {
        return Err(problem);
    }
    let budget = Budget::new();
    let streamed: Vec<Result<Vec<(usize, FoundImage)>>> = streams
        .into_par_iter()
        .map(|stream| stream.read(&input, max_decompressed, &budget, &names))
        .collect();
    for result in streamed {
        for (slot, image) in result? {
            if let Some(place) = images.get_mut(slot) {
                *place = Some(image);
            }
        }
    }
    // Each thread inflates into one buffer with one zstd context, kept from entry to entry:
    // memory the size of the largest entry, not fresh pages for every one.
    let inflated: Vec<Result<(usize, FoundImage)>> = pending
        .into_par_iter()
        .map_init(
            // The context is made for the first entry: a file without one (most of a
            // tree's) makes none.
            || (Vec::new(), None),
            |(held, context), later| {
                let context = context.get_or_insert_with(ZstdContext::create);
                let payload = input.get(later.range.clone()).unwrap_or_default();
                let bytes = contents(&later.stored, payload, max_decompressed, held, context)
                    .map_err(|e| {
                        let e = e.rebased(later.range.start as u64);
                        Error::format_in(path, &later.place.section, e)
                    })?;
                Ok((later.slot, found(bytes, later.target, later.place, &names)))
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
        names: names.into_inner().unwrap_or_else(|e| e.into_inner()),
    })
}

/// What a scan of one file gives, in the order found.
#[derive(Default)]
struct Seen {
    /// The images read, a place kept for each one left for later.
    images: Vec<Option<FoundImage>>,
    /// The CUDA entries left to inflate after the scan.
    pending: Vec<Later>,
    /// The compressed containers whose images are read after the scan, in file order.
    streams: Vec<Streamed>,
    /// The number of each among `streams`, by the package member that holds it (0 for none)
    /// and where its bytes are.
    stream_numbers: HashMap<(usize, usize), usize>,
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
    /// `limit` now, or later when it is a CUDA entry lying in the file as such; its functions'
    /// names go to `names`.
    fn image(
        &mut self,
        path: &Path,
        input: &[u8],
        image: &DeviceImage<'_>,
        limit: u64,
        names: &std::sync::Mutex<Names>,
    ) {
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
        if let Some(stream) = image.stream {
            self.streamed((path, input), image, stream, (target, place));
            return;
        }
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
        self.images.push(Some(found(&bytes, target, place, names)));
    }

    /// Notes the image `image` (of `input`), lying at `stream` in a compressed container, to
    /// be read with the container's other images after the scan; an empty one holds no code.
    fn streamed(
        &mut self,
        (path, input): (&Path, &[u8]),
        image: &DeviceImage<'_>,
        stream: InStream<'_>,
        (target, place): (String, Place),
    ) {
        if stream.end <= stream.start {
            return;
        }
        let key = (
            image.package.map_or(0, |p| p.number),
            stream.container.as_ptr() as usize,
        );
        let next = self.streams.len();
        let number = *self.stream_numbers.entry(key).or_insert(next);
        if number == next {
            let bytes = match within(input, stream.container) {
                Some(range) => Held::Input(range),
                // In a package member, read one at a time: the compressed bytes are kept.
                None => Held::Owned(stream.container.to_vec()),
            };
            let mut context: Vec<String> = image
                .members
                .iter()
                .map(|m| format!("member '{m}'"))
                .collect();
            context.extend(image.section.map(|s| format!("section '{s}'")));
            self.streams.push(Streamed {
                bytes,
                path: image
                    .package
                    .map_or(path, |p| p.name.as_path())
                    .to_path_buf(),
                offset: stream.offset,
                context: context.join(", "),
                embedded: image.embedded,
                images: Vec::new(),
            });
        }
        if let Some(streamed) = self.streams.get_mut(number) {
            streamed.images.push(InStreamImage {
                slot: self.images.len(),
                range: (stream.start, stream.end),
                target,
                place,
            });
            self.images.push(None);
        }
    }
}

/// Where the bytes of a compressed container are: in the file, or held.
enum Held {
    /// These bytes of the file.
    Input(std::ops::Range<usize>),
    /// Copied from a package member, which is let go after its scan.
    Owned(Vec<u8>),
}

/// A compressed container whose images are read after the scan, its stream inflated once.
struct Streamed {
    /// Its bytes, as stored.
    bytes: Held,
    /// The file its errors name (the package member, `PACKAGE!member`, when in one).
    path: std::path::PathBuf,
    /// Its offset in that file, when it lies there as such.
    offset: Option<u64>,
    /// The archive members and section that hold it, as the scan names them in errors.
    context: String,
    /// Whether it was found by its magic in data: a stream that does not inflate there is
    /// chance bytes, not an error, as the scan takes it.
    embedded: bool,
    /// Its images with bytes, in the order found.
    images: Vec<InStreamImage>,
}

/// An image in a compressed container's stream, to read once the stream reaches its end.
struct InStreamImage {
    /// Its place among [`Seen::images`].
    slot: usize,
    /// Where it lies in what the stream inflates to.
    range: (u64, u64),
    /// Its target.
    target: String,
    /// Where it is.
    place: Place,
}

impl Streamed {
    /// Inflates the stream once, to its end (checking it as reading it whole does), within
    /// `limit` and `budget`, and reads each image as soon as the stream has passed its last
    /// byte: only the bytes from the first image not yet read are held ([`Gather`]). Gives
    /// each image read with its slot.
    fn read(
        self,
        input: &[u8],
        limit: u64,
        budget: &Budget,
        names: &std::sync::Mutex<Names>,
    ) -> Result<Vec<(usize, FoundImage)>> {
        let bytes = match &self.bytes {
            Held::Input(range) => input.get(range.clone()).unwrap_or_default(),
            Held::Owned(bytes) => bytes.as_slice(),
        };
        let fail = |e: FormatError| {
            let e = match self.offset {
                Some(at) => e.rebased(at),
                None => e,
            };
            match self.context.as_str() {
                "" => Error::format(&self.path, e),
                context => Error::format_in(&self.path, context, e),
            }
        };
        let stream = match CompressedStream::parse(bytes) {
            Ok(Some(stream)) => stream,
            Ok(None) => return Err(fail(FormatError::new(0, ErrorKind::NotAContainer))),
            Err(e) => return Err(fail(e)),
        };
        let ranges: Vec<(u64, u64)> = self.images.iter().map(|image| image.range).collect();
        let mut images: Vec<Option<InStreamImage>> = self.images.into_iter().map(Some).collect();
        let mut gather = Gather::new(ranges);
        let mut read = Vec::new();
        let end = stream.inflated_size();
        let inflated = budget.run(memory_of_stream(&stream), |decoding| {
            stream.inflate_prefix(limit, end, decoding, |position, piece| {
                gather.take(position, piece, &mut |k, code| {
                    if let Some(image) = images.get_mut(k).and_then(Option::take) {
                        read.push((image.slot, found(code, image.target, image.place, names)));
                    }
                })
            })
        });
        match inflated {
            Ok(()) => Ok(read),
            // Chance bytes in data, as the scan takes a container there that does not read.
            Err(_) if self.embedded => Ok(Vec::new()),
            Err(e) => Err(fail(e)),
        }
    }
}

/// The images of one stream gathered from its pieces as they arrive, in order: the bytes
/// from the start of the first image not yet whole to where the stream is, no more. Images
/// one after another (a bundle's code objects) hold one at a time; images that overlap share
/// their bytes.
struct Gather {
    /// Where each image lies in the stream, by number.
    ranges: Vec<(u64, u64)>,
    /// The images' numbers by where they start, and by where they end.
    by_start: Vec<usize>,
    by_end: Vec<usize>,
    /// How many of `by_end` were handed on.
    ended: usize,
    /// Whether each was handed on.
    done: Vec<bool>,
    /// The bytes held, and where the first of them is in the stream.
    held: Vec<u8>,
    base: u64,
}

impl Gather {
    /// Ready for the images at `ranges`.
    fn new(ranges: Vec<(u64, u64)>) -> Gather {
        let mut by_start: Vec<usize> = (0..ranges.len()).collect();
        by_start.sort_by_key(|&k| ranges.get(k).map(|r| r.0));
        let mut by_end: Vec<usize> = (0..ranges.len()).collect();
        by_end.sort_by_key(|&k| ranges.get(k).map(|r| r.1));
        Gather {
            done: vec![false; ranges.len()],
            ranges,
            by_start,
            by_end,
            ended: 0,
            held: Vec::new(),
            base: 0,
        }
    }

    /// Where the first image not yet handed on starts, if one is left.
    fn first_needed(&self) -> Option<u64> {
        (self.by_start.iter())
            .find(|&&k| !self.done.get(k).copied().unwrap_or(true))
            .and_then(|&k| self.ranges.get(k).map(|r| r.0))
    }

    /// Takes the piece of the stream at `position` (the pieces come in order, one after
    /// another), and hands `whole` each image it completes, by number, with its bytes.
    fn take(
        &mut self,
        position: u64,
        piece: &[u8],
        whole: &mut dyn FnMut(usize, &[u8]),
    ) -> crate::format::error::Result<()> {
        let Some(needed) = self.first_needed() else {
            return Ok(());
        };
        if self.held.is_empty() {
            self.base = needed.max(position);
        }
        let piece_end = position + piece.len() as u64;
        let from = (self.base + self.held.len() as u64).max(position);
        if let Some(new) = piece.get(usize::try_from(from - position).unwrap_or(usize::MAX)..) {
            self.held.try_reserve(new.len()).map_err(|_| {
                let bytes = (self.held.len() + new.len()) as u64;
                FormatError::new(0, ErrorKind::OutOfMemory { bytes })
            })?;
            self.held.extend_from_slice(new);
        }
        while let Some(&k) = self.by_end.get(self.ended) {
            let Some(&(start, end)) = self.ranges.get(k) else {
                break;
            };
            if end > piece_end {
                break;
            }
            self.ended += 1;
            let code = start
                .checked_sub(self.base)
                .zip(end.checked_sub(self.base))
                .and_then(|(s, e)| {
                    self.held
                        .get(usize::try_from(s).ok()?..usize::try_from(e).ok()?)
                });
            if let (Some(code), Some(done)) = (code, self.done.get_mut(k)) {
                *done = true;
                whole(k, code);
            }
        }
        match self.first_needed() {
            None => self.held = Vec::new(),
            Some(needed) if needed > self.base => {
                let drop = usize::try_from(needed - self.base).unwrap_or(usize::MAX);
                self.held.drain(..drop.min(self.held.len()));
                self.base = needed;
            }
            Some(_) => {}
        }
        Ok(())
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

/// The image of `target` at `place` whose bytes are `bytes`, with its functions, their names
/// held in `names` (taken once per image).
fn found(
    bytes: &[u8],
    target: String,
    place: Place,
    names: &std::sync::Mutex<Names>,
) -> FoundImage {
    let read = functions(bytes);
    let mut names = names.lock().unwrap_or_else(|e| e.into_inner());
    let functions = read
        .into_iter()
        .map(|(name, kernel, size, hash)| FoundFunction {
            name: names.intern(&String::from_utf8_lossy(name)),
            kernel,
            size,
            hash,
        })
        .collect();
    FoundImage {
        place,
        target,
        size: bytes.len() as u64,
        hash: xxh3_128(bytes),
        functions,
    }
}

/// A function read from a symbol table: its name, whether it is a kernel, its size and the
/// hash of its code.
type Read<'a> = (&'a [u8], bool, u64, u128);

/// The functions with code of the ELF file `bytes` (an AMDGPU code object or a cubin), from
/// its symbol table (else its dynamic one); none when it is no 64-bit ELF file.
fn functions(bytes: &[u8]) -> Vec<Read<'_>> {
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
        functions.push((name, kernel, symbol.size(), hash));
    }
    functions
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_are_held_once_and_given_back_by_number() {
        let mut names = Names::default();
        let a = names.intern("_Z1av");
        let b = names.intern("_Z1bv");
        let empty = names.intern("");
        assert_eq!((names.intern("_Z1av"), names.intern("_Z1bv")), (a, b));
        assert_eq!(
            (names.get(a), names.get(b), names.get(empty)),
            ("_Z1av", "_Z1bv", "")
        );
        assert_eq!(names.text, "_Z1av_Z1bv");
        // A number never given is no name.
        assert_eq!(names.get(99), "");
        // Names whose hashes meet are told apart by their text.
        let c = names.push("_Z1cv");
        names
            .by_hash
            .insert(xxhash_rust::xxh3::xxh3_64(b"_Z1dv"), c);
        let d = names.intern("_Z1dv");
        assert_ne!(c, d);
        assert_eq!(names.intern("_Z1dv"), d);
        assert_eq!((names.get(c), names.get(d)), ("_Z1cv", "_Z1dv"));
    }
}
