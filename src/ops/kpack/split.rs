//! Splitting a tree: the files a group at a time, host files written beside their places, the
//! archives written from the stage, everything put in place together.

use crate::ops::kpack::config::{SplitConfig, SplitSummary};
use crate::ops::kpack::plan::{
    default_name, not_as_written, plan_files, CreatedDirs, Kind, Planned, ARCHIVE_FOLDER,
};
use crate::ops::kpack::read::{is_already_split, read_binary, SplitBinary};
use crate::ops::kpack::stage::{write_archive, ArchiveListed, Stage};
use std::path::{Component, Path, PathBuf};

use rayon::prelude::*;
use tracing::info;

use crate::error::{Error, Result};
use crate::format::kpack::GFXARCH;
use crate::io::{inside, place_all, Closed, Input, Output};

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
    let mut links = MadeLinks::default();
    let written = split_into(&planned, config, &name, &mut dirs, &mut links);
    let committed = written.and_then(|(summary, closed)| {
        place_all(closed)?;
        links.place()?;
        Ok(summary)
    });
    if committed.is_err() {
        links.remove();
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

/// Writes everything a split makes, not yet in place: the host files (closed, holding no
/// descriptor), the archives, and the tree's links under temporary names.
pub(super) fn split_into(
    planned: &[Planned],
    config: &SplitConfig,
    name: &str,
    dirs: &mut CreatedDirs,
    links: &mut MadeLinks,
) -> Result<(SplitSummary, Vec<Closed>)> {
    dirs.create(&config.output)?;
    for p in planned {
        let path = config.output.join(&p.relative);
        if let Some(parent) = path.parent() {
            dirs.create(parent)?;
        }
        inside(&config.output, &path)?;
    }
    let mut stage = Stage::default();
    let mut closed = Vec::new();
    let mut summary = SplitSummary::default();
    let files: Vec<&Planned> = planned
        .iter()
        .filter(|p| matches!(p.kind, Kind::File))
        .collect();
    for group in files.chunks(files_at_once()) {
        let (written, staged) = split_group(group, config, name, &mut stage)?;
        closed.extend(written);
        for (p, indices) in group.iter().zip(staged) {
            let path = config.output.join(&p.relative);
            match indices {
                Ok(Some(n)) => summary.binaries.push((path, n)),
                Ok(None) => summary.copied.push(path),
                Err(e) if is_already_split(&e) => return Err(tree_split_already(&e)),
                Err(e) => summary.failed.push(e.to_string()),
            }
        }
    }
    if !stage.archives.is_empty() {
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
        dirs.create(&archive_dir)?;
        let made: Vec<(Closed, ArchiveListed)> = std::mem::take(&mut stage.archives)
            .into_values()
            .collect::<Vec<_>>()
            .into_par_iter()
            .map(|a| write_archive(&config.output, &archive_dir, a, &stage.sources))
            .collect::<Vec<Result<_>>>()
            .into_iter()
            .collect::<Result<_>>()?;
        for (out, listed) in made {
            if planned
                .iter()
                .any(|p| config.output.join(&p.relative) == listed.0)
            {
                return Err(Error::file(listed.0, "a file of the tree goes there too"));
            }
            closed.push(out);
            summary.archives.push(listed);
        }
    }
    for p in planned {
        if let Kind::Link(target) = &p.kind {
            let path = config.output.join(&p.relative);
            links.make(target, &path)?;
            summary.copied.push(path);
        }
    }
    Ok((summary, closed))
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

/// Splits one group of files: opens them, reads them, writes their host files, and stages
/// their code in `stage`, in input order; returns the host files written and, per file, its
/// number of code-object indices (`None`: copied as it was). A file that cannot be opened,
/// read or written fails the group, unless the split walks a tree (`recursive`): then it is
/// left out, its error in its place, and the others go on. The inputs are closed on return.
pub(super) fn split_group(
    group: &[&Planned],
    config: &SplitConfig,
    name: &str,
    stage: &mut Stage,
) -> Result<(Vec<Closed>, Vec<Staged>)> {
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
    let written: Vec<Option<Result<Closed>>> = group
        .par_iter()
        .zip(&opened)
        .zip(&read)
        .map(|((p, data), split)| match (data, split) {
            (Some(data), Some(Ok(split))) => Some(write_host(p, data, split.as_ref(), config)),
            _ => None,
        })
        .collect();
    let mut closed = Vec::with_capacity(group.len());
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
        let (data, split, host) = match failed {
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
        closed.push(host);
    }
    Ok((closed, counts))
}

/// Writes the host file of `p` (read as `data`): the split program, or the file as it is.
pub(super) fn write_host(
    p: &Planned,
    data: &Input,
    split: Option<&SplitBinary<'_>>,
    config: &SplitConfig,
) -> Result<Closed> {
    let path = config.output.join(&p.relative);
    let mut out = Output::create(&path)?;
    let meta = std::fs::metadata(&p.input).map_err(|e| Error::io(&p.input, e))?;
    out.set_mode(std::os::unix::fs::PermissionsExt::mode(&meta.permissions()));
    match split {
        Some(split) => {
            split.program.write_to(&p.input, &mut out, data)?;
            read_back_split(&p.input, &mut out, split)?;
        }
        None => out.write_part(data, data)?,
    }
    Ok(out.close()?)
}

/// Symbolic links of the tree, made under temporary names beside their places until the
/// split is put in place.
#[derive(Default)]
pub(super) struct MadeLinks(Vec<(PathBuf, PathBuf)>);

impl MadeLinks {
    /// Makes a link to `target` that will be `path`.
    pub(super) fn make(&mut self, target: &Path, path: &Path) -> Result<()> {
        if std::fs::symlink_metadata(path).is_ok_and(|m| m.is_dir()) {
            return Err(Error::file(
                path,
                "a folder is there, where a link of the tree goes",
            ));
        }
        // The name's bytes as they are: a name that is not UTF-8 stays itself.
        let mut temporary_name = std::ffi::OsString::from(".");
        temporary_name.push(path.file_name().unwrap_or_default());
        temporary_name.push(format!(
            ".kpack-link.{}.{}",
            std::process::id(),
            self.0.len()
        ));
        let temporary = path.with_file_name(temporary_name);
        std::os::unix::fs::symlink(target, &temporary).map_err(|e| Error::io(&temporary, e))?;
        self.0.push((temporary, path.to_path_buf()));
        Ok(())
    }

    /// Renames every link into place.
    pub(super) fn place(&self) -> Result<()> {
        for (temporary, path) in &self.0 {
            std::fs::rename(temporary, path).map_err(|e| Error::io(path, e))?;
        }
        Ok(())
    }

    /// Removes the links not yet in place.
    pub(super) fn remove(&self) {
        for (temporary, _) in &self.0 {
            let _ = std::fs::remove_file(temporary);
        }
    }
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

/// Reads the host file of `split` just written to `out` back: its reference names the
/// binary, and every wrapper is `HIPK` with its position as its index.
pub(super) fn read_back_split(
    input: &Path,
    out: &mut Output,
    split: &SplitBinary<'_>,
) -> Result<()> {
    let Some(written) = out.written_so_far()? else {
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
