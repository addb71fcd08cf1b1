//! Extracting the device images a GPU can load from any file: objects, programs, shared
//! libraries, archives, bundles, offload binaries; or, for the GPUs of one machine, the one
//! code object the HIP runtime loads from each bundle ([`crate::loads::runtime`]).

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::sync::Arc;

use rayon::prelude::*;

use crate::error::{Error, Result};
use crate::format::ccob::{CompressedBundle, DEFAULT_MAX_DECOMPRESSED};
use crate::format::cuda_fatbin::{Compression, EntryKind, Stored};
use crate::format::image_target::{ImageTarget, Producer};
use crate::format::kpack as kpack_format;
use crate::format::ErrorKind;
use crate::host::archive::write_archive;
use crate::host::kpack::{ArchiveFiles, StoredCodeObject};
use crate::host::scan::Origin;
use crate::host::scan::{scan_reading, DeviceImage, Places, Reading};
use crate::io::slice::offset_within;
use crate::io::{Closed, Input, Output};
use crate::loads::cuda;
use crate::loads::hip::{loaded_by, may_load, Via};
use crate::loads::runtime::{self, Load, Why};
use crate::ops::bundler::device_member_name;
use crate::ops::ls::{self, Image};
use crate::ops::support::inflating::{each_range, memory_of, memory_of_cuda, Budget};
pub use crate::ops::support::progress::Progress;
use crate::target::target_id::{TargetId, TargetIdBuf};

mod kpack;

/// How `extract` matches the target IDs asked for with those of the images.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub enum Match {
    /// By what a device with the target ID loads: per translation unit, the native code
    /// its processor can run if there is any, else a generic target's that covers it, else
    /// SPIR-V.
    #[default]
    Loadable,
    /// The same processor and features, in any order.
    Exact,
}

/// What to extract, and where.
#[derive(Debug, Clone)]
pub struct ExtractConfig {
    /// The files to look into.
    pub files: Vec<PathBuf>,
    /// The target IDs asked for (`gfx90a`, `gfx90a:xnack+`, `sm_80`), checked where they
    /// were given: every image a device with one of them can load.
    pub arches: Vec<TargetIdBuf>,
    /// The GPUs of one machine, in the runtime's order: from each bundle, the code object the
    /// HIP runtime loads for each of them, chosen for all of them together as it does.
    pub devices: Vec<TargetIdBuf>,
    /// How target IDs are matched.
    pub exact: Match,
    /// Only images for this triple.
    pub triple: Option<String>,
    /// Only images of this producer (`hip`, `openmp`, `cuda`, ...).
    pub kind: Option<Producer>,
    /// The folder to write to, or, when it names a `.a` file and the inputs are archives, the
    /// device archive to write.
    pub output: PathBuf,
    /// The most a compressed bundle may declare or inflate to.
    pub max_decompressed: u64,
}

impl Default for ExtractConfig {
    fn default() -> Self {
        ExtractConfig {
            files: Vec::new(),
            arches: Vec::new(),
            devices: Vec::new(),
            exact: Match::default(),
            triple: None,
            kind: None,
            output: PathBuf::new(),
            max_decompressed: DEFAULT_MAX_DECOMPRESSED,
        }
    }
}

/// Whether an image for `target` passes `config`'s filters other than the target ID: device
/// code, with a target ID, of the triple and producer asked for.
fn passes_filters(config: &ExtractConfig, target: &ImageTarget) -> bool {
    if target.producer == Producer::Host || target.target_id().is_none() {
        return false;
    }
    if let Some(triple) = &config.triple {
        if target.triple.trim_end_matches('-') != triple.trim_end_matches('-') {
            return false;
        }
    }
    config
        .kind
        .as_ref()
        .is_none_or(|kind| *kind == target.producer)
}

/// Whether an image for `stored` may be chosen once its translation unit is seen whole: it is
/// one a device asked for loads natively, or code for a generic target or SPIR-V, which a
/// device loads when its unit has no native code for it.
fn may_be_chosen(config: &ExtractConfig, stored: &TargetId<'_>) -> bool {
    config.arches.iter().any(|q| {
        let q = q.target_id();
        match config.exact {
            Match::Exact => q.same_as(stored),
            Match::Loadable => may_load(&q, stored),
        }
    })
}

/// How the devices asked for come to load each image of one translation unit (`None`: none
/// does), and for which of them: the best way any of them does. Marks in `hits` the target IDs
/// asked for that load any.
fn chosen_in_unit(
    config: &ExtractConfig,
    unit: &[Option<TargetId<'_>>],
    hits: &mut [bool],
) -> Vec<Option<(Via, usize)>> {
    let mut best: Vec<Option<(Via, usize)>> = vec![None; unit.len()];
    for ((index, q), hit) in config.arches.iter().enumerate().zip(hits.iter_mut()) {
        let q = q.target_id();
        let loaded: Vec<Option<Via>> = match config.exact {
            Match::Exact => unit
                .iter()
                .map(|i| i.as_ref().filter(|i| q.same_as(i)).map(|_| Via::Native))
                .collect(),
            Match::Loadable => loaded_by(&q, unit),
        };
        for (slot, via) in best.iter_mut().zip(loaded) {
            if let Some(via) = via {
                *hit = true;
                if slot.is_none_or(|(old, _)| via < old) {
                    *slot = Some((via, index));
                }
            }
        }
    }
    best
}

/// Makes text safe as part of a file name: letters, digits and `._+-` stay, anything else
/// (`/`, `:`, spaces, `..` cannot survive as a path) becomes `_`.
pub fn safe_name(text: &str) -> String {
    let cleaned: String = text
        .chars()
        .map(|c| {
            if c.is_ascii_alphanumeric() || matches!(c, '.' | '_' | '+' | '-') {
                c
            } else {
                '_'
            }
        })
        .collect();
    cleaned.trim_start_matches('.').to_string()
}

/// The file extension for an image's bytes.
fn extension(image: &Image, data: &[u8]) -> &'static str {
    if data.starts_with(b"\x7fELF") {
        return if image.triple.starts_with("nvptx") {
            "cubin"
        } else {
            "co"
        };
    }
    if data.starts_with(b"BC\xc0\xde") || data.starts_with(&[0xde, 0xc0, 0x17, 0x0b]) {
        return "bc";
    }
    // SPIR-V's magic number, 0x07230203, little-endian.
    if data.starts_with(&[0x03, 0x02, 0x23, 0x07]) {
        return "spv";
    }
    match image.image_kind.as_deref() {
        Some("s") => "ptx",
        Some("fatbin") => "fatbin",
        Some("spv") => "spv",
        _ => "bin",
    }
}

/// One image to write.
#[derive(Clone)]
struct Chosen {
    image: Image,
    /// Index of the input file.
    input: usize,
    /// Where its bytes are.
    bytes: Bytes,
    /// The entry ID or metadata the name is built from.
    label: String,
    /// The innermost archive member, for device archive names.
    member: Option<String>,
    ext: &'static str,
    /// How the device asked for loads it.
    via: Via,
    /// The target ID asked for that chose it.
    asked: String,
    /// For the runtime's pick, the bundle's number in its file.
    bundle: Option<usize>,
    /// Whether a device picked it.
    device_pick: bool,
    /// The whole file name to write it under, when it has one of its own (a CUDA entry:
    /// cuobjdump's name).
    name: Option<String>,
}

/// Where the bytes of a chosen image are.
#[derive(Clone)]
enum Bytes {
    /// In the input, at this offset, this long.
    Input(usize, usize),
    /// Held (inflated from a compressed container, or read from a thin archive's member).
    Owned(Vec<u8>),
    /// In a compressed bundle's stream, not inflated yet.
    Stream(Streamed),
    /// In a `.kpack` archive (its number among those mapped), stored plain or compressed.
    Archived(usize, StoredCodeObject),
    /// The payload of a CUDA fat binary's entry as stored: read (inflated, cut to its
    /// contents) when written.
    Cuda(Held, Stored),
}

/// An image inside a compressed bundle, found from its bundle's header.
#[derive(Clone)]
struct Streamed {
    /// The compressed bundle: its range in the input, or its bytes when it is not stored as
    /// such (inside another compressed container).
    bundle: Held,
    /// The compressed bundle's offset in the file, for errors.
    at: Option<u64>,
    /// The image's range in the inflated stream.
    start: u64,
    end: u64,
}

/// Bytes of the input, or held.
#[derive(Clone)]
enum Held {
    Input(usize, usize),
    Owned(Arc<[u8]>),
}

impl Held {
    fn get<'a>(&'a self, input: &'a Input) -> &'a [u8] {
        match self {
            Held::Input(start, len) => &input[*start..*start + *len],
            Held::Owned(bytes) => bytes,
        }
    }
}

impl Chosen {
    /// The image's bytes: those of an image inside a compressed bundle must have been
    /// inflated first ([`inflate_chosen`]).
    fn bytes<'a>(&'a self, inputs: &'a [Input]) -> &'a [u8] {
        match &self.bytes {
            Bytes::Owned(bytes) => bytes,
            Bytes::Input(start, len) => &inputs[self.input][*start..*start + *len],
            Bytes::Stream(_) | Bytes::Archived(..) | Bytes::Cuda(..) => &[],
        }
    }

    /// The contents of a CUDA entry's payload ([`Bytes::Cuda`]), inflated and cut as
    /// NVIDIA's tools extract them; `None` for other images. An error names the file, the
    /// place and the payload's offset.
    fn cuda_contents<'a>(
        &'a self,
        config: &ExtractConfig,
        inputs: &'a [Input],
    ) -> Option<Result<std::borrow::Cow<'a, [u8]>>> {
        let Bytes::Cuda(held, stored) = &self.bytes else {
            return None;
        };
        let payload = held.get(&inputs[self.input]);
        Some(
            stored
                .contents(payload, config.max_decompressed)
                .map_err(|e| self.cuda_error(config, e)),
        )
    }

    /// The error `e` met in the payload of this CUDA entry ([`Bytes::Cuda`]), naming the
    /// file, the place and the offset in the file.
    fn cuda_error(&self, config: &ExtractConfig, e: crate::format::Error) -> Error {
        let e = match &self.bytes {
            Bytes::Cuda(Held::Input(start, _), _) => e.rebased(*start as u64),
            _ => e,
        };
        let path = &config.files[self.input];
        match self.place() {
            place if place.is_empty() => Error::format(path, e),
            place => Error::format_in(path, place, e),
        }
    }

    /// Where the image lies, for errors: member and section, as a scan names them.
    fn place(&self) -> String {
        let mut parts = Vec::new();
        if let Some(member) = &self.image.member {
            parts.push(format!("member '{member}'"));
        }
        if let Some(section) = &self.image.section {
            parts.push(format!("section '{section}'"));
        }
        parts.join(", ")
    }
}

/// One written file and the image it holds.
#[derive(Debug, Clone)]
pub struct Extracted {
    /// The file written.
    pub path: PathBuf,
    /// The image.
    pub image: Image,
    /// How a device asked for loads it: natively, or, its translation unit having no native
    /// code for it, as a generic target's code or as SPIR-V.
    pub via: Via,
    /// The target ID asked for that chose it.
    pub asked: String,
    /// For a device's pick (`--device`), the number of the bundle it came from, counting the
    /// bundles of its input file from 1 in file order.
    pub bundle: Option<usize>,
    /// Whether it is a device's pick (`--device`) rather than code a target ID asked for
    /// (`--arch`) loads.
    pub device_pick: bool,
}

fn stem(path: &Path) -> String {
    path.file_name()
        .map(|n| n.to_string_lossy().into_owned())
        .unwrap_or_else(|| "input".into())
}

/// What an extraction did.
#[derive(Debug)]
pub struct Extraction {
    /// The problems found in the inputs (damaged sections), in the order found, whether or not
    /// the extraction succeeded: they do not stop the extraction of the rest, and they are
    /// what `ls` reports for the same files.
    pub problems: Vec<Error>,
    /// The files written, or why nothing was.
    pub result: Result<Vec<Extracted>>,
    /// What was asked for and not found: a target ID or device with nothing in a file, a
    /// device that loads nothing from a bundle, and why.
    pub missing: Vec<String>,
}

/// Extracts every image `config` asks for. Problems in the inputs are returned beside the
/// result, whatever it is: a file that cannot be read, or whose device code cannot be found,
/// is one of them, and the other files are still extracted from; so is a file whose images
/// cannot be written (a compressed bundle found damaged as it is inflated): none of its images
/// is written. The outputs are put in place together, once all are written; when no image
/// matches, that is an error.
#[tracing::instrument(skip_all, fields(files = ?config.files, targets = ?config.arches))]
pub fn extract(config: &ExtractConfig, progress: &dyn Progress) -> Extraction {
    extract_reporting(config, &(), progress)
}

/// [`extract`], `files` told of each file read (the files are read in parallel, on the
/// current rayon pool), `bytes` of the bytes written.
pub fn extract_reporting(
    config: &ExtractConfig,
    files: &dyn Progress,
    bytes: &dyn Progress,
) -> Extraction {
    let mut problems = Vec::new();
    let mut missing = Vec::new();
    let result = extract_noting(config, files, bytes, &mut problems, &mut missing);
    Extraction {
        problems,
        result,
        missing,
    }
}

/// What scanning one input found: the images chosen, what the target IDs and devices asked
/// for found, and the damage met.
type Scanned = Result<(Vec<Chosen>, Found, Vec<Error>)>;

/// Up to how many inputs keep their descriptors for the kernel to copy images from them.
const DESCRIPTORS_KEPT_UP_TO: usize = 32;

/// [`extract`], adding the problems found in the inputs to `problems`.
fn extract_noting(
    config: &ExtractConfig,
    files: &dyn Progress,
    progress: &dyn Progress,
    problems: &mut Vec<Error>,
    missing: &mut Vec<String>,
) -> Result<Vec<Extracted>> {
    // Every input stays mapped until the outputs are written; past a few, their descriptors
    // are closed as they are opened, so that a tree of any size fits the descriptor limit.
    let many = config.files.len() > DESCRIPTORS_KEPT_UP_TO;
    let opened: Vec<Result<Input>> = config
        .files
        .par_iter()
        .map(|p| {
            let input = Input::open(p)?;
            Ok(if many {
                input.without_descriptor()
            } else {
                input
            })
        })
        .collect();
    let mut readable = Vec::new();
    let mut inputs: Vec<Input> = Vec::new();
    let mut unreadable = Vec::new();
    for (path, input) in config.files.iter().zip(opened) {
        match input {
            Ok(input) => {
                readable.push(path.clone());
                inputs.push(input);
            }
            Err(e) => unreadable.push(e),
        }
    }
    // Files that could not be read, or not scanned: when it is every file, the last one's
    // error is the result, as it is for a single file.
    let mut failed = unreadable.len();
    let all = config.files.len();
    problems.append(&mut unreadable);
    // From here on the inputs are the files that could be opened.
    let config = &ExtractConfig {
        files: readable,
        ..config.clone()
    };
    let new_found = || Found {
        arches: vec![false; config.arches.len()],
        devices: vec![false; config.devices.len()],
        missing: Vec::new(),
    };
    // The scans, the bulk of the reading, run in parallel; what they found is put together
    // in the order of the files.
    files.start(inputs.len() as u64);
    let scanned: Vec<Option<Scanned>> = config
        .files
        .par_iter()
        .zip(&inputs)
        .enumerate()
        .map(|(index, (path, input))| {
            let scanned = (!input.starts_with(&kpack_format::MAGIC)).then(|| {
                let _file = tracing::info_span!("file", file = %path.display()).entered();
                let mut chosen = Vec::new();
                let mut found = new_found();
                choose(config, index, path, input, &mut chosen, &mut found)
                    .map(|problems| (chosen, found, problems))
            });
            files.advance(1);
            scanned
        })
        .collect();
    files.finish();
    let mut chosen: Vec<Chosen> = Vec::new();
    let mut archives = ArchiveFiles::new();
    let mut found = new_found();
    for (index, ((path, input), scanned)) in
        config.files.iter().zip(&inputs).zip(scanned).enumerate()
    {
        let _file = tracing::info_span!("file", file = %path.display()).entered();
        let Some(scanned) = scanned else {
            let picked = kpack::choose_in_archive(
                config,
                index,
                path,
                &mut archives,
                &mut chosen,
                &mut found,
            );
            if let Err(e) = picked {
                failed += 1;
                problems.push(e);
            }
            continue;
        };
        match scanned {
            Ok((mut theirs, their_found, their_problems)) => {
                chosen.append(&mut theirs);
                found.add(their_found);
                problems.extend(their_problems);
            }
            Err(e) => {
                failed += 1;
                problems.push(e);
                continue;
            }
        }
        problems.extend(kpack::choose_in_split_binary(
            config,
            index,
            path,
            input,
            &mut archives,
            &mut chosen,
            &mut found,
        ));
    }
    // A device that found nothing anywhere is named once, not once per bundle, unless a
    // bundle gave it nothing for a reason other than having no code for it.
    let explained = found
        .missing
        .into_iter()
        .filter(|(device, always, _)| found.devices.get(*device) == Some(&true) || *always);
    let explained: Vec<String> = explained.map(|(_, _, line)| line).collect();
    if failed == all {
        if let Some(last) = problems.pop() {
            return Err(last);
        }
    }
    if chosen.is_empty() {
        missing.extend(explained);
        return Err(nothing_chosen(
            config,
            config.arches.iter().chain(&config.devices),
        ));
    }
    let targets = config.arches.iter().zip(&found.arches);
    let devices = config.devices.iter().zip(&found.devices);
    let unfound: Vec<&TargetIdBuf> = targets
        .chain(devices)
        .filter(|(_, hit)| !**hit)
        .map(|(t, _)| t)
        .collect();
    if !unfound.is_empty() {
        missing.push(nothing_chosen(config, unfound).to_string());
    }
    missing.extend(explained);
    if config.output.extension().is_some_and(|e| e == "a") {
        return write_device_archive(config, &inputs, &archives, chosen);
    }
    write_files(config, &inputs, &archives, chosen, progress, problems)
}

/// Scans the input `index` (`path`) and adds the images `config` asks for to `chosen`, in the
/// order found; returns the damage found on the way.
fn choose(
    config: &ExtractConfig,
    index: usize,
    path: &Path,
    input: &Input,
    chosen: &mut Vec<Chosen>,
    found: &mut Found,
) -> Result<Vec<Error>> {
    let name = path.to_string_lossy().into_owned();
    tracing::debug!(size = input.len(), "scanning");
    // Images that may be chosen, with their unit and target ID: which are is known only once
    // a unit is seen whole.
    let mut candidates: Vec<(usize, String, Chosen)> = Vec::new();
    let mut bundles: BTreeMap<usize, Vec<SeenEntry>> = BTreeMap::new();
    let mut fatbins: BTreeMap<usize, Vec<Chosen>> = BTreeMap::new();
    let mut cuda_names = CudaNames::new(path, config.devices.iter().any(is_cuda_device));
    // Compressed bundles are inflated up to their bundle's header: which images to write
    // is known from their IDs, and only their streams are inflated, once chosen.
    let problems = scan_reading(
        path,
        input,
        Places::Everywhere,
        config.max_decompressed,
        Reading::Headers,
        &mut |found: &DeviceImage<'_>| {
            let cuda_name = cuda_names.next(found);
            let make = || {
                let mut c = candidate(&name, index, input, found);
                c.name.clone_from(&cuda_name);
                c
            };
            if cuda_names.for_devices && cuda_name.is_some() && passes_filters(config, found.target)
            {
                fatbins.entry(found.unit).or_default().push(make());
            }
            if !config.devices.is_empty() {
                if let Some(id) = found.origin.entry_id() {
                    bundles.entry(found.unit).or_default().push(SeenEntry {
                        id: id.to_string(),
                        size: found.size,
                        compressed: found.compressed,
                        chosen: (runtime_may_pick(id) && passes_filters(config, found.target))
                            .then(|| candidate(&name, index, input, found)),
                    });
                }
            }
            let stored = found.target.target_id();
            if !passes_filters(config, found.target)
                || !stored.is_some_and(|stored| may_be_chosen(config, &stored))
            {
                tracing::debug!(
                    offset = found.offset,
                    "passed over {}",
                    found.target.target_id
                );
                return;
            }
            candidates.push((found.unit, found.target.target_id.clone(), make()));
        },
    )?;
    let mut units: BTreeMap<usize, Vec<usize>> = BTreeMap::new();
    for (i, (unit, _, _)) in candidates.iter().enumerate() {
        units.entry(*unit).or_default().push(i);
    }
    let mut verdicts: Vec<Option<(Via, usize)>> = vec![None; candidates.len()];
    for members in units.values() {
        let ids: Vec<Option<TargetId<'_>>> = members
            .iter()
            .map(|&i| TargetId::parse_syntax(&candidates[i].1))
            .collect();
        for (&i, verdict) in members
            .iter()
            .zip(chosen_in_unit(config, &ids, &mut found.arches))
        {
            verdicts[i] = verdict;
        }
    }

    for ((_, _, mut c), verdict) in candidates.into_iter().zip(verdicts) {
        let Some((via, asked)) = verdict else {
            continue;
        };
        c.via = via;
        c.asked = config.arches[asked].to_string();
        tracing::info!(
            member = c.image.member,
            section = c.image.section,
            offset = c.image.offset,
            size = c.image.size,
            via = via.name(),
            "chose {} for {}",
            c.label,
            c.asked
        );
        chosen.push(c);
    }
    runtime_picks(config, &name, bundles, chosen, found);
    driver_picks(config, &name, fatbins, chosen, found);
    Ok(problems)
}

/// Whether `device` is a CUDA device (`sm_86`), which `--device` takes by the CUDA driver's
/// rule, not the HIP runtime's.
fn is_cuda_device(device: &TargetIdBuf) -> bool {
    cuda::is_cuda_target(device.as_str())
}

/// The names cuobjdump gives the entries of CUDA fat binaries in one file: the file's name
/// without its last extension (an archive member's, for a member), the entry's number among
/// the file's entries of its kind, and its SM (a family cubin's without the `f`, PTX's as
/// `sm_XY`): `libcurand.so.12.sm_80` (`.cubin` or `.ptx` follows).
struct CudaNames {
    stem: String,
    cubins: usize,
    ptx: usize,
    /// Whether a CUDA device was asked for (`--device`): its fat binaries are kept whole
    /// until the scan ends.
    for_devices: bool,
}

impl CudaNames {
    fn new(path: &Path, for_devices: bool) -> CudaNames {
        CudaNames {
            stem: cuobjdump_stem(&stem(path)),
            cubins: 0,
            ptx: 0,
            for_devices,
        }
    }

    /// The name of `found`, counted, when it is a CUDA entry.
    fn next(&mut self, found: &DeviceImage<'_>) -> Option<String> {
        let Origin::CudaEntry(entry) = found.origin else {
            return None;
        };
        let n = match entry.kind {
            EntryKind::Ptx => &mut self.ptx,
            _ => &mut self.cubins,
        };
        *n += 1;
        let stem = match found.members.last() {
            Some(member) => cuobjdump_stem(member),
            None => self.stem.clone(),
        };
        let sm = entry.sm();
        Some(format!("{stem}.{n}.{}", sm.trim_end_matches('f')))
    }
}

/// A file name without its last extension, as cuobjdump names what it extracts.
fn cuobjdump_stem(name: &str) -> String {
    match name.rsplit_once('.') {
        Some((stem, _)) if !stem.is_empty() => stem.to_string(),
        _ => name.to_string(),
    }
}

/// Adds to `chosen` what the CUDA driver loads for each CUDA device of `config.devices` from
/// each fat binary (by translation unit, in file order) of the file `name`: the cubin closest
/// to the device, else the newest PTX it may compile ([`cuda::driver_pick`]); notes in
/// `found` the devices that load something and the fat binaries a device loads nothing from.
fn driver_picks(
    config: &ExtractConfig,
    name: &str,
    fatbins: BTreeMap<usize, Vec<Chosen>>,
    chosen: &mut Vec<Chosen>,
    found: &mut Found,
) {
    for (d, device) in config
        .devices
        .iter()
        .enumerate()
        .filter(|(_, d)| is_cuda_device(d))
    {
        for (number, entries) in (1..).zip(fatbins.values()) {
            let names: Vec<&str> = entries.iter().map(|c| c.image.arch.as_str()).collect();
            let Some((pick, via)) = cuda::driver_load(device.as_str(), &names) else {
                found.missing.push((
                    d,
                    false,
                    format!(
                        "{device} loads nothing from CUDA fat binary {number} of '{name}': no cubin or PTX it runs"
                    ),
                ));
                continue;
            };
            if let Some(hit) = found.devices.get_mut(d) {
                *hit = true;
            }
            let mut c = entries[pick].clone();
            tracing::info!(
                fatbin = number,
                via = via.name(),
                "{device} loads {}",
                c.image.arch
            );
            c.via = via;
            c.asked = device.to_string();
            c.bundle = Some(number);
            chosen.push(c);
        }
    }
}

/// What the target IDs and devices asked for found, over all the files.
struct Found {
    /// Whether each `--arch` found an image.
    arches: Vec<bool>,
    /// Whether each `--device` loads something from some bundle.
    devices: Vec<bool>,
    /// Each bundle or code object a device (its index) loads nothing from, whether to say so
    /// even when the device found nothing anywhere (it is not merely code for others), and
    /// the line that says so.
    missing: Vec<(usize, bool, String)>,
}

impl Found {
    /// Adds what another file's scan found, `other`, after what is here.
    fn add(&mut self, other: Found) {
        for (hit, theirs) in self.arches.iter_mut().zip(other.arches) {
            *hit |= theirs;
        }
        for (hit, theirs) in self.devices.iter_mut().zip(other.devices) {
            *hit |= theirs;
        }
        self.missing.extend(other.missing);
    }
}

/// One entry of a bundle, kept until the bundle is seen whole.
struct SeenEntry {
    id: String,
    size: u64,
    compressed: bool,
    /// The image, ready to write, for the entries the runtime may pick.
    chosen: Option<Chosen>,
}

/// Whether the runtime may pick the entry `id` for some device: its kind is one comgr or the
/// bundler gives a HIP request (`hip`, `hipv4`, `hcc`, `openmp`).
fn runtime_may_pick(id: &str) -> bool {
    matches!(
        id.split('-').next(),
        Some("hip" | "hipv4" | "hcc" | "openmp")
    )
}

/// Adds to `chosen` what the runtime loads for each of `config.devices` from each bundle of
/// the file `name`, and notes in `found` the devices that load something and the bundles a
/// device loads nothing from.
fn runtime_picks(
    config: &ExtractConfig,
    name: &str,
    bundles: BTreeMap<usize, Vec<SeenEntry>>,
    chosen: &mut Vec<Chosen>,
    found: &mut Found,
) {
    for (number, entries) in (1..).zip(bundles.into_values()) {
        let compressed = entries.first().is_some_and(|e| e.compressed);
        let bundle = runtime::Bundle::from_entries(
            entries.iter().map(|e| (e.id.as_str(), e.size)),
            compressed,
        );
        let hip: Vec<(usize, TargetIdBuf)> = config
            .devices
            .iter()
            .cloned()
            .enumerate()
            .filter(|(_, device)| !is_cuda_device(device))
            .collect();
        if hip.is_empty() {
            continue;
        }
        let devices: Vec<TargetIdBuf> = hip.iter().map(|(_, device)| device.clone()).collect();
        let loads = runtime::loads(&devices, &bundle);
        for ((d, device), load) in hip.iter().map(|(d, device)| (*d, device)).zip(loads) {
            let (index, via) = match load {
                Load::Entry(index, via) => (index, via),
                Load::Nothing(why) => {
                    found.missing.push((
                        d,
                        why != Why::NoCompatibleEntry,
                        lacking(device, number, name, why),
                    ));
                    continue;
                }
            };
            if let Some(hit) = found.devices.get_mut(d) {
                *hit = true;
            }
            let Some(seen) = entries.get(index) else {
                continue;
            };
            let Some(mut c) = seen.chosen.clone() else {
                continue;
            };
            tracing::info!(
                bundle = number,
                via = via.name(),
                "{device} loads {}",
                seen.id
            );
            c.label = format!("bundle{number}-{}-for-{device}", seen.id);
            c.via = via;
            c.asked = device.to_string();
            c.bundle = Some(number);
            c.device_pick = true;
            chosen.push(c);
        }
    }
}

/// The warning for a device that loads nothing from bundle `number` of the file `name`.
fn lacking(device: &TargetIdBuf, number: usize, name: &str, why: Why) -> String {
    format!(
        "{device} loads nothing from bundle {number} of '{name}': {}",
        why.describe()
    )
}

/// An image found, ready to be written if it is chosen.
fn candidate(name: &str, index: usize, input: &Input, found: &DeviceImage<'_>) -> Chosen {
    let image = ls::record(name, found);
    let label = match found.origin.entry_id() {
        Some(id) => id.to_string(),
        None => format!("{}-{}-{}", image.offload_kind, image.triple, image.arch),
    };
    let ext = match found.origin {
        Origin::CudaEntry(entry) if entry.kind == EntryKind::Ptx => "ptx",
        Origin::CudaEntry(_) => "cubin",
        _ => extension(&image, found.data),
    };
    let bytes = match found.stream {
        Some(stream) => Bytes::Stream(Streamed {
            bundle: match offset_within(input, stream.bundle) {
                Some(start) => Held::Input(start, stream.bundle.len()),
                None => Held::Owned(stream.bundle.into()),
            },
            at: stream.offset,
            start: stream.start,
            end: stream.end,
        }),
        None => match found.origin {
            Origin::CudaEntry(entry) => Bytes::Cuda(
                match offset_within(input, entry.payload) {
                    Some(start) => Held::Input(start, entry.payload.len()),
                    // Inside a compressed container: held, as stored.
                    None => Held::Owned(entry.payload.into()),
                },
                entry.stored(),
            ),
            _ => match found.offset.and_then(|_| offset_within(input, found.data)) {
                Some(start) => Bytes::Input(start, found.data.len()),
                None => Bytes::Owned(found.data.to_vec()),
            },
        },
    };
    Chosen {
        member: found.members.last().cloned(),
        bytes,
        input: index,
        label,
        ext,
        image,
        via: Via::Native,
        asked: String::new(),
        bundle: None,
        device_pick: false,
        name: None,
    }
}

/// The error for `targets` finding nothing to write in any of the files.
fn nothing_chosen<'t>(
    config: &ExtractConfig,
    targets: impl IntoIterator<Item = &'t TargetIdBuf>,
) -> Error {
    let files: Vec<String> = config
        .files
        .iter()
        .map(|p| format!("'{}'", crate::io::shown(p)))
        .collect();
    let arches: Vec<&str> = targets.into_iter().map(TargetIdBuf::as_str).collect();
    Error::msg(format!(
        "no device image for {} in {}",
        arches.join(", "),
        files.join(", ")
    ))
}

/// Writes the chosen images as the members of one device archive, `config.output`.
fn write_device_archive(
    config: &ExtractConfig,
    inputs: &[Input],
    archives: &ArchiveFiles,
    mut chosen: Vec<Chosen>,
) -> Result<Vec<Extracted>> {
    inflate_chosen(config, inputs, archives, &mut chosen)?;
    let members: Vec<(String, &[u8])> = chosen
        .iter()
        .map(|c| {
            let name = match &c.image.kpack {
                // A code object of a kpack archive: named as the bundle entry it was, after
                // its key (no `/` may stay in a member's name).
                Some(k) => {
                    let member = safe_name(&k.key).replace('.', "_");
                    let entry = format!("hipv4-{}--{}", c.image.triple, c.image.arch);
                    device_member_name(&member, &entry, &c.image.arch)
                }
                None => {
                    let member = c
                        .member
                        .clone()
                        .unwrap_or_else(|| stem(&config.files[c.input]));
                    device_member_name(&member, &c.label, &c.image.arch)
                }
            };
            (name, c.bytes(inputs))
        })
        .collect();
    for (name, _) in &members {
        tracing::info!(archive = %config.output.display(), "writing member {name}");
    }
    let refs: Vec<(&str, &[u8])> = members.iter().map(|(n, d)| (n.as_str(), *d)).collect();
    let bytes = write_archive(&config.output, &refs)?;
    let mut out = Output::create(&config.output)?;
    out.write_bytes(&bytes)?;
    out.commit()?;
    Ok(chosen
        .into_iter()
        .map(|mut c| Extracted {
            path: config.output.clone(),
            image: {
                if let Bytes::Owned(bytes) = &c.bytes {
                    c.image.size = bytes.len() as u64;
                }
                c.image
            },
            via: c.via,
            asked: c.asked,
            bundle: c.bundle,
            device_pick: c.device_pick,
        })
        .collect())
}

/// The chosen images inside compressed bundles, by compressed bundle: the indices in
/// `chosen` of the images of each, so that each stream is inflated once for all of them.
fn stream_groups(chosen: &[Chosen]) -> Vec<Vec<usize>> {
    let mut groups: BTreeMap<(usize, usize, usize), Vec<usize>> = BTreeMap::new();
    for (i, c) in chosen.iter().enumerate() {
        if let Bytes::Stream(streamed) = &c.bytes {
            // A compressed bundle held apart (not in the file) is inflated for each image.
            let key = match streamed.bundle {
                Held::Input(start, _) => (c.input, start, 0),
                Held::Owned(_) => (c.input, i, 1),
            };
            groups.entry(key).or_default().push(i);
        }
    }
    groups.into_values().collect()
}

/// Inflates the compressed bundle that holds the images `group` (indices in `chosen`, all
/// of one compressed bundle) once, only up to the last byte any of them needs and within
/// `budget`, and hands `each` every image's bytes in order with the image's position in
/// `group`. An error names the file, the section and the offset.
fn inflate_group(
    config: &ExtractConfig,
    inputs: &[Input],
    chosen: &[Chosen],
    group: &[usize],
    budget: &Budget,
    mut each: impl FnMut(usize, &[u8]) -> Result<()>,
) -> Result<()> {
    let streams: Vec<&Streamed> = group
        .iter()
        .filter_map(|&i| match &chosen[i].bytes {
            Bytes::Stream(streamed) => Some(streamed),
            Bytes::Input(..) | Bytes::Owned(_) | Bytes::Archived(..) | Bytes::Cuda(..) => None,
        })
        .collect();
    let (Some(&first), Some(streamed)) = (group.first(), streams.first()) else {
        return Ok(());
    };
    let c = &chosen[first];
    let path = &config.files[c.input];
    let fail = |e: crate::format::Error| {
        let e = match streamed.at {
            Some(at) => e.rebased(at),
            None => e,
        };
        match c.place() {
            place if place.is_empty() => Error::format(path, e),
            place => Error::format_in(path, place, e),
        }
    };
    let bytes = streamed.bundle.get(&inputs[c.input]);
    let compressed = CompressedBundle::parse(bytes)
        .map_err(fail)?
        .ok_or_else(|| fail(crate::format::Error::new(0, ErrorKind::NotAContainer)))?;
    let ranges: Vec<(u64, u64)> = streams.iter().map(|s| (s.start, s.end)).collect();
    let _span = tracing::debug_span!("inflating", offset = streamed.at).entered();
    // An error writing stops the inflation; it is the error returned.
    let mut stopped = None;
    let inflated = budget.run(memory_of(&compressed), |decoding| {
        each_range(
            &compressed,
            config.max_decompressed,
            &ranges,
            decoding,
            |k, piece| {
                each(k, piece).map_err(|e| {
                    stopped = Some(e);
                    crate::format::Error::new(0, ErrorKind::Decompress("stopped".into()))
                })
            },
        )
    });
    inputs[c.input].release(bytes);
    match stopped {
        Some(e) => Err(e),
        None => inflated.map_err(fail),
    }
}

/// Inflates the chosen images that are inside compressed bundles, in parallel across
/// bundles, and holds them: only those images, never a whole stream. Holds those of `.kpack`
/// archives too, inflated if stored compressed.
fn inflate_chosen(
    config: &ExtractConfig,
    inputs: &[Input],
    archives: &ArchiveFiles,
    chosen: &mut [Chosen],
) -> Result<()> {
    let cuda: Vec<Option<Vec<u8>>> = chosen
        .par_iter()
        .map(|c| {
            c.cuda_contents(config, inputs)
                .map(|contents| contents.map(std::borrow::Cow::into_owned))
                .transpose()
        })
        .collect::<Result<_>>()?;
    for (c, held) in chosen.iter_mut().zip(cuda) {
        if let Some(held) = held {
            c.bytes = Bytes::Owned(held);
        }
    }
    let budget = Budget::new();
    let archived: Vec<(usize, Vec<u8>)> = chosen
        .par_iter()
        .enumerate()
        .filter_map(|(i, c)| match &c.bytes {
            Bytes::Archived(number, code) => Some((i, *number, code)),
            _ => None,
        })
        .map(|(i, number, code)| {
            let mut held = Vec::new();
            kpack::code_object(
                archives,
                number,
                code,
                &budget,
                config.max_decompressed,
                &mut |piece| {
                    held.extend_from_slice(piece);
                    Ok(())
                },
            )?;
            Ok((i, held))
        })
        .collect::<Result<_>>()?;
    for (i, bytes) in archived {
        chosen[i].bytes = Bytes::Owned(bytes);
    }
    let groups = stream_groups(chosen);
    let held: Vec<Vec<Vec<u8>>> = groups
        .par_iter()
        .map(|group| {
            let mut held = vec![Vec::new(); group.len()];
            inflate_group(config, inputs, chosen, group, &budget, |k, piece| {
                held[k].extend_from_slice(piece);
                Ok(())
            })?;
            Ok(held)
        })
        .collect::<Result<_>>()?;
    for (group, held) in groups.iter().zip(held) {
        for (&i, bytes) in group.iter().zip(held) {
            chosen[i].bytes = Bytes::Owned(bytes);
        }
    }
    Ok(())
}

/// The file each chosen image is written to, before its extension: names say where it came
/// from and what it is; a number keeps them apart.
fn output_stems(config: &ExtractConfig, chosen: &[Chosen]) -> Vec<PathBuf> {
    let mut seen: BTreeMap<String, usize> = BTreeMap::new();
    chosen
        .iter()
        .map(|c| {
            if let Some(name) = &c.name {
                return config.output.join(safe_name(name));
            }
            let mut name = stem(&config.files[c.input]);
            if let Some(member) = &c.member {
                name.push('-');
                name.push_str(member);
            }
            name.push('-');
            name.push_str(&c.label);
            let mut name = safe_name(&name);
            let count = seen.entry(name.clone()).or_insert(0);
            *count += 1;
            if *count > 1 {
                name.push_str(&format!("-{count}"));
            }
            config.output.join(name)
        })
        .collect()
}

/// `stem` with `.ext` after it (a stem may hold dots of its own).
fn with_extension(stem: &Path, ext: &str) -> PathBuf {
    let mut name = stem.as_os_str().to_owned();
    name.push(".");
    name.push(ext);
    PathBuf::from(name)
}

/// Writes each chosen image to its own file in the folder `config.output`, in parallel (the
/// images of one compressed bundle together, as its stream is inflated), and puts them in
/// place only when every one is written.
fn write_files(
    config: &ExtractConfig,
    inputs: &[Input],
    archives: &ArchiveFiles,
    chosen: Vec<Chosen>,
    progress: &dyn Progress,
    problems: &mut Vec<Error>,
) -> Result<Vec<Extracted>> {
    // The folders made for the outputs go again when nothing is written: no trace of a
    // failed run is left.
    let missing: Vec<PathBuf> = config
        .output
        .ancestors()
        .take_while(|folder| !folder.as_os_str().is_empty() && !folder.exists())
        .map(Path::to_path_buf)
        .collect();
    std::fs::create_dir_all(&config.output).map_err(|e| Error::io(&config.output, e))?;
    let written = write_into_folder(config, inputs, archives, chosen, progress, problems);
    if written.is_err() {
        for folder in &missing {
            // Only an empty folder is removed: nothing else is touched.
            let _ = std::fs::remove_dir(folder);
        }
    }
    written
}

/// [`write_files`] once the folder exists. An image that cannot be written (its compressed
/// bundle or archive turns out damaged when inflated) takes every image of its input file
/// with it: the error naming it goes to `problems`, and the other files' images are written.
/// When no file is left, the first file's error is the result.
fn write_into_folder(
    config: &ExtractConfig,
    inputs: &[Input],
    archives: &ArchiveFiles,
    chosen: Vec<Chosen>,
    progress: &dyn Progress,
    problems: &mut Vec<Error>,
) -> Result<Vec<Extracted>> {
    let stems = output_stems(config, &chosen);
    progress.start(chosen.iter().map(|c| c.image.size).sum());
    let budget = Budget::new();
    let singles = (0..chosen.len()).filter(|&i| !matches!(chosen[i].bytes, Bytes::Stream(_)));
    let jobs: Vec<Vec<usize>> = singles
        .map(|i| vec![i])
        .chain(stream_groups(&chosen))
        .collect();
    // Each output is closed once written: as many files are open as threads write, and the
    // images of the compressed bundles they inflate.
    let results: Vec<Result<Vec<Written>>> = jobs
        .par_iter()
        .map(|job| {
            let writer = Writer {
                config,
                inputs,
                archives,
                chosen: &chosen,
                stems: &stems,
                budget: &budget,
                progress,
            };
            writer.write(job)
        })
        .collect();
    // The first error of each input file that failed, by file.
    let mut failed: BTreeMap<usize, Error> = BTreeMap::new();
    let mut written: Vec<Written> = Vec::new();
    for (job, result) in jobs.iter().zip(results) {
        match result {
            Ok(images) => written.extend(images),
            Err(e) => {
                failed.entry(chosen[job[0]].input).or_insert(e);
            }
        }
    }
    let with_images: std::collections::BTreeSet<usize> = chosen.iter().map(|c| c.input).collect();
    if !failed.is_empty() && failed.len() == with_images.len() {
        let mut errors = std::mem::take(&mut failed).into_values();
        if let Some(first) = errors.next() {
            problems.extend(errors);
            return Err(first);
        }
    }
    written.retain(|w| !failed.contains_key(&chosen[w.index].input));
    written.sort_by_key(|w| w.index);
    let paths: Vec<(PathBuf, Option<u64>)> =
        written.iter().map(|w| (w.path.clone(), w.size)).collect();
    crate::io::place_all(written.into_iter().map(|w| w.closed).collect())?;
    progress.finish();
    let kept: Vec<Chosen> = chosen
        .into_iter()
        .filter(|c| !failed.contains_key(&c.input))
        .collect();
    problems.extend(failed.into_values());
    Ok(kept
        .into_iter()
        .zip(paths)
        .map(|(mut c, (path, size))| {
            tracing::info!(from = %c.image.file, "writing {} to {}", c.label, path.display());
            c.image.size = size.unwrap_or(c.image.size);
            Extracted {
                path,
                image: c.image,
                via: c.via,
                asked: c.asked,
                bundle: c.bundle,
                device_pick: c.device_pick,
            }
        })
        .collect())
}

/// One image written, not yet in place.
struct Written {
    /// Its index among the chosen.
    index: usize,
    path: PathBuf,
    closed: Closed,
    /// The bytes written, when they differ from what the listing says (a CUDA entry's
    /// contents, cut from its padded payload).
    size: Option<u64>,
}

/// What writing one job (an image, or the images of one compressed bundle) needs.
struct Writer<'w> {
    config: &'w ExtractConfig,
    inputs: &'w [Input],
    archives: &'w ArchiveFiles,
    chosen: &'w [Chosen],
    stems: &'w [PathBuf],
    budget: &'w Budget,
    progress: &'w dyn Progress,
}

impl Writer<'_> {
    /// Writes the images `job` (indices among the chosen): one stored as it is, or those of
    /// one compressed bundle, as its stream is inflated.
    fn write(&self, job: &[usize]) -> Result<Vec<Written>> {
        let mut pending: Vec<Pending> = job
            .iter()
            .map(|&index| Pending {
                index,
                head: Vec::new(),
                out: None,
                size: None,
            })
            .collect();
        match job.first().map(|&i| &self.chosen[i]) {
            Some(
                c @ Chosen {
                    bytes: Bytes::Archived(number, code),
                    ..
                },
            ) => {
                let stem = &self.stems[job[0]];
                let p = &mut pending[0];
                if let Some((input, bytes)) = kpack::stored_plain(self.archives, *number, code)? {
                    // Stored as it is: copied from the archive by the kernel.
                    let path = with_extension(stem, extension(&c.image, bytes));
                    let mut out = Output::create(&path)?;
                    out.write_part(input, bytes)?;
                    input.release(bytes);
                    self.progress.advance(bytes.len() as u64);
                    p.out = Some((path, out));
                } else {
                    let limit = self.config.max_decompressed;
                    kpack::code_object(
                        self.archives,
                        *number,
                        code,
                        self.budget,
                        limit,
                        &mut |piece| {
                            self.progress.advance(piece.len() as u64);
                            p.take(piece, c, stem)
                        },
                    )?;
                }
            }
            Some(
                c @ Chosen {
                    bytes: Bytes::Cuda(held, stored),
                    ..
                },
            ) => {
                let path = with_extension(&self.stems[job[0]], c.ext);
                let mut out = Output::create(&path)?;
                let size = self.write_cuda(c, held, stored, &mut out)?;
                pending[0].out = Some((path, out));
                pending[0].size = Some(size);
            }
            Some(c) if !matches!(c.bytes, Bytes::Stream(_)) => {
                let bytes = c.bytes(self.inputs);
                let path = with_extension(&self.stems[job[0]], c.ext);
                let mut out = Output::create(&path)?;
                out.write_part(&self.inputs[c.input], bytes)?;
                self.progress.advance(bytes.len() as u64);
                pending[0].out = Some((path, out));
            }
            _ => {
                let chosen = self.chosen;
                inflate_group(
                    self.config,
                    self.inputs,
                    chosen,
                    job,
                    self.budget,
                    |k, piece| {
                        self.progress.advance(piece.len() as u64);
                        let p = &mut pending[k];
                        p.take(piece, &chosen[p.index], &self.stems[p.index])
                    },
                )?;
            }
        }
        pending
            .into_iter()
            .map(|p| {
                let index = p.index;
                p.finish(&self.chosen[index], &self.stems[index])
            })
            .collect()
    }
}

impl Writer<'_> {
    /// Writes the contents of the CUDA entry `c`, whose payload is `held` and stored as
    /// `stored`, to `out`: copied from the input when stored plain, else inflated through a
    /// window within the budget, never held whole. Gives the bytes written.
    fn write_cuda(
        &self,
        c: &Chosen,
        held: &Held,
        stored: &Stored,
        out: &mut Output,
    ) -> Result<u64> {
        let input = &self.inputs[c.input];
        let payload = held.get(input);
        if stored.compression == Compression::None {
            let contents = c
                .cuda_contents(self.config, self.inputs)
                .unwrap_or_else(|| Ok(Default::default()))?;
            out.write_part(input, &contents)?;
            self.progress.advance(contents.len() as u64);
            return Ok(contents.len() as u64);
        }
        // An error writing stops the inflation; it is the error returned.
        let mut stopped = None;
        let limit = self.config.max_decompressed;
        let written = self.budget.run(memory_of_cuda(stored), |decoding| {
            stored.contents_to(payload, limit, decoding, &mut |piece| {
                self.progress.advance(piece.len() as u64);
                out.write_bytes(piece).map_err(|e| {
                    stopped = Some(e);
                    crate::format::Error::new(0, ErrorKind::Decompress("stopped".into()))
                })
            })
        });
        input.release(payload);
        match stopped {
            Some(e) => Err(e.into()),
            None => written.map_err(|e| c.cuda_error(self.config, e)),
        }
    }
}

/// An image being written as its stream is inflated: its first bytes are held until they
/// tell its extension (an ELF code object, bitcode, SPIR-V).
struct Pending {
    index: usize,
    head: Vec<u8>,
    out: Option<(PathBuf, Output)>,
    /// The bytes written, when known to differ from the listed size.
    size: Option<u64>,
}

/// Bytes that tell an image's kind.
const MAGIC_LEN: usize = 4;

impl Pending {
    /// Writes the next bytes of the image.
    fn take(&mut self, piece: &[u8], c: &Chosen, stem: &Path) -> Result<()> {
        if let Some((_, out)) = &mut self.out {
            return Ok(out.write_bytes(piece)?);
        }
        self.head.extend_from_slice(piece);
        if self.head.len() >= MAGIC_LEN {
            self.open(c, stem)?;
        }
        Ok(())
    }

    /// Creates the output, named by what the first bytes say, and writes them.
    fn open(&mut self, c: &Chosen, stem: &Path) -> Result<()> {
        let path = with_extension(stem, extension(&c.image, &self.head));
        let mut out = Output::create(&path)?;
        out.write_bytes(&std::mem::take(&mut self.head))?;
        self.out = Some((path, out));
        Ok(())
    }

    /// Closes the output, once every byte is written.
    fn finish(mut self, c: &Chosen, stem: &Path) -> Result<Written> {
        let (path, out) = match self.out.take() {
            Some(open) => open,
            None => {
                self.open(c, stem)?;
                match self.out.take() {
                    Some(open) => open,
                    None => return Err(Error::msg("an output was not opened")),
                }
            }
        };
        Ok(Written {
            index: self.index,
            path,
            closed: out.close()?,
            size: self.size,
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_never_leave_the_folder() {
        assert_eq!(safe_name("../../etc/passwd"), "_.._etc_passwd");
        assert_eq!(safe_name("a/b:c d"), "a_b_c_d");
        assert_eq!(
            safe_name("hip-amdgcn-amd-amdhsa--gfx90a:xnack+"),
            "hip-amdgcn-amd-amdhsa--gfx90a_xnack+"
        );
    }
}
