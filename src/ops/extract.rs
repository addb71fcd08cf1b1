//! Extracting the device images a GPU can load from any file: objects, programs, shared
//! libraries, archives, bundles, offload binaries; or, for the GPUs of one machine, the one
//! code object the HIP runtime loads from each bundle ([`crate::format::runtime`]).

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use rayon::prelude::*;

use crate::container::archive::write_archive;
use crate::container::scan::{scan, DeviceImage, Places};
use crate::error::{Error, Result};
use crate::format::ccob::DEFAULT_MAX_DECOMPRESSED;
use crate::format::image_target::{ImageTarget, Producer};
use crate::format::loads::{loaded_by, may_load, Via};
use crate::format::runtime::{self, Load, Why};
use crate::format::slice::offset_within;
use crate::format::target_id::{TargetId, TargetIdBuf};
use crate::io::{Closed, Input, Output};
use crate::ops::bundler::device_member_name;
use crate::ops::ls::{self, Image};

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
#[derive(Debug, Clone, Default)]
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
    /// The bytes, when they are not a slice of the input (inflated).
    owned: Option<Vec<u8>>,
    /// Where they are in the input otherwise.
    range: (usize, usize),
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
}

impl Chosen {
    fn bytes<'a>(&'a self, inputs: &'a [Input]) -> &'a [u8] {
        match &self.owned {
            Some(bytes) => bytes,
            None => &inputs[self.input][self.range.0..self.range.0 + self.range.1],
        }
    }
}

/// Hears how the writing goes, for a progress display.
pub trait Progress: Sync {
    /// The writing starts: `bytes` in all.
    fn start(&self, bytes: u64) {
        let _ = bytes;
    }
    /// `bytes` more were written.
    fn advance(&self, bytes: u64) {
        let _ = bytes;
    }
    /// The writing is over.
    fn finish(&self) {}
}

/// No progress display.
impl Progress for () {}

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
/// result, whatever it is. Nothing is written unless everything can be; when no image matches,
/// that is an error.
#[tracing::instrument(skip_all, fields(files = ?config.files, targets = ?config.arches))]
pub fn extract(config: &ExtractConfig, progress: &dyn Progress) -> Extraction {
    let mut problems = Vec::new();
    let mut missing = Vec::new();
    let result = extract_noting(config, progress, &mut problems, &mut missing);
    Extraction {
        problems,
        result,
        missing,
    }
}

/// [`extract`], adding the problems found in the inputs to `problems`.
fn extract_noting(
    config: &ExtractConfig,
    progress: &dyn Progress,
    problems: &mut Vec<Error>,
    missing: &mut Vec<String>,
) -> Result<Vec<Extracted>> {
    let inputs: Vec<Input> = config
        .files
        .iter()
        .map(|p| Input::open(p))
        .collect::<Result<_>>()?;
    let mut chosen: Vec<Chosen> = Vec::new();
    let mut found = Found {
        arches: vec![false; config.arches.len()],
        devices: vec![false; config.devices.len()],
        missing: Vec::new(),
    };
    for (index, (path, input)) in config.files.iter().zip(&inputs).enumerate() {
        problems.extend(choose(config, index, path, input, &mut chosen, &mut found)?);
    }
    // A device that found nothing anywhere is named once, not once per bundle, unless a
    // bundle gave it nothing for a reason other than having no code for it.
    let explained = found.missing.into_iter().filter(|(device, why, _)| {
        found.devices.get(*device) == Some(&true) || *why != Why::NoCompatibleEntry
    });
    let explained: Vec<String> = explained.map(|(_, _, line)| line).collect();
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
        return write_device_archive(config, &inputs, chosen);
    }
    write_files(config, &inputs, chosen, progress)
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
    let _file = tracing::info_span!("file", file = %name).entered();
    tracing::debug!(size = input.len(), "scanning");
    // Images that may be chosen, with their unit and target ID: which are is known only once
    // a unit is seen whole.
    let mut candidates: Vec<(usize, String, Chosen)> = Vec::new();
    let mut bundles: BTreeMap<usize, Vec<SeenEntry>> = BTreeMap::new();
    let problems = scan(
        path,
        input,
        Places::Everywhere,
        DEFAULT_MAX_DECOMPRESSED,
        &mut |found: &DeviceImage<'_>| {
            if !config.devices.is_empty() {
                if let Some(id) = found.origin.entry_id() {
                    bundles.entry(found.unit).or_default().push(SeenEntry {
                        id: id.to_string(),
                        size: found.data.len() as u64,
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
            candidates.push((
                found.unit,
                found.target.target_id.clone(),
                candidate(&name, index, input, found),
            ));
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
    Ok(problems)
}

/// What the target IDs and devices asked for found, over all the files.
struct Found {
    /// Whether each `--arch` found an image.
    arches: Vec<bool>,
    /// Whether each `--device` loads something from some bundle.
    devices: Vec<bool>,
    /// Each bundle a device (its index) loads nothing from, and why.
    missing: Vec<(usize, Why, String)>,
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
            entries
                .iter()
                .map(|e| runtime::Entry {
                    id: &e.id,
                    size: e.size,
                })
                .collect(),
            compressed,
        );
        let loads = runtime::loads(&config.devices, &bundle);
        for (d, (device, load)) in config.devices.iter().zip(loads).enumerate() {
            let (index, via) = match load {
                Load::Entry(index, via) => (index, via),
                Load::Nothing(why) => {
                    found
                        .missing
                        .push((d, why, lacking(device, number, name, why)));
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
    let ext = extension(&image, found.data);
    let inside = found.offset.and_then(|_| offset_within(input, found.data));
    Chosen {
        member: found.members.last().cloned(),
        owned: inside.is_none().then(|| found.data.to_vec()),
        range: inside.map_or((0, 0), |start| (start, found.data.len())),
        input: index,
        label,
        ext,
        image,
        via: Via::Native,
        asked: String::new(),
        bundle: None,
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
        .map(|p| format!("'{}'", p.display()))
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
    chosen: Vec<Chosen>,
) -> Result<Vec<Extracted>> {
    let members: Vec<(String, &[u8])> = chosen
        .iter()
        .map(|c| {
            let member = c
                .member
                .clone()
                .unwrap_or_else(|| stem(&config.files[c.input]));
            let name = device_member_name(&member, &c.label, &c.image.arch);
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
        .map(|c| Extracted {
            path: config.output.clone(),
            image: c.image,
            via: c.via,
            asked: c.asked,
            bundle: c.bundle,
        })
        .collect())
}

/// The file each chosen image is written to: names say where it came from and what it is; a
/// number keeps them apart.
fn output_names(config: &ExtractConfig, chosen: &[Chosen]) -> Vec<PathBuf> {
    let mut seen: BTreeMap<String, usize> = BTreeMap::new();
    chosen
        .iter()
        .map(|c| {
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
            config.output.join(format!("{name}.{}", c.ext))
        })
        .collect()
}

/// Writes each chosen image to its own file in the folder `config.output`, in parallel, and
/// puts them in place only when every one is written.
fn write_files(
    config: &ExtractConfig,
    inputs: &[Input],
    chosen: Vec<Chosen>,
    progress: &dyn Progress,
) -> Result<Vec<Extracted>> {
    std::fs::create_dir_all(&config.output).map_err(|e| Error::io(&config.output, e))?;
    let names = output_names(config, &chosen);
    for (c, path) in chosen.iter().zip(&names) {
        tracing::info!(from = %c.image.file, "writing {} to {}", c.label, path.display());
    }
    progress.start(chosen.iter().map(|c| c.image.size).sum());
    // Each output is closed once written: as many files are open as threads write.
    let outputs: Vec<Closed> = chosen
        .par_iter()
        .zip(&names)
        .map(|(c, path)| {
            let mut out = Output::create(path)?;
            let bytes = c.bytes(inputs);
            out.write_part(&inputs[c.input], bytes)?;
            progress.advance(bytes.len() as u64);
            out.close()
        })
        .collect::<Result<_>>()?;
    crate::io::place_all(outputs)?;
    progress.finish();
    Ok(chosen
        .into_iter()
        .zip(names)
        .map(|(c, path)| Extracted {
            path,
            image: c.image,
            via: c.via,
            asked: c.asked,
            bundle: c.bundle,
        })
        .collect())
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
