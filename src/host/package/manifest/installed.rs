//! The manifests of the environments installed in a tree, brought up to date after files of
//! the tree were rewritten or removed: each `*.dist-info/RECORD` under it (its paths relative
//! to the folder holding the `.dist-info`, a `site-packages`; `..` reaches scripts and data)
//! and, when the tree is a conda environment's prefix, each `conda-meta/*.json` (its paths
//! relative to the prefix).
//!
//! Everything is reached through folder descriptors from the tree's root, never through a
//! symbolic link: a manifest is read and replaced in its folder, and a file it lists is read
//! (to hash it) only when the rewrite changed it. A path a manifest lists is resolved by its
//! names alone, and one that leads out of the tree (`../../../etc/x` from a `site-packages`
//! walked on its own, an absolute path) matches nothing: no manifest makes anything outside
//! the tree read or written.

use std::collections::BTreeMap;
use std::ffi::{OsStr, OsString};
use std::io::Read;
use std::os::unix::ffi::OsStrExt;
use std::path::{Component, Path, PathBuf};

use super::{conda, record, Counts, Edit, ManifestError, Sha256};
use crate::error::{Error, Result};
use crate::io::beneath::Folder;
use crate::io::Output;

/// What became of a file of the tree.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Touched {
    /// Rewritten: its manifests' digests and sizes are read from it again.
    Rewritten,
    /// Removed.
    Removed,
}

/// Which manifest.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ManifestKind {
    /// A `.dist-info/RECORD` of an installed Python distribution.
    Record,
    /// A `conda-meta/<package>.json` of a conda environment.
    Conda,
}

/// A manifest updated (or, in a dry run, that would be).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Updated {
    /// Which manifest.
    pub kind: ManifestKind,
    /// The manifest's path: the tree's root as named, joined with its path in the tree.
    pub path: PathBuf,
    /// How many of its entries changed.
    pub counts: Counts,
}

impl Updated {
    /// What the manifest belongs to: a RECORD's `.dist-info` folder, a conda record's file.
    pub fn owner(&self) -> &Path {
        match self.kind {
            ManifestKind::Record => self.path.parent().unwrap_or(&self.path),
            ManifestKind::Conda => &self.path,
        }
    }
}

/// Whether an update writes the manifests or only says what would change.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Writing {
    /// Write them.
    Write,
    /// Write nothing (the files were not rewritten either).
    DryRun,
}

/// Brings up to date the manifests under the tree `root` that list files of `touched` (each
/// by its path below `root`): the manifests changed, or each error naming the manifest that
/// could not be read or written. A tree without manifests, or a `touched` empty, gives
/// nothing.
pub fn update(
    root: &Path,
    touched: &BTreeMap<PathBuf, Touched>,
    writing: Writing,
) -> Vec<Result<Updated>> {
    if touched.is_empty() {
        return Vec::new();
    }
    let top = match Folder::open(root, Path::new("")) {
        Ok(top) => top,
        // An output folder nothing was written to: no manifest in it.
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Vec::new(),
        Err(e) => return vec![Err(Error::io(root, e))],
    };
    let tree = Tree {
        root,
        touched,
        writing,
        hashed: Default::default(),
    };
    let mut results = Vec::new();
    for dist_info in dist_infos(&top) {
        let base = dist_info.parent().unwrap_or(Path::new("")).to_path_buf();
        let record = OsStr::new("RECORD");
        results.extend(
            tree.update_one(ManifestKind::Record, &dist_info, record, |data, edit| {
                record::update(data, |path| edit(&base, path))
            }),
        );
    }
    for name in conda_records(&top) {
        let folder = Path::new("conda-meta");
        results.extend(
            tree.update_one(ManifestKind::Conda, folder, &name, |data, edit| {
                conda::update(data, |path| edit(Path::new(""), path.as_bytes()))
            }),
        );
    }
    results
}

/// Whether the tree `root` may hold manifests [`update`] brings up to date (a `*.dist-info`
/// folder with a `RECORD`, a conda record): a tree that is not there holds none; one that
/// cannot be opened may, and [`update`] names it.
pub fn may_hold_manifests(root: &Path) -> bool {
    match Folder::open(root, Path::new("")) {
        Ok(top) => !conda_records(&top).is_empty() || !dist_infos(&top).is_empty(),
        Err(e) => e.kind() != std::io::ErrorKind::NotFound,
    }
}

/// A tree whose manifests are brought up to date.
struct Tree<'a> {
    root: &'a Path,
    touched: &'a BTreeMap<PathBuf, Touched>,
    writing: Writing,
    /// The digests and sizes of the files hashed so far: a file several manifests list is
    /// read once.
    hashed: std::cell::RefCell<BTreeMap<PathBuf, (Sha256, u64)>>,
}

/// The lookup a codec asks of each path its manifest lists: the path, relative to the
/// folder given, and what became of it.
type Lookup<'l> = dyn FnMut(&Path, &[u8]) -> Option<Edit<Sha256>> + 'l;

impl Tree<'_> {
    /// Updates the manifest `name` (of the kind `kind`) of the folder `folder` (below the
    /// root) with `codec`, which is given the manifest and the lookup of its paths: the
    /// manifest updated, or `None` when none of its entries changed.
    fn update_one(
        &self,
        kind: ManifestKind,
        folder: &Path,
        name: &OsStr,
        codec: impl FnOnce(
            &[u8],
            &mut Lookup<'_>,
        ) -> std::result::Result<(Vec<u8>, Counts), ManifestError>,
    ) -> Option<Result<Updated>> {
        let shown_path = self.root.join(folder).join(name);
        let open = Folder::open(self.root, folder).map_err(|e| Error::io(&shown_path, e));
        let read = open.and_then(|dir| {
            let (data, identity) = read_in(&dir, name).map_err(|e| Error::io(&shown_path, e))?;
            Ok((dir, data, identity))
        });
        let (dir, data, identity) = match read {
            Ok(read) => read,
            Err(e) => return Some(Err(e)),
        };
        let mut failed = None;
        let mut lookup = |base: &Path, listed: &[u8]| -> Option<Edit<Sha256>> {
            let relative = resolve(base, listed)?;
            let edit = match self.touched.get(&relative)? {
                Touched::Removed => Edit::Removed,
                Touched::Rewritten if self.writing == Writing::DryRun => Edit::Rewritten {
                    // Not rewritten yet: any digest other than its own counts it.
                    digest: [0; 32],
                    size: 0,
                },
                Touched::Rewritten => match self.contents(&relative) {
                    Ok((digest, size)) => Edit::Rewritten { digest, size },
                    Err(e) => {
                        failed.get_or_insert(e);
                        return None;
                    }
                },
            };
            Some(edit)
        };
        let updated = codec(&data, &mut lookup);
        if let Some(e) = failed {
            return Some(Err(e));
        }
        let (new, counts) = match updated {
            Ok(updated) => updated,
            Err(e) => {
                let what = match kind {
                    ManifestKind::Record => "a wheel RECORD",
                    ManifestKind::Conda => "a conda package record",
                };
                return Some(Err(Error::file(
                    &shown_path,
                    format!("cannot be read as {what}: {e}"),
                )));
            }
        };
        if counts.is_empty() {
            return None;
        }
        if self.writing == Writing::Write && new != data {
            let written =
                Output::replace_beneath(dir, name, &shown_path, identity).and_then(|mut out| {
                    out.write_bytes(&new)?;
                    out.commit()
                });
            if let Err(e) = written {
                return Some(Err(e.into()));
            }
        }
        Some(Ok(Updated {
            kind,
            path: shown_path,
            counts,
        }))
    }

    /// The SHA-256 and size of the file at `relative` below the root, read through its
    /// folder, a symbolic link not followed (once).
    fn contents(&self, relative: &Path) -> Result<(Sha256, u64)> {
        if let Some(known) = self.hashed.borrow().get(relative) {
            return Ok(*known);
        }
        let contents = self.hash(relative)?;
        self.hashed
            .borrow_mut()
            .insert(relative.to_path_buf(), contents);
        Ok(contents)
    }

    /// The SHA-256 and size of the file at `relative` below the root, read now.
    fn hash(&self, relative: &Path) -> Result<(Sha256, u64)> {
        use sha2::Digest;
        let shown_path = self.root.join(relative);
        let cannot = |e| Error::io(&shown_path, e);
        let (folder, name) = crate::io::beneath::split(relative)
            .ok_or_else(|| Error::file(&shown_path, "not a file of the tree"))?;
        let dir = Folder::open(self.root, folder).map_err(cannot)?;
        let (mut file, meta) =
            crate::io::opening::open_nonblocking_nofollow(&dir.path().join(name))
                .map_err(cannot)?;
        if !meta.is_file() {
            return Err(Error::file(&shown_path, "not a regular file"));
        }
        crate::io::opening::blocking(&file).map_err(cannot)?;
        let mut hasher = sha2::Sha256::new();
        let mut size = 0u64;
        let mut buffer = vec![0u8; 1 << 16];
        loop {
            let n = match file.read(&mut buffer) {
                Ok(n) => n,
                Err(e) if e.kind() == std::io::ErrorKind::Interrupted => continue,
                Err(e) => return Err(cannot(e)),
            };
            let Some(read) = buffer.get(..n).filter(|r| !r.is_empty()) else {
                break;
            };
            hasher.update(read);
            size = size.saturating_add(read.len() as u64);
        }
        Ok((hasher.finalize().into(), size))
    }
}

/// The bytes of the file `name` of `dir` (a symbolic link not followed), and which file it
/// was.
fn read_in(dir: &Folder, name: &OsStr) -> std::io::Result<(Vec<u8>, crate::io::beneath::Identity)> {
    use std::os::unix::fs::MetadataExt;
    let (mut file, meta) = crate::io::opening::open_nonblocking_nofollow(&dir.path().join(name))?;
    if !meta.is_file() {
        return Err(std::io::Error::other("not a regular file"));
    }
    crate::io::opening::blocking(&file)?;
    let mut data = Vec::new();
    file.read_to_end(&mut data)?;
    Ok((data, (meta.dev(), meta.ino())))
}

/// The path `listed` (a manifest's, `/`-separated) names relative to the folder `base` (below
/// the root), by its names alone: `None` for an absolute path, or one whose `..` leave the
/// tree.
fn resolve(base: &Path, listed: &[u8]) -> Option<PathBuf> {
    if listed.first() == Some(&b'/') {
        return None;
    }
    let mut names: Vec<&OsStr> = Vec::new();
    for component in base.components() {
        match component {
            Component::Normal(name) => names.push(name),
            Component::CurDir => {}
            _ => return None,
        }
    }
    for name in listed.split(|&b| b == b'/') {
        match name {
            b"" | b"." => {}
            b".." => {
                names.pop()?;
            }
            name => names.push(OsStr::from_bytes(name)),
        }
    }
    (!names.is_empty()).then(|| names.iter().collect())
}

/// The `.dist-info` folders under `top` (relative to it) that hold a `RECORD` (a regular
/// file), in the order of their paths; symbolic links to folders are not entered.
fn dist_infos(top: &Folder) -> Vec<PathBuf> {
    let mut found = Vec::new();
    // Folders still to read, by their paths: each is opened when read, so that a wide tree
    // does not hold a descriptor per folder waiting.
    let mut stack = vec![PathBuf::new()];
    while let Some(relative) = stack.pop() {
        let Ok(folder) = Folder::open(&top.path(), &relative) else {
            continue;
        };
        let dist_info = relative
            .file_name()
            .is_some_and(|n| n.as_bytes().ends_with(b".dist-info"));
        // A RECORD that is a symbolic link may lead anywhere: not read, as a walk skips links.
        let has_record =
            || std::fs::symlink_metadata(folder.path().join("RECORD")).is_ok_and(|m| m.is_file());
        if dist_info && has_record() {
            found.push(relative.clone());
        }
        let Ok(entries) = std::fs::read_dir(folder.path()) else {
            continue;
        };
        for entry in entries.flatten() {
            // The type of the entry itself: a symbolic link to a folder is not entered.
            if entry.file_type().is_ok_and(|t| t.is_dir()) {
                stack.push(relative.join(entry.file_name()));
            }
        }
    }
    found.sort();
    found
}

/// The names of the files `conda-meta/*.json` of `top`, when it is a conda prefix.
fn conda_records(top: &Folder) -> Vec<OsString> {
    let Ok(meta) = top.child(OsStr::new("conda-meta")) else {
        return Vec::new();
    };
    let Ok(entries) = std::fs::read_dir(meta.path()) else {
        return Vec::new();
    };
    let mut names: Vec<OsString> = entries
        .flatten()
        .filter(|e| e.file_type().is_ok_and(|t| t.is_file()))
        .map(|e| e.file_name())
        .filter(|n| n.as_bytes().ends_with(b".json"))
        .collect();
    names.sort();
    names
}

#[cfg(test)]
#[allow(clippy::indexing_slicing)]
mod tests {
    use super::*;

    #[test]
    fn listed_paths_resolve_by_their_names_and_never_leave_the_tree() {
        let sp = Path::new("lib/python3.12/site-packages");
        let p = |s: &str| Some(PathBuf::from(s));
        assert_eq!(
            resolve(sp, b"demo/k.co"),
            p("lib/python3.12/site-packages/demo/k.co")
        );
        assert_eq!(resolve(sp, b"../../../bin/demo"), p("bin/demo"));
        assert_eq!(
            resolve(sp, b"./demo//k.co"),
            p("lib/python3.12/site-packages/demo/k.co")
        );
        assert_eq!(resolve(sp, b"../../../../etc/x"), None);
        assert_eq!(resolve(Path::new(""), b"../etc/x"), None);
        assert_eq!(resolve(sp, b"/etc/x"), None);
        assert_eq!(
            resolve(Path::new(""), b"lib/libdemo.so"),
            p("lib/libdemo.so")
        );
    }

    #[test]
    fn a_record_listing_a_rewritten_and_a_removed_file_is_updated_in_place() {
        let dir = tempfile::tempdir().unwrap();
        let sp = dir.path();
        std::fs::create_dir_all(sp.join("demo")).unwrap();
        std::fs::create_dir_all(sp.join("demo-1.0.dist-info")).unwrap();
        std::fs::write(sp.join("demo/k.co"), b"new bytes").unwrap();
        let record = "demo/k.co,sha256=AAAA,3\ndemo/gone.co,sha256=BBBB,4\n\
                      ../../../../etc/passwd,sha256=CCCC,5\ndemo-1.0.dist-info/RECORD,,\n";
        std::fs::write(sp.join("demo-1.0.dist-info/RECORD"), record).unwrap();
        let touched = BTreeMap::from([
            (PathBuf::from("demo/k.co"), Touched::Rewritten),
            (PathBuf::from("demo/gone.co"), Touched::Removed),
        ]);
        let dry = update(sp, &touched, Writing::DryRun);
        let [Ok(would)] = &dry[..] else {
            panic!("{dry:?}")
        };
        assert_eq!(
            would.counts,
            Counts {
                rewritten: 1,
                removed: 1
            }
        );
        assert_eq!(
            std::fs::read_to_string(sp.join("demo-1.0.dist-info/RECORD")).unwrap(),
            record
        );
        let done = update(sp, &touched, Writing::Write);
        let [Ok(updated)] = &done[..] else {
            panic!("{done:?}")
        };
        assert_eq!(updated.owner(), sp.join("demo-1.0.dist-info"));
        let digest = super::super::sha256(b"new bytes");
        assert_eq!(
            std::fs::read_to_string(sp.join("demo-1.0.dist-info/RECORD")).unwrap(),
            format!(
                "demo/k.co,{},9\n../../../../etc/passwd,sha256=CCCC,5\ndemo-1.0.dist-info/RECORD,,\n",
                record::hash_field(&digest)
            )
        );
        // Nothing left to change: nothing reported.
        assert!(update(sp, &touched, Writing::Write).is_empty());
    }

    #[test]
    fn a_damaged_manifest_is_an_error_naming_it() {
        let dir = tempfile::tempdir().unwrap();
        std::fs::create_dir_all(dir.path().join("conda-meta")).unwrap();
        std::fs::write(
            dir.path().join("conda-meta/demo-1.0-0.json"),
            b"{\"files\": [",
        )
        .unwrap();
        let touched = BTreeMap::from([(PathBuf::from("lib/k.co"), Touched::Removed)]);
        let done = update(dir.path(), &touched, Writing::Write);
        let [Err(e)] = &done[..] else {
            panic!("{done:?}")
        };
        assert_eq!(
            e.path(),
            Some(dir.path().join("conda-meta/demo-1.0-0.json").as_path())
        );
        assert!(
            e.to_string()
                .contains("cannot be read as a conda package record"),
            "{e}"
        );
    }
}
