//! Merging a host wheel and its device wheels back into one fat wheel: the split binaries of
//! the host wheel get their code back from the archives the device wheels hold, and the
//! `METADATA` loses the lines the split added. Only the archives of the wheels given are
//! read (never `ROCM_KPACK_PATH`), and a device wheel of another version is refused, as the
//! loader's keys are only good for the host files they were split from.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use crate::error::{Error, Result};
use crate::host::package::wheel;
use crate::host::package::{member_error, member_path};
use crate::io::{Input, Output};
use crate::ops::kpack::config::MergeConfig;
use crate::ops::kpack::plan::ARCHIVE_FOLDER;
use crate::ops::kpack::read::{hip_code_to_split, is_already_split};
use crate::ops::kpack::wheel::{is_split_line, read_wheel, rewrite_wheel, FatWheel};

/// What merging wheels wrote.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct WheelMergeSummary {
    /// The wheel written.
    pub path: PathBuf,
    /// Its size in bytes.
    pub size: u64,
    /// The binaries given their code back, by their paths in the wheel.
    pub binaries: Vec<String>,
    /// The archives their code came from, by their paths in the device wheels.
    pub archives: Vec<String>,
}

/// Merges the host wheel and device wheels `inputs` into one wheel in `output`, named as the
/// host wheel.
#[tracing::instrument(skip_all, fields(output = %output.display()))]
pub fn merge_wheels(
    inputs: &[PathBuf],
    output: &Path,
    max_decompressed: u64,
) -> Result<WheelMergeSummary> {
    std::fs::create_dir_all(output).map_err(|e| Error::io(output, e))?;
    let datas: Vec<Input> = inputs
        .iter()
        .map(|p| Ok(Input::open(p)?))
        .collect::<Result<_>>()?;
    let wheels: Vec<FatWheel<'_>> = inputs
        .iter()
        .zip(&datas)
        .map(|(p, d)| read_wheel(p, d))
        .collect::<Result<_>>()?;
    let scratch = tempfile::Builder::new()
        .prefix(".offload-wheel-")
        .tempdir_in(output)
        .map_err(|e| Error::io(output, e))?;
    let tree = scratch.path().join("tree");
    let mut host = None;
    let mut archives = Vec::new();
    for (k, ((input, data), fat)) in inputs.iter().zip(&datas).zip(&wheels).enumerate() {
        let found = archives_of(input, data, fat, &tree, max_decompressed)?;
        if found.is_empty() {
            if let Some(first) = host.replace(k) {
                return Err(Error::file(
                    input,
                    format!(
                        "a second wheel without kpack archives (beside '{}'): give one host \
                         wheel and its device wheels",
                        crate::io::shown(&inputs[first])
                    ),
                ));
            }
        }
        archives.extend(found);
    }
    let Some(host) = host else {
        return Err(Error::file(
            &inputs[0],
            "no host wheel among the wheels given (each holds kpack archives): give the host wheel too",
        ));
    };
    let (input, data, fat) = (&inputs[host], &datas[host], &wheels[host]);
    for (other, w) in inputs.iter().zip(&wheels) {
        if w.identity.version != fat.identity.version {
            return Err(Error::file(
                other,
                format!(
                    "version {}, where the host wheel '{}' is {}: a device wheel's code is keyed \
                     for the host files of its own version",
                    w.identity.version,
                    crate::io::shown(input),
                    fat.identity.version
                ),
            ));
        }
    }
    let binaries = split_binaries(input, data, fat, &tree, max_decompressed)?;
    if binaries.is_empty() {
        return Err(Error::file(
            input,
            "no split binary in it: not a host wheel, nothing to merge",
        ));
    }
    let mut replaced = BTreeMap::new();
    for (n, (k, name)) in binaries.iter().enumerate() {
        let config = MergeConfig {
            output: scratch.path().join("merged").join(n.to_string()),
            archives: archives.iter().map(|(path, _)| path.clone()).collect(),
            max_decompressed,
        };
        let merged = super::merge(&[tree.join(name)], &config)?;
        let Some((path, ..)) = merged.files.into_iter().next() else {
            return Err(member_error(input, name.as_bytes(), "not merged"));
        };
        replaced.insert(*k, path);
    }
    let metadata = wheel::without_header_lines(&fat.metadata, is_split_line);
    let path = output.join(input.file_name().unwrap_or_default());
    let mut out = Output::create(&path)?;
    let size = rewrite_wheel(
        input,
        data,
        &fat.layout,
        &fat.identity,
        &replaced,
        &metadata,
        &mut out,
    )?;
    out.commit()?;
    Ok(WheelMergeSummary {
        path,
        size,
        binaries: binaries.into_iter().map(|(_, n)| n).collect(),
        archives: archives.into_iter().map(|(_, n)| n).collect(),
    })
}

/// Writes each kpack archive of the wheel `data` (members in a `.kpack` folder) to `tree`
/// under its path in the wheel; returns where each went and its path in the wheel. Two wheels
/// holding one archive is an error. What they inflate to comes out of one budget of
/// `most` bytes for the wheel, as when a package is read.
fn archives_of(
    input: &Path,
    data: &Input,
    fat: &FatWheel<'_>,
    tree: &Path,
    most: u64,
) -> Result<Vec<(PathBuf, String)>> {
    let mut found = Vec::new();
    let budget = crate::host::package::Budget::new(most);
    for stored in &fat.layout.members {
        let in_folder = stored
            .name
            .split(|&b| b == b'/')
            .any(|part| part == ARCHIVE_FOLDER.as_bytes());
        if !in_folder || !stored.name.ends_with(b".kpack") {
            continue;
        }
        let name = checked_utf8(input, stored.name)?;
        let to = tree.join(name);
        if to.exists() {
            return Err(member_error(
                input,
                stored.name,
                "another wheel given holds this archive too",
            ));
        }
        let mut written = false;
        crate::host::package::zip::visit_member(input, data, stored, &budget, &mut |member| {
            written = true;
            write_new(&to, member.bytes)
        })?;
        if !written {
            return Err(member_error(input, stored.name, "not a kpack archive"));
        }
        found.push((to, name.to_string()));
    }
    Ok(found)
}

/// Writes each split binary of the wheel `data` to `tree` under its path in the wheel;
/// returns their member numbers and paths. What they inflate to comes out of one budget of
/// `most` bytes for the wheel.
fn split_binaries(
    input: &Path,
    data: &Input,
    fat: &FatWheel<'_>,
    tree: &Path,
    most: u64,
) -> Result<Vec<(usize, String)>> {
    let mut found = Vec::new();
    let budget = crate::host::package::Budget::new(most);
    for (k, stored) in fat.layout.members.iter().enumerate() {
        let mut split = false;
        crate::host::package::zip::visit_member(input, data, stored, &budget, &mut |member| {
            let path = member_path(input, stored.name);
            match hip_code_to_split(&path, member.bytes) {
                Err(e) if is_already_split(&e) => {
                    let name = checked_utf8(input, stored.name)?;
                    write_new(&tree.join(name), member.bytes)?;
                    split = true;
                    Ok(())
                }
                Err(e) => Err(e),
                Ok(_) => Ok(()),
            }
        })?;
        if split {
            found.push((k, checked_utf8(input, stored.name)?.to_string()));
        }
    }
    Ok(found)
}

/// A member's name as a path that stays in its folder, in UTF-8 (the archives' keys are text).
fn checked_utf8<'n>(input: &Path, name: &'n [u8]) -> Result<&'n str> {
    crate::host::package::checked_name(input, name, 0)?;
    std::str::from_utf8(name).map_err(|_| member_error(input, name, "its name is not UTF-8"))
}

fn write_new(to: &Path, bytes: &[u8]) -> Result<()> {
    if let Some(folder) = to.parent() {
        std::fs::create_dir_all(folder).map_err(|e| Error::io(folder, e))?;
    }
    std::fs::write(to, bytes).map_err(|e| Error::io(to, e))
}
