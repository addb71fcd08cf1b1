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
//! let mirrored = plan::plan(&roots, &found, Some(&output), Taken::MayHoldDeviceCode)
//!     .map_err(|r| r.to_string())?;
//! let task = mirrored.tasks.iter().next().expect("one task");
//! assert_eq!(task.placement, Placement::New(output.join("kernels.hipfb")));
//! let in_place = plan::plan(&roots, &found, None, Taken::MayHoldDeviceCode).map_err(|r| r.to_string())?;
//! assert!(in_place.tasks.iter().all(|task| task.placement.in_place()));
//!
//! assert!(plan::output_outside_inputs(&roots, &tree.join("stripped")).is_err());
//! assert!(plan::output_outside_inputs(&roots, &output).is_ok());
//! # Ok(())
//! # }
//! ```

use std::path::{Path, PathBuf};

use crate::error::Error;
use crate::io::{HeadCopy, Input, Output};
use crate::ops::rewrite::Placement;
use crate::ops::support::inputs::{
    self, may_hold_device_code, Found, FoundList, Links, Taken, Walk,
};
use crate::ops::support::keys::{path_key, KeyMap, KeySet};

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

/// The tasks of a plan, in the order of the walk: held, or, for files mirrored under an
/// output folder, made from the walk's list as they are read (so that a tree's tasks are
/// never all held).
#[derive(Debug)]
pub struct Tasks(TaskList);

#[derive(Debug)]
enum TaskList {
    /// Each task.
    Held(Vec<Task>),
    /// The files found, each written to `folder` joined with its relative path.
    Mirrored { files: FoundList, folder: PathBuf },
    /// The files found, each rewritten in place (see [`in_place_tasks`]).
    InPlace(InPlace),
}

/// The files of a job rewritten in place: each file under the first name the walk met that
/// was not reached through a symbolic link, its other names with it. Only the files that can
/// be reached twice are remembered: those with several names (hard links), those reached
/// through a symbolic link too, and, when several files or folders are named, every file.
#[derive(Debug)]
struct InPlace {
    files: FoundList,
    roots: Vec<PathBuf>,
    /// The number of tasks.
    len: usize,
    /// The other names of each file met under several, by the number of its first name among
    /// `files`.
    other_names: std::collections::HashMap<usize, Vec<(PathBuf, Placement)>>,
    /// The numbers of those other names among `files`: no task of their own.
    later: std::collections::HashSet<usize>,
}

impl InPlace {
    /// The tasks, in order, each made as it comes.
    fn iter(&self) -> impl Iterator<Item = Task> + '_ {
        (self.files.iter().enumerate())
            .filter(|(k, f)| !f.through_link && !self.later.contains(k))
            .map(|(k, f)| Task {
                placement: in_place(&self.roots, &f),
                input: f.path,
                other_names: self.other_names.get(&k).cloned().unwrap_or_default(),
            })
    }
}

impl Tasks {
    /// The number of tasks.
    pub fn len(&self) -> usize {
        match &self.0 {
            TaskList::Held(tasks) => tasks.len(),
            TaskList::Mirrored { files, .. } => files.len(),
            TaskList::InPlace(in_place) => in_place.len,
        }
    }

    /// Whether there are none.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// The tasks, in order (made as they come, for files mirrored).
    pub fn iter(&self) -> Box<dyn Iterator<Item = Task> + '_> {
        match &self.0 {
            TaskList::Held(tasks) => Box::new(tasks.iter().cloned()),
            TaskList::Mirrored { files, folder } => {
                Box::new(files.iter().map(move |found| mirrored(folder, found)))
            }
            TaskList::InPlace(in_place) => Box::new(in_place.iter()),
        }
    }

    /// The tasks in groups of `size` (at least one), in order.
    pub fn chunks(&self, size: usize) -> impl Iterator<Item = Vec<Task>> + '_ {
        let mut tasks = self.iter();
        std::iter::from_fn(move || {
            let chunk: Vec<Task> = tasks.by_ref().take(size.max(1)).collect();
            (!chunk.is_empty()).then_some(chunk)
        })
    }
}

/// The task of `found` mirrored under `folder`.
fn mirrored(folder: &Path, found: Found) -> Task {
    Task {
        input: found.path,
        placement: Placement::New(folder.join(found.relative)),
        other_names: Vec::new(),
    }
}

/// The files to rewrite and where each result goes.
#[derive(Debug)]
pub struct Plan {
    /// The files, in the order of the walk.
    pub tasks: Tasks,
    /// The files found in folders without device code (taken only when pruning).
    pub others: Tasks,
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
    /// The table that tells the outputs apart could not grow (its temporary file could not be
    /// made): two inputs meeting could not be seen.
    #[error(
        "'{}': the outputs met so far could not be remembered (a table of them in a temporary \
         file): {error}",
        crate::io::shown(input)
    )]
    Unremembered {
        /// The input whose output was being added.
        input: PathBuf,
        /// Why the table could not grow.
        error: std::io::Error,
    },
    /// The threads to work with could not be started.
    #[error("threads: {0}")]
    Threads(String),
    /// The list of the files to work on could not be written to its temporary file.
    #[error("the list of the files to work on could not be written to a temporary file: {0}")]
    List(String),
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
/// files `taken` says: the walk, its files taken out (a list held out of memory).
pub fn walk(roots: &[PathBuf], recursive: bool, links: Links, taken: Taken) -> (FoundList, Walk) {
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
    (std::mem::take(&mut walk.files), walk)
}

/// Where each of `found` is written: over itself in place (a file with several names once),
/// to `output` for a single file named, else mirrored under the folder `output`. Files found
/// in folders that hold no device code are among them only when `taken` takes them: they go
/// to [`Plan::others`].
pub fn plan(
    roots: &[PathBuf],
    found: &FoundList,
    output: Option<&Path>,
    taken: Taken,
) -> Result<Plan, Refusal> {
    // A package met in a folder is passed by as a file without device code is; one named is
    // the rewrite's (a zip is written again member by member, other kinds are refused).
    let rewritable = |f: &Found| roots.contains(&f.path) || !inputs::is_package(&f.path);
    let mut tasks = FoundList::new();
    let mut others = FoundList::new();
    for f in found.iter() {
        if taken != Taken::Every && !rewritable(&f) {
            continue;
        }
        let listed =
            (taken != Taken::Every || roots.contains(&f.path) || may_hold_device_code(&f.path))
                && rewritable(&f);
        let list = if listed { &mut tasks } else { &mut others };
        list.push_found(&f)
            .map_err(|e| Refusal::List(e.to_string()))?;
    }
    for list in [&mut tasks, &mut others] {
        list.seal().map_err(|e| Refusal::List(e.to_string()))?;
    }
    let mut plan = Plan {
        tasks: Tasks(TaskList::Held(Vec::new())),
        others: Tasks(TaskList::Held(Vec::new())),
        refused: Vec::new(),
        root: None,
        named: roots.to_vec(),
    };
    plan.tasks = destinations(roots, tasks, output, &mut plan)?;
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
    found: FoundList,
    output: Option<&Path>,
    plan: &mut Plan,
) -> Result<Tasks, Refusal> {
    let single_file = roots.len() == 1 && !roots[0].is_dir();
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
            .iter()
            .map(|f| Task {
                input: f.path,
                placement: Placement::New(output.to_path_buf()),
                other_names: Vec::new(),
            })
            .collect(),
        Some(folder) => {
            plan.root = Some(folder.to_path_buf());
            refuse_same_output(roots, &found, folder)?;
            return Ok(Tasks(TaskList::Mirrored {
                files: found,
                folder: folder.to_path_buf(),
            }));
        }
        None => {
            let tasks = in_place_tasks(roots, found, &mut plan.refused);
            return Ok(Tasks(TaskList::InPlace(tasks)));
        }
    };
    Ok(Tasks(TaskList::Held(tasks)))
}

/// Refuses two of `found` mirrored to one output under `folder`. The files of one folder
/// named have paths of their own below it: only several inputs named may meet. Each output
/// is known by a hash of its path, and a hash met twice by the files themselves: a few bytes
/// a file, not its path.
fn refuse_same_output(roots: &[PathBuf], found: &FoundList, folder: &Path) -> Result<(), Refusal> {
    if roots.len() < 2 {
        return Ok(());
    }
    // In memory while few, in a mapped temporary file beyond. A table that cannot grow
    // cannot tell the outputs apart: the run is refused then, as for two inputs meeting.
    let mut seen = KeySet::new();
    for (k, f) in found.iter().enumerate() {
        let output = folder.join(&f.relative);
        match seen.insert(path_key(&output)) {
            Ok(true) => continue,
            Ok(false) => {}
            Err(e) => {
                return Err(Refusal::Unremembered {
                    input: f.path,
                    error: e,
                })
            }
        }
        let met = found
            .iter()
            .take(k)
            .any(|e| folder.join(&e.relative) == output);
        if met {
            return Err(Refusal::SameOutput {
                input: f.path,
                output,
            });
        }
    }
    Ok(())
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
/// the tree. The tasks are made from `found` as they are read; what is held is the files that
/// may be met twice, by device and inode: those with several names, those the walk reached
/// through a symbolic link, and every file when several are named (the same file may lie
/// under two of them).
fn in_place_tasks(roots: &[PathBuf], found: FoundList, refused: &mut Vec<Error>) -> InPlace {
    use std::os::unix::fs::MetadataExt;
    let key = |path: &Path| {
        std::fs::metadata(path)
            .ok()
            .map(|m| ((m.dev(), m.ino()), m.nlink()))
    };
    // The files reached through links first: those met by another name too are remembered.
    let mut through_links = Vec::new();
    let mut linked = std::collections::HashSet::new();
    for f in found.iter().filter(|f| f.through_link) {
        let file = key(&f.path).map(|(file, _)| file);
        linked.extend(file);
        through_links.push((f.path, file));
    }
    let every = roots.len() > 1;
    let mut tasks = InPlace {
        files: FoundList::new(),
        roots: roots.to_vec(),
        len: 0,
        other_names: Default::default(),
        later: Default::default(),
    };
    // Each file met by device and inode, with the number of its first name: in memory while
    // few, in a mapped temporary file beyond.
    let mut by_file = KeyMap::new();
    let file_key = |(dev, ino): (u64, u64)| (u128::from(dev) << 64) | u128::from(ino);
    for (k, f) in found.iter().enumerate() {
        if f.through_link {
            continue;
        }
        // A file that cannot be read is a task: the rewrite says why.
        let Some((file, names)) = key(&f.path) else {
            tasks.len += 1;
            continue;
        };
        if !(every || names > 1 || linked.contains(&file)) {
            tasks.len += 1;
            continue;
        }
        match by_file.get(file_key(file)) {
            Some(first) => {
                let placement = in_place(roots, &f);
                let names = tasks.other_names.entry(first as usize).or_default();
                names.push((f.path, placement));
                tasks.later.insert(k);
            }
            None => match by_file.insert(file_key(file), k as u64) {
                Ok(_) => tasks.len += 1,
                // Not known to be met once only: left alone, rather than rewritten twice.
                Err(e) => {
                    refused.push(Error::file(
                        &f.path,
                        format!(
                            "the files met so far could not be remembered (a table of them \
                             in a temporary file: {e}); left as it is"
                        ),
                    ));
                    tasks.later.insert(k);
                }
            },
        }
    }
    for (path, file) in through_links {
        if !file.is_some_and(|file| by_file.contains(file_key(file))) {
            refused.push(Error::file(
                &path,
                "reached through a symbolic link: a walk rewrites and removes files only \
                 inside its tree; left as it is",
            ));
        }
    }
    tasks.files = found;
    tasks
}

/// An output started before its input is planned, with the copy of the input's head under way
/// ([`start_ahead`]).
pub(crate) type Started = (Option<HeadCopy>, Output);

/// Starts the new file of `input` (read as `data`) before anything of it is planned, when it
/// goes to a new file and the host code and data before its first section of device code are
/// worth copying ahead ([`Output::copy_head`]): the copy is then under way while the file is
/// scanned and planned. `None` otherwise, or when the output cannot be started (the rewrite
/// starts it again, and says why it cannot).
pub(crate) fn start_ahead(input: &Path, data: &Input, placement: &Placement) -> Option<Started> {
    if !matches!(placement, Placement::New(_)) {
        return None;
    }
    let head = crate::host::scan::sections::first_named_for_device_code(data)?;
    // Not worth a thread, or not a file: the output is started as ever, once it is needed.
    if head < crate::io::HEAD_COPY_FROM || data.identity().is_none() {
        return None;
    }
    let out = start_output(input, data, placement).ok()?;
    let copy = out.copy_head(data, head)?;
    Some((Some(copy), out))
}

/// The output of a program opened early: once a large section is packed, so that its
/// containers are made straight into it at their place, or before the program is planned
/// ([`start_ahead`]). What comes before that section is copied into it meanwhile, at the same
/// offsets, on a thread of its own: the writer steps over it.
pub(crate) struct Early(std::sync::Mutex<Option<Started>>);

impl Early {
    /// The output `started` before the program is planned, if any.
    pub(crate) fn new(started: Option<Started>) -> Early {
        Early(std::sync::Mutex::new(started))
    }

    /// A descriptor of the output of `input` (read as `data`, placed as `placement` says),
    /// started now if it was not, for bytes made at their place from `at` on
    /// ([`crate::host::program::Destination`]); `None` when it cannot be started (it is
    /// started again once the program is planned, which says why it cannot be).
    pub(crate) fn open(
        &self,
        input: &Path,
        data: &Input,
        placement: &Placement,
        at: u64,
    ) -> Option<std::fs::File> {
        let mut early = self.0.lock().unwrap_or_else(|e| e.into_inner());
        match &mut *early {
            None => {
                *early = start_output(input, data, placement)
                    .ok()
                    .map(|out| (out.copy_head(data, at), out));
            }
            // Bytes about to be made before the end of the head wait for its copy.
            Some((Some(head), _)) if at < head.len() => head.cut(at),
            Some(_) => {}
        }
        early.as_ref().and_then(|(_, out)| out.lend_file())
    }

    /// The output, once the program is planned, its head's copy waited for and adopted.
    pub(crate) fn finish(self) -> Option<Output> {
        let early = self.0.into_inner().unwrap_or_else(|e| e.into_inner());
        early.map(|(head, mut out)| {
            if let Some(head) = head {
                let bytes = out.adopt_head(head);
                tracing::debug!(bytes, "copied ahead of the writer");
            }
            out
        })
    }
}

/// Starts the output that replaces `input` (read as `data`) or goes to a new file, as
/// `placement` says, with disk reserved for as many bytes as the input has ([`Output::reserve`]):
/// what a rewrite that keeps or removes device code writes at most, and most of what one that
/// inflates it writes (the rest is reserved once the new file is planned).
pub(crate) fn start_output(
    input: &Path,
    data: &Input,
    placement: &Placement,
) -> crate::error::Result<Output> {
    let mut out = start_output_unreserved(input, data, placement)?;
    out.reserve(data.len() as u64);
    Ok(out)
}

fn start_output_unreserved(
    input: &Path,
    data: &Input,
    placement: &Placement,
) -> crate::error::Result<Output> {
    match placement {
        Placement::InPlace => Ok(Output::replace(input)?),
        Placement::InTree { .. } => {
            let (folder, name) = placement
                .folder(input)?
                .ok_or_else(|| Error::file(input, "not in a tree"))?;
            let read = data.identity().ok_or_else(|| {
                Error::file(
                    input,
                    "not a regular file: only regular files are rewritten in place",
                )
            })?;
            Ok(Output::replace_beneath(folder, &name, input, read)?)
        }
        Placement::New(output) => {
            let mut out = Output::create(output)?;
            // A new file gets the input's permissions: a program stays executable.
            let meta = std::fs::metadata(input).map_err(|e| Error::io(input, e))?;
            out.set_mode(std::os::unix::fs::PermissionsExt::mode(&meta.permissions()));
            Ok(out)
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_early_output_cuts_its_head_where_bytes_are_made_below_it() {
        let dir = tempfile::tempdir().unwrap();
        let input = dir.path().join("in");
        let bytes: Vec<u8> = (0..(12u32 << 20)).map(|i| (i % 253) as u8).collect();
        std::fs::write(&input, &bytes).unwrap();
        let data = Input::open(&input).unwrap();
        let placement = Placement::New(dir.path().join("out"));
        let out = start_output(&input, &data, &placement).unwrap();
        let head = out.copy_head(&data, 10 << 20).unwrap();
        let early = Early::new(Some((Some(head), out)));
        let claimed = |early: &Early| {
            let held = early.0.lock().unwrap();
            held.as_ref()
                .and_then(|(head, _)| head.as_ref())
                .map(HeadCopy::len)
        };
        // Bytes made past the head leave it as it is; below its end, it is cut there.
        assert!(early.open(&input, &data, &placement, 11 << 20).is_some());
        assert_eq!(claimed(&early), Some(10 << 20));
        assert!(early.open(&input, &data, &placement, 6 << 20).is_some());
        assert_eq!(claimed(&early), Some(6 << 20));
        // Finished: the output has the head's bytes, its writer's position at the start.
        let mut out = early.finish().unwrap();
        out.write_part(&data, &data).unwrap();
        let written = out.written_so_far().unwrap().unwrap();
        assert!(std::fs::read(written).unwrap() == bytes);
    }

    #[test]
    fn an_early_output_is_started_on_first_use_without_a_head_below_the_threshold() {
        let dir = tempfile::tempdir().unwrap();
        let input = dir.path().join("in");
        std::fs::write(&input, vec![7u8; 1 << 20]).unwrap();
        let data = Input::open(&input).unwrap();
        let placement = Placement::New(dir.path().join("out"));
        let early = Early::new(None);
        assert!(early.open(&input, &data, &placement, 4096).is_some());
        let held = early.0.lock().unwrap();
        assert!(matches!(&*held, Some((None, _))));
    }

    #[test]
    fn two_folders_named_with_a_file_of_one_name_are_refused_one_is_not() {
        let dir = tempfile::tempdir().unwrap();
        let elf = b"\x7fELF\x02\x01\x01";
        for folder in ["x/sub", "y/sub", "y/other"] {
            std::fs::create_dir_all(dir.path().join(folder)).unwrap();
        }
        for file in [
            "x/sub/a.so",
            "x/b.so",
            "y/sub/c.so",
            "y/other/a.so",
            "y/sub/a.so",
        ] {
            std::fs::write(dir.path().join(file), elf).unwrap();
        }
        let out = dir.path().join("out");
        let planned = |roots: &[PathBuf]| {
            let (found, _) = walk(roots, true, Links::Skip, Taken::MayHoldDeviceCode);
            plan(roots, &found, Some(&out), Taken::MayHoldDeviceCode)
        };
        let (x, y) = (dir.path().join("x"), dir.path().join("y"));
        let one = planned(std::slice::from_ref(&y)).unwrap();
        let outputs: Vec<Placement> = one.tasks.iter().map(|t| t.placement).collect();
        assert_eq!(
            outputs,
            ["other/a.so", "sub/a.so", "sub/c.so"].map(|f| Placement::New(out.join(f)))
        );
        // y/sub/a.so goes where x/sub/a.so went: the first input met again is named.
        match planned(&[x, y.clone()]) {
            Err(Refusal::SameOutput { input, output }) => {
                assert_eq!(input, y.join("sub/a.so"));
                assert_eq!(output, out.join("sub/a.so"));
            }
            other => panic!("{other:?}"),
        }
    }

    #[test]
    fn in_place_each_file_is_one_task_under_its_first_name() {
        let dir = tempfile::tempdir().unwrap();
        let tree = dir.path().join("tree");
        std::fs::create_dir_all(tree.join("a")).unwrap();
        std::fs::create_dir_all(tree.join("b")).unwrap();
        let elf = b"\x7fELF\x02\x01\x01";
        for file in ["a/one.so", "a/two.so", "b/three.so"] {
            std::fs::write(tree.join(file), elf).unwrap();
        }
        std::fs::write(dir.path().join("outside.so"), elf).unwrap();
        // Two more names of one.so, a link to two.so and one to a file outside the tree.
        std::fs::hard_link(tree.join("a/one.so"), tree.join("b/again.so")).unwrap();
        std::fs::hard_link(tree.join("a/one.so"), tree.join("b/more.so")).unwrap();
        std::os::unix::fs::symlink("../a/two.so", tree.join("b/link.so")).unwrap();
        std::os::unix::fs::symlink("../../outside.so", tree.join("b/out.so")).unwrap();
        let planned = |roots: &[PathBuf]| {
            let (found, _) = walk(roots, true, Links::Follow, Taken::MayHoldDeviceCode);
            plan(roots, &found, None, Taken::MayHoldDeviceCode).unwrap()
        };
        let tasks = |plan: &Plan| -> Vec<(PathBuf, Vec<PathBuf>)> {
            (plan.tasks.iter())
                .map(|t| {
                    let others = t.other_names.into_iter().map(|(p, _)| p).collect();
                    (t.input, others)
                })
                .collect()
        };
        let one = planned(std::slice::from_ref(&tree));
        let expected = vec![
            (
                tree.join("a/one.so"),
                vec![tree.join("b/again.so"), tree.join("b/more.so")],
            ),
            (tree.join("a/two.so"), vec![]),
            (tree.join("b/three.so"), vec![]),
        ];
        assert_eq!(tasks(&one), expected);
        assert_eq!(one.tasks.len(), 3);
        // The file outside is refused; two.so, met under its own name too, is not.
        let refused: Vec<String> = one.refused.iter().map(|e| e.to_string()).collect();
        assert_eq!(refused.len(), 1, "{refused:?}");
        assert!(refused[0].contains("out.so"), "{refused:?}");
        // A folder named twice, and a file inside it named: each file once still.
        let roots = [tree.join("a"), tree.join("a/two.so"), tree.join("a")];
        let overlapping = planned(&roots);
        assert_eq!(overlapping.tasks.len(), 2);
        let inputs: Vec<PathBuf> = tasks(&overlapping).into_iter().map(|t| t.0).collect();
        assert_eq!(inputs, [tree.join("a/one.so"), tree.join("a/two.so")]);
    }
}
