//! Splitting a tree: the files a group at a time, host files written into a folder being
//! built (a new folder beside the output's name, or a staging folder inside the output folder
//! when it exists), the archives written there from the stage, everything put in place
//! together. Nothing is held for each file written: the folder is renamed into place whole,
//! or its files moved into the folder that exists, by their names in it.

use crate::ops::kpack::config::{SplitConfig, SplitSummary};
use crate::ops::kpack::plan::{
    default_name, not_as_written, plan_files, CreatedDirs, Kind, Plan, Planned, ARCHIVE_FOLDER,
};
use crate::ops::kpack::read::{is_already_split, read_binary, SplitBinary};
use crate::ops::kpack::stage::{write_archive, ArchiveListed, Stage};
use std::path::{Component, Path, PathBuf};

use rayon::prelude::*;
use tracing::info;

use crate::error::{Error, Result};
use crate::format::kpack::GFXARCH;
use crate::io::{inside, FreshFolder, Input};

/// The most inputs open at once while splitting: the maps and descriptors of one group are
/// let go before the next group is opened, so a tree of any size splits within the limit on
/// open files.
pub(super) const FILES_AT_ONCE: usize = 64;

/// How many inputs a group holds: [`FILES_AT_ONCE`], fewer when the limit on open files is
/// low (a quarter of what is left of it after 32 for the rest of the work), at least one.
pub(super) fn files_at_once() -> usize {
    let mut limit = libc::rlimit {
        rlim_cur: 0,
        rlim_max: 0,
    };
    // SAFETY: getrlimit writes the struct it is given and nothing else.
    let known = unsafe { libc::getrlimit(libc::RLIMIT_NOFILE, &mut limit) } == 0;
    if !known {
        return FILES_AT_ONCE;
    }
    let open = usize::try_from(limit.rlim_cur).unwrap_or(usize::MAX);
    (open.saturating_sub(32) / 4).clamp(1, FILES_AT_ONCE)
}

/// Splits `inputs` (files, or folders with `recursive`) into `config.output`, all or nothing:
/// the host files, the archives and the tree's links are put in place together, once every
/// one of them is written.
#[tracing::instrument(skip_all, fields(output = %config.output.display()))]
pub fn split(inputs: &[PathBuf], config: &SplitConfig) -> Result<SplitSummary> {
    let planned = plan_files(inputs, config.recursive)?;
    let name = match &config.name {
        Some(name) => name.clone(),
        None => default_name(inputs),
    };
    check_archive_names(&name, config)?;
    let mut dirs = CreatedDirs::default();
    let committed = output_folder(&config.output, &mut dirs).and_then(|folder| {
        let summary = split_into(&planned, config, &name, &folder)?;
        crate::io::inputs_intact()?;
        folder.place()?;
        Ok(summary)
    });
    if committed.is_err() {
        dirs.remove();
    }
    let summary = committed?;
    info!(
        binaries = summary.binaries.len(),
        archives = summary.archives.len(),
        "split"
    );
    Ok(summary)
}

/// The folder a split's outputs are made in: a new folder that becomes `output` (the folders
/// above it made, noted in `dirs`), or, when `output` exists, a staging folder inside it.
fn output_folder(output: &Path, dirs: &mut CreatedDirs) -> Result<FreshFolder> {
    let missing =
        std::fs::symlink_metadata(output).is_err_and(|e| e.kind() == std::io::ErrorKind::NotFound);
    match output.parent() {
        Some(parent) if missing && output.file_name().is_some() => {
            dirs.create(parent)?;
            Ok(FreshFolder::new(output)?)
        }
        _ => {
            dirs.create(output)?;
            Ok(FreshFolder::inside(output)?)
        }
    }
}

/// Refuses a group name or an `--archive` group that could not be an archive's file name.
pub(super) fn check_archive_names(name: &str, config: &SplitConfig) -> Result<()> {
    let fine = |n: &str| {
        !n.is_empty()
            && !n.starts_with('.')
            && n.len() <= 200
            && !n.chars().any(|c| c == '/' || c == '\\' || c.is_control())
    };
    let bad = std::iter::once(name)
        .chain(config.groups.iter().map(|(g, _)| g.as_str()))
        .find(|n| !fine(n));
    match bad {
        Some(n) => Err(Error::msg(format!(
            "{}: not a name an archive can have (no '/', no control character, not starting \
             with '.')",
            crate::error::quoted(n)
        ))),
        None => Ok(()),
    }
}

/// Writes everything a split makes into `folder`, not yet in place: the host files, the
/// archives, and the tree's links.
pub(super) fn split_into(
    planned: &Plan,
    config: &SplitConfig,
    name: &str,
    folder: &FreshFolder,
) -> Result<SplitSummary> {
    make_folders(planned, config, folder)?;
    let mut stage = Stage::new()?;
    let mut summary = SplitSummary::default();
    let mut files = planned.iter().filter(|p| matches!(p.kind, Kind::File));
    let at_once = files_at_once();
    loop {
        let group: Vec<Planned> = files.by_ref().take(at_once).collect();
        if group.is_empty() {
            break;
        }
        let staged = split_group(&group, config, name, &mut stage, folder)?;
        for (p, indices) in group.iter().zip(staged) {
            let path = config.output.join(&p.relative);
            match indices {
                Ok(Some(n)) => summary
                    .binaries
                    .push(&path, n)
                    .map_err(|e| Error::msg(format!("the list of binaries split: {e}")))?,
                Ok(None) => summary.copied += 1,
                Err(e) if is_already_split(&e) => return Err(tree_split_already(&e)),
                Err(e) => summary.failed.push(e.to_string()),
            }
        }
    }
    (summary.binaries.seal())
        .map_err(|e| Error::msg(format!("the list of binaries split: {e}")))?;
    if !stage.archives.is_empty() {
        summary.archives = write_archives(planned, config, stage, folder)?;
    }
    for p in planned.iter() {
        if let Kind::Link(target) = &p.kind {
            let path = config.output.join(&p.relative);
            if std::fs::symlink_metadata(&path).is_ok_and(|m| m.is_dir()) {
                return Err(Error::file(
                    path,
                    "a folder is there, where a link of the tree goes",
                ));
            }
            folder.link(target, p.relative.as_os_str(), &path)?;
            summary.copied += 1;
        }
    }
    Ok(summary)
}

/// Makes in `folder` the folders the `planned` outputs go in. Where a folder of the output
/// exists already, an output's place is checked to be inside the output folder once links
/// there are followed.
fn make_folders(planned: &Plan, config: &SplitConfig, folder: &FreshFolder) -> Result<()> {
    let mut last: Option<PathBuf> = None;
    for p in planned.iter() {
        let path = config.output.join(&p.relative);
        if path.parent().is_some_and(Path::exists) {
            inside(&config.output, &path)?;
        }
        let parent = p.relative.parent().filter(|d| !d.as_os_str().is_empty());
        if let Some(parent) = parent.filter(|d| last.as_deref() != Some(*d)) {
            folder.make_folders(parent, &config.output.join(parent))?;
            last = Some(parent.to_path_buf());
        }
    }
    Ok(())
}

/// Writes the archives of `stage` into `.kpack/` of `folder`, in parallel; gives what the
/// summary lists of each.
fn write_archives(
    planned: &Plan,
    config: &SplitConfig,
    stage: Stage,
    folder: &FreshFolder,
) -> Result<Vec<ArchiveListed>> {
    if planned
        .iter()
        .any(|p| p.relative == Path::new(ARCHIVE_FOLDER))
    {
        return Err(Error::msg(format!(
            "'{}': the tree has its own '{ARCHIVE_FOLDER}', where the archives go",
            crate::io::shown(&config.output.join(ARCHIVE_FOLDER))
        )));
    }
    let archive_dir = config.output.join(ARCHIVE_FOLDER);
    for a in stage.archives.values() {
        let path = archive_dir.join(&a.file_name);
        if planned
            .iter()
            .any(|p| config.output.join(&p.relative) == path)
        {
            return Err(Error::file(path, "a file of the tree goes there too"));
        }
    }
    folder.make_folders(Path::new(ARCHIVE_FOLDER), &archive_dir)?;
    let Stage {
        archives, sources, ..
    } = stage;
    let sources = sources.finish().map_err(|e| Error::io(&archive_dir, e))?;
    archives
        .into_values()
        .collect::<Vec<_>>()
        .into_par_iter()
        .map(|a| write_archive(&archive_dir, a, &sources, folder))
        .collect::<Vec<Result<_>>>()
        .into_iter()
        .collect()
}

/// The error refusing a tree that holds a binary split already: left out, its archives
/// would be copied without it; split again, its code is gone. The whole tree is refused.
fn tree_split_already(e: &Error) -> Error {
    Error::msg(format!(
        "{e}; a tree holding a split binary is refused whole, and nothing was written (put \
         its code back first with --merge, or copy the tree as it is)"
    ))
}

/// What became of one file of a group: its number of code-object indices (`None`: copied as
/// it was), or why it was left out.
pub(super) type Staged = Result<Option<usize>>;

/// Splits one group of files: opens them, reads them, writes their host files into `folder`,
/// and stages their code in `stage`, in input order; returns, per file, its number of
/// code-object indices (`None`: copied as it was). A file that cannot be opened,
/// read or written fails the group, unless the split walks a tree (`recursive`): then it is
/// left out, its error in its place, and the others go on. The inputs are closed on return.
pub(super) fn split_group(
    group: &[Planned],
    config: &SplitConfig,
    name: &str,
    stage: &mut Stage,
    folder: &FreshFolder,
) -> Result<Vec<Staged>> {
    let mut open_errors = Vec::with_capacity(group.len());
    let opened: Vec<Option<Input>> = group
        .par_iter()
        .map(|p| Input::open(&p.input))
        .collect::<Vec<_>>()
        .into_iter()
        .map(|opened| match opened {
            Ok(input) => {
                open_errors.push(None);
                Some(input)
            }
            Err(e) => {
                open_errors.push(Some(Error::from(e)));
                None
            }
        })
        .collect();
    let read: Vec<Option<Result<Option<SplitBinary<'_>>>>> = group
        .par_iter()
        .zip(&opened)
        .map(|(p, data)| {
            let data = data.as_ref()?;
            let _span = tracing::info_span!("file", path = %p.input.display()).entered();
            let search = search_paths(config, name, &p.relative);
            Some(read_binary(&p.input, data, &p.relative, &search, config))
        })
        .collect();
    let written: Vec<Option<Result<()>>> = group
        .par_iter()
        .zip(&opened)
        .zip(&read)
        .map(|((p, data), split)| match (data, split) {
            (Some(data), Some(Ok(split))) => {
                Some(write_host(p, data, split.as_ref(), config, folder))
            }
            _ => None,
        })
        .collect();
    let mut counts = Vec::with_capacity(group.len());
    let files = group
        .iter()
        .zip(&opened)
        .zip(open_errors)
        .zip(read)
        .zip(written);
    for ((((p, data), open_error), split), host) in files {
        // The first error the file met: opening, reading, then writing it.
        let failed = match (data, open_error, split, host) {
            (Some(data), None, Some(Ok(split)), Some(Ok(host))) => Ok((data, split, host)),
            (_, Some(e), _, _) | (_, None, Some(Err(e)), _) | (_, None, _, Some(Err(e))) => Err(e),
            _ => Err(Error::file(&p.input, "could not be split")),
        };
        let (data, split, ()) = match failed {
            Ok(done) => done,
            Err(e) if !config.recursive => return Err(e),
            Err(e) => {
                tracing::warn!(file = %p.input.display(), "left out: {e}");
                counts.push(Err(e));
                continue;
            }
        };
        match &split {
            Some(split) => {
                stage.add(split, (&p.input, data), config, name)?;
                counts.push(Ok(Some(split.bundle_of.len())));
            }
            None => counts.push(Ok(None)),
        }
    }
    Ok(counts)
}

/// Writes the host file of `p` (read as `data`) into `folder`, with the input's mode: the
/// split program, read back, or the file as it is. A file not written whole is removed.
pub(super) fn write_host(
    p: &Planned,
    data: &Input,
    split: Option<&SplitBinary<'_>>,
    config: &SplitConfig,
    folder: &FreshFolder,
) -> Result<()> {
    let path = config.output.join(&p.relative);
    let meta = std::fs::metadata(&p.input).map_err(|e| Error::io(&p.input, e))?;
    let mode = std::os::unix::fs::PermissionsExt::mode(&meta.permissions());
    let name = p.relative.as_os_str();
    let mut out = folder.create_with_mode(name, &path, mode)?;
    let written = match split {
        Some(split) => split
            .program
            .write_to(&p.input, &mut out, data)
            .and_then(|()| Ok(out.flush()?))
            .and_then(|()| read_back_split(&p.input, folder.staged(name), split)),
        None => out.write_part(data, data).map_err(Error::from),
    };
    let closed = written.and_then(|()| Ok(out.close().map(drop)?));
    if closed.is_err() {
        let _ = folder.remove(name);
    }
    closed
}

/// The search paths written into the binary at `relative` (under the output folder): those
/// given, else the archives of `.kpack/` at the output's top, `<name>_@GFXARCH@.kpack`, and
/// each group's archive by its own name.
pub(super) fn search_paths(config: &SplitConfig, name: &str, relative: &Path) -> Vec<String> {
    if !config.search_paths.is_empty() {
        return config.search_paths.clone();
    }
    let depth = relative
        .components()
        .filter(|c| matches!(c, Component::Normal(_)))
        .count()
        .saturating_sub(1);
    let up = "../".repeat(depth);
    std::iter::once(format!("{up}{ARCHIVE_FOLDER}/{name}_{GFXARCH}.kpack"))
        .chain(
            config
                .groups
                .iter()
                .map(|(group, _)| format!("{up}{ARCHIVE_FOLDER}/{name}_{group}.kpack")),
        )
        .collect()
}

/// Reads the host file of `split` just written to `written` back (when it is a file of its
/// own): its reference names the binary, and every wrapper is `HIPK` with its position as its
/// index.
pub(super) fn read_back_split(
    input: &Path,
    written: Option<PathBuf>,
    split: &SplitBinary<'_>,
) -> Result<()> {
    let Some(written) = written else {
        return Ok(());
    };
    let data = Input::open(&written)?;
    let found = crate::host::kpack::split_binary(input, &data)?;
    let expected: Vec<u64> = (0..split.bundle_of.len() as u64).collect();
    match found {
        Some(found)
            if found.reference.kernel_name == split.kernel_name && found.indices == expected =>
        {
            Ok(())
        }
        _ => Err(not_as_written(
            input,
            "no kpack reference, or other wrappers",
        )),
    }
}
