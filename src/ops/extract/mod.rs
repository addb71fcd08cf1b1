//! Extracting the device images a GPU can load from any file: objects, programs, shared
//! libraries, archives, bundles, offload binaries; or, for the GPUs of one machine, the one
//! code object the HIP runtime loads from each bundle ([`crate::loads::runtime`]).
//!
//! The inputs are scanned in parallel (`scan`, and `kpack` for `.kpack` archives and the
//! binaries split by kpack), each image chosen by the filters of `options` or by what a
//! device loads (`picks`); what is chosen (`chosen`) is then written, to a folder (`writer`,
//! inflating with `inflate`) or as one device archive (`archive`), under the names of
//! `names`.
//!
//! # Example
//!
//! Write out the code objects a gfx1100 loads from a bundle file (the generic code, as the
//! bundle has no native code for it), as `offload extract --arch gfx1100 -o out` does.
//!
//! ```
//! use offload::format::bundle;
//! use offload::ops::extract::{self, ExtractConfig};
//!
//! # fn main() -> Result<(), Box<dyn std::error::Error>> {
//! let dir = tempfile::tempdir()?;
//! let file = dir.path().join("kernels.hipfb");
//! let entries: [(&str, &[u8]); 3] = [
//!     ("host-x86_64-unknown-linux-gnu-", b""),
//!     ("hipv4-amdgcn-amd-amdhsa--gfx90a", b"code for gfx90a"),
//!     ("hipv4-amdgcn-amd-amdhsa--gfx11-generic", b"code for gfx11"),
//! ];
//! std::fs::write(&file, bundle::to_vec(&entries, 8))?;
//!
//! let config = ExtractConfig {
//!     files: vec![file],
//!     arches: vec!["gfx1100".parse()?],
//!     output: dir.path().join("out"),
//!     ..Default::default()
//! };
//! let written = extract::extract(&config, &()).result?;
//! assert_eq!(written.len(), 1);
//! assert_eq!(std::fs::read(&written[0].path)?, b"code for gfx11");
//! # Ok(())
//! # }
//! ```

use std::path::PathBuf;

use rayon::prelude::*;

use crate::error::{Error, Result};
use crate::format::kpack as kpack_format;
use crate::host::kpack::ArchiveFiles;
use crate::io::Input;
use crate::target::target_id::TargetIdBuf;

mod archive;
mod chosen;
mod inflate;
mod kpack;
mod names;
mod options;
mod picks;
mod scan;
mod writer;

use chosen::{Chosen, Found};

pub use crate::ops::support::progress::Progress;
pub use chosen::Extracted;
pub use names::safe_name;
pub use options::{ExtractConfig, Match};

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
type Scanned = Result<(Vec<Chosen>, Found, Vec<Error>, Vec<PackedArchive>)>;

/// A `.kpack` archive that is a package's member: its name (`PACKAGE!member`), its file name
/// in the package (what its images' outputs are named after) and its bytes.
type PackedArchive = (PathBuf, String, Input);

/// Up to how many inputs keep their descriptors for the kernel to copy images from them.
const DESCRIPTORS_KEPT_UP_TO: usize = 32;

/// [`extract`], adding the problems found in the inputs to `problems`, and what was asked for
/// and not found to `missing`.
fn extract_noting(
    config: &ExtractConfig,
    files: &dyn Progress,
    progress: &dyn Progress,
    problems: &mut Vec<Error>,
    missing: &mut Vec<String>,
) -> Result<Vec<Extracted>> {
    let (readable, inputs, mut unreadable) = open_inputs(&config.files);
    // Files that could not be read, or not scanned: when it is every file, the last one's
    // error is the result, as it is for a single file.
    let unread = unreadable.len();
    let all = config.files.len();
    problems.append(&mut unreadable);
    // From here on the inputs are the files that could be opened.
    let config = &ExtractConfig {
        files: readable,
        ..config.clone()
    };
    let scanned = scan_all(config, &inputs, files);
    let gathered = gather(config, &inputs, scanned, problems);
    let Gathered {
        chosen,
        archives,
        found,
        failed,
    } = gathered;
    // A device that found nothing anywhere is named once, not once per bundle, unless a
    // bundle gave it nothing for a reason other than having no code for it.
    let explained: Vec<String> = found
        .missing
        .into_iter()
        .filter(|(device, always, _)| found.devices.get(*device) == Some(&true) || *always)
        .map(|(_, _, line)| line)
        .collect();
    if unread + failed == all {
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
        return archive::write_device_archive(config, &inputs, &archives, chosen);
    }
    writer::write_files(config, &inputs, &archives, chosen, progress, problems)
}

/// Opens `paths`, in parallel: those opened, the inputs, and the errors of the others. Every
/// input stays mapped until the outputs are written; past a few, their descriptors are
/// closed as they are opened, so that a tree of any size fits the descriptor limit.
fn open_inputs(paths: &[PathBuf]) -> (Vec<PathBuf>, Vec<Input>, Vec<Error>) {
    let many = paths.len() > DESCRIPTORS_KEPT_UP_TO;
    let opened: Vec<Result<Input>> = paths
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
    for (path, input) in paths.iter().zip(opened) {
        match input {
            Ok(input) => {
                readable.push(path.clone());
                inputs.push(input);
            }
            Err(e) => unreadable.push(e),
        }
    }
    (readable, inputs, unreadable)
}

/// Scans `inputs` in parallel, `files` told of each: what each chose, or `None` for a
/// `.kpack` archive, which is read once the scans are done.
fn scan_all(
    config: &ExtractConfig,
    inputs: &[Input],
    files: &dyn Progress,
) -> Vec<Option<Scanned>> {
    files.start(inputs.len() as u64);
    let scanned = config
        .files
        .par_iter()
        .zip(inputs)
        .enumerate()
        .map(|(index, (path, input))| {
            let scanned = (!input.starts_with(&kpack_format::MAGIC)).then(|| {
                let _file = tracing::info_span!("file", file = %path.display()).entered();
                let mut chosen = Vec::new();
                let mut found = Found::new(config);
                scan::choose(config, index, path, input, &mut chosen, &mut found)
                    .map(|(problems, archives)| (chosen, found, problems, archives))
            });
            files.advance(1);
            scanned
        })
        .collect();
    files.finish();
    scanned
}

/// What the inputs gave, put together in the order of the files.
struct Gathered {
    /// The images chosen.
    chosen: Vec<Chosen>,
    /// The `.kpack` archives mapped.
    archives: ArchiveFiles,
    /// What the target IDs and devices asked for found.
    found: Found,
    /// How many inputs could not be scanned.
    failed: usize,
}

/// Puts together what the scans of `inputs` found, in the order of the files, with what the
/// `.kpack` archives among them and those the split binaries refer to hold; the damage met
/// goes to `problems`.
fn gather(
    config: &ExtractConfig,
    inputs: &[Input],
    scanned: Vec<Option<Scanned>>,
    problems: &mut Vec<Error>,
) -> Gathered {
    let mut all = Gathered {
        chosen: Vec::new(),
        archives: ArchiveFiles::new(),
        found: Found::new(config),
        failed: 0,
    };
    for (index, ((path, input), scanned)) in
        config.files.iter().zip(inputs).zip(scanned).enumerate()
    {
        let _file = tracing::info_span!("file", file = %path.display()).entered();
        let (chosen, found, archives) = (&mut all.chosen, &mut all.found, &mut all.archives);
        let scanned = match scanned {
            Some(scanned) => scanned,
            None => {
                let picked = kpack::choose_in_archive(config, index, path, archives, chosen, found);
                if let Err(e) = picked {
                    all.failed += 1;
                    problems.push(e);
                }
                continue;
            }
        };
        match scanned {
            Ok((mut theirs, their_found, their_problems, packed)) => {
                chosen.append(&mut theirs);
                found.add(their_found);
                problems.extend(their_problems);
                // A package's `.kpack` archives, as archives named alone are read.
                for (name, file, bytes) in packed {
                    let before = chosen.len();
                    let picked = archives.take(&name, bytes).and_then(|_| {
                        kpack::choose_in_archive(config, index, &name, archives, chosen, found)
                    });
                    if let Err(e) = picked {
                        problems.push(e);
                    }
                    // Named after the archive, as the images of other members are.
                    for c in chosen.iter_mut().skip(before) {
                        c.member = Some(file.clone());
                    }
                }
            }
            Err(e) => {
                all.failed += 1;
                problems.push(e);
                continue;
            }
        }
        problems.extend(kpack::choose_in_split_binary(
            config, index, path, input, archives, chosen, found,
        ));
    }
    all
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
