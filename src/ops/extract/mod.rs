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
use crate::ops::support::inputs::FoundList;
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

use options::Inputs;

/// What an extraction did: `T` is what it gives when it succeeds, the records of the files
/// written (or nothing, when they were handed out as they were written).
#[derive(Debug)]
pub struct Extraction<T = Vec<Extracted>> {
    /// The problems found in the inputs (damaged sections), in the order found, whether or not
    /// the extraction succeeded: they do not stop the extraction of the rest, and they are
    /// what `ls` reports for the same files.
    pub problems: Vec<Error>,
    /// The files written, or why nothing was.
    pub result: Result<T>,
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
    let mut written = Vec::new();
    let Extraction {
        problems,
        result,
        missing,
    } = extract_each(config, files, bytes, &mut |mut some| {
        written.append(&mut some)
    });
    Extraction {
        problems,
        result: result.map(|()| written),
        missing,
    }
}

/// [`extract_reporting`], the records of the files written handed to `each` as they are
/// written, in the order of the files, instead of held until the end: into a folder, a
/// group of input files at a time (the outputs are put in place only at the end, together:
/// a record handed out is of a file that is in place unless the extraction fails); into a
/// device archive, all at once once it is in place.
pub fn extract_each(
    config: &ExtractConfig,
    files: &dyn Progress,
    bytes: &dyn Progress,
    each: &mut dyn FnMut(Vec<Extracted>),
) -> Extraction<()> {
    extract_inputs(config, Inputs::Named(&config.files), files, bytes, each)
}

/// [`extract_each`] of the files of `listed`, a walk's list (`config.files` is not read):
/// the paths are read from the list a group at a time, never all held.
pub fn extract_each_listed(
    config: &ExtractConfig,
    listed: &FoundList,
    files: &dyn Progress,
    bytes: &dyn Progress,
    each: &mut dyn FnMut(Vec<Extracted>),
) -> Extraction<()> {
    extract_inputs(config, Inputs::Listed(listed), files, bytes, each)
}

/// [`extract_each`] of the files `inputs`.
fn extract_inputs(
    config: &ExtractConfig,
    inputs: Inputs<'_>,
    files: &dyn Progress,
    bytes: &dyn Progress,
    each: &mut dyn FnMut(Vec<Extracted>),
) -> Extraction<()> {
    let mut problems = Vec::new();
    let mut missing = Vec::new();
    let noting = Noting {
        each,
        problems: &mut problems,
        missing: &mut missing,
    };
    let result = extract_noting(config, inputs, files, bytes, noting);
    Extraction {
        problems,
        result,
        missing,
    }
}

/// Where an extraction hands what it does: the records of the files written, the problems
/// found in the inputs, and what was asked for and not found.
struct Noting<'n> {
    each: &'n mut dyn FnMut(Vec<Extracted>),
    problems: &'n mut Vec<Error>,
    missing: &'n mut Vec<String>,
}

/// What scanning one input found: the images chosen, what the target IDs and devices asked
/// for found, and the damage met.
type Scanned = Result<(Vec<Chosen>, Found, Vec<Error>, Vec<PackedArchive>)>;

/// A `.kpack` archive that is a package's member: its name (`PACKAGE!member`), its file name
/// in the package (what its images' outputs are named after) and its bytes.
type PackedArchive = (PathBuf, String, Input);

/// [`extract`], adding the problems found in the inputs to `problems`, and what was asked for
/// and not found to `missing`.
///
/// The files are read a group at a time ([`files_at_once`]): a group is opened, scanned,
/// and its images written, then its inputs are let go before the next group is opened, so
/// that memory and descriptors follow the group, not the tree. Nothing stays of a group's
/// outputs once its records are handed to `each`: they are made in a folder being built (a
/// new folder beside the output folder's name, or a staging folder inside the output folder
/// that exists), put in place together once all are written. A device archive (`-o X.a`) is
/// made of the images of every file at once: its files are read as one group.
fn extract_noting(
    config: &ExtractConfig,
    inputs: Inputs<'_>,
    files: &dyn Progress,
    progress: &dyn Progress,
    noting: Noting<'_>,
) -> Result<()> {
    let Noting {
        each,
        problems,
        missing,
    } = noting;
    let to_archive = config.output.extension().is_some_and(|e| e == "a");
    let every = inputs.len();
    let at_once = if to_archive {
        every.max(1)
    } else {
        files_at_once()
    };
    let groups = every.div_ceil(at_once);
    files.start(every as u64);
    let mut all = Totals::new(config);
    let mut folder: Option<writer::Folder> = None;
    let mut whole: Option<Group> = None;
    for paths in inputs.groups(at_once) {
        let mut group = read_group(config, &paths, files);
        all.add(&mut group);
        if group.chosen.is_empty() {
            continue;
        }
        if to_archive {
            whole = Some(group);
            continue;
        }
        let folder = match &mut folder {
            Some(folder) => folder,
            // The bar of bytes shows for one group; a tree's progress is its files'.
            None => folder.insert(writer::Folder::new(config, inputs, progress, groups == 1)?),
        };
        let written =
            folder.write_group(&group.config, &group.inputs, &group.archives, group.chosen)?;
        // An input that shrank while it was read leaves nothing in place.
        crate::io::inputs_intact()?;
        if !written.is_empty() {
            each(written);
        }
    }
    files.finish();
    conclude(config, inputs, all, problems, missing)?;
    let written = match (whole, folder) {
        (Some(group), _) => archive::write_device_archive(
            &group.config,
            &group.inputs,
            &group.archives,
            group.chosen,
        )?,
        (None, Some(folder)) => {
            folder.finish(problems)?;
            Vec::new()
        }
        (None, None) => return Err(Error::msg("no output was written")),
    };
    if !written.is_empty() {
        each(written);
    }
    Ok(())
}

/// What the groups read gave, `all` (of `every` file named), weighed once every file is
/// read: the problems found go to `problems` and what was asked for and not found to
/// `missing`; an error leaves nothing written (every file unreadable or damaged, nothing
/// chosen).
fn conclude(
    config: &ExtractConfig,
    inputs: Inputs<'_>,
    all: Totals,
    problems: &mut Vec<Error>,
    missing: &mut Vec<String>,
) -> Result<()> {
    let every = inputs.len();
    let Totals {
        unopened,
        named: _,
        unreadable: mut unread,
        problems: mut found_problems,
        failed,
        found,
        chosen,
    } = all;
    // Files that could not be read, or not scanned: when it is every file, the last one's
    // error is the result, as it is for a single file.
    let unread_count = unread.len();
    problems.append(&mut unread);
    problems.append(&mut found_problems);
    // From here on the inputs are the files that could be opened.
    let opened = || {
        let mut unopened = unopened.iter().peekable();
        (inputs.paths().enumerate())
            .filter(move |(k, _)| unopened.next_if_eq(&k).is_none())
            .map(|(_, path)| path)
    };
    // A device that found nothing anywhere is named once, not once per bundle, unless a
    // bundle gave it nothing for a reason other than having no code for it.
    let explained: Vec<String> = found
        .missing
        .into_iter()
        .filter(|(device, always, _)| found.devices.get(*device) == Some(&true) || *always)
        .map(|(_, _, line)| line)
        .collect();
    if unread_count + failed == every {
        if let Some(last) = problems.pop() {
            return Err(last);
        }
    }
    if !chosen {
        missing.extend(explained);
        return Err(nothing_chosen(
            opened(),
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
        missing.push(nothing_chosen(opened(), unfound).to_string());
    }
    missing.extend(explained);
    Ok(())
}

/// How many input files are read at once: a group's maps, descriptors and scans are let go
/// before the next group is opened. 256, fewer when the limit on open files is low (a
/// quarter of what is left of it after 32 for the rest of the work), at least one.
fn files_at_once() -> usize {
    const MOST: usize = 256;
    let mut limit = libc::rlimit {
        rlim_cur: 0,
        rlim_max: 0,
    };
    // SAFETY: getrlimit writes the struct it is given and nothing else.
    let known = unsafe { libc::getrlimit(libc::RLIMIT_NOFILE, &mut limit) } == 0;
    if !known {
        return 64;
    }
    let open = usize::try_from(limit.rlim_cur).unwrap_or(usize::MAX);
    (open.saturating_sub(32) / 4).clamp(1, MOST)
}

/// One group of input files, read and scanned.
struct Group {
    /// The configuration with the files of the group that could be opened.
    config: ExtractConfig,
    /// How many files the group named, and the numbers among them of those not opened.
    named: usize,
    unopened: Vec<usize>,
    inputs: Vec<Input>,
    /// The errors of the files that could not be opened.
    unreadable: Vec<Error>,
    /// The damage met in the files scanned.
    problems: Vec<Error>,
    chosen: Vec<Chosen>,
    archives: ArchiveFiles,
    found: Found,
    /// How many files could not be scanned.
    failed: usize,
}

/// Opens and scans the files `paths` (`files` told of each), choosing their images.
fn read_group(config: &ExtractConfig, paths: &[PathBuf], files: &dyn Progress) -> Group {
    let Opened {
        readable,
        inputs,
        unreadable,
        unopened,
    } = open_inputs(paths);
    files.advance(unreadable.len() as u64);
    let config = config.for_files(readable);
    let scanned = scan_all(&config, &inputs, files);
    let mut problems = Vec::new();
    let Gathered {
        chosen,
        archives,
        found,
        failed,
    } = gather(&config, &inputs, scanned, &mut problems);
    Group {
        config,
        named: paths.len(),
        unopened,
        inputs,
        unreadable,
        problems,
        chosen,
        archives,
        found,
        failed,
    }
}

/// What the groups read so far gave, beside the outputs.
struct Totals {
    /// How many files the groups so far named, and the numbers of those that could not be
    /// opened (few): the others are the files that could, named by the configuration.
    named: usize,
    unopened: Vec<usize>,
    unreadable: Vec<Error>,
    problems: Vec<Error>,
    failed: usize,
    found: Found,
    /// Whether any image was chosen.
    chosen: bool,
}

impl Totals {
    fn new(config: &ExtractConfig) -> Totals {
        Totals {
            named: 0,
            unopened: Vec::new(),
            unreadable: Vec::new(),
            problems: Vec::new(),
            failed: 0,
            found: Found::new(config),
            chosen: false,
        }
    }

    /// Adds what `group` gave, taking its errors and what it found.
    fn add(&mut self, group: &mut Group) {
        let named = self.named;
        self.unopened
            .extend(group.unopened.iter().map(|&k| named + k));
        self.named += group.named;
        self.unreadable.append(&mut group.unreadable);
        self.problems.append(&mut group.problems);
        let found = std::mem::replace(&mut group.found, Found::new(&group.config));
        self.found.add(found);
        self.failed += group.failed;
        self.chosen |= !group.chosen.is_empty();
    }
}

/// What opening a group's files gave.
#[derive(Default)]
struct Opened {
    /// The files opened, and their inputs.
    readable: Vec<PathBuf>,
    inputs: Vec<Input>,
    /// The errors of the others, and their numbers among the files.
    unreadable: Vec<Error>,
    unopened: Vec<usize>,
}

/// Opens `paths`, in parallel.
fn open_inputs(paths: &[PathBuf]) -> Opened {
    let opened: Vec<Result<Input>> = paths.par_iter().map(|p| Ok(Input::open(p)?)).collect();
    let mut all = Opened::default();
    for (k, (path, input)) in paths.iter().zip(opened).enumerate() {
        match input {
            Ok(input) => {
                all.readable.push(path.clone());
                all.inputs.push(input);
            }
            Err(e) => {
                all.unreadable.push(e);
                all.unopened.push(k);
            }
        }
    }
    all
}

/// Scans `inputs` in parallel, `files` told of each: what each chose, or `None` for a
/// `.kpack` archive, which is read once the scans are done.
fn scan_all(
    config: &ExtractConfig,
    inputs: &[Input],
    files: &dyn Progress,
) -> Vec<Option<Scanned>> {
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
    files: impl Iterator<Item = PathBuf>,
    targets: impl IntoIterator<Item = &'t TargetIdBuf>,
) -> Error {
    let files: Vec<String> = files
        .map(|p| format!("'{}'", crate::io::shown(&p)))
        .collect();
    let arches: Vec<&str> = targets.into_iter().map(TargetIdBuf::as_str).collect();
    Error::msg(format!(
        "no device image for {} in {}",
        arches.join(", "),
        files.join(", ")
    ))
}
