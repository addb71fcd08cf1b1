//! Splitting a fat wheel into a host wheel and device wheels, in the layout of AMD's wheel
//! splitter: the host wheel's libraries become split binaries whose references search
//! `<overlay>/.kpack/<group>_@GFXARCH@.kpack`, and each device wheel, one per package group
//! (as `rocm-bootstrap` groups processors), installs its archives into that folder of the
//! host package. The host wheel's `METADATA` gains the extras naming the device wheels; each
//! device wheel requires the host wheel's exact version and its parent groups' wheels.
//!
//! The wheel is read once: the members holding HIP device code are inflated into a scratch
//! folder beside the outputs and split there as a tree; every other member of the host wheel
//! is copied as it lies in the fat wheel. All wheels are put in place together, or none.

use std::collections::{BTreeMap, BTreeSet};
use std::os::unix::ffi::OsStrExt;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Mutex;

use rayon::prelude::*;

use crate::error::{Error, Result};
use crate::format::kpack::Scheme;
use crate::host::package::manifest::{record, sha256, Edit};
use crate::host::package::wheel::{self, Identity};
use crate::host::package::zip::{self, Layout, Stored};
use crate::host::package::zip_write::{pack, Packed, ZipWriter, DEFLATED, STORED};
use crate::host::package::{member_error, member_path, Budget};
use crate::io::{commit_all, Input, Output};
use crate::ops::kpack::config::SplitConfig;
use crate::ops::kpack::plan::ARCHIVE_FOLDER;
use crate::ops::kpack::read::{hip_code_to_split, is_already_split};
use crate::target::device_groups::{self, Group, Level};

/// How to split wheels.
#[derive(Debug, Clone)]
pub struct WheelConfig {
    /// The folder the host and device wheels are written to.
    pub output: PathBuf,
    /// The device wheels' name prefix (`amd-torch-device`); default `amd-NAME-device`.
    pub prefix: Option<String>,
    /// The folder of the wheel whose binaries are split and where `.kpack/` goes (`torch`);
    /// default the one top folder holding every binary with device code.
    pub overlay: Option<String>,
    /// More `Requires-Dist` values for each device wheel, `@GFXARCH@` standing for its group's
    /// key (given to target groups only).
    pub requires: Vec<String>,
    /// How code objects are stored in the archives.
    pub scheme: Scheme,
    /// The largest the wheel's members (and compressed bundles) may inflate to.
    pub max_decompressed: u64,
}

/// One device wheel written.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct DeviceWheel {
    /// Its path.
    pub path: PathBuf,
    /// Its group's key (`gfx942`, `gfx11`).
    pub key: String,
    /// Its distribution name.
    pub dist: String,
    /// The processors of its archives.
    pub processors: Vec<String>,
    /// Its size in bytes.
    pub size: u64,
}

/// What splitting one wheel wrote.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct WheelSummary {
    /// The fat wheel.
    pub input: PathBuf,
    /// Its size in bytes.
    pub input_size: u64,
    /// The host wheel written.
    pub host: PathBuf,
    /// Its size in bytes.
    pub host_size: u64,
    /// The binaries split, by their paths in the wheel.
    pub binaries: Vec<String>,
    /// The device wheels, by group key.
    pub devices: Vec<DeviceWheel>,
}

impl WheelSummary {
    /// The bytes a user of `processor` downloads: the host wheel and the device wheels of the
    /// processor's chain of groups; `None` when no device wheel is for it.
    pub fn download_for(&self, processor: &str) -> Option<u64> {
        let chain = device_groups::chain(processor)?;
        let wheels: Vec<&DeviceWheel> = self
            .devices
            .iter()
            .filter(|d| chain.iter().any(|g| g.key == d.key))
            .collect();
        (!wheels.is_empty()).then(|| self.host_size + wheels.iter().map(|d| d.size).sum::<u64>())
    }

    /// Every processor some device wheel is for, in the table's order.
    pub fn processors(&self) -> Vec<&'static str> {
        device_groups::processors()
            .filter(|p| self.download_for(p).is_some())
            .collect()
    }
}

/// The most a wheel's `METADATA`, `WHEEL` or `RECORD` may take: each is read whole, as text.
const TEXT_MOST: u64 = 64 << 20;

/// What the fat wheel is, read.
pub(super) struct FatWheel<'d> {
    pub(super) layout: Layout<'d>,
    pub(super) identity: Identity,
    pub(super) metadata: Vec<u8>,
}

/// Reads the zip `data` (at `input`) as a wheel: its members and identity.
pub(super) fn read_wheel<'d>(input: &Path, data: &'d Input) -> Result<FatWheel<'d>> {
    let layout = zip::layout(input, data)?;
    let dist_info = wheel::dist_info(layout.members.iter().map(|m| m.name))
        .map_err(|e| Error::file(input, e))?;
    let text = |name: &str| -> Result<Vec<u8>> {
        let path = format!("{dist_info}/{name}");
        let stored = layout
            .members
            .iter()
            .find(|m| m.name == path.as_bytes())
            .ok_or_else(|| Error::file(input, format!("not a wheel: no {path}")))?;
        Ok(zip::whole_member(input, data, stored, TEXT_MOST)?.into_owned())
    };
    let metadata = text("METADATA")?;
    let wheel_text = text("WHEEL")?;
    let identity = wheel::identity(
        &dist_info,
        &String::from_utf8_lossy(&metadata),
        &String::from_utf8_lossy(&wheel_text),
    )
    .map_err(|e| Error::file(input, e))?;
    Ok(FatWheel {
        layout,
        identity,
        metadata,
    })
}

/// The group name of a wheel's archives, as AMD's splitter makes it: the distribution name in
/// lower case, `-` spelt `_`.
pub(super) fn group_name(identity: &Identity) -> String {
    identity.name.to_lowercase().replace('-', "_")
}

/// Splits the wheel `input` into a host wheel and device wheels in `config.output`.
#[tracing::instrument(skip_all, fields(input = %input.display()))]
pub fn split_wheel(input: &Path, config: &WheelConfig) -> Result<WheelSummary> {
    std::fs::create_dir_all(&config.output).map_err(|e| Error::io(&config.output, e))?;
    if input.is_dir() {
        return split_unpacked(input, config);
    }
    split_zip(input, input, config)
}

/// Splits the unpacked wheel in the folder `input`: its files are packed (stored) into a
/// scratch wheel beside the outputs, which is split, the host wheel named from its identity.
fn split_unpacked(input: &Path, config: &WheelConfig) -> Result<WheelSummary> {
    let scratch = tempfile::Builder::new()
        .prefix(".offload-wheel-")
        .tempdir_in(&config.output)
        .map_err(|e| Error::io(&config.output, e))?;
    let packed = scratch.path().join("unpacked.whl");
    pack_folder(input, &packed)?;
    let data = Input::open(&packed)?;
    let fat = read_wheel(input, &data)?;
    let tags = fat.identity.tags.first().cloned().unwrap_or_default();
    let name = wheel::file_name(&fat.identity.name, &fat.identity.version, &tags);
    drop(fat);
    drop(data);
    let named = scratch.path().join(&name);
    std::fs::rename(&packed, &named).map_err(|e| Error::io(&named, e))?;
    let mut summary = split_zip(&named, input, config)?;
    summary.input = input.to_path_buf();
    Ok(summary)
}

/// Packs the files of the folder `input` (symbolic links followed, as a wheel holds files)
/// into the zip `to`, stored, in the order of their paths.
fn pack_folder(input: &Path, to: &Path) -> Result<()> {
    use crate::ops::support::inputs::{walk, Links, Taken, WalkOptions};
    let found = walk(
        &[input.to_path_buf()],
        WalkOptions {
            recursive: true,
            links: Links::Follow,
            files: Taken::Every,
        },
    );
    if let Some(e) = found.errors.into_iter().next() {
        return Err(e);
    }
    let mut files: Vec<_> = found.files.into_iter().collect();
    files.sort_by(|a, b| a.relative.cmp(&b.relative));
    let mut out = Output::create(to)?;
    let mut writer = ZipWriter::new(&mut out);
    for file in &files {
        let contents = Input::open(&file.path)?;
        let mode = {
            use std::os::unix::fs::PermissionsExt;
            std::fs::metadata(&file.path).map_or(0o644, |m| m.permissions().mode())
        };
        let packed = pack(&contents, DEFLATED).map_err(|e| Error::io(&file.path, e))?;
        let name = file.relative.as_os_str().as_bytes();
        writer.add(name, mode, &contents, Some(&contents), &packed)?;
    }
    writer.finish()?;
    Ok(out.commit()?)
}

/// Splits the wheel `input` (`shown` in messages and naming the host wheel's file).
fn split_zip(input: &Path, named: &Path, config: &WheelConfig) -> Result<WheelSummary> {
    let data = Input::open(input)?;
    let fat = read_wheel(named, &data)?;
    refuse_split(named, &fat)?;
    let scratch = tempfile::Builder::new()
        .prefix(".offload-wheel-")
        .tempdir_in(&config.output)
        .map_err(|e| Error::io(&config.output, e))?;
    let found = extract_fat(named, &data, &fat.layout, scratch.path(), config)?;
    if found.is_empty() {
        return Err(Error::file(
            input,
            "no program or shared library in it holds HIP device code: nothing to split",
        ));
    }
    let overlay = overlay_root(named, &found, config)?;
    let group = group_name(&fat.identity);
    let split_config = SplitConfig {
        output: scratch.path().join("out"),
        recursive: true,
        name: Some(group.clone()),
        groups: Vec::new(),
        search_paths: Vec::new(),
        scheme: config.scheme,
        max_decompressed: config.max_decompressed,
    };
    let split = super::split(&[scratch.path().join("in").join(&overlay)], &split_config)?;
    let devices = device_groups_of(named, &split.archives)?;
    let prefix = config
        .prefix
        .clone()
        .unwrap_or_else(|| format!("amd-{}-device", wheel::normalized(&fat.identity.name)));
    let plan = Plan {
        input: named,
        fat: &fat,
        overlay: &overlay,
        prefix: &prefix,
        devices: &devices,
        tags: tags_of(input, &fat.identity),
    };
    let mut outputs = Vec::new();
    let host_name = if named.is_dir() { input } else { named };
    let host_path = config
        .output
        .join(host_name.file_name().unwrap_or_default());
    refuse_overwriting_input(input, &host_path)?;
    let mut host_out = Output::create(&host_path)?;
    let replaced: BTreeMap<usize, PathBuf> = found
        .iter()
        .map(|(k, name)| (*k, split_config.output.join(strip_overlay(name, &overlay))))
        .collect();
    let host_size = write_host(&plan, &data, &replaced, &mut host_out)?;
    outputs.push(host_out);
    let mut written = Vec::new();
    for (group, archives) in &devices {
        let (out, wheel) = write_device(&plan, config, group, archives, &split_config.output)?;
        outputs.push(out);
        written.push(wheel);
    }
    commit_all(outputs)?;
    Ok(WheelSummary {
        input: input.to_path_buf(),
        input_size: data.len() as u64,
        host: host_path,
        host_size,
        binaries: found.into_iter().map(|(_, name)| name).collect(),
        devices: written,
    })
}

/// The archives (path, processors) of each device wheel, by its group.
type ByGroup = BTreeMap<&'static Group, Vec<(PathBuf, Vec<String>)>>;

/// What writing the wheels needs to know.
struct Plan<'p, 'd> {
    input: &'p Path,
    fat: &'p FatWheel<'d>,
    overlay: &'p str,
    prefix: &'p str,
    devices: &'p ByGroup,
    tags: String,
}

/// Refuses a wheel split already: a host wheel (its `METADATA` names device extras, or a
/// binary is split) or a device wheel (it holds archives).
fn refuse_split(input: &Path, fat: &FatWheel<'_>) -> Result<()> {
    let metadata = String::from_utf8_lossy(&fat.metadata);
    let host = wheel::headers(&metadata).any(|(field, value)| {
        field.eq_ignore_ascii_case("Provides-Extra") && value.starts_with("device-")
    }) && wheel::headers(&metadata)
        .any(|(f, v)| f.eq_ignore_ascii_case("Requires-Dist") && v.contains("extra == \"device-"));
    if host {
        return Err(Error::file(
            input,
            "already split: a host wheel (its METADATA names device wheels in extras device-...); \
             split the fat wheel, or merge this one with its device wheels first (offload kpack --merge)",
        ));
    }
    let archive = fat.layout.members.iter().find(|m| {
        m.name.ends_with(b".kpack")
            && m.name
                .split(|&b| b == b'/')
                .any(|part| part == ARCHIVE_FOLDER.as_bytes())
    });
    if let Some(member) = archive {
        return Err(Error::file(
            input,
            format!(
                "already split: a device wheel (it holds the kpack archive {}); split the fat wheel",
                crate::io::shown(Path::new(std::ffi::OsStr::from_bytes(member.name)))
            ),
        ));
    }
    Ok(())
}

/// Inflates each member of the wheel that holds HIP device code into `scratch/in/`, under its
/// path in the wheel; returns their member numbers and paths. A split binary is an error
/// saying the wheel is split already.
fn extract_fat(
    input: &Path,
    data: &Input,
    layout: &Layout<'_>,
    scratch: &Path,
    config: &WheelConfig,
) -> Result<Vec<(usize, String)>> {
    let left = AtomicU64::new(config.max_decompressed);
    let found = Mutex::new(Vec::new());
    layout
        .members
        .par_iter()
        .enumerate()
        .try_for_each(|(k, stored)| -> Result<()> {
            if stored.name.ends_with(b"/") {
                return Ok(());
            }
            let start = left.load(Ordering::Relaxed);
            let budget = Budget::new(start);
            let visited = zip::visit_member(input, data, stored, &budget, &mut |member| {
                let path = member_path(input, stored.name);
                let code = match hip_code_to_split(&path, member.bytes) {
                    Ok(code) => code,
                    Err(e) if is_already_split(&e) => {
                        return Err(Error::file(
                            &path,
                            "already split (it is a host wheel's binary, its device code in kpack \
                             archives): split the fat wheel, or merge first (offload kpack --merge)",
                        ))
                    }
                    Err(e) => return Err(e),
                };
                if code.is_none() {
                    return Ok(());
                }
                let name = std::str::from_utf8(stored.name).map_err(|_| {
                    member_error(input, stored.name, "its name is not UTF-8, and the key its code goes under in the archives is text")
                })?;
                crate::host::package::checked_name(input, stored.name, 0)?;
                let to = scratch.join("in").join(name);
                if let Some(folder) = to.parent() {
                    std::fs::create_dir_all(folder).map_err(|e| Error::io(folder, e))?;
                }
                std::fs::write(&to, member.bytes).map_err(|e| Error::io(&to, e))?;
                lock(&found).push((k, name.to_string()));
                Ok(())
            });
            let used = start - budget.get();
            let _ = left.fetch_update(Ordering::Relaxed, Ordering::Relaxed, |now| {
                Some(now.saturating_sub(used))
            });
            visited
        })?;
    let mut found = found
        .into_inner()
        .unwrap_or_else(std::sync::PoisonError::into_inner);
    found.sort();
    Ok(found)
}

fn lock<T>(m: &Mutex<T>) -> std::sync::MutexGuard<'_, T> {
    m.lock().unwrap_or_else(std::sync::PoisonError::into_inner)
}

/// The overlay root: the one given, or the top folder of every binary found. A binary
/// outside it would keep its device code in the host wheel: an error.
fn overlay_root(input: &Path, found: &[(usize, String)], config: &WheelConfig) -> Result<String> {
    let tops: BTreeSet<&str> = found
        .iter()
        .map(|(_, name)| name.split_once('/').map_or("", |(top, _)| top))
        .collect();
    let overlay = match &config.overlay {
        Some(given) => given.trim_matches('/').to_string(),
        None => match tops.iter().next() {
            Some(top) if tops.len() == 1 && !top.is_empty() && !top.ends_with(".data") => {
                (*top).to_string()
            }
            _ => {
                let names: Vec<&str> = found.iter().map(|(_, n)| n.as_str()).collect();
                return Err(Error::file(
                    input,
                    format!(
                        "its binaries with device code are not all in one top folder ({}): give \
                         --overlay-root, the folder whose .kpack/ the archives go to",
                        names.join(", ")
                    ),
                ));
            }
        },
    };
    if overlay.is_empty()
        || overlay
            .split('/')
            .any(|p| p.is_empty() || p == "." || p == "..")
    {
        return Err(Error::file(
            input,
            format!("--overlay-root '{overlay}': not a folder of the wheel"),
        ));
    }
    if let Some((_, outside)) = found
        .iter()
        .find(|(_, name)| !name.starts_with(&format!("{overlay}/")))
    {
        return Err(Error::file(
            input,
            format!(
                "'{outside}' holds device code but is not under the overlay root '{overlay}/': \
                 its code would stay in the host wheel"
            ),
        ));
    }
    Ok(overlay)
}

/// `name` (a member's path) below the overlay root.
fn strip_overlay<'n>(name: &'n str, overlay: &str) -> &'n str {
    name.strip_prefix(overlay)
        .and_then(|rest| rest.strip_prefix('/'))
        .unwrap_or(name)
}

/// The archives written, by the group whose device wheel takes them; a processor no group
/// takes is an error.
fn device_groups_of(
    input: &Path,
    archives: &[(PathBuf, Vec<String>, usize, u64)],
) -> Result<ByGroup> {
    let mut groups = ByGroup::new();
    for (path, processors, _, _) in archives {
        let Some(processor) = processors.first() else {
            continue;
        };
        let group = device_groups::group_of(processor).ok_or_else(|| {
            Error::file(
                input,
                format!(
                    "code for {processor}, for which rocm-bootstrap names no device package (no \
                     target, sub-family or family holds it)"
                ),
            )
        })?;
        groups
            .entry(group)
            .or_default()
            .push((path.clone(), processors.clone()));
    }
    Ok(groups)
}

/// The tags of the new wheels' file names: the fat wheel's file name's, or its first `Tag`.
fn tags_of(input: &Path, identity: &Identity) -> String {
    input
        .file_name()
        .and_then(|n| n.to_str())
        .and_then(wheel::tag_part)
        .map(str::to_string)
        .or_else(|| identity.tags.first().cloned())
        .unwrap_or_default()
}

/// Refuses to write the host wheel over the fat wheel itself.
fn refuse_overwriting_input(input: &Path, host: &Path) -> Result<()> {
    let same = |a: &Path, b: &Path| match (std::fs::metadata(a), std::fs::metadata(b)) {
        (Ok(a), Ok(b)) => {
            use std::os::unix::fs::MetadataExt;
            a.dev() == b.dev() && a.ino() == b.ino()
        }
        _ => false,
    };
    if same(input, host) {
        return Err(Error::file(
            host,
            "the host wheel would replace the fat wheel it is made from: give another -o",
        ));
    }
    Ok(())
}

/// The extras, in order: each target group's (its chain's wheels), then each wider group's
/// that no device wheel is for as a target, then `device-all`.
fn host_lines(plan: &Plan<'_, '_>) -> Vec<String> {
    let version = &plan.fat.identity.version;
    let emitted: BTreeSet<&str> = plan.devices.keys().map(|g| g.key).collect();
    let dist = |g: &Group| device_groups::dist_name(plan.prefix, g);
    let mut lines = vec!["Requires-Dist: rocm-bootstrap".to_string()];
    let targets = plan.devices.keys().filter(|g| g.level == Level::Target);
    let wider = plan.devices.keys().filter(|g| g.level != Level::Target);
    for group in targets.chain(wider) {
        let extra = format!("device-{}", group.key.replace('_', "-"));
        lines.push(format!("Provides-Extra: {extra}"));
        for parent in device_groups::parents(group) {
            if emitted.contains(parent.key) {
                lines.push(format!(
                    "Requires-Dist: {} == {version}; extra == \"{extra}\"",
                    dist(parent)
                ));
            }
        }
    }
    lines.push("Provides-Extra: device-all".to_string());
    let mut all: Vec<String> = plan.devices.keys().map(|g| dist(g)).collect();
    all.sort();
    for name in all {
        lines.push(format!(
            "Requires-Dist: {name} == {version}; extra == \"device-all\""
        ));
    }
    lines
}

/// Whether `line` of a host wheel's `METADATA` is one a split added.
pub(super) fn is_split_line(line: &str) -> bool {
    let Some((field, value)) = line.split_once(':') else {
        return false;
    };
    let (field, value) = (field.trim(), value.trim());
    (field.eq_ignore_ascii_case("Requires-Dist") && value == "rocm-bootstrap")
        || (field.eq_ignore_ascii_case("Provides-Extra") && value.starts_with("device-"))
        || (field.eq_ignore_ascii_case("Requires-Dist") && value.contains("; extra == \"device-"))
}

/// Writes the host wheel: the fat wheel's members in order, those `replaced` (member number to
/// the split file) and `METADATA` written anew, `RECORD` given their new hashes and sizes.
fn write_host(
    plan: &Plan<'_, '_>,
    data: &Input,
    replaced: &BTreeMap<usize, PathBuf>,
    out: &mut Output,
) -> Result<u64> {
    let metadata = wheel::with_header_lines(&plan.fat.metadata, &host_lines(plan));
    rewrite_wheel(
        plan.input,
        data,
        &plan.fat.layout,
        &plan.fat.identity,
        replaced,
        &metadata,
        out,
    )
}

/// Writes the wheel `data` (at `input`) again to `out`: the members `replaced` (member number
/// to the file holding their new contents) and `METADATA` (`metadata`) written anew, the other
/// members copied as they lie, `RECORD` given the new hashes and sizes.
pub(super) fn rewrite_wheel(
    input: &Path,
    data: &Input,
    layout: &Layout<'_>,
    identity: &Identity,
    replaced: &BTreeMap<usize, PathBuf>,
    metadata: &[u8],
    out: &mut Output,
) -> Result<u64> {
    let metadata_name = format!("{}/METADATA", identity.dist_info);
    let record_name = format!("{}/RECORD", identity.dist_info);
    let news: Vec<(usize, Input)> = replaced
        .iter()
        .map(|(&k, path)| Ok((k, Input::open(path)?)))
        .collect::<Result<_>>()?;
    let packed: Vec<(usize, Packed)> = news
        .par_iter()
        .map(|(k, contents)| {
            let method = layout.members.get(*k).map_or(DEFLATED, |m| m.method);
            pack(contents, method)
                .map(|p| (*k, p))
                .map_err(|e| Error::io(input, e))
        })
        .collect::<Result<_>>()?;
    let mut edits: std::collections::HashMap<Vec<u8>, Edit<_>> = std::collections::HashMap::new();
    for ((k, contents), _) in news.iter().zip(&packed) {
        if let Some(stored) = layout.members.get(*k) {
            let edit = Edit::Rewritten {
                digest: sha256(contents),
                size: contents.len() as u64,
            };
            edits.insert(stored.name.to_vec(), edit);
        }
    }
    edits.insert(
        metadata_name.as_bytes().to_vec(),
        Edit::Rewritten {
            digest: sha256(metadata),
            size: metadata.len() as u64,
        },
    );
    let record_text = match layout
        .members
        .iter()
        .find(|m| m.name == record_name.as_bytes())
    {
        Some(stored) => {
            let text = zip::whole_member(input, data, stored, TEXT_MOST)?;
            let (new, _) = record::update(&text, |path| edits.get(path).copied())
                .map_err(|e| Error::file(member_path(input, stored.name), e.to_string()))?;
            Some(new)
        }
        None => None,
    };
    let mut writer = ZipWriter::new(out);
    let mut news = news.iter().zip(&packed).peekable();
    for (k, stored) in layout.members.iter().enumerate() {
        if let Some(((_, contents), (_, p))) = news.next_if(|((j, _), _)| *j == k) {
            writer.replace(input, data, stored, contents, Some(contents), p)?;
        } else if stored.name == metadata_name.as_bytes() {
            replace_text(&mut writer, input, data, stored, metadata)?;
        } else if let (true, Some(text)) = (stored.name == record_name.as_bytes(), &record_text) {
            replace_text(&mut writer, input, data, stored, text)?;
        } else {
            writer.copy(input, data, stored)?;
        }
    }
    writer.finish()
}

fn replace_text(
    writer: &mut ZipWriter<'_>,
    input: &Path,
    data: &Input,
    stored: &Stored<'_>,
    text: &[u8],
) -> Result<()> {
    let packed = pack(text, stored.method).map_err(|e| Error::io(input, e))?;
    writer.replace(input, data, stored, text, None, &packed)
}

/// Writes the device wheel of `group`, holding `archives` (paths under `split`), to its place
/// in `config.output`; returns the output, not yet in place, and what it is.
fn write_device(
    plan: &Plan<'_, '_>,
    config: &WheelConfig,
    group: &Group,
    archives: &[(PathBuf, Vec<String>)],
    split: &Path,
) -> Result<(Output, DeviceWheel)> {
    let identity = &plan.fat.identity;
    let dist = device_groups::dist_name(plan.prefix, group);
    let file = wheel::file_name(&dist, &identity.version, &plan.tags);
    let dist_info = format!("{}-{}.dist-info", dist.replace('-', "_"), identity.version);
    let path = config.output.join(&file);
    let mut out = Output::create(&path)?;
    let mut files = Vec::new();
    let size;
    {
        let mut writer = ZipWriter::new(&mut out);
        for (archive, _) in archives {
            let name = archive.strip_prefix(split).unwrap_or(archive);
            let name = format!("{}/{}", plan.overlay, name.to_string_lossy());
            let contents = Input::open(archive)?;
            // Archives of zstd frames do not deflate: they are stored.
            let method = match config.scheme {
                Scheme::ZstdPerKernel => STORED,
                Scheme::None => DEFLATED,
            };
            let packed = pack(&contents, method).map_err(|e| Error::io(archive, e))?;
            writer.add(name.as_bytes(), 0o644, &contents, Some(&contents), &packed)?;
            files.push((name.into_bytes(), sha256(&contents), contents.len() as u64));
        }
        let texts = [
            ("METADATA", device_metadata(plan, config, group, &dist)),
            ("WHEEL", device_wheel_text(identity)),
            ("top_level.txt", format!("{}\n", plan.overlay)),
        ];
        for (name, text) in texts {
            let name = format!("{dist_info}/{name}");
            let packed = pack(text.as_bytes(), DEFLATED).map_err(|e| Error::io(&path, e))?;
            writer.add(name.as_bytes(), 0o644, text.as_bytes(), None, &packed)?;
            files.push((
                name.into_bytes(),
                sha256(text.as_bytes()),
                text.len() as u64,
            ));
        }
        let record_name = format!("{dist_info}/RECORD");
        let record = wheel::record_of(&files, record_name.as_bytes());
        let packed = pack(&record, DEFLATED).map_err(|e| Error::io(&path, e))?;
        writer.add(record_name.as_bytes(), 0o644, &record, None, &packed)?;
        size = writer.finish()?;
    }
    let mut processors: Vec<String> = archives.iter().flat_map(|(_, p)| p.clone()).collect();
    processors.sort();
    Ok((
        out,
        DeviceWheel {
            path,
            key: group.key.to_string(),
            dist,
            processors,
            size,
        },
    ))
}

/// A device wheel's `METADATA`, as AMD's splitter writes it.
fn device_metadata(plan: &Plan<'_, '_>, config: &WheelConfig, group: &Group, dist: &str) -> String {
    let identity = &plan.fat.identity;
    let version = &identity.version;
    let mut text = format!(
        "Metadata-Version: 2.4\nName: {dist}\nVersion: {version}\nSummary: AMD device kernels ({}) for {}\nRequires-Dist: {} == {version}\n",
        group.display, identity.name, identity.name
    );
    for requires in &config.requires {
        if requires.contains(crate::format::kpack::GFXARCH) {
            if group.level != Level::Target {
                continue;
            }
            text.push_str(&format!(
                "Requires-Dist: {}\n",
                requires.replace(crate::format::kpack::GFXARCH, group.key)
            ));
        } else {
            text.push_str(&format!("Requires-Dist: {requires}\n"));
        }
    }
    for parent in device_groups::parents(group).into_iter().skip(1) {
        if plan.devices.keys().any(|g| g.key == parent.key) {
            text.push_str(&format!(
                "Requires-Dist: {} == {version}\n",
                device_groups::dist_name(plan.prefix, parent)
            ));
        }
    }
    text
}

/// A device wheel's `WHEEL`: platform wheel, the fat wheel's tags.
fn device_wheel_text(identity: &Identity) -> String {
    let mut text = format!(
        "Wheel-Version: 1.0\nGenerator: offload-tools {}\nRoot-Is-Purelib: false\n",
        env!("CARGO_PKG_VERSION")
    );
    for tag in &identity.tags {
        text.push_str(&format!("Tag: {tag}\n"));
    }
    text
}
