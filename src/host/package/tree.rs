//! A package as the tree it installs to, where the dynamic loader's search
//! ([`crate::host::ld_so`]) looks for the libraries its members need: the members are found
//! by the paths they install at, and nothing outside the package is looked at (no file is
//! opened: the tree is the members' dynamic sections, read once from the package).
//!
//! Two layouts:
//!
//! - A Debian package installs at `/`: its data tarball's `usr/lib/x86_64-linux-gnu/libx.so`
//!   is `/usr/lib/x86_64-linux-gnu/libx.so`, an absolute `DT_RUNPATH` names folders of the
//!   package, and the loader's default folders (`/lib/MULTIARCH`, `/usr/lib/MULTIARCH`, `/lib`,
//!   `/usr/lib`) are looked for in the package.
//! - A wheel, a conda package or another tarball installs under a folder chosen when it is
//!   installed (site-packages, the environment's prefix): its members are found only through
//!   `$ORIGIN`, relative to each other. An absolute folder, a relative one (the current
//!   folder's) and the default folders are outside the package: what is found there is
//!   another package's or the machine's, not this package's.
//!
//! Paths in the tree are resolved as the kernel resolves them, component by component: the
//! package's symbolic links (a tarball's: `libx.so.1 -> libx.so.1.2`, a folder linked to
//! another) and hard links are followed, at most 40 in one path; a `..` above the tree's root,
//! and a symbolic link to an absolute path in a package that does not install at `/`, leave
//! the package.

use std::collections::{BTreeSet, HashMap};
use std::ffi::{OsStr, OsString};
use std::os::unix::ffi::OsStrExt;
use std::path::{Path, PathBuf};

use crate::host::ld_so::{Abi, DynamicInfo, Files};

/// Where a package installs its members.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Layout {
    /// At `/` (a Debian package): absolute paths and the default folders are the package's.
    Root,
    /// Under a folder chosen when it is installed (a wheel, a conda package, a tarball): only
    /// `$ORIGIN` reaches its members.
    Relative,
}

/// The root of a [`Layout::Relative`] tree in the search's paths: a name no `DT_RUNPATH` or
/// `DT_RPATH` can hold (it has a NUL byte), so that no absolute folder reaches it.
const RELATIVE_ROOT: &[u8] = b"/\0package";

/// The ELF objects of a package by the paths they install at, as the loader's search sees
/// them.
#[derive(Debug, Clone)]
pub struct Tree {
    layout: Layout,
    /// The objects' dynamic sections, by install path (relative to the root, normalized).
    objects: HashMap<Vec<u8>, DynamicInfo>,
    /// The links, by install path: what each points to, and whether it is a hard link.
    links: HashMap<Vec<u8>, (Vec<u8>, bool)>,
    /// Every member's install path (files and links), sorted: a folder's names are the run
    /// of paths under it, found in time that follows their number, whatever the depth.
    names: BTreeSet<Vec<u8>>,
}

/// The most links followed in one path (the kernel's limit).
const MAX_LINKS: usize = 40;

impl Tree {
    /// An empty tree of `layout`.
    pub fn new(layout: Layout) -> Tree {
        Tree {
            layout,
            objects: HashMap::new(),
            links: HashMap::new(),
            names: BTreeSet::new(),
        }
    }

    /// Adds the name of a member installed at `install` (any file) to its folder's listing,
    /// and its folders to theirs.
    pub fn add_name(&mut self, install: &[u8]) {
        if let Some(path) = normalized(install).filter(|p| !p.is_empty()) {
            self.names.insert(path);
        }
    }

    /// The paths of the members under the folder at install path `folder`, each with the
    /// folder's part cut off.
    fn under<'t>(&'t self, folder: &[u8]) -> impl Iterator<Item = &'t [u8]> + 't {
        let mut prefix = folder.to_vec();
        if !prefix.is_empty() {
            prefix.push(b'/');
        }
        let at = prefix.len();
        (self.names.range(prefix.clone()..))
            .take_while(move |n| n.starts_with(&prefix))
            .filter_map(move |n| n.get(at..))
    }

    /// Whether `path` names a folder of the tree (links followed).
    pub fn is_folder(&self, path: &Path) -> bool {
        self.install_path(path)
            .is_some_and(|p| p.is_empty() || self.under(&p).next().is_some())
    }

    /// The names in the folder `path` (links followed); none when it is not a folder.
    pub fn names_in(&self, path: &Path) -> Vec<OsString> {
        let Some(folder) = self.install_path(path) else {
            return Vec::new();
        };
        let mut names: Vec<&[u8]> = (self.under(&folder))
            .map(|rest| rest.split(|&b| b == b'/').next().unwrap_or(rest))
            .collect();
        // A folder's paths are together, but a file `b-x` sorts between `b` and `b/c`.
        names.sort_unstable();
        names.dedup();
        (names.into_iter())
            .map(|n| OsStr::from_bytes(n).to_os_string())
            .collect()
    }

    /// The install path `path` names, its `.` and `..` taken as written (links not followed);
    /// `None` when it lies outside the tree.
    pub fn written_path(&self, path: &Path) -> Option<Vec<u8>> {
        let bytes = path.as_os_str().as_bytes();
        let inside = match self.layout {
            Layout::Root => bytes.strip_prefix(b"/")?,
            Layout::Relative => bytes.strip_prefix(RELATIVE_ROOT)?.strip_prefix(b"/")?,
        };
        normalized(inside)
    }

    /// Adds the link installed at `install`: a symbolic link to `target` (from its folder, or
    /// absolute), or with `hard`, a hard link to the member at `target`.
    pub fn add_link(&mut self, install: &[u8], target: &[u8], hard: bool) {
        self.add_name(install);
        if let Some(key) = normalized(install) {
            self.links.insert(key, (target.to_vec(), hard));
        }
    }

    /// Adds the object installed at `install` (a member's path in the package, relative to
    /// where it installs), its dynamic section `info`.
    pub fn add(&mut self, install: &[u8], info: DynamicInfo) {
        self.add_name(install);
        if let Some(key) = normalized(install) {
            self.objects.insert(key, info);
        }
    }

    /// The search's path of the member installed at `install`.
    pub fn path(&self, install: &[u8]) -> PathBuf {
        let mut path = match self.layout {
            Layout::Root => b"/".to_vec(),
            Layout::Relative => [RELATIVE_ROOT, b"/"].concat(),
        };
        path.extend_from_slice(&normalized(install).unwrap_or_default());
        PathBuf::from(OsStr::from_bytes(&path))
    }

    /// The install path `path` names in the tree, links followed; `None` when it lies
    /// outside.
    pub fn install_path(&self, path: &Path) -> Option<Vec<u8>> {
        let bytes = path.as_os_str().as_bytes();
        let inside = match self.layout {
            Layout::Root => bytes.strip_prefix(b"/")?,
            Layout::Relative => bytes.strip_prefix(RELATIVE_ROOT)?.strip_prefix(b"/")?,
        };
        self.resolved(inside)
    }

    /// `path` (from the root) with `.`, `..` and the package's links resolved component by
    /// component; `None` when it leaves the package or follows more than [`MAX_LINKS`] links.
    fn resolved(&self, path: &[u8]) -> Option<Vec<u8>> {
        let mut parts: Vec<&[u8]> = Vec::new();
        let mut pending: Vec<&[u8]> = path.split(|&b| b == b'/').rev().collect();
        let mut hops = 0;
        while let Some(part) = pending.pop() {
            match part {
                b"" | b"." => continue,
                b".." => {
                    parts.pop()?;
                    continue;
                }
                _ => parts.push(part),
            }
            let Some((target, hard)) = self.links.get(&parts.join(&b'/')) else {
                continue;
            };
            hops += 1;
            if hops > MAX_LINKS {
                return None;
            }
            parts.pop();
            if target.starts_with(b"/") && !hard && self.layout == Layout::Relative {
                return None;
            }
            if *hard || target.starts_with(b"/") {
                parts.clear();
            }
            pending.extend(target.split(|&b| b == b'/').rev());
        }
        Some(parts.join(&b'/'))
    }
}

/// `path` (relative) with empty and `.` components dropped and `..` taking off the component
/// before it; `None` when a `..` would leave the root.
fn normalized(path: &[u8]) -> Option<Vec<u8>> {
    let mut parts: Vec<&[u8]> = Vec::new();
    for part in path.split(|&b| b == b'/') {
        match part {
            b"" | b"." => {}
            b".." => {
                parts.pop()?;
            }
            _ => parts.push(part),
        }
    }
    Some(parts.join(&b'/'))
}

impl Files for Tree {
    fn open(&self, path: &Path, abi: Abi) -> Option<DynamicInfo> {
        let info = self.objects.get(&self.install_path(path)?)?;
        (info.abi == abi).then(|| info.clone())
    }

    fn real(&self, path: &Path) -> Option<PathBuf> {
        Some(self.path(&self.install_path(path)?))
    }

    fn origin(&self, path: &Path, _program: bool) -> PathBuf {
        path.parent()
            .map_or_else(|| self.path(b""), Path::to_path_buf)
    }

    fn default_folders(&self, abi: Abi) -> Vec<PathBuf> {
        match self.layout {
            Layout::Root => abi.default_folders(),
            Layout::Relative => Vec::new(),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use object::elf;

    fn info(needed: &[&str], runpath: Option<&str>) -> DynamicInfo {
        DynamicInfo {
            abi: Abi {
                is_64: true,
                machine: elf::EM_X86_64,
            },
            interpreter: None,
            needed: needed.iter().map(|n| n.to_string()).collect(),
            rpath: None,
            runpath: runpath.map(str::to_string),
            soname: None,
            nodeflib: false,
        }
    }

    #[test]
    fn origin_reaches_members_and_leaving_the_root_reaches_nothing() {
        let mut tree = Tree::new(Layout::Relative);
        tree.add(b"torch/lib/libc10.so", info(&[], None));
        let abi = info(&[], None).abi;
        let lib = tree.path(b"torch/lib/libtorch.so");
        let origin = tree.origin(&lib, false);
        assert!(tree.open(&origin.join("libc10.so"), abi).is_some());
        assert!(tree.open(&origin.join("../lib/./libc10.so"), abi).is_some());
        assert!(tree
            .open(&origin.join("../../../torch/lib/libc10.so"), abi)
            .is_none());
        assert!(tree.open(Path::new("/torch/lib/libc10.so"), abi).is_none());
        assert!(tree.default_folders(abi).is_empty());
    }

    #[test]
    fn links_are_followed_inside_the_package_only() {
        let abi = info(&[], None).abi;
        for layout in [Layout::Root, Layout::Relative] {
            let mut tree = Tree::new(layout);
            tree.add(b"lib/libx.so.1.2", info(&[], None));
            tree.add_link(b"lib/libx.so.1", b"libx.so.1.2", false);
            tree.add_link(b"lib/libhard.so", b"lib/libx.so.1.2", true);
            tree.add_link(b"lib64", b"lib", false);
            tree.add_link(b"lib/loop", b"loop", false);
            tree.add_link(b"lib/abs.so", b"/lib/libx.so.1.2", false);
            let real = tree.path(b"lib/libx.so.1.2");
            for name in [
                "lib/libx.so.1",
                "lib/libhard.so",
                "lib64/libx.so.1",
                "lib64/../lib/libx.so.1",
            ] {
                let path = tree.path(b"").join(name);
                assert!(tree.open(&path, abi).is_some(), "{name}");
                assert_eq!(tree.real(&path).unwrap(), real, "{name}");
            }
            assert!(tree.open(&tree.path(b"lib/loop"), abi).is_none());
            let absolute = tree.open(&tree.path(b"lib/abs.so"), abi);
            assert_eq!(absolute.is_some(), layout == Layout::Root);
        }
    }

    #[test]
    fn folders_list_their_names_through_links_and_not_past_the_root() {
        for layout in [Layout::Root, Layout::Relative] {
            let mut tree = Tree::new(layout);
            tree.add_name(b"./usr/lib/rocblas/4.4.1/library/TensileLibrary_lazy_gfx90a.dat");
            tree.add_name(b"usr/lib/rocblas/4.4.1/library/Kernels.so-000-gfx90a.hsaco");
            tree.add_link(b"usr/lib/rocblas/current", b"4.4.1", false);
            let lib = tree.path(b"usr/lib");
            assert!(tree.is_folder(&lib.join("rocblas/4.4.1/library")));
            assert!(tree.is_folder(&lib.join("rocblas/current/library")));
            assert!(tree.is_folder(&tree.path(b"")));
            assert!(!tree.is_folder(&lib.join("rocblas/4.4.1/library/Kernels.so-000-gfx90a.hsaco")));
            assert!(!tree.is_folder(&lib.join("../../../usr/lib")));
            let names = tree.names_in(&lib.join("rocblas/current/library"));
            assert_eq!(
                names,
                [
                    "Kernels.so-000-gfx90a.hsaco",
                    "TensileLibrary_lazy_gfx90a.dat"
                ]
            );
            assert_eq!(tree.names_in(&lib.join("rocblas")), ["4.4.1", "current"]);
            assert_eq!(
                tree.written_path(&lib.join("rocblas/../x")).as_deref(),
                Some(&b"usr/lib/x"[..])
            );
        }
    }

    #[test]
    fn a_debian_tree_answers_absolute_paths_and_default_folders() {
        let mut tree = Tree::new(Layout::Root);
        tree.add(b"usr/lib/x86_64-linux-gnu/libx.so", info(&[], None));
        let abi = info(&[], None).abi;
        let path = Path::new("/usr/lib/x86_64-linux-gnu/libx.so");
        assert!(tree.open(path, abi).is_some());
        assert_eq!(tree.real(path).unwrap(), path);
        assert!(tree
            .default_folders(abi)
            .iter()
            .any(|f| path.starts_with(f)));
    }
}
