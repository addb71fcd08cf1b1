//! Rewriting the device code of a file: stripping targets, compressing and decompressing
//! bundles, in relocatable objects, programs and shared libraries (ELF and PE), archives and
//! bare bundles.
//!
//! # Example
//!
//! Compress the bundle of a file into a new file, and decompress it back.
//!
//! ```
//! use offload::format::{bundle, ccob};
//! use offload::ops::rewrite::{self, Change, Mode, Placement, RewriteConfig};
//!
//! # fn main() -> Result<(), Box<dyn std::error::Error>> {
//! let dir = tempfile::tempdir()?;
//! let plain = dir.path().join("kernels.hipfb");
//! let entries: [(&str, &[u8]); 2] = [
//!     ("host-x86_64-unknown-linux-gnu-", b""),
//!     ("hipv4-amdgcn-amd-amdhsa--gfx90a", &[0x5a; 10_000]),
//! ];
//! let bytes = bundle::to_vec(&entries, 4096);
//! std::fs::write(&plain, &bytes)?;
//!
//! let mut config = RewriteConfig {
//!     change: Change::Compress(ccob::CompressOptions::default()),
//!     allow_empty: false,
//!     max_decompressed: ccob::DEFAULT_MAX_DECOMPRESSED,
//!     ptx: Default::default(),
//! };
//! let packed = dir.path().join("packed.hipfb");
//! let summary = rewrite::rewrite(&plain, &Placement::New(packed.clone()), &config, Mode::Write, Default::default())?;
//! assert_eq!(summary.rewritten, 1);
//! assert!(summary.size_after < summary.size_before);
//! assert!(ccob::is_compressed(&std::fs::read(&packed)?));
//!
//! config.change = Change::Decompress;
//! rewrite::rewrite(&packed, &Placement::InPlace, &config, Mode::Write, Default::default())?;
//! assert_eq!(std::fs::read(&packed)?, bytes);
//! # Ok(())
//! # }
//! ```

use std::path::{Path, PathBuf};

use rayon::prelude::*;
use tracing::{debug, info};

use crate::error::{Error, Result};
use crate::format::bare::BareImage;
use crate::format::ccob::{CompressOptions, CompressedBundle, Decoding};
use crate::format::container::{
    self, holds_cuda_fatbins, is_device_entry, BundleStorage, Container, MakeRoom, NewBytes,
    Rewrite, Rules,
};
use crate::format::image_target::ImageTarget;
use crate::format::image_target::Producer;
use crate::format::{cuda_fatbin, offload_binary};
use crate::host::archive::{read_members, write_archive};
use crate::host::objcopy::{self, Rewritten};
use crate::host::program::plan::COPIED_FROM;
use crate::host::program::Inflating;
use crate::host::program::{self, Fill, NewProgram};
use crate::host::scan::{scan_reading, Places, Reading};
use crate::host::ErrorKind;
use crate::host::BUNDLE_SECTION_PREFIX;
use crate::io::spill::{fill_in, Hole, Spill, Spilled};
use crate::io::{release_mapped, Input, Output};
use crate::ops::support::inflating::{mapped_room, memory_of, memory_of_whole, Budget};
use crate::ops::support::largest_first;
use crate::target::target_id::TargetIdBuf;
use hashed_ahead::{HashedAhead, Order};
use inflater::{fill_inflated, inflate_into, not_a_container, spill_failed, Inflater};
use plan::start_output;
pub(crate) use plan::{start_ahead, Started};

mod conda;
mod deb;
pub mod environments;
mod hashed_ahead;
mod inflater;
pub mod job;
mod keeps;
mod package;
pub mod plan;
mod read_back;
mod tarball;
mod variant;

pub use package::{rewrite_variant, PruneMembers};
pub(crate) use read_back::verify;

/// What to do to the device code.
#[derive(Debug, Clone)]
pub enum Change {
    /// Keep only the images devices with these target IDs load (host entries always stay):
    /// in each translation unit, a device's native code, else the code of a generic target
    /// that covers it, else SPIR-V. A device named without a feature stands for both of its
    /// settings.
    Keep(Vec<TargetIdBuf>),
    /// Remove the code for these target IDs: the images built for them (a generic target or
    /// `amdgcnspirv` named here removes its images). Generic and SPIR-V code that devices not
    /// named here load stays.
    Remove(Vec<TargetIdBuf>),
    /// Compress every bundle that is not compressed, and give compressed bundles these
    /// options (a new header for another version, a new stream for another method).
    Compress(CompressOptions),
    /// Compress every bundle that is not compressed; compressed bundles stay as they are,
    /// whatever their method and version.
    CompressPlain(CompressOptions),
    /// Decompress every compressed bundle.
    Decompress,
}

/// The change in words, for the log: `keep gfx90a,gfx1100`, `compress zstd level 3`.
impl std::fmt::Display for Change {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Change::Keep(ids) => write!(f, "keep {}", joined(ids)),
            Change::Remove(ids) => write!(f, "remove {}", joined(ids)),
            Change::Compress(options) | Change::CompressPlain(options) => write!(
                f,
                "compress {} level {}",
                format!("{:?}", options.method).to_lowercase(),
                options.level
            ),
            Change::Decompress => f.write_str("decompress"),
        }
    }
}

/// The target IDs, comma-separated.
fn joined(ids: &[TargetIdBuf]) -> String {
    ids.iter()
        .map(TargetIdBuf::as_str)
        .collect::<Vec<_>>()
        .join(",")
}

/// How to rewrite.
#[derive(Debug, Clone)]
pub struct RewriteConfig {
    /// The change.
    pub change: Change,
    /// Allow a result with no device image left.
    pub allow_empty: bool,
    /// The largest a compressed bundle may inflate to.
    pub max_decompressed: u64,
    /// What becomes of the PTX of CUDA fat binaries when stripping.
    pub ptx: Ptx,
}

/// What becomes of CUDA PTX when stripping.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub enum Ptx {
    /// As for any image: kept when a device kept may compile it (`--keep`), dropped when it
    /// is the `compute_XY` named (`--remove`).
    #[default]
    AsAsked,
    /// Every PTX entry stays.
    Keep,
    /// Every PTX entry goes.
    Drop,
}

/// Whether a rewrite writes its result.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Mode {
    /// Write the rewritten file (to the output, or in place).
    Write,
    /// Work out what would change and write nothing (`--dry-run`).
    DryRun,
}

/// What a rewrite did, for reports and `--dry-run`.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Summary {
    /// Device images before.
    pub images_before: usize,
    /// Device images after.
    pub images_after: usize,
    /// Size of the file before.
    pub size_before: u64,
    /// Size of the file after.
    pub size_after: u64,
    /// Bundles and binaries rewritten.
    pub rewritten: usize,
    /// Compressed bundles left as they were because they were compressed as asked already.
    pub already_compressed: usize,
    /// Whether the file starts with a bare device image and was kept whole: nothing of it is
    /// removed, whatever its images are for.
    pub kept_whole: bool,
    /// Device images embedded as data (see `crate::host::scan::DeviceImage::embedded`),
    /// counted among those before and after: the program loads them itself, and they are
    /// kept whole, whatever their targets.
    pub embedded: usize,
    /// The compressed bundles compressed by this rewrite, and the compressed payloads of the
    /// CUDA entries it copied as they were stored, by the xxh3 hash of their bytes: once
    /// written, they are checked by those bytes, not inflated (and hashed) again.
    pub(crate) made: std::collections::BTreeSet<u64>,
    /// For a package, each member that holds device code (`PACKAGE!member`) and what
    /// became of it, in package order.
    pub members: Vec<(PathBuf, Summary)>,
}

impl Summary {
    /// Adds the counts of `other` (a part of the same file) to these, sizes aside.
    fn add_counts(&mut self, other: &Summary) {
        self.images_before += other.images_before;
        self.images_after += other.images_after;
        self.rewritten += other.rewritten;
        self.already_compressed += other.already_compressed;
        self.embedded += other.embedded;
        self.made.extend(&other.made);
    }
}

impl RewriteConfig {
    /// Runs `work` with the registry's rules for this configuration: what stays, and how
    /// bundles are stored. `offload_unit` holds the images of the offload binaries side by
    /// side in the region being rewritten (see [`Rules::offload_unit`]); `hashed` the hashes
    /// of its plain bundles taken ahead, when they are; `room` gives room to the large
    /// bundles compressed.
    fn with_rules<T>(
        &self,
        offload_unit: &[ImageTarget],
        hashed: Option<&HashedAhead>,
        room: &MakeRoom<'_>,
        work: impl FnOnce(&Rules<'_>) -> T,
    ) -> T {
        let keeps = |unit: &[ImageTarget]| self.keeps(unit);
        let hashed = hashed.map(|ahead| move |bytes: &[u8]| ahead.get(bytes));
        work(&Rules {
            keeps: &keeps,
            offload_unit,
            storage: match &self.change {
                Change::Compress(options) => BundleStorage::Compress(*options),
                Change::CompressPlain(options) => BundleStorage::CompressPlain(*options),
                Change::Decompress => BundleStorage::Decompress,
                Change::Keep(_) | Change::Remove(_) => BundleStorage::AsIs,
            },
            limit: self.max_decompressed,
            room: Some(room),
            hashed: hashed.as_ref().map(|h| h as &container::HashedAhead<'_>),
        })
    }
}

/// The images of the offload binaries at the start of `data`, one after another (with zero
/// padding between): a device chooses among them as one translation unit. Images that hold
/// CUDA fat binaries are not among them: each fat binary is a unit of its own.
fn offload_unit(data: &[u8]) -> Vec<ImageTarget> {
    offload_binary::split(data)
        .map_while(|(_, binary)| binary.ok())
        .flat_map(|binary| {
            binary
                .entries()
                .iter()
                .filter(|e| !holds_cuda_fatbins(e))
                .map(ImageTarget::of_offload_entry)
                .collect::<Vec<_>>()
        })
        .collect()
}

/// Rewrites a region holding bundles, compressed bundles or offload binaries one after another
/// (a `.hip_fatbin` section, a bare file); `None` when nothing changes. Images are counted into
/// `summary`. The containers are rewritten in parallel (see [`rewrite_ahead`]) and put
/// together in order, as if one after another; bundles decompressed are inflated last, in
/// parallel, straight into their places, so that no whole one is held: into the region's new
/// bytes ([`fill_inflated`]), or, `Later`, into the file written (the holes returned, each
/// with its bundle's offset in `data`). `path` names the file and `fail` tells where in it,
/// for errors.
fn rewrite_region(
    data: &[u8],
    config: &RewriteConfig,
    summary: &mut Summary,
    path: &Path,
    fail: &(dyn Fn(crate::format::Error) -> Error + Sync),
    inflating: Inflating,
) -> Result<Option<(Spilled, Vec<Hole<u64>>)>> {
    let steps = region_steps(data, config, summary).map_err(fail)?;
    if steps.iter().all(|step| step.new.is_none()) {
        return Ok(None);
    }
    let spill_failed = |e| spill_failed(path, e);
    let mut spill = Spill::new();
    let mut holes = Vec::new();
    let mut pos = 0usize;
    for step in steps {
        if step.start > pos {
            // Zero padding put the next container on a boundary: keep it on one as large,
            // unless its format fixes one.
            let boundary = Container::at_start(&data[step.start..])
                .and_then(Container::boundary)
                .map_or(1u64 << step.start.trailing_zeros().min(12), |b| b as u64);
            spill.pad_to(boundary).map_err(spill_failed)?;
        }
        match step.new {
            Some(NewBytes::Made(bytes)) => spill.append(&bytes),
            Some(NewBytes::Placed(room)) => spill.append(room.bytes()),
            Some(NewBytes::Copied(copied)) => copied
                .parts(&data[step.start..])
                .try_for_each(|part| spill.append(part)),
            Some(NewBytes::Inflated(size)) => spill.reserve(size).map(|at| {
                holes.push(Hole {
                    at,
                    size,
                    what: step.start as u64,
                });
            }),
            None => spill.append(&data[step.start..step.start + step.size]),
        }
        .map_err(spill_failed)?;
        pos = step.start + step.size.max(1);
    }
    if let Some(zeros) = data.get(pos..) {
        // Zeros after the last container stay.
        spill.append(zeros).map_err(spill_failed)?;
    }
    if inflating == Inflating::Now {
        fill_inflated(
            &mut spill,
            &holes,
            data,
            config.max_decompressed,
            path,
            fail,
        )?;
        holes.clear();
    }
    let made = spill.finish().map_err(spill_failed)?;
    Ok(Some((made, holes)))
}

/// A container of a region: where it starts, its size there, and its new bytes (`None`: it
/// stays as it is).
struct Step {
    start: usize,
    size: usize,
    new: Option<NewBytes>,
}

/// Every container of `data` and what becomes of it, counted into `summary`.
fn region_steps(
    data: &[u8],
    config: &RewriteConfig,
    summary: &mut Summary,
) -> std::result::Result<Vec<Step>, crate::format::Error> {
    let unit = match config.change {
        Change::Keep(_) | Change::Remove(_) => offload_unit(data),
        Change::Compress(_) | Change::CompressPlain(_) | Change::Decompress => Vec::new(),
    };
    let mut ahead = rewrite_ahead(data, config, &unit).into_iter().peekable();
    let alone: Region<'_> = (&unit, None, &mapped_room);
    let mut steps = Vec::new();
    let mut pos = 0usize;
    while let Some(skip) = data
        .get(pos..)
        .and_then(|rest| rest.iter().position(|&b| b != 0))
    {
        let start = pos + skip;
        let here = &data[start..];
        let done = match ahead.next_if(|(at, _)| *at == start) {
            Some((_, done)) => done,
            None => rewrite_one(here, start, config, alone, Decoding::Fresh),
        };
        let (size, new) = account(start, done?, summary);
        summary.rewritten += usize::from(new.is_some());
        steps.push(Step { start, size, new });
        pos = start + size.max(1);
    }
    Ok(steps)
}

/// A container's kind and what became of it, or why it could not be rewritten.
type Done = std::result::Result<(&'static str, Rewrite, Vec<u64>), crate::format::Error>;

/// The containers of `data` rewritten in parallel ahead of [`rewrite_region`], each with its
/// place, in order: those whose places the headers before them tell. Compressed bundles are
/// inflated within one [`Budget`], so the decoders in flight stay bounded whatever the number
/// of threads. A bundle decompressed is only planned here (its header read): its bytes are
/// inflated into their place once every place is known.
///
/// The largest containers are started first ([`largest_first`]), so that the threads finish
/// together whatever the order of the sizes in the file. The plain bundles compressed have
/// their hashes taken ahead, on a thread of their own ([`HashedAhead`]).
fn rewrite_ahead(data: &[u8], config: &RewriteConfig, unit: &[ImageTarget]) -> Vec<(usize, Done)> {
    let budget = Budget::new();
    let places = places(data);
    let plain = plain_bundles(
        places
            .iter()
            .filter_map(|&(start, size)| data.get(start..)?.get(..usize::try_from(size).ok()?)),
    );
    // A thread is not worth starting for a few small bundles.
    let total: usize = plain.iter().map(|b| b.len()).sum();
    let ahead = (compressing(config) && total >= HASH_AHEAD_FROM).then(HashedAhead::new);
    let done = std::thread::scope(|scope| {
        if let Some(ahead) = &ahead {
            scope.spawn(|| ahead.hash_all(&plain, Order::LargestFirst));
        }
        largest_first::run(&places, |&start| {
            // Every new container is held until the region is put together: room is not
            // given back before then, and is made anew for each.
            let region = (unit, ahead.as_ref(), &mapped_room as &MakeRoom);
            rewrite_within(&data[start..], start, config, region, &budget)
        })
    });
    places
        .into_iter()
        .map(|(start, _)| start)
        .zip(done)
        .collect()
}

/// The bytes of plain bundles in a region from which their hashes are taken ahead.
const HASH_AHEAD_FROM: usize = 8 << 20;

/// Whether `config` compresses bundles.
fn compressing(config: &RewriteConfig) -> bool {
    matches!(
        config.change,
        Change::Compress(_) | Change::CompressPlain(_)
    )
}

/// The plain bundles among `containers` (each whole).
fn plain_bundles<'d>(containers: impl Iterator<Item = &'d [u8]>) -> Vec<&'d [u8]> {
    containers
        .filter(|here| Container::at_start(here) == Some(Container::Bundle))
        .collect()
}

/// The images of the offload binaries of a region (see [`Rules::offload_unit`]), the hashes
/// of its plain bundles when they are taken ahead, and where room for its large bundles
/// compressed comes from.
type Region<'r> = (&'r [ImageTarget], Option<&'r HashedAhead>, &'r MakeRoom<'r>);

/// [`rewrite_one`] with a zstd decoder of `budget` for a compressed bundle (so that decoders
/// and their windows are reused from one stream to the next, and those in flight stay within
/// the budget), whose pages are given back once read.
fn rewrite_within(
    here: &[u8],
    start: usize,
    config: &RewriteConfig,
    unit: Region<'_>,
    budget: &Budget,
) -> Done {
    let compressed = match Container::at_start(here) {
        Some(Container::CompressedBundle) => CompressedBundle::parse(here).ok().flatten(),
        _ => None,
    };
    let Some(compressed) = compressed else {
        return rewrite_one(here, start, config, unit, Decoding::Fresh);
    };
    // Stripped or decompressed, a bundle is inflated whole with the decoder given (in room
    // when large); compressed with another method, through a window.
    let memory = match config.change {
        Change::Compress(_) | Change::CompressPlain(_) => memory_of(&compressed),
        Change::Keep(_) | Change::Remove(_) | Change::Decompress => memory_of_whole(&compressed),
    };
    let done = budget.run(memory, |decoding| {
        rewrite_one(here, start, config, unit, decoding)
    });
    // Read once: its pages need not stay (a bundle kept as it was is read again from the
    // file when written).
    release_mapped(&here[..compressed.size() as usize]);
    done
}

/// Where the containers of `data` start, with their sizes, as [`rewrite_region`] walks them,
/// up to the first whose size its header does not tell.
fn places(data: &[u8]) -> Vec<(usize, u64)> {
    let mut places = Vec::new();
    let mut pos = 0usize;
    while let Some(skip) = data
        .get(pos..)
        .and_then(|rest| rest.iter().position(|&b| b != 0))
    {
        let start = pos + skip;
        let Ok(size) = container_size(&data[start..]) else {
            break;
        };
        places.push((start, size as u64));
        pos = start + size.max(1);
    }
    places
}

/// Rewrites the container at the start of `here`, found at `start` in its region, by the
/// registry's rules for it (`unit`: the offload binaries' images of the region), inflating
/// with the decoder `decoding` says: its kind and what became of it.
fn rewrite_one(
    here: &[u8],
    start: usize,
    config: &RewriteConfig,
    (unit, hashed, room): Region<'_>,
    decoding: Decoding<'_>,
) -> Done {
    let container = Container::at_start(here).ok_or_else(|| not_a_container(start))?;
    let rewrite = config
        .with_rules(unit, hashed, room, |rules| {
            container.rewrite_decoding(here, rules, decoding)
        })
        // Said at its place in the region, not in the container.
        .map_err(|e| e.rebased(start as u64))?;
    let copied = match container {
        Container::CudaFatbin => copied_payloads(here, &rewrite),
        _ => Vec::new(),
    };
    Ok((container.name(), rewrite, copied))
}

/// The xxh3 hashes of the compressed payloads of the CUDA fat binary at the start of `here`
/// once rewritten as `rewrite` says: its entries are copied as they are stored, kept or
/// dropped whole, so that these are the input's own bytes, which the written file must hold
/// again (checked by these hashes rather than inflated once more). Those in stretches the
/// kernel copies ([`COPIED_FROM`] bytes or more) are left out: the read-back knows where
/// those lie.
fn copied_payloads(here: &[u8], rewrite: &Rewrite) -> Vec<u64> {
    let bytes = match &rewrite.new {
        Some(NewBytes::Copied(copied)) => {
            // The new fat binary's entries are the stretches kept of the old one's. A stretch
            // long enough to be copied by the kernel is among those the read-back knows as
            // copied, and checked as such: only the payloads of shorter ones are hashed.
            let base = here.as_ptr() as usize;
            let kept = |payload: &&[u8]| {
                let at = payload.as_ptr() as usize - base;
                (copied.stretches.iter()).any(|&(start, len)| {
                    start <= at && at + payload.len() <= start + len && len < COPIED_FROM
                })
            };
            return cuda_fatbin::compressed_payloads(here)
                .filter(kept)
                .map(xxhash_rust::xxh3::xxh3_64)
                .collect();
        }
        Some(new) => new.bytes().unwrap_or_default(),
        None => here,
    };
    cuda_fatbin::compressed_payloads(bytes)
        .map(xxhash_rust::xxh3::xxh3_64)
        .collect()
}

/// Counts what became of the container at `start` (a `kind`) into `summary` and logs it:
/// its size there, and its new bytes (`None` when it stays; empty when it goes). The hashes
/// of the compressed payloads it `copied` as stored join those the read-back knows.
fn account(
    start: usize,
    (kind, rewrite, copied): (&'static str, Rewrite, Vec<u64>),
    summary: &mut Summary,
) -> (usize, Option<NewBytes>) {
    summary.made.extend(copied);
    summary.images_before += rewrite.images_before;
    summary.images_after += rewrite.images_after;
    summary.already_compressed += rewrite.already_compressed;
    if let (true, Some(bytes)) = (
        rewrite.fresh_stream,
        rewrite.new.as_ref().and_then(NewBytes::bytes),
    ) {
        summary.made.insert(xxhash_rust::xxh3::xxh3_64(bytes));
    }
    log_container(
        start,
        kind,
        (rewrite.images_before, rewrite.images_after),
        rewrite.size,
        &rewrite.new,
        rewrite.done,
    );
    (rewrite.size as usize, rewrite.new)
}

/// Rewrites the container at the start of `here`, found at `start` in its region, by the
/// registry's rules for it (`unit`: the offload binaries' images of the region), with the
/// decoders of `budget`: its size there, and its new bytes (`None` when it stays; empty when
/// it goes).
fn rewrite_container(
    here: &[u8],
    start: usize,
    config: &RewriteConfig,
    unit: Region<'_>,
    summary: &mut Summary,
    budget: &Budget,
) -> std::result::Result<(usize, Option<NewBytes>), crate::format::Error> {
    let done = rewrite_within(here, start, config, unit, budget)?;
    Ok(account(start, done, summary))
}

/// Logs what became of the container of `size` bytes (a `kind`) at `start` in its region:
/// kept as it was, dropped (`new` empty), or `done` to (`new` holds its new bytes). `images`
/// are its device images before and after.
fn log_container(
    start: usize,
    kind: &str,
    images: (usize, usize),
    size: u64,
    new: &Option<NewBytes>,
    done: &str,
) {
    let (before, after) = images;
    match new {
        None => debug!(offset = start, images = before, "{kind} kept as it was"),
        Some(bytes) if bytes.is_empty() => info!(offset = start, images = before, "{kind} dropped"),
        Some(bytes) => info!(
            offset = start,
            images.before = before,
            images.after = after,
            size.before = size,
            size.after = bytes.len(),
            "{kind} {done}"
        ),
    }
}

/// The size of the container at the start of `here`, from its header.
fn container_size(here: &[u8]) -> std::result::Result<usize, crate::format::Error> {
    let container = Container::at_start(here).ok_or_else(|| not_a_container(0))?;
    Ok(container.size(here)? as usize)
}

/// A rewritten file: in memory, or made of pieces that borrow the input around device code
/// held in temporary files.
pub enum NewFile<'a> {
    /// The whole file.
    Bytes(Vec<u8>),
    /// A region of containers (a bare file), in memory or a temporary file, with the holes
    /// left in it for the bundles inflated as it is written.
    Region(Spilled, Vec<Hole<u64>>),
    /// A relocatable object with new section contents.
    Object(NewObject<'a>),
    /// A linked program or shared library.
    Program(NewProgram<'a>),
}

/// A relocatable object with sections removed and others given new contents (in memory or
/// temporary files), laid out when written, so that no large contents are gathered.
pub struct NewObject<'a> {
    host: &'a [u8],
    removed: Vec<String>,
    replaced: Vec<(String, Spilled)>,
    size: u64,
}

impl<'a> NewObject<'a> {
    /// The object `host` with the sections named in `removed` gone and those of `replaced`
    /// given their new contents.
    fn new(
        host: &'a [u8],
        removed: Vec<String>,
        replaced: Vec<(String, Spilled)>,
    ) -> std::result::Result<Self, crate::host::Error> {
        let mut object = NewObject {
            host,
            removed,
            replaced,
            size: 0,
        };
        object.size = object.laid_out()?.size;
        Ok(object)
    }

    /// The object laid out: pieces borrowed from the input and the new contents.
    fn laid_out(&self) -> std::result::Result<Rewritten<'_>, crate::host::Error> {
        objcopy::rewrite_sections(
            self.host,
            &|name| self.removed.iter().any(|r| r.as_bytes() == name),
            &|name, _| {
                self.replaced
                    .iter()
                    .find(|(n, _)| n.as_bytes() == name)
                    .map(|(_, d)| std::borrow::Cow::Borrowed(d.bytes()))
            },
        )
    }

    /// The inputs the new contents held in temporary files are slices of.
    fn sources(&self) -> impl Iterator<Item = &Input> {
        self.replaced.iter().filter_map(|(_, d)| d.input())
    }
}

impl NewFile<'_> {
    /// The size of the file.
    pub fn len(&self) -> u64 {
        match self {
            NewFile::Bytes(b) => b.len() as u64,
            NewFile::Region(r, _) => r.len(),
            NewFile::Object(o) => o.size,
            NewFile::Program(p) => p.size(),
        }
    }

    /// Whether the file is empty.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// The stretches of the new file (offset, length; in order) copied from the file
    /// rewritten as they were, once it is written.
    fn copied(&self) -> Vec<(u64, u64)> {
        let NewFile::Program(program) = self else {
            return Vec::new();
        };
        (program.holes_in_file().iter())
            .filter(|hole| matches!(hole.what, Fill::Copied(_) | Fill::Kept(_)))
            .map(|hole| (hole.at, hole.size))
            .collect()
    }

    /// Takes the new bytes held in memory or temporary files out of the file, once it is
    /// written, leaving none in their place.
    fn written_spills(&mut self) -> Vec<Spilled> {
        match self {
            NewFile::Bytes(_) => Vec::new(),
            NewFile::Region(made, _) => vec![made.take()],
            NewFile::Object(object) => object.replaced.iter_mut().map(|(_, s)| s.take()).collect(),
            NewFile::Program(program) => program.take_packed(),
        }
    }

    /// The whole file in memory, the bundles it decompresses inflated by `inflater`.
    fn into_bytes(self, inflater: &Inflater<'_>) -> Result<Vec<u8>> {
        let path = inflater.path;
        let region_fail = |e| Error::format(path, e);
        let program_fail = program_fail(path, inflater.data);
        let (mut bytes, holes, fail): (_, _, &(dyn Fn(_) -> Error + Sync)) = match self {
            NewFile::Bytes(b) => return Ok(b),
            NewFile::Region(r, holes) => {
                let holes = (holes.into_iter())
                    .map(|hole| Hole {
                        at: hole.at,
                        size: hole.size,
                        what: Fill::Written(hole.what),
                    })
                    .collect();
                (r.into_vec(), holes, &region_fail)
            }
            NewFile::Object(o) => {
                return Ok(o
                    .laid_out()
                    .map_err(|e| Error::container(path, e))?
                    .to_vec())
            }
            NewFile::Program(mut p) => {
                let holes = p.holes_in_file();
                let bytes = p.to_vec().map_err(|e| Error::container(path, e))?;
                (bytes, holes, &program_fail)
            }
        };
        let inflate = |hole: &Hole<u64>, sink: &mut dyn FnMut(&[u8]) -> std::io::Result<()>| {
            inflater.fill(hole, sink, fail)
        };
        let failed = |e| spill_failed(path, e);
        let write = |hole: &Hole<Fill>, sink: &mut dyn FnMut(&[u8]) -> std::io::Result<()>| {
            program::fill_hole(inflater.data, hole, sink, &inflate, &failed)
        };
        fill_in(&mut bytes, 0, &holes, &write, &|_, e| spill_failed(path, e))?;
        Ok(bytes)
    }

    /// Writes the file to `out`; pieces of `data` (the input) and of temporary files are
    /// copied by the kernel, and the bundles it decompresses are inflated by `inflater`
    /// straight into their places.
    fn write_to(&mut self, out: &mut Output, data: &Input, inflater: &Inflater<'_>) -> Result<()> {
        let path = inflater.path;
        match self {
            NewFile::Bytes(bytes) => Ok(out.write_bytes(bytes)?),
            NewFile::Region(made, holes) => {
                let fail = |e| Error::format(path, e);
                let write =
                    |hole: &Hole<u64>, sink: &mut dyn FnMut(&[u8]) -> std::io::Result<()>| {
                        inflater.fill(hole, sink, &fail)
                    };
                out.write_spilled(made, holes, &write)
            }
            NewFile::Object(object) => {
                let sources: Vec<&Input> = std::iter::once(data).chain(object.sources()).collect();
                let laid_out = object.laid_out().map_err(|e| Error::container(path, e))?;
                laid_out.write_to(out, &sources)
            }
            NewFile::Program(program) => {
                let fail = program_fail(path, data);
                let write =
                    |hole: &Hole<u64>, sink: &mut dyn FnMut(&[u8]) -> std::io::Result<()>| {
                        inflater.fill(hole, sink, &fail)
                    };
                // Packed containers made in the output at another place than they go are
                // moved out first; the file ends where the writing does.
                program.settle(out)?;
                program.write_filled(path, out, data, &write)?;
                Ok(out.end_here()?)
            }
        }
    }
}

/// How damage in a compressed bundle of the program `file` (named `path`) is said: in its
/// device section, at its offset in the file, as a listing says it.
fn program_fail<'p>(
    path: &'p Path,
    file: &[u8],
) -> impl Fn(crate::format::Error) -> Error + Sync + 'p {
    let section = program::device_section_name(file, 0);
    move |e| Error::Container {
        path: path.to_path_buf(),
        context: Some(format!("section '{section}'")),
        source: crate::host::Error::in_contents(e, 0),
    }
}

/// How deep archives may nest in a file that is rewritten (an archive in an archive is one
/// deeper), as deep as the scanner reads containers.
const MAX_ARCHIVE_DEPTH: usize = 8;

/// Rewrites the file `data` (named `path` in errors); `None` when nothing changes.
pub fn rewrite_file<'a>(
    path: &Path,
    data: &'a [u8],
    config: &RewriteConfig,
    summary: &mut Summary,
) -> Result<Option<NewFile<'a>>> {
    rewrite_nested(path, data, config, summary, (0, None), None)
}

/// [`rewrite_file`] for a file found `depth` archives deep (`at`), whose images embedded as
/// data are counted already when `at` says how many; `to`: the file the result is written to,
/// when a program's packed containers may be made in it at their place.
fn rewrite_nested<'a>(
    path: &Path,
    data: &'a [u8],
    config: &RewriteConfig,
    summary: &mut Summary,
    at: (usize, Option<usize>),
    to: Option<&program::Destination<'_>>,
) -> Result<Option<NewFile<'a>>> {
    let (depth, embedded) = at;
    summary.size_before += data.len() as u64;
    let format_error = |e| Error::format(path, e);
    if let Some(kind) = crate::host::package::kind(data) {
        return Err(Error::file(path, package::refusal(kind, depth)));
    }
    let result = if is_archive(data) {
        rewrite_archive(path, data, config, summary, depth)?.map(NewFile::Bytes)
    } else if Container::at_start(data).is_some() {
        rewrite_region(data, config, summary, path, &format_error, Inflating::Later)?
            .map(|(made, holes)| NewFile::Region(made, holes))
    } else if BareImage::parse(data).is_some() {
        // A bare device image with more after it (images one after another, a bundle after
        // a code object): a loader takes the first image, which cannot lose its tail, so the
        // file is kept whole, as a bare archive member is.
        summary.images_before += 1;
        summary.images_after += 1;
        summary.kept_whole = depth == 0;
        None
    } else if matches!(
        object::FileKind::parse(data),
        Ok(object::FileKind::Elf32 | object::FileKind::Elf64 | object::FileKind::Coff)
    ) {
        rewrite_object(path, data, config, summary, embedded, to)?
    } else if data.starts_with(b"MZ") {
        // Read by the PE reader itself, which says where damaged headers are wrong.
        rewrite_program(path, data, config, summary, embedded, to)?
    } else if matches!(
        object::FileKind::parse(data),
        Ok(object::FileKind::MachO32
            | object::FileKind::MachO64
            | object::FileKind::MachOFat32
            | object::FileKind::MachOFat64)
    ) {
        return Err(Error::file(path, "device code in Mach-O files is not rewritten: no toolchain makes offload Mach-O programs or libraries (list or extract it instead)"));
    } else {
        return Err(Error::file(path, "rewriting device code is supported in ELF and COFF relocatable objects, ELF and PE programs and shared libraries, archives, and bundle or offload binary files"));
    };
    summary.size_after += result.as_ref().map_or(data.len() as u64, NewFile::len);
    Ok(result)
}

/// Rewrites the HIP device code of the linked program or shared library `data` (ELF or PE);
/// `embedded`: its images embedded as data, when a scan counted them already; `to` as for
/// [`rewrite_nested`].
fn rewrite_program<'a>(
    path: &Path,
    data: &'a [u8],
    config: &RewriteConfig,
    summary: &mut Summary,
    embedded: Option<usize>,
    to: Option<&program::Destination<'_>>,
) -> Result<Option<NewFile<'a>>> {
    let total = std::sync::Mutex::new(Summary::default());
    // The containers may be rewritten on other threads: their log lines go under this
    // file's span all the same.
    let span = tracing::Span::current();
    let budget = Budget::new();
    // The plain bundles compressed are hashed ahead, all at once.
    let ahead = compressing(config).then(HashedAhead::new);
    let hash_all = |containers: &[&[u8]]| {
        if let Some(ahead) = &ahead {
            // In the section's order, which its containers are compressed in.
            let plain = plain_bundles(containers.iter().copied());
            ahead.hash_all(&plain, Order::AsGiven);
        }
    };
    // The containers are packed as they are done, a few ahead at most, and the room of a
    // large bundle compressed is given back once it is packed: lent again, its pages are
    // written without being faulted in anew.
    let lend = |capacity| budget.lend(capacity);
    let rewrite = |here: &[u8], start: usize| {
        let _entered = span.enter();
        let mut mine = Summary::default();
        let region = (&[][..], ahead.as_ref(), &lend as &MakeRoom<'_>);
        let (_, new) = rewrite_container(here, start, config, region, &mut mine, &budget)?;
        mine.rewritten += usize::from(new.is_some());
        let mut total = total.lock().expect("no thread panics holding it");
        total.add_counts(&mine);
        Ok(new)
    };
    let inflate = |here: &[u8], size: u64, sink: &mut dyn FnMut(&[u8]) -> std::io::Result<()>| {
        inflate_into(here, size, config.max_decompressed, &budget, sink)
    };
    let boundary = |here: &[u8]| Container::at_start(here).and_then(Container::boundary);
    let how = program::Rewriting {
        size_of: &container_size,
        boundary: &boundary,
        rewrite: &rewrite,
        inflate: &inflate,
        beside: ahead
            .is_some()
            .then_some(&hash_all as &program::AllContainers<'_>),
        destination: to,
    };
    let rewritten = program::rewrite_hip_fatbin(data, &how).map_err(|e| match e.kind {
        // Damage in a container is said as a listing says it: in its section.
        ErrorKind::Contents(_) => Error::Container {
            path: path.to_path_buf(),
            context: Some(format!(
                "section '{}'",
                program::device_section_name(data, e.offset)
            )),
            source: e,
        },
        _ => Error::container(path, e),
    })?;
    let total = total.into_inner().expect("no thread panics holding it");
    summary.add_counts(&total);
    count_embedded(path, data, config, summary, embedded)?;
    Ok(rewritten.map(NewFile::Program))
}

/// Counts into `summary` the device images of the file `data` (named `path`) embedded as
/// data, which a rewrite keeps whole: among the images before and after, as a listing and
/// the written file's reading count them. `known`: how many, when a scan of the file before
/// the rewrite counted them (the one that tells what each target's code takes).
fn count_embedded(
    path: &Path,
    data: &[u8],
    config: &RewriteConfig,
    summary: &mut Summary,
    known: Option<usize>,
) -> Result<()> {
    let mut embedded = known.unwrap_or(0);
    // Damage is the rewrite's to report, where it matters: here only images are counted.
    known
        .is_none()
        .then(|| {
            scan_reading(
                path,
                data,
                Places::Everywhere,
                config.max_decompressed,
                Reading::Headers,
                &mut |image| {
                    embedded +=
                        usize::from(image.embedded && image.target.producer != Producer::Host);
                },
            )
        })
        .transpose()?;
    if embedded > 0 {
        info!(
            images = embedded,
            "device images embedded as data kept whole"
        );
    }
    summary.embedded += embedded;
    summary.images_before += embedded;
    summary.images_after += embedded;
    Ok(())
}

/// Rewrites the device code of the relocatable object `data` (or, found to be one, of the
/// program or shared library); `embedded` and `to` as for [`rewrite_program`].
fn rewrite_object<'a>(
    path: &Path,
    data: &'a [u8],
    config: &RewriteConfig,
    summary: &mut Summary,
    embedded: Option<usize>,
    to: Option<&program::Destination<'_>>,
) -> Result<Option<NewFile<'a>>> {
    use object::{Object, ObjectSection};
    let file = object::File::parse(data).map_err(|e| Error::file(path, e.to_string()))?;
    if matches!(
        file.kind(),
        object::ObjectKind::Executable | object::ObjectKind::Dynamic
    ) {
        return rewrite_program(path, data, config, summary, embedded, to);
    }
    if file.kind() != object::ObjectKind::Relocatable {
        return Err(Error::file(
            path,
            "not a relocatable object, program or shared library",
        ));
    }
    // What changes, section by section; the object is rewritten only if something does.
    let mut new_contents: Vec<(String, Spilled)> = Vec::new();
    let mut removed: Vec<String> = Vec::new();
    // The object's bundle sections are one bundle: a device chooses among them together.
    let ids: Vec<&str> = file
        .sections()
        .filter_map(|section| section.name().ok()?.strip_prefix(BUNDLE_SECTION_PREFIX))
        .collect();
    let mut keeps = config
        .with_rules(&[], None, &mapped_room, |rules| rules.keeps_entries(&ids))
        .into_iter();
    for section in file.sections() {
        let Ok(name) = section.name() else { continue };
        if let Some(id) = name.strip_prefix(BUNDLE_SECTION_PREFIX) {
            let is_device = is_device_entry(id);
            summary.images_before += usize::from(is_device);
            if keeps.next().unwrap_or(true) {
                summary.images_after += usize::from(is_device);
                debug!(section = name, "bundle entry kept");
            } else {
                info!(section = name, "bundle entry dropped");
                removed.push(name.to_string());
            }
            continue;
        }
        let Ok(bytes) = section.data() else { continue };
        let known = Container::of_section(name).is_some() || name.starts_with(".llvm.offloading");
        if !known || bytes.is_empty() {
            continue;
        }
        let _section = tracing::debug_span!("section", name).entered();
        let context = format!("section '{name}'");
        // Said at its offset in the file, as a listing says it.
        let base = section.file_range().map_or(0, |(offset, _)| offset);
        let fail = |e: crate::format::Error| Error::format_in(path, &context, e.rebased(base));
        // Laid out among the object's sections: decompressed bundles are inflated first.
        if let Some((new, _)) = rewrite_region(bytes, config, summary, path, &fail, Inflating::Now)?
        {
            new_contents.push((name.to_string(), new));
        }
    }
    count_embedded(path, data, config, summary, embedded)?;
    if new_contents.is_empty() && removed.is_empty() {
        return Ok(None);
    }
    // The bundle sections of a fat object are one bundle, rewritten when some of them go.
    summary.rewritten += usize::from(!removed.is_empty());
    let object =
        NewObject::new(data, removed, new_contents).map_err(|e| Error::container(path, e))?;
    Ok(Some(NewFile::Object(object)))
}

/// Whether `data` is an archive that can be rewritten (a regular one, not thin).
fn is_archive(data: &[u8]) -> bool {
    data.starts_with(b"!<arch>\n")
}

/// Whether an archive member is something [`rewrite_nested`] rewrites: an object, a bundle,
/// an offload binary or an archive. Other members (text, bitcode; bare device images, told
/// apart before: a link takes them whole or not at all) stay as they are.
fn is_rewritable_member(bytes: &[u8]) -> bool {
    object::File::parse(bytes).is_ok() || Container::at_start(bytes).is_some() || is_archive(bytes)
}

/// Rewrites the archive `data`, found `depth` archives deep, member by member; members that
/// are archives are rewritten the same way.
fn rewrite_archive(
    path: &Path,
    data: &[u8],
    config: &RewriteConfig,
    summary: &mut Summary,
    depth: usize,
) -> Result<Option<Vec<u8>>> {
    if depth >= MAX_ARCHIVE_DEPTH {
        return Err(Error::file(
            path,
            format!("archives nest more than {MAX_ARCHIVE_DEPTH} deep"),
        ));
    }
    let members = read_members(path, data)?;
    let span = tracing::Span::current();
    let results: Vec<(Option<Vec<u8>>, Summary)> = members
        .par_iter()
        .map(|m| {
            let mut s = Summary::default();
            let member_path = PathBuf::from(format!("{}({})", path.display(), m.name));
            let _member = tracing::debug_span!(parent: &span, "member", name = %m.name).entered();
            let bytes: &[u8] = &m.data;
            let bare = BareImage::parse(bytes).is_some();
            if bare {
                // Kept whole, as a link takes it.
                s.images_before += 1;
                s.images_after += 1;
            }
            let new = if !bare && is_rewritable_member(bytes) {
                let inflater = Inflater::new(bytes, config.max_decompressed, &member_path);
                rewrite_nested(&member_path, bytes, config, &mut s, (depth + 1, None), None)?
                    .map(|new| new.into_bytes(&inflater))
                    .transpose()?
            } else {
                None
            };
            Ok((new, s))
        })
        .collect::<Vec<Result<_>>>()
        // The first damaged member in archive order is the one reported, on every run.
        .into_iter()
        .collect::<Result<_>>()?;
    for (_, s) in &results {
        summary.add_counts(s);
    }
    if results.iter().all(|(new, _)| new.is_none()) {
        return Ok(None);
    }
    let mut list: Vec<(&str, &[u8])> = Vec::with_capacity(members.len());
    for (m, (new, _)) in members.iter().zip(&results) {
        list.push((&m.name, new.as_deref().unwrap_or(&m.data)));
    }
    Ok(Some(write_archive(path, &list)?))
}

/// Where the result of a rewrite (or a file pruned or copied whole) goes.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub enum Placement {
    /// Over the file itself, named by the user: a symbolic link is followed to its target,
    /// which is rewritten.
    InPlace,
    /// Over the file itself, found at `relative` below the folder `root` by a walk: reached
    /// through folder descriptors from `root`, never through a symbolic link, and only while
    /// its name still holds the file that was read (see `crate::io::beneath`).
    InTree {
        /// The folder walked, as named.
        root: PathBuf,
        /// The file's path below it.
        relative: PathBuf,
    },
    /// A new file at this path. What is there is replaced, never written through: another
    /// name of an input (a hard link) is replaced as a new file; a name that is an input
    /// itself is refused.
    New(PathBuf),
}

impl Placement {
    /// Whether the file is rewritten over itself.
    pub fn in_place(&self) -> bool {
        !matches!(self, Placement::New(_))
    }

    /// The folder a file found in a tree is in, opened through folder descriptors, and its
    /// name; `None` for other placements. `input` names the file in messages.
    pub(crate) fn folder(
        &self,
        input: &Path,
    ) -> Result<Option<(crate::io::beneath::Folder, std::ffi::OsString)>> {
        let Placement::InTree { root, relative } = self else {
            return Ok(None);
        };
        let Some((folder, name)) = crate::io::beneath::split(relative) else {
            return Err(Error::file(input, "not a file of the tree walked"));
        };
        let folder = crate::io::beneath::Folder::open(root, folder).map_err(|e| {
            let e = match e.raw_os_error() {
                Some(libc::ELOOP | libc::ENOTDIR) => std::io::Error::other(
                    "a folder on its path is a symbolic link now (or was reached through one): \
                     a walk writes and deletes only inside its tree; left as it is",
                ),
                _ => e,
            };
            Error::io(input, e)
        })?;
        Ok(Some((folder, name.to_os_string())))
    }
}

/// Rewrites `input` to where `placement` says (in place: written beside it and renamed over
/// it once on disk). With [`Mode::DryRun`], only the summary is made. Refuses to leave no
/// device image unless the configuration allows it. A zip (a wheel) is written again member
/// by member; `prune` says which of its members go.
#[tracing::instrument(skip_all, fields(file = %input.display(), change = %config.change))]
pub fn rewrite(
    input: &Path,
    placement: &Placement,
    config: &RewriteConfig,
    mode: Mode,
    prune: PruneMembers,
) -> Result<Summary> {
    rewrite_scanned(input, placement, config, mode, prune, None)
}

/// [`rewrite`] of a file a scan read just before: `embedded` is how many of its images it
/// found embedded as data and the file it read (its device and inode), so that the file is
/// not scanned again for them. A file that is another one now is scanned as ever.
pub fn rewrite_scanned(
    input: &Path,
    placement: &Placement,
    config: &RewriteConfig,
    mode: Mode,
    prune: PruneMembers,
    embedded: Option<(usize, crate::io::beneath::Identity)>,
) -> Result<Summary> {
    let data = Input::open(input)?;
    rewrite_read(input, &data, placement, config, mode, prune, embedded)
}

/// [`rewrite_scanned`] of `input` opened as `data` already: the scan just before read it
/// through this map, so that the pages it brought in serve the rewrite too, and the file is
/// neither mapped nor unmapped twice.
pub fn rewrite_read(
    input: &Path,
    data: &Input,
    placement: &Placement,
    config: &RewriteConfig,
    mode: Mode,
    prune: PruneMembers,
    embedded: Option<(usize, crate::io::beneath::Identity)>,
) -> Result<Summary> {
    let read = (input, data, placement);
    rewrite_started(read, config, mode, prune, embedded, None)
}

/// [`rewrite_read`] into an output `started` already ([`start_ahead`]).
pub(crate) fn rewrite_started(
    (input, data, placement): (&Path, &Input, &Placement),
    config: &RewriteConfig,
    mode: Mode,
    prune: PruneMembers,
    embedded: Option<(usize, crate::io::beneath::Identity)>,
    started: Option<Started>,
) -> Result<Summary> {
    if let Some(done) = package::rewrite_package(input, data, placement, config, mode, prune, None)
    {
        return done;
    }
    let embedded = embedded
        .filter(|(_, read)| data.identity() == Some(*read))
        .map(|(count, _)| count);
    let mut summary = Summary::default();
    // The output is opened once a large section of a program is packed, so that its
    // containers are made straight into it at their place; else once the file is planned.
    let early = plan::Early::new(started);
    let open_early = |at: u64| early.open(input, data, placement, at);
    let to = (mode == Mode::Write).then_some(&open_early as &program::Destination<'_>);
    let mut new = rewrite_nested(input, data, config, &mut summary, (0, embedded), to)?;
    let early = early.finish();
    if summary.images_before > 0 && summary.images_after == 0 && !config.allow_empty {
        return Err(Error::file(
            input,
            format!(
                "this would remove every device image ({}); give --allow-empty to do it",
                summary.images_before
            ),
        ));
    }
    info!(
        images.before = summary.images_before,
        images.after = summary.images_after,
        rewritten = summary.rewritten,
        "read and planned"
    );
    if mode == Mode::DryRun {
        return Ok(summary);
    }
    if new.is_none() && placement.in_place() {
        info!("nothing changes: the file stays as it is");
        return Ok(summary);
    }
    let mut out = match early {
        Some(out) => out,
        None => start_output(input, data, placement)?,
    };
    match &mut new {
        Some(new) => {
            out.reserve(new.len());
            let inflater = Inflater::new(data, config.max_decompressed, input);
            new.write_to(&mut out, data, &inflater)?
        }
        None => out.write_part(data, data)?,
    }
    if let Some(new) = &mut new {
        let copied = new.copied();
        let spills = new.written_spills();
        std::thread::scope(|scope| {
            // Closing a large temporary file frees its pages (a tenth of a second for the
            // 625 MB of a library's compressed bundles): beside the read-back, not after it.
            if spills.iter().any(|spilled| spilled.input().is_some()) {
                scope.spawn(move || drop(spills));
            }
            verify(input, &mut out, &summary, config.max_decompressed, &copied)
        })?;
    }
    out.commit()?;
    info!(output = %out_path(input, placement).display(), size = summary.size_after, "written");
    Ok(summary)
}

/// The path a result is written to, for the log.
fn out_path<'a>(input: &'a Path, placement: &'a Placement) -> &'a Path {
    match placement {
        Placement::New(path) => path,
        _ => input,
    }
}
