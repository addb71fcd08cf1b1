//! What splitting and merging share: the files to write and their places under the output
//! folder, the folders made for them, and the archive folder's name.

use std::path::{Path, PathBuf};

use crate::error::{Error, Result};
use crate::ops::support::found::{Found, FoundList};
use crate::ops::support::inputs::{walk, Links, Taken, WalkOptions};
use crate::ops::support::keys::{path_key, KeySet};

/// The folder, beside the host files, that holds the archives.
pub const ARCHIVE_FOLDER: &str = ".kpack";

/// Bundles put back are aligned as clang aligns HIP bundles and their entries.
pub(super) const BUNDLE_ALIGN: u64 = 4096;

/// A file to write: where it comes from, and its path under the output folder.
pub(super) struct Planned {
    pub(super) input: PathBuf,
    pub(super) relative: PathBuf,
    pub(super) kind: Kind,
}

pub(super) enum Kind {
    File,
    Link(PathBuf),
}

impl From<Found> for Planned {
    fn from(found: Found) -> Planned {
        Planned {
            input: found.path,
            relative: found.relative,
            kind: found.link.map_or(Kind::File, Kind::Link),
        }
    }
}

/// The files to write, in order: the walk's list, kept out of memory, read again for each
/// pass over them.
pub(super) struct Plan(FoundList);

impl Plan {
    /// The files to write, in order, each made as it is read.
    pub(super) fn iter(&self) -> impl Iterator<Item = Planned> + '_ {
        self.0.iter().map(Planned::from)
    }
}

/// Folders made for the outputs, removed again (deepest first, only when empty) if the split
/// fails.
#[derive(Default)]
pub(super) struct CreatedDirs(Vec<PathBuf>);

impl CreatedDirs {
    pub(super) fn create(&mut self, dir: &Path) -> Result<()> {
        let mut missing = Vec::new();
        let mut at = Some(dir);
        while let Some(d) = at.filter(|d| !d.as_os_str().is_empty() && !d.exists()) {
            missing.push(d.to_path_buf());
            at = d.parent();
        }
        for d in missing.into_iter().rev() {
            std::fs::create_dir(&d).map_err(|e| Error::io(&d, e))?;
            self.0.push(d);
        }
        Ok(())
    }

    pub(super) fn remove(&self) {
        for d in self.0.iter().rev() {
            let _ = std::fs::remove_dir(d);
        }
    }
}

/// The group name when none is given: the first input's name up to its first `.`, or
/// `device` when that is empty or not UTF-8 (the name is text in the split binaries'
/// references, and no archive is named with a replacement character).
pub(super) fn default_name(inputs: &[PathBuf]) -> String {
    inputs
        .first()
        .and_then(|p| p.file_name())
        .and_then(|n| n.to_str())
        .map(|n| n.split('.').next().unwrap_or("").to_string())
        .filter(|n| !n.is_empty())
        .unwrap_or_else(|| "device".to_string())
}

/// The files to write: each file given, by its own name; each folder's regular files and
/// symbolic links, by their paths under it (`recursive` only). Two inputs going to one path
/// are an error.
pub(super) fn plan_files(inputs: &[PathBuf], recursive: bool) -> Result<Plan> {
    for input in inputs {
        let meta = std::fs::metadata(input).map_err(|e| Error::io(input, e))?;
        if meta.is_dir() && !recursive {
            return Err(Error::file(
                input,
                "a folder; give -r to split everything under it",
            ));
        }
        if !meta.is_dir() && input.file_name().is_none() {
            return Err(Error::file(input, "not a file name"));
        }
    }
    let walk = walk(
        inputs,
        WalkOptions {
            recursive: true,
            links: Links::Keep,
            files: Taken::Every,
        },
    );
    if let Some(e) = walk.errors.into_iter().next() {
        return Err(e);
    }
    let plan = Plan(walk.files);
    // The files of one input go to paths of their own; only two inputs can meet. Each path is
    // remembered by its hash (in memory while few, in a mapped temporary file beyond), and a
    // hash met again is looked for among the paths before it.
    if inputs.len() > 1 {
        let mut seen = KeySet::new();
        for (n, p) in plan.iter().enumerate() {
            let new = (seen.insert(path_key(&p.relative))).map_err(|e| Error::io(&p.input, e))?;
            if !new && plan.iter().take(n).any(|q| q.relative == p.relative) {
                return Err(Error::file(
                    &p.input,
                    format!(
                        "another input also goes to '{}'",
                        crate::io::shown(&p.relative)
                    ),
                ));
            }
        }
    }
    Ok(plan)
}

/// The error for an output that does not read back as written.
pub(super) fn not_as_written(path: &Path, why: impl std::fmt::Display) -> Error {
    Error::file(
        path,
        format!("the written file does not read back as it should ({why}); nothing was written"),
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn two_inputs_going_to_one_path_are_refused_and_others_are_not() {
        let dir = tempfile::tempdir().unwrap();
        for file in [
            "a/x/lib.so",
            "a/y.so",
            "b/x/lib.so",
            "b/z.so",
            "c/x//other.so",
        ] {
            let path = dir.path().join(file);
            std::fs::create_dir_all(path.parent().unwrap()).unwrap();
            std::fs::write(&path, b"\x7fELF").unwrap();
        }
        let (a, b, c) = (
            dir.path().join("a"),
            dir.path().join("b"),
            dir.path().join("c"),
        );
        // a/x/lib.so and b/x/lib.so both go to x/lib.so: the second is named.
        let Err(e) = plan_files(&[a.clone(), b.clone()], true) else {
            panic!("two inputs going to x/lib.so were not refused");
        };
        let e = e.to_string();
        assert!(
            e.contains("b/x/lib.so") && e.contains("another input also goes to 'x/lib.so'"),
            "{e}"
        );
        // Folders whose files go to paths of their own: every file, once.
        let plan = plan_files(&[a, c], true).unwrap();
        let mut relative: Vec<PathBuf> = plan.iter().map(|p| p.relative).collect();
        relative.sort();
        assert_eq!(
            relative,
            ["x/lib.so", "x/other.so", "y.so"].map(PathBuf::from)
        );
    }
}
