//! The files of a rewrite job and where each result goes: over itself in place (a file with
//! several names once), to the output file named, or mirrored under an output folder; the
//! refusals that keep a job from starting (an output folder inside the inputs, two inputs
//! written to one output).
//!
//! # Example
//!
//! The files of a folder, and where each result goes: in place, or mirrored under an output
//! folder, which may not lie inside the inputs.
//!
//! ```
//! use offload::format::bundle;
//! use offload::ops::rewrite::plan;
//! use offload::ops::rewrite::Placement;
//! use offload::ops::{Links, Taken};
//!
//! # fn main() -> Result<(), Box<dyn std::error::Error>> {
//! let dir = tempfile::tempdir()?;
//! let tree = dir.path().join("lib");
//! std::fs::create_dir_all(&tree)?;
//! std::fs::write(tree.join("kernels.hipfb"), bundle::to_vec(&[("hip-amdgcn-amd-amdhsa--gfx90a", b"code")], 8))?;
//! std::fs::write(tree.join("notes.txt"), b"no device code")?;
//!
//! let roots = vec![tree.clone()];
//! let (found, _walk) = plan::walk(&roots, true, Links::Skip, Taken::MayHoldDeviceCode);
//! assert_eq!(found.len(), 1, "the text file may hold no device code");
//!
//! let output = dir.path().join("out");
//! let mirrored = plan::plan(&roots, found.clone(), Some(&output), Taken::MayHoldDeviceCode)
//!     .map_err(|r| r.to_string())?;
//! assert_eq!(mirrored.tasks[0].placement, Placement::New(output.join("kernels.hipfb")));
//! let in_place = plan::plan(&roots, found, None, Taken::MayHoldDeviceCode).map_err(|r| r.to_string())?;
//! assert!(in_place.tasks[0].placement.in_place());
//!
//! assert!(plan::output_outside_inputs(&roots, &tree.join("stripped")).is_err());
//! assert!(plan::output_outside_inputs(&roots, &output).is_ok());
//! # Ok(())
//! # }
//! ```

use std::path::{Path, PathBuf};

use crate::error::Error;
use crate::ops::rewrite::Placement;
use crate::ops::support::inputs::{self, may_hold_device_code, Found, Links, Taken, Walk};

/// One file of a job and where its result goes.
#[derive(Debug, Clone)]
pub struct Task {
    /// The file to read.
    pub input: PathBuf,
    /// Where its result goes.
    pub placement: Placement,
    /// In place, the other names the walk met for the same file (hard links), each with its
    /// placement: a file pruned loses them all.
    pub other_names: Vec<(PathBuf, Placement)>,
}

/// The files to rewrite and where each result goes.
#[derive(Debug)]
pub struct Plan {
    /// The files, in the order of the walk.
    pub tasks: Vec<Task>,
    /// The files found in folders without device code (taken only when pruning).
    pub others: Vec<Task>,
    /// Files reached through a symbolic link the walk followed, which in place are left as
    /// they are: each an error naming it.
    pub refused: Vec<Error>,
    /// The folder the outputs mirror the inputs' tree under, if they do: no output may
    /// resolve outside it.
    pub root: Option<PathBuf>,
    /// The files and folders named: a file found in a folder without device code is left
    /// alone and not listed, one named is reported.
    pub named: Vec<PathBuf>,
}

/// Why a job does not start: nothing was read or written.
#[derive(Debug, thiserror::Error)]
pub enum Refusal {
    /// The output folder is a folder named among the inputs, or lies inside one.
    #[error(
        "the output folder '{}' {}, '{}': its files would be read as inputs and written over; \
         choose a folder outside it, or --in-place",
        crate::io::shown(output),
        if *same { "is the folder walked" } else { "lies inside the folder walked" },
        crate::io::shown(root)
    )]
    OutputInsideInputs {
        /// The output folder.
        output: PathBuf,
        /// The folder walked.
        root: PathBuf,
        /// Whether it is that folder itself.
        same: bool,
    },
    /// The folder a single file's output would go in is not there: found before any work,
    /// not after it.
    #[error(
        "'{}': no such folder to write the output in",
        crate::io::shown(folder)
    )]
    NoOutputFolder {
        /// The folder named (the output itself when it ends in `/`, else its parent).
        folder: PathBuf,
    },
    /// Two inputs would be written to one output.
    #[error(
        "'{}' and another input would both be written to '{}'",
        crate::io::shown(input),
        crate::io::shown(output)
    )]
    SameOutput {
        /// The second input.
        input: PathBuf,
        /// The output both go to.
        output: PathBuf,
    },
    /// The threads to work with could not be started.
    #[error("threads: {0}")]
    Threads(String),
    /// With pruning, the targets kept keep no device image of any file.
    #[error(
        "the targets kept keep none of the {images} device images found: --prune would \
         remove every file of device code; nothing was changed (give --allow-empty to do it)"
    )]
    KeepsNothing {
        /// The device images found.
        images: u64,
    },
}

impl Refusal {
    /// Whether the request itself is at fault (its files and folders, as named), rather than
    /// what was found in them.
    pub fn is_usage(&self) -> bool {
        matches!(
            self,
            Refusal::OutputInsideInputs { .. } | Refusal::SameOutput { .. }
        )
    }
}

/// Refuses an output folder that is one of the folders named, or lies inside one (its files
/// would be read again as inputs, and its names would be the inputs' own).
pub fn output_outside_inputs(roots: &[PathBuf], output: &Path) -> Result<(), Refusal> {
    let Some(real_output) = real_path(output) else {
        return Ok(());
    };
    for root in roots.iter().filter(|r| r.is_dir()) {
        let Ok(real_root) = std::fs::canonicalize(root) else {
            continue;
        };
        if real_output.starts_with(&real_root) {
            return Err(Refusal::OutputInsideInputs {
                output: output.to_path_buf(),
                root: root.clone(),
                same: real_output == real_root,
            });
        }
    }
    Ok(())
}

/// The real path `path` has or would have: its longest existing part with links resolved,
/// then the names still to be made.
fn real_path(path: &Path) -> Option<PathBuf> {
    let mut missing = Vec::new();
    let mut existing = path;
    loop {
        if let Ok(real) = std::fs::canonicalize(existing) {
            return Some(missing.iter().rev().fold(real, |p, name| p.join(name)));
        }
        missing.push(existing.file_name()?);
        existing = match existing.parent() {
            Some(parent) if !parent.as_os_str().is_empty() => parent,
            _ => Path::new("."),
        };
    }
}

/// The files of `roots`, walked as `recursive` and `links` say, taking from folders the
/// files `taken` says: the walk, its files taken out.
pub fn walk(roots: &[PathBuf], recursive: bool, links: Links, taken: Taken) -> (Vec<Found>, Walk) {
    let mut walk = inputs::walk(
        roots,
        inputs::WalkOptions {
            recursive,
            links,
            files: taken,
        },
    );
    tracing::info!(
        files = walk.files.len(),
        skipped = walk.skipped,
        "inputs walked"
    );
    (std::mem::take(&mut walk.files).into_iter().collect(), walk)
}

/// Where each of `found` is written: over itself in place (a file with several names once),
/// to `output` for a single file named, else mirrored under the folder `output`. Files found
/// in folders that hold no device code are among them only when `taken` takes them: they go
/// to [`Plan::others`].
pub fn plan(
    roots: &[PathBuf],
    found: Vec<Found>,
    output: Option<&Path>,
    taken: Taken,
) -> Result<Plan, Refusal> {
    // A package met in a folder is passed by as a file without device code is; one named is
    // the rewrite's (a zip is written again member by member, other kinds are refused).
    let rewritable = |f: &Found| roots.contains(&f.path) || !inputs::is_package(&f.path);
    let found = found
        .into_iter()
        .filter(|f| taken == Taken::Every || rewritable(f));
    let (found, others): (Vec<Found>, Vec<Found>) = found.partition(|f| {
        (taken != Taken::Every || roots.contains(&f.path) || may_hold_device_code(&f.path))
            && rewritable(f)
    });
    let mut plan = Plan {
        tasks: Vec::new(),
        others: Vec::new(),
        refused: Vec::new(),
        root: None,
        named: roots.to_vec(),
    };
    plan.tasks = destinations(roots, found, output, &mut plan)?;
    plan.others = destinations(roots, others, output, &mut plan)?;
    Ok(plan)
}

/// Where the file `found`, found under one of `roots`, is rewritten in place.
fn in_place(roots: &[PathBuf], found: &Found) -> Placement {
    if roots.contains(&found.path) {
        return Placement::InPlace;
    }
    let depth = found.relative.components().count();
    let root = found.path.ancestors().nth(depth).unwrap_or(Path::new(""));
    Placement::InTree {
        root: root.to_path_buf(),
        relative: found.relative.clone(),
    }
}

/// Where each of `found` is written (see [`plan`]); the plan's root becomes the output
/// folder, if the outputs go under one.
fn destinations(
    roots: &[PathBuf],
    found: Vec<Found>,
    output: Option<&Path>,
    plan: &mut Plan,
) -> Result<Vec<Task>, Refusal> {
    let single_file = roots.len() == 1 && !roots[0].is_dir();
    let new = |input: PathBuf, output: PathBuf| Task {
        input,
        placement: Placement::New(output),
        other_names: Vec::new(),
    };
    if let Some(output) = output.filter(|o| single_file && !o.is_dir()) {
        let folder = output_folder(output);
        if !folder.is_dir() {
            return Err(Refusal::NoOutputFolder {
                folder: folder.to_path_buf(),
            });
        }
    }
    let tasks = match output {
        Some(output) if single_file && !output.is_dir() => found
            .into_iter()
            .map(|f| new(f.path, output.to_path_buf()))
            .collect(),
        Some(folder) => {
            plan.root = Some(folder.to_path_buf());
            let tasks: Vec<Task> = found
                .into_iter()
                .map(|Found { path, relative, .. }| new(path, folder.join(relative)))
                .collect();
            let mut seen = std::collections::HashSet::new();
            if let Some(task) = tasks.iter().find(|task| !seen.insert(&task.placement)) {
                let Placement::New(output) = &task.placement else {
                    unreachable!("every output is a new file");
                };
                return Err(Refusal::SameOutput {
                    input: task.input.clone(),
                    output: output.clone(),
                });
            }
            tasks
        }
        None => in_place_tasks(roots, found, &mut plan.refused),
    };
    Ok(tasks)
}

/// The folder a single file's output `output` is written in: `output` itself when it ends in
/// `/` (it names a folder), else the folder it names its file in (`.` for a bare name).
fn output_folder(output: &Path) -> &Path {
    use std::os::unix::ffi::OsStrExt;
    if output.as_os_str().as_bytes().ends_with(b"/") {
        return output;
    }
    match output.parent() {
        Some(parent) if !parent.as_os_str().is_empty() => parent,
        _ => Path::new("."),
    }
}

/// The tasks of files rewritten in place: a file with several names once, under the first
/// name not reached through a symbolic link (its other names pruned with it). A file reached
/// only through links the walk followed is refused (added to `refused`): it may lie outside
/// the tree.
fn in_place_tasks(roots: &[PathBuf], found: Vec<Found>, refused: &mut Vec<Error>) -> Vec<Task> {
    use std::collections::hash_map::Entry;
    use std::os::unix::fs::MetadataExt;
    let mut tasks: Vec<Task> = Vec::new();
    let mut by_file: std::collections::HashMap<(u64, u64), usize> = Default::default();
    let mut through_links = Vec::new();
    for f in found {
        if f.through_link {
            through_links.push(f);
            continue;
        }
        let placement = in_place(roots, &f);
        let Ok(meta) = std::fs::metadata(&f.path) else {
            // The rewrite says why it cannot be read.
            tasks.push(Task {
                input: f.path,
                placement,
                other_names: Vec::new(),
            });
            continue;
        };
        match by_file.entry((meta.dev(), meta.ino())) {
            Entry::Occupied(first) => tasks[*first.get()].other_names.push((f.path, placement)),
            Entry::Vacant(slot) => {
                slot.insert(tasks.len());
                tasks.push(Task {
                    input: f.path,
                    placement,
                    other_names: Vec::new(),
                });
            }
        }
    }
    for f in through_links {
        let known =
            std::fs::metadata(&f.path).is_ok_and(|m| by_file.contains_key(&(m.dev(), m.ino())));
        if !known {
            refused.push(Error::file(
                &f.path,
                "reached through a symbolic link: a walk rewrites and removes files only \
                 inside its tree; left as it is",
            ));
        }
    }
    tasks
}
