//! `check` of a package (a wheel, a Debian or conda package, a tarball): the package taken as
//! the tree it installs to ([`crate::host::package::tree`]), and the loader's search applied
//! inside it. Every linked ELF program and shared library among its members is checked, with
//! what it loads from the package, each named `PACKAGE!member`; a library a member needs that
//! the package does not hold is reported as not in the package, never looked for on this
//! machine (where the package installs, another package or the system provides it).
//!
//! The package is read once, member by member, as the other readers of packages read it
//! (nothing unpacked to disk, what members inflate to bounded by the decompression limit):
//! each member's bundles are checked and its dynamic section kept as it is read, and the
//! search then runs over the dynamic sections alone.
//!
//! The install tree: a Debian package's data tarball (`data.tar.*`), a `.conda`'s package
//! tarball (`pkg-*.tar.*`), or the members of a wheel, zip or tarball as they are. Packages
//! nested otherwise are not part of it and not checked.

use std::collections::{HashMap, HashSet};
use std::ffi::OsString;
use std::os::unix::ffi::OsStrExt;
use std::path::{Path, PathBuf};

use super::catalogue::{self, Place};
use super::{bundles_of, counts, Device, FileReport, NotFound};
use crate::error::{Error, Result};
use crate::host::kpack::split_binary;
use crate::host::ld_so::{self, DynamicInfo, Environment, Loaded, Missing};
use crate::host::package::tree::{Layout, Tree};
use crate::host::package::{self, member_path, Budget, Kind};
use crate::io::Input;
use crate::loads::runtime;
use crate::ops::support::names;
use crate::target::target_id::TargetIdBuf;

/// What `check` reports of one package.
pub(super) struct PackageCheck {
    /// Its members checked, in load order.
    pub(super) files: Vec<FileReport>,
    /// The libraries its members need that it does not hold.
    pub(super) not_found: Vec<NotFound>,
    /// What could not be read.
    pub(super) errors: Vec<Error>,
}

/// Whether the file at `path` is a package (by its content, as the other commands tell).
pub(super) fn is_package(path: &Path) -> bool {
    Input::open(path).is_ok_and(|input| package::kind(&input).is_some())
}

/// A linked ELF member: its name, install path, dynamic section and bundles (checked for
/// each machine).
struct Object {
    shown: PathBuf,
    /// The package (or package member) whose members are the install tree, as shown.
    tree_shown: PathBuf,
    install: Vec<u8>,
    info: DynamicInfo,
    bundles: Vec<Vec<super::BundleReport>>,
    /// For rocBLAS, the catalogue folder a distribution patched in.
    patched_folder: Option<String>,
}

/// Checks the package at `path` for each of `machines` (the devices of one machine each),
/// reading it once: a check per machine, in order.
pub(super) fn check_package(
    path: &Path,
    machines: &[Vec<Device>],
    max_decompressed: u64,
) -> Vec<PackageCheck> {
    let failed = |e: Error| {
        let mut checks: Vec<PackageCheck> =
            machines.iter().map(|_| PackageCheck::empty()).collect();
        if let Some(first) = checks.first_mut() {
            first.errors.push(e);
        }
        checks
    };
    let input = match Input::open(path) {
        Ok(input) => input,
        Err(e) => return failed(e.into()),
    };
    let Some(kind) = package::kind(&input) else {
        return failed(Error::file(path, "not a package"));
    };
    let layout = if kind == Kind::Deb {
        Layout::Root
    } else {
        Layout::Relative
    };
    let targets: Vec<Vec<TargetIdBuf>> = (machines.iter())
        .map(|devices| {
            (devices.iter())
                .filter_map(|d| runtime::parse_device(&d.target_id).ok())
                .collect()
        })
        .collect();
    let budget = Budget::new(max_decompressed);
    let (mut objects, mut links, mut names, mut errors) =
        (Vec::new(), Vec::new(), Vec::new(), Vec::new());
    let mut reader = Reader {
        targets: &targets,
        max_decompressed,
        budget: &budget,
        objects: &mut objects,
        links: &mut links,
        names: &mut names,
        errors: &mut errors,
    };
    reader.read(path, &input, kind, Nesting::Top(kind));
    let mut tree = Tree::new(layout);
    for name in &names {
        tree.add_name(name);
    }
    for object in &objects {
        tree.add(&object.install, object.info.clone());
    }
    for (name, target, hard) in &links {
        tree.add_link(name, target, *hard);
    }
    let mut checks = Vec::new();
    for (k, devices) in machines.iter().enumerate() {
        let (mut files, loaded_as, not_found) = search(&tree, &objects, k, devices.len());
        let devices: Vec<(usize, String)> = (devices.iter())
            .map(|d| (d.index, d.target_id.clone()))
            .collect();
        for (file, (library, i)) in files.iter_mut().zip(loaded_as) {
            if let Some(object) = objects.get(i) {
                let place = Installed {
                    tree: &tree,
                    object,
                };
                file.catalogues = catalogue::catalogues_in(&place, &library, &devices);
            }
        }
        checks.push(PackageCheck {
            files,
            not_found,
            errors: if k == 0 {
                std::mem::take(&mut errors)
            } else {
                Vec::new()
            },
        });
    }
    checks
}

impl PackageCheck {
    /// Nothing checked.
    fn empty() -> PackageCheck {
        PackageCheck {
            files: Vec::new(),
            not_found: Vec::new(),
            errors: Vec::new(),
        }
    }
}

/// A package's install tree, where one of its libraries looks for its kernel catalogue.
struct Installed<'t> {
    tree: &'t Tree,
    /// The library.
    object: &'t Object,
}

impl Place for Installed<'_> {
    fn is_dir(&self, path: &Path) -> bool {
        self.tree.is_folder(path)
    }

    fn names(&self, folder: &Path) -> Vec<OsString> {
        self.tree.names_in(folder)
    }

    fn patched_folder(&self, _library: &Path) -> Option<String> {
        self.object.patched_folder.clone()
    }

    fn shown(&self, path: &Path) -> PathBuf {
        match self.tree.written_path(path) {
            Some(inside) => member_path(&self.object.tree_shown, &inside),
            None => path.to_path_buf(),
        }
    }
}

/// Where a package being read lies: the file named (of kind), or a tarball in it whose
/// members install as they are named.
#[derive(Clone, Copy)]
enum Nesting {
    Top(Kind),
    Installed,
}

/// Reads a package's members into [`Object`]s.
struct Reader<'r> {
    /// Each machine's targets.
    targets: &'r [Vec<TargetIdBuf>],
    max_decompressed: u64,
    budget: &'r Budget,
    objects: &'r mut Vec<Object>,
    /// The links of the install tree: name, target, whether it is a hard link.
    links: &'r mut Vec<(Vec<u8>, Vec<u8>, bool)>,
    /// The names of the install tree's members.
    names: &'r mut Vec<Vec<u8>>,
    errors: &'r mut Vec<Error>,
}

impl Reader<'_> {
    /// Reads the package `data` (of `kind`, shown as `path`), where `nesting` says.
    fn read(&mut self, path: &Path, data: &[u8], kind: Kind, nesting: Nesting) {
        let budget = self.budget;
        let (mut links, mut names) = (Vec::new(), Vec::new());
        let read = package::read_listing(
            path,
            data,
            kind,
            budget,
            &mut |member| self.member(path, member.name, member.bytes, nesting),
            &mut |link| links.push((link.name.to_vec(), link.target.to_vec(), link.hard)),
            &mut |name| names.push(name.to_vec()),
        );
        if installs(nesting) {
            self.links.append(&mut links);
            self.names.append(&mut names);
        }
        match read {
            Ok(mut problems) => self.errors.append(&mut problems),
            Err(e) => self.errors.push(e),
        }
    }

    /// One member of the package shown as `path`: a tarball that holds the install tree is
    /// read in turn; a linked ELF object of the tree is checked and kept.
    fn member(&mut self, path: &Path, name: &[u8], bytes: &[u8], nesting: Nesting) -> Result<()> {
        let shown = member_path(path, name);
        if let Some(inner) = package::kind(bytes) {
            if holds_tree(nesting, name) {
                self.read(&shown, bytes, inner, Nesting::Installed);
            }
            return Ok(());
        }
        if !installs(nesting) || !crate::host::is_linked_elf(bytes) {
            return Ok(());
        }
        let info = match ld_so::dynamic_info(bytes) {
            Ok(info) => info,
            Err(e) => {
                self.errors.push(Error::file(&shown, e));
                return Ok(());
            }
        };
        let mut bundles = Vec::new();
        for (k, targets) in self.targets.iter().enumerate() {
            let (found, mut problems) = bundles_of(&shown, bytes, targets, self.max_decompressed);
            if k == 0 {
                self.errors.append(&mut problems);
            }
            bundles.push(found);
        }
        match split_binary(&shown, bytes) {
            Ok(Some(_)) => self.errors.push(Error::file(
                &shown,
                "split by kpack: the kpack archives of a package member are not searched for",
            )),
            Ok(None) => {}
            Err(e) => self.errors.push(e),
        }
        let file_name = Path::new(std::ffi::OsStr::from_bytes(name));
        self.objects.push(Object {
            shown,
            tree_shown: path.to_path_buf(),
            install: name.to_vec(),
            info,
            bundles,
            patched_folder: catalogue::patched_folder_of(file_name, bytes),
        });
        Ok(())
    }
}

/// Whether the members of a package read where `nesting` says are the install tree's (a
/// Debian package's own members are not: its data tarball's are).
fn installs(nesting: Nesting) -> bool {
    match nesting {
        Nesting::Top(Kind::Deb) => false,
        Nesting::Top(_) | Nesting::Installed => true,
    }
}

/// Whether the package member `name`, itself a package, holds the install tree: a Debian
/// package's data tarball, a `.conda`'s package tarball.
fn holds_tree(nesting: Nesting, name: &[u8]) -> bool {
    match nesting {
        Nesting::Top(Kind::Deb) => name.starts_with(b"data.tar"),
        Nesting::Top(Kind::Zip) => {
            name.starts_with(b"pkg-")
                && !name.contains(&b'/')
                && name.windows(4).any(|w| w == b".tar")
        }
        Nesting::Top(Kind::Tar(_)) | Nesting::Installed => false,
    }
}

/// What [`search`] finds: the files in load order, the path each is loaded by and its
/// object's number, and the names found nowhere.
type Found = (Vec<FileReport>, Vec<(PathBuf, usize)>, Vec<NotFound>);

/// The search from each object of `tree`: the files in load order, each once, and the names
/// found nowhere in the package. Objects another object loads are reported where it loads
/// them; the others (what nothing in the package loads) are the roots, in package order.
fn search(tree: &Tree, objects: &[Object], machine: usize, devices: usize) -> Found {
    let index: HashMap<Vec<u8>, usize> = objects
        .iter()
        .enumerate()
        .filter_map(|(i, o)| Some((tree.install_path(&tree.path(&o.install))?, i)))
        .collect();
    let member = |path: &Path| index.get(&tree.install_path(path)?).copied();
    let env = Environment::default();
    let orders: Vec<(Vec<Loaded>, Vec<Missing>)> = objects
        .iter()
        .map(|o| ld_so::load_order_in(tree, &tree.path(&o.install), o.info.clone(), &env))
        .collect();
    let mut loaded_by_other = vec![false; objects.len()];
    for (root, (loaded, _)) in orders.iter().enumerate() {
        for i in loaded.iter().filter_map(|l| member(&l.path)) {
            if let Some(flag) = loaded_by_other.get_mut(i).filter(|_| i != root) {
                *flag = true;
            }
        }
    }
    // The roots first, then what only a cycle of members loads.
    let mut order: Vec<usize> = (0..objects.len()).collect();
    order.sort_by_key(|&i| loaded_by_other.get(i).copied().unwrap_or_default());
    let mut report = Reported {
        seen: HashSet::new(),
        files: Vec::new(),
        loaded_as: Vec::new(),
        not_found: Vec::new(),
    };
    for root in order {
        if let Some((loaded, missing)) = orders.get(root).filter(|_| !report.seen.contains(&root)) {
            let at: Vec<Option<usize>> = loaded.iter().map(|l| member(&l.path)).collect();
            report.add(objects, loaded, &at, missing, (machine, devices));
        }
    }
    (report.files, report.loaded_as, report.not_found)
}

/// What the search of a package reports so far.
struct Reported {
    /// The objects reported, by number.
    seen: HashSet<usize>,
    files: Vec<FileReport>,
    /// Beside each file, the path it is loaded by (its folder is the one the kernel
    /// catalogues are found from) and its object's number.
    loaded_as: Vec<(PathBuf, usize)>,
    not_found: Vec<NotFound>,
}

impl Reported {
    /// Adds the objects of one load order (`loaded`, each the object `at` says, if any) not
    /// reported yet, and the names it finds nowhere (`missing`).
    fn add(
        &mut self,
        objects: &[Object],
        loaded: &[Loaded],
        at: &[Option<usize>],
        missing: &[Missing],
        (machine, devices): (usize, usize),
    ) {
        let object = |k: usize| at.get(k).copied().flatten().and_then(|i| objects.get(i));
        let shown = |k: usize| object(k).map(|o| o.shown.clone());
        for (k, load) in loaded.iter().enumerate() {
            let (Some(found), Some(&Some(i))) = (object(k), at.get(k)) else {
                continue;
            };
            if !self.seen.insert(i) {
                continue;
            }
            let needed_by = load.needed_by.and_then(shown);
            let bundles = found.bundles.get(machine).map_or(&[][..], Vec::as_slice);
            self.loaded_as.push((load.path.clone(), i));
            self.files.push(FileReport {
                path_bytes: crate::io::bytes_unless_text(&found.shown),
                path: found.shown.clone(),
                needed_as: load.needed_as.clone(),
                needed_by_bytes: names::optional_bytes(needed_by.as_ref()),
                needed_by,
                found_via: if k == 0 {
                    "member"
                } else {
                    load.found_via.name()
                },
                counts: counts(bundles, None, devices),
                bundles: bundles.to_vec(),
                kpack: None,
                catalogues: Vec::new(),
            });
        }
        for m in missing {
            let Some(needed_by) = shown(m.needed_by) else {
                continue;
            };
            let known =
                (self.not_found.iter()).any(|n| n.name == m.name && n.needed_by == needed_by);
            if !known {
                self.not_found.push(NotFound {
                    name: m.name.clone(),
                    needed_by_bytes: crate::io::bytes_unless_text(&needed_by),
                    needed_by,
                    in_package: true,
                });
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::host::package::tar::Compression;

    #[test]
    fn the_install_tree_is_a_debian_packages_data_and_a_condas_package_tarball() {
        let deb = Nesting::Top(Kind::Deb);
        let zip = Nesting::Top(Kind::Zip);
        let tar = Nesting::Top(Kind::Tar(Compression::Gzip));
        assert!(holds_tree(deb, b"data.tar.xz"));
        assert!(!holds_tree(deb, b"control.tar.xz"));
        assert!(holds_tree(zip, b"pkg-torch-2.9.0-0.tar.zst"));
        assert!(!holds_tree(zip, b"info-torch-2.9.0-0.tar.zst"));
        assert!(!holds_tree(zip, b"lib/pkg-x.tar.zst"));
        assert!(!holds_tree(tar, b"data.tar.xz"));
        assert!(!holds_tree(Nesting::Installed, b"pkg-x.tar.zst"));
        assert!(!installs(deb));
        assert!(installs(zip) && installs(tar) && installs(Nesting::Installed));
    }
}
