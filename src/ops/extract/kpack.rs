//! Extracting code objects from `.kpack` archives: those of a split binary (found where the
//! runtime looks for them) or of an archive named on the command line. `--arch` takes, per
//! code-object index, what a device with the target ID loads by the rules of
//! [`crate::loads::hip`]; `--device` takes what the kpack loader hands the runtime for the
//! device ([`crate::loads::kpack_search`]).

use std::collections::{BTreeMap, BTreeSet};
use std::path::Path;

use crate::error::{Error, Result};
use crate::format::image_target::Producer;
use crate::format::kpack::{inflate_frame, split_toc_key, toc_key, KernelEntry, Scheme};
use crate::host::kpack::{
    runtime_path, split_binary, stored_code_objects, ArchiveFiles, SplitBinary, StoredCodeObject,
};
use crate::io::Input;
use crate::loads::hip::Via;
use crate::loads::kpack_search::{
    compatible_targets, device_arches, pick, target_names_for, ArchiveIndex, Environment, Miss,
    Outcome,
};
use crate::loads::runtime;
use crate::ops::extract::chosen::{Bytes, Chosen, Found};
use crate::ops::extract::options::{chosen_in_unit, ExtractConfig};
use crate::ops::support::columns::ranges;
use crate::ops::support::image::ImageRecord;
use crate::ops::support::inflating::{memory_of_zstd, Budget};
use crate::target::target_id::{TargetId, TargetIdBuf};

/// The triple of the code objects archives hold.
const TRIPLE: &str = "amdgcn-amd-amdhsa";

/// Whether code objects of archives pass `config`'s triple and producer filters.
fn passes_filters(config: &ExtractConfig) -> bool {
    let triple = config
        .triple
        .as_deref()
        .is_none_or(|t| t.trim_end_matches('-') == TRIPLE);
    triple && config.kind.as_ref().is_none_or(|k| *k == Producer::Hip)
}

/// The loader's environment variables, as this process has them.
fn environment() -> Environment {
    Environment::from_vars(|name| std::env::var(name).ok())
}

/// A code object of archive `number`, ready to write if chosen, listed under the file `name`
/// (input `index`).
fn candidate(
    name: &Path,
    index: usize,
    number: usize,
    code: StoredCodeObject,
    label: String,
) -> Chosen {
    Chosen {
        image: ImageRecord::archived(name, &code),
        input: index,
        bytes: Bytes::Archived(number, code),
        label,
        member: None,
        ext: "co",
        via: Via::Native,
        asked: String::new(),
        bundle: None,
        device_pick: false,
        name: None,
    }
}

/// Adds what `config` asks for from the `.kpack` archive named as input `index` (`path`).
pub(super) fn choose_in_archive(
    config: &ExtractConfig,
    index: usize,
    path: &Path,
    archives: &mut ArchiveFiles,
    chosen: &mut Vec<Chosen>,
    found: &mut Found,
) -> Result<()> {
    let name = path;
    let number = archives.map(path)?;
    let Some((_, archive)) = archives.archive(number) else {
        return Ok(());
    };
    let codes = stored_code_objects(path, &archive, &|_| true)?;
    if !passes_filters(config) {
        return Ok(());
    }
    by_target_id(
        config,
        name,
        index,
        &[(number, codes.clone())],
        chosen,
        found,
    );
    if config.devices.is_empty() {
        return Ok(());
    }
    let index_of = ArchiveIndex::of(&archive);
    // Each key once, in table order, and the first code object of each key and processor.
    let mut keys: Vec<&str> = Vec::new();
    let mut by_key: BTreeMap<(&str, &str), &StoredCodeObject> = BTreeMap::new();
    let mut seen: BTreeSet<&str> = BTreeSet::new();
    for code in &codes {
        if seen.insert(&code.key) {
            keys.push(&code.key);
        }
        by_key.entry((&code.key, &code.arch)).or_insert(code);
    }
    for (d, device) in config.devices.iter().enumerate() {
        let arches = arches_of(device);
        let narrow = narrowed(&index_of, &arches);
        for key in &keys {
            let outcome = pick(&[(path, &narrow)], key, &arches, Miss::FallThrough);
            let Outcome::Found { arch, .. } = &outcome else {
                let why = outcome.why_not().unwrap_or_default();
                let line = format!(
                    "{device} loads nothing for {key} from '{}': {why}",
                    crate::io::shown(name)
                );
                found.missing.push((d, false, line));
                continue;
            };
            let Some(&code) = by_key.get(&(*key, arch.as_str())) else {
                continue;
            };
            chosen.push(device_pick(
                device,
                &arches,
                index,
                name,
                number,
                code.clone(),
            ));
            if let Some(hit) = found.devices.get_mut(d) {
                *hit = true;
            }
        }
    }
    Ok(())
}

/// `index` with only those of its processors a device asking for `arches` may take: the
/// search looks at no other, and with them a search for each of many keys need not walk
/// an archive's every processor.
fn narrowed(index: &ArchiveIndex, arches: &[String]) -> ArchiveIndex {
    let wanted: BTreeSet<String> = arches.iter().flat_map(|a| compatible_targets(a)).collect();
    ArchiveIndex {
        gfx_arches: index
            .gfx_arches
            .iter()
            .filter(|a| wanted.contains(*a))
            .cloned()
            .collect(),
        entries: index.entries.clone(),
    }
}

/// What the runtime asks the kpack loader for on `device`: its ISA name, then its generic
/// target's.
fn arches_of(device: &TargetIdBuf) -> Vec<String> {
    let isa = runtime::isa_name(device);
    let generic = runtime::generic_isa_name(&isa);
    device_arches(&isa, generic.as_deref())
}

/// The image of `code` (archive `number`) that `device`, asking for `arches`, loads.
fn device_pick(
    device: &TargetIdBuf,
    arches: &[String],
    index: usize,
    name: &Path,
    number: usize,
    code: StoredCodeObject,
) -> Chosen {
    // Found for a feature subset of the ISA name: native; else for the generic target.
    let native = arches
        .first()
        .is_some_and(|isa| compatible_targets(isa).contains(&code.arch));
    let label = format!("{}-{}-for-{device}", code.key, code.arch);
    tracing::info!(archive = %code.archive.display(), "{device} loads {} for {}", code.key, code.arch);
    let mut c = candidate(name, index, number, code, label);
    c.via = if native { Via::Native } else { Via::Generic };
    c.asked = device.to_string();
    c.device_pick = true;
    c
}

/// The code objects of one code-object key, each with the number of its archive.
type Unit<'a> = Vec<(usize, &'a StoredCodeObject)>;

/// Adds what `--arch` asks for among `codes` (each list from one archive, the archives in
/// search order): per code-object key, the processors stored (each once, from the first
/// archive that has it) make a translation unit, from which each target ID asked for takes
/// what a device with it loads.
fn by_target_id(
    config: &ExtractConfig,
    name: &Path,
    index: usize,
    codes: &[(usize, Vec<StoredCodeObject>)],
    chosen: &mut Vec<Chosen>,
    found: &mut Found,
) {
    if config.arches.is_empty() {
        return;
    }
    // By code-object index, then key: each unit's code objects with their archive's number.
    // A unit may hold tens of thousands of processors: the set of those it has keeps adding
    // one a lookup, not a walk of the unit.
    let mut units: BTreeMap<(Option<u64>, &str), Unit<'_>> = BTreeMap::new();
    let mut stored: BTreeSet<(Option<u64>, &str, &str)> = BTreeSet::new();
    for (number, list) in codes {
        for code in list {
            let (key, arch) = (code.key.as_str(), code.arch.as_str());
            if stored.insert((code.index, key, arch)) {
                let unit = units.entry((code.index, key)).or_default();
                unit.push((*number, code));
            }
        }
    }
    for members in units.values() {
        let ids: Vec<Option<TargetId<'_>>> = members
            .iter()
            .map(|(_, c)| TargetId::parse_syntax(&c.arch))
            .collect();
        let verdicts = chosen_in_unit(config, &ids, &mut found.arches);
        for ((number, code), verdict) in members.iter().zip(verdicts) {
            let Some((via, asked)) = verdict else {
                continue;
            };
            let label = format!("{}-{}", code.key, code.arch);
            let mut c = candidate(name, index, *number, (*code).clone(), label);
            c.via = via;
            c.asked = config.arches[asked].to_string();
            tracing::info!(archive = %code.archive.display(), "chose {} for {}", c.label, c.asked);
            chosen.push(c);
        }
    }
}

/// Adds what `config` asks for from the archives of the input `index` (`path`, read as
/// `input`) if it is a split binary; returns the damage found: a reference that does not
/// read, archives that do not.
pub(super) fn choose_in_split_binary(
    config: &ExtractConfig,
    index: usize,
    path: &Path,
    input: &Input,
    archives: &mut ArchiveFiles,
    chosen: &mut Vec<Chosen>,
    found: &mut Found,
) -> Vec<Error> {
    let split = match split_binary(path, input) {
        Ok(Some(split)) => split,
        Ok(None) => return Vec::new(),
        Err(e) => return vec![e],
    };
    if !passes_filters(config) {
        return Vec::new();
    }
    let name = path;
    let env = environment();
    let mut problems = Vec::new();
    if !config.arches.is_empty() {
        let ours = split.reference.kernel_name;
        let mut codes = Vec::new();
        // Only the archives a device that suits one of the target IDs asked for would open.
        let mut names: Vec<String> = Vec::new();
        for asked in &config.arches {
            for n in target_names_for(&asked.target_id()) {
                if !names.contains(&n) {
                    names.push(n);
                }
            }
        }
        let (numbers, mut unread) = archives.find(path, &split.reference, &env, &names);
        problems.append(&mut unread);
        for number in numbers {
            let listed = archives
                .archive(number)
                .ok_or_else(|| Error::msg("an archive mapped does not parse"))
                .and_then(|(p, archive)| {
                    stored_code_objects(p, &archive, &|e: &KernelEntry<'_>| {
                        split_toc_key(e.key).is_some_and(|(b, _)| b == ours)
                    })
                });
            match listed {
                Ok(listed) => codes.push((number, listed)),
                Err(e) => problems.push(e),
            }
        }
        by_target_id(config, name, index, &codes, chosen, found);
    }
    device_picks(config, index, path, &split, &env, archives, chosen, found);
    problems
}

/// Adds, for each device of `config` and each code object the split binary at `path` asks
/// for, the one the kpack loader finds, or notes where it looked in vain.
#[allow(clippy::too_many_arguments)]
fn device_picks(
    config: &ExtractConfig,
    index: usize,
    path: &Path,
    split: &SplitBinary<'_>,
    env: &Environment,
    archives: &mut ArchiveFiles,
    chosen: &mut Vec<Chosen>,
    found: &mut Found,
) {
    let name = path;
    let binary = runtime_path(path);
    // The keys' common part: `"<binary>#"`.
    let key = toc_key(split.reference.kernel_name, 0);
    let key = key.strip_suffix('0').unwrap_or(&key);
    for (d, device) in config.devices.iter().enumerate() {
        let arches = arches_of(device);
        // Code objects found nowhere, by why and where the loader looked.
        let mut misses: Vec<(String, Vec<usize>)> = Vec::new();
        for co in split.distinct_indices() {
            let search = archives.search(&binary, split, co, &arches, env);
            let Outcome::Found { archive, arch } = &search.outcome else {
                let why = search.outcome.why_not().unwrap_or_default();
                let tried: Vec<String> = search
                    .tried
                    .iter()
                    .map(|t| format!("{} ({})", crate::io::shown(&t.path), t.opened.describe()))
                    .collect();
                let searched = if tried.is_empty() {
                    String::new()
                } else {
                    format!("; searched {}", tried.join(", "))
                };
                let reason = format!("{why}{searched}");
                let co = usize::try_from(co).unwrap_or(usize::MAX);
                match misses.iter_mut().find(|(r, _)| *r == reason) {
                    Some((_, indices)) => indices.push(co),
                    None => misses.push((reason, vec![co])),
                }
                continue;
            };
            let code = archives
                .map(archive)
                .and_then(|number| Ok((number, archives.stored(archive, &search.key, arch)?)));
            match code {
                Ok((number, code)) => {
                    chosen.push(device_pick(device, &arches, index, name, number, code));
                    if let Some(hit) = found.devices.get_mut(d) {
                        *hit = true;
                    }
                }
                Err(e) => found.missing.push((d, true, e.to_string())),
            }
        }
        for (reason, indices) in misses {
            let noun = if indices.len() == 1 {
                "code object"
            } else {
                "code objects"
            };
            let line = format!(
                "{device} loads nothing for {noun} {} of '{}' ({key}N): {reason}",
                ranges(&indices),
                crate::io::shown(name)
            );
            found.missing.push((d, true, line));
        }
    }
}

/// The archive and the bytes of code object `code` of archive `number` when it is stored as
/// it is (`None` when compressed); the error names the archive.
pub(super) fn stored_plain<'a>(
    archives: &'a ArchiveFiles,
    number: usize,
    code: &StoredCodeObject,
) -> Result<Option<(&'a Input, &'a [u8])>> {
    if code.scheme != Scheme::None {
        return Ok(None);
    }
    let (path, input) = archives
        .get(number)
        .ok_or_else(|| Error::msg("an archive was not mapped"))?;
    Ok(Some((input, stored_bytes(path, input, code)?)))
}

/// The stored bytes of `code` in the archive `input` (at `path`).
fn stored_bytes<'a>(path: &Path, input: &'a Input, code: &StoredCodeObject) -> Result<&'a [u8]> {
    let start = usize::try_from(code.stored_offset).ok();
    start
        .zip(usize::try_from(code.stored_size).ok())
        .and_then(|(start, len)| input.get(start..start.checked_add(len)?))
        .ok_or_else(|| {
            Error::file(
                path,
                format!(
                    "code object {} @ {} lies past the end of the file",
                    crate::io::shown(&code.key),
                    crate::io::shown(&code.arch)
                ),
            )
        })
}

/// Hands `sink` the bytes of code object `code` of archive `number`, in order: those stored,
/// or, stored compressed, those its frame inflates to, within `budget` and `limit`. Errors
/// name the archive and the offset.
pub(super) fn code_object(
    archives: &ArchiveFiles,
    number: usize,
    code: &StoredCodeObject,
    budget: &Budget,
    limit: u64,
    sink: &mut dyn FnMut(&[u8]) -> Result<()>,
) -> Result<()> {
    let Some((path, input)) = archives.get(number) else {
        return Err(Error::msg("an archive was not mapped"));
    };
    let stored = stored_bytes(path, input, code)?;
    let result = match code.scheme {
        Scheme::None => sink(stored),
        Scheme::ZstdPerKernel => {
            let entry = KernelEntry {
                key: &code.key,
                arch: &code.arch,
                kind: "hsaco",
                ordinal: code.ordinal,
                original_size: code.size,
            };
            // An error from the sink stops the inflation; it is the error returned.
            let mut stopped = None;
            let inflated = budget.run(memory_of_zstd(code.size), |decoding| {
                inflate_frame(
                    stored,
                    &entry,
                    code.stored_offset,
                    limit,
                    decoding,
                    |piece| {
                        sink(piece).map_err(|e| {
                            stopped = Some(e);
                            crate::format::Error::new(
                                code.stored_offset,
                                crate::format::ErrorKind::Decompress("stopped".into()),
                            )
                        })
                    },
                )
            });
            match stopped {
                Some(e) => Err(e),
                None => inflated.map_err(|e| Error::format(path, e)),
            }
        }
    };
    input.release(stored);
    input.intact()?;
    result
}
