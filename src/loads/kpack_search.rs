//! Where the HIP runtime looks for a split binary's code object, as a pure function: the kpack
//! loader's path list and archive choice (rocm-kpack `runtime/src/loader.cpp`,
//! `isa_target_match.h`), with the file system handed in, so that `offload` can say which
//! archive a device would load from, or every path it tried.
//!
//! The rules:
//! 1. `ROCM_KPACK_DISABLE` (set, not empty, not starting with `0`) turns kpack loading off.
//! 2. `ROCM_KPACK_PATH` (`:`-separated, empty pieces dropped), when it names any path, is the
//!    whole list. Otherwise `ROCM_KPACK_PATH_PREFIX` comes first, then the reference's paths,
//!    absolute ones as written, relative ones against the folder of the binary's real path
//!    (symbolic links resolved, as `/proc/self/maps` names it) and then made weakly canonical
//!    (symbolic links of the part that exists followed, the rest normalised by name); a path
//!    with `@GFXARCH@` is tried for every processor the device asks for and every subset of
//!    its features, most specific first (`gfx942:sramecc+:xnack-`, `gfx942:sramecc+`,
//!    `gfx942:xnack-`, `gfx942`). Those paths are the only ones opened: no folder is listed.
//! 3. Paths that are not regular files, or do not open as archives, are passed over.
//! 4. Processor first: for each processor the device asks for (its ISA, then its generic
//!    target), each feature subset, each archive in list order, the first archive whose
//!    `gfx_arches` holds that exact string is asked for `"<binary>#<index>"` at that string.
//! 5. A miss there: the loader of rocm-kpack e348328 stops with "kernel not found"; since
//!    rocm-systems PR #9874 (2026-08) it goes on to the next matching archive. [`Miss`] picks.
//!
//! # Example
//!
//! The paths the loader tries for a gfx1101 asking for its own processor and then its generic
//! target, and its choice among the archives it finds there.
//!
//! ```
//! use std::path::{Path, PathBuf};
//!
//! use offload::format::kpack::{Archive, ArchiveWriter, Scheme};
//! use offload::loads::kpack_search::{self, ArchiveIndex, Environment, Miss, Outcome};
//!
//! let arches = kpack_search::device_arches("amdgcn-amd-amdhsa--gfx1101", Some("gfx11-generic"));
//! let names = kpack_search::target_names_asked(&arches);
//! assert_eq!(names, ["gfx1101", "gfx11-generic"]);
//! let env = Environment::from_vars(|_| None);
//! let paths = kpack_search::candidate_paths(&[PathBuf::from("/opt/app/kpack/app_@GFXARCH@.kpack")], &names, &env);
//! assert_eq!(paths, [Path::new("/opt/app/kpack/app_gfx1101.kpack"), Path::new("/opt/app/kpack/app_gfx11-generic.kpack")]);
//!
//! // Only the generic archive is there: the loader takes the code object from it.
//! let mut writer = ArchiveWriter::new("app", "gfx11-generic", &["gfx11-generic"], Scheme::None);
//! writer.add("app#0", "gfx11-generic", b"generic code").unwrap();
//! let bytes = writer.finish();
//! let index = ArchiveIndex::of(&Archive::parse(&bytes).unwrap());
//! let outcome = kpack_search::pick(&[(paths[1].as_path(), &index)], "app#0", &arches, Miss::FallThrough);
//! assert_eq!(outcome, Outcome::Found { archive: paths[1].clone(), arch: "gfx11-generic".into() });
//! // ROCM_KPACK_DISABLE=1 turns it all off.
//! assert!(Environment::from_vars(|name| (name == "ROCM_KPACK_DISABLE").then(|| "1".into())).disabled());
//! ```

use std::collections::HashSet;
use std::path::{Component, Path, PathBuf};

use crate::format::kpack::{toc_key, Archive, KpackRef, GFXARCH};
use crate::io::shown;
use crate::target::processor::{Processor, ProcessorKind, PROCESSORS};
use crate::target::target_id::{FeatureSetting, TargetId};

/// The prefix the runtime's ISA names carry, which the loader strips.
const ISA_PREFIX: &str = "amdgcn-amd-amdhsa--";

/// The loader's environment variables, as read.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Environment {
    /// `ROCM_KPACK_PATH`.
    pub path: Option<String>,
    /// `ROCM_KPACK_PATH_PREFIX`.
    pub path_prefix: Option<String>,
    /// `ROCM_KPACK_DISABLE`.
    pub disable: Option<String>,
}

impl Environment {
    /// The variables as `get` gives them (e.g. `|n| std::env::var(n).ok()`).
    pub fn from_vars(get: impl Fn(&str) -> Option<String>) -> Environment {
        Environment {
            path: get("ROCM_KPACK_PATH"),
            path_prefix: get("ROCM_KPACK_PATH_PREFIX"),
            disable: get("ROCM_KPACK_DISABLE"),
        }
    }

    /// Whether `ROCM_KPACK_DISABLE` turns loading off.
    pub fn disabled(&self) -> bool {
        self.disable
            .as_deref()
            .is_some_and(|v| !v.is_empty() && !v.starts_with('0'))
    }
}

/// What to do when the archive chosen for a processor lacks the code object.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Miss {
    /// Go on to the next archive that matches (rocm-systems PR #9874 on): the runtime today.
    FallThrough,
    /// Stop with "kernel not found", as the loader of rocm-kpack e348328 does.
    Stop,
}

/// What a candidate path holds, as the caller's file system says.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Opened {
    /// No regular file there.
    Missing,
    /// A file that does not read as an archive, and why.
    Unreadable(String),
    /// An archive: its processors and its entries.
    Archive(ArchiveIndex),
}

/// The parts of an archive the search looks at.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct ArchiveIndex {
    /// `gfx_arches`, as written.
    pub gfx_arches: Vec<String>,
    /// Every `(key, processor)` of the table.
    pub entries: HashSet<(String, String)>,
}

impl ArchiveIndex {
    /// The index of a parsed archive.
    pub fn of(archive: &Archive<'_>) -> ArchiveIndex {
        ArchiveIndex {
            gfx_arches: archive.gfx_arches.iter().map(|a| a.to_string()).collect(),
            entries: archive
                .entries
                .iter()
                .map(|e| (e.key.to_string(), e.arch.to_string()))
                .collect(),
        }
    }
}

/// One path the loader considered, and what was there.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Tried {
    /// The path, as the loader builds it.
    pub path: PathBuf,
    /// What it held.
    pub opened: Opened,
}

/// How a search ended.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Outcome {
    /// Found: the archive and the processor string its entry is keyed by.
    Found {
        /// The archive's path.
        archive: PathBuf,
        /// The processor key (`gfx90a`, `gfx90a:xnack-`).
        arch: String,
    },
    /// `ROCM_KPACK_DISABLE` is set (the loader's `NOT_IMPLEMENTED`, 8).
    Disabled,
    /// No candidate path was an archive (`ARCHIVE_NOT_FOUND`, 13).
    NoArchive,
    /// No archive is for any of the processors (`ARCH_NOT_FOUND`, 14).
    NoArch,
    /// An archive for the processor lacks the key (`KERNEL_NOT_FOUND`, 5); with
    /// [`Miss::FallThrough`], every matching archive lacked it and this is the first.
    KernelNotFound {
        /// The archive asked first.
        archive: PathBuf,
        /// The processor key it was asked for.
        arch: String,
    },
}

impl Opened {
    /// What the path held, for people: `missing`, `not an archive: WHY`, or `archive for
    /// PROCESSORS`.
    pub fn describe(&self) -> String {
        match self {
            Opened::Missing => "missing".to_string(),
            Opened::Unreadable(why) => format!("not an archive: {why}"),
            Opened::Archive(index) => {
                format!("archive for {}", shown(&index.gfx_arches.join(", ")))
            }
        }
    }
}

impl Outcome {
    /// Why nothing was found, for people; `None` when something was.
    pub fn why_not(&self) -> Option<String> {
        match self {
            Outcome::Found { .. } => None,
            Outcome::Disabled => Some("ROCM_KPACK_DISABLE turns kpack loading off".to_string()),
            Outcome::NoArchive => Some("no archive found".to_string()),
            Outcome::NoArch => Some("no archive found is for its processor".to_string()),
            Outcome::KernelNotFound { archive, arch } => Some(format!(
                "'{}' is for {} but lacks the code object",
                shown(archive),
                shown(arch)
            )),
        }
    }

    /// The loader's name for this outcome (`KPACK_ERROR_` left out): `SUCCESS`,
    /// `KERNEL_NOT_FOUND`, `NOT_IMPLEMENTED`, `ARCHIVE_NOT_FOUND` or `ARCH_NOT_FOUND`.
    pub fn loader_name(&self) -> &'static str {
        match self {
            Outcome::Found { .. } => "SUCCESS",
            Outcome::KernelNotFound { .. } => "KERNEL_NOT_FOUND",
            Outcome::Disabled => "NOT_IMPLEMENTED",
            Outcome::NoArchive => "ARCHIVE_NOT_FOUND",
            Outcome::NoArch => "ARCH_NOT_FOUND",
        }
    }

    /// The loader's error code for this outcome (0 when found).
    pub fn loader_code(&self) -> i32 {
        match self {
            Outcome::Found { .. } => 0,
            Outcome::KernelNotFound { .. } => 5,
            Outcome::Disabled => 8,
            Outcome::NoArchive => 13,
            Outcome::NoArch => 14,
        }
    }
}

/// A search: the key asked for, every path tried in order, and how it ended.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Search {
    /// `"<kernel_name>#<index>"`.
    pub key: String,
    /// The paths, in the loader's order (the same path may come more than once).
    pub tried: Vec<Tried>,
    /// How it ended.
    pub outcome: Outcome,
}

/// What the runtime asks for on a device: its ISA name, then its generic target, as the
/// loader gets them (`amdgcn-amd-amdhsa--` may stay on; the loader strips it).
pub fn device_arches(isa: &str, generic: Option<&str>) -> Vec<String> {
    std::iter::once(isa)
        .chain(generic)
        .map(str::to_string)
        .collect()
}

/// The processor strings the loader tries for `arch`: every subset of its features, in their
/// order, most specific first; empty for an empty name.
pub fn compatible_targets(arch: &str) -> Vec<String> {
    let name = arch
        .strip_prefix(ISA_PREFIX)
        .filter(|s| !s.is_empty())
        .unwrap_or(arch);
    let mut parts = name.split(':');
    let processor = parts.next().unwrap_or_default();
    if processor.is_empty() {
        return Vec::new();
    }
    let features: Vec<&str> = parts.filter(|f| !f.is_empty()).collect();
    let n = features.len().min(16);
    (0..1u32 << n)
        .rev()
        .map(|mask| {
            let mut candidate = processor.to_string();
            for (i, feature) in features.iter().take(n).enumerate() {
                if mask & (1 << (n - 1 - i)) != 0 {
                    candidate.push(':');
                    candidate.push_str(feature);
                }
            }
            candidate
        })
        .collect()
}

/// Every processor string the loader may put for `@GFXARCH@` on some device: for each
/// processor and generic target of the table, in table order, each setting of its features
/// (`+`, `-` or left out), most specific first. What `ls`, `verify` and `kpack --merge`
/// look for when no device is named.
pub fn every_target_name() -> Vec<String> {
    PROCESSORS
        .iter()
        .filter(|p| p.kind() != ProcessorKind::Spirv)
        .flat_map(|p| settings_of(p.name, p.features(), &[]))
        .collect()
}

/// The processor strings the loader may put for `@GFXARCH@` on a device that a code object
/// for the target ID `asked` suits: its processor's, then those of the generic targets that
/// cover it, each with the features left out or set as `asked` sets them. Empty for a
/// processor the table lacks.
pub fn target_names_for(asked: &TargetId<'_>) -> Vec<String> {
    let Some(processor) = Processor::named(asked.processor) else {
        return Vec::new();
    };
    let generics = processor.covering_generics().filter_map(Processor::named);
    std::iter::once(processor)
        .chain(generics)
        .flat_map(|p| settings_of(p.name, p.features(), &asked.features))
        .collect()
}

/// `processor` with every setting of `features` that `fixed` allows (a feature `fixed` sets
/// is either left out or set so), most features first.
fn settings_of(
    processor: &str,
    features: &[&str],
    fixed: &[(&str, FeatureSetting)],
) -> Vec<String> {
    let mut names: Vec<(usize, String)> = vec![(0, processor.to_string())];
    for feature in features {
        let signs: &[&str] = match fixed.iter().find(|(f, _)| f == feature) {
            Some((_, FeatureSetting::On)) => &["+"],
            Some((_, FeatureSetting::Off)) => &["-"],
            _ => &["+", "-"],
        };
        names = names
            .into_iter()
            .flat_map(|(set, name)| {
                let mut with: Vec<(usize, String)> = signs
                    .iter()
                    .map(|sign| (set + 1, format!("{name}:{feature}{sign}")))
                    .collect();
                with.push((set, name));
                with
            })
            .collect();
    }
    // Stable: within a count of features, in the order made.
    names.sort_by_key(|(set, _)| std::cmp::Reverse(*set));
    names.into_iter().map(|(_, name)| name).collect()
}

/// The processor strings the loader tries for a device asking for `arches` (see
/// [`device_arches`]), in its order: each arch's feature subsets, most specific first.
pub fn target_names_asked(arches: &[String]) -> Vec<String> {
    arches.iter().flat_map(|a| compatible_targets(a)).collect()
}

/// The loader's list of `:`-separated paths (`ROCM_KPACK_PATH`, `ROCM_KPACK_PATH_PREFIX`),
/// empty pieces dropped.
pub fn split_list(list: Option<&str>) -> Vec<PathBuf> {
    list.unwrap_or_default()
        .split(':')
        .filter(|p| !p.is_empty())
        .map(PathBuf::from)
        .collect()
}

/// `path` with `.` and `..` resolved by name, as `std::filesystem::path::lexically_normal`
/// does: a `..` at the root stays at the root, one that leads a relative path stays.
pub fn lexically_normal(path: &Path) -> PathBuf {
    let mut out = PathBuf::new();
    let mut normal = 0usize;
    for part in path.components() {
        match part {
            Component::CurDir => {}
            Component::ParentDir if normal > 0 => {
                out.pop();
                normal -= 1;
            }
            Component::ParentDir if out.has_root() => {}
            Component::Normal(_) => {
                out.push(part);
                normal += 1;
            }
            other => out.push(other),
        }
    }
    out
}

/// Every archive path the loader builds, in order, from the binary's search paths already
/// resolved as the loader resolves them (`resolved`, see
/// `crate::host::kpack::loader_search_paths`), with `@GFXARCH@` replaced by each of
/// `names` in turn (only its first occurrence, as the loader does).
pub fn candidate_paths(resolved: &[PathBuf], names: &[String], env: &Environment) -> Vec<PathBuf> {
    let overridden = split_list(env.path.as_deref());
    if !overridden.is_empty() {
        return overridden;
    }
    let mut paths = split_list(env.path_prefix.as_deref());
    for path in resolved {
        let path = path.to_string_lossy();
        if !path.contains(GFXARCH) {
            paths.push(PathBuf::from(path.as_ref()));
            continue;
        }
        for name in names {
            paths.push(PathBuf::from(path.replacen(GFXARCH, name, 1)));
        }
    }
    paths
}

/// Searches for code object `index` of a binary (whose reference is `reference`, its search
/// paths resolved as the loader does: `resolved`) for a device asking for `arches` (see
/// [`device_arches`]), with `open` telling what each candidate path holds.
pub fn search(
    reference: &KpackRef<'_>,
    resolved: &[PathBuf],
    index: u64,
    arches: &[String],
    env: &Environment,
    miss: Miss,
    open: &mut dyn FnMut(&Path) -> Opened,
) -> Search {
    let key = toc_key(reference.kernel_name, index);
    if env.disabled() {
        return Search {
            key,
            tried: Vec::new(),
            outcome: Outcome::Disabled,
        };
    }
    let names = target_names_asked(arches);
    let tried: Vec<Tried> = candidate_paths(resolved, &names, env)
        .into_iter()
        .map(|path| Tried {
            opened: open(&path),
            path,
        })
        .collect();
    let archives: Vec<(&Path, &ArchiveIndex)> = tried
        .iter()
        .filter_map(|t| match &t.opened {
            Opened::Archive(index) => Some((t.path.as_path(), index)),
            _ => None,
        })
        .collect();
    let outcome = if archives.is_empty() {
        Outcome::NoArchive
    } else {
        pick(&archives, &key, arches, miss)
    };
    Search {
        key,
        tried,
        outcome,
    }
}

/// The loader's choice among `archives` (in search order) of the one to load `key` from for
/// a device asking for `arches`: processor first, then feature subsets, then archives in
/// order.
pub fn pick(
    archives: &[(&Path, &ArchiveIndex)],
    key: &str,
    arches: &[String],
    miss: Miss,
) -> Outcome {
    let mut first_miss = None;
    for arch in arches {
        for target in compatible_targets(arch) {
            for (path, index) in archives {
                if !index.gfx_arches.contains(&target) {
                    continue;
                }
                let found = Outcome::Found {
                    archive: path.to_path_buf(),
                    arch: target.clone(),
                };
                if index.entries.contains(&(key.to_string(), target.clone())) {
                    return found;
                }
                let missed = Outcome::KernelNotFound {
                    archive: path.to_path_buf(),
                    arch: target.clone(),
                };
                match miss {
                    Miss::Stop => return missed,
                    Miss::FallThrough => {
                        first_miss.get_or_insert(missed);
                    }
                }
            }
        }
    }
    first_miss.unwrap_or(Outcome::NoArch)
}

#[cfg(test)]
#[allow(clippy::indexing_slicing)]
mod tests {
    use super::*;

    fn index(arches: &[&str], entries: &[(&str, &str)]) -> ArchiveIndex {
        ArchiveIndex {
            gfx_arches: arches.iter().map(|a| a.to_string()).collect(),
            entries: entries
                .iter()
                .map(|(k, a)| (k.to_string(), a.to_string()))
                .collect(),
        }
    }

    fn reference() -> KpackRef<'static> {
        KpackRef {
            kernel_name: "lib/libk.so",
            kpack_search_paths: vec!["../.kpack/k_@GFXARCH@.kpack"],
        }
    }

    /// The reference's search paths against `binary`'s folder, by name.
    fn resolved(binary: &str) -> Vec<PathBuf> {
        let folder = Path::new(binary).parent().unwrap();
        reference()
            .kpack_search_paths
            .iter()
            .map(|p| lexically_normal(&folder.join(p)))
            .collect()
    }

    fn names(arches_: &[&str]) -> Vec<String> {
        target_names_asked(&arches(arches_))
    }

    fn arches(list: &[&str]) -> Vec<String> {
        list.iter().map(|s| s.to_string()).collect()
    }

    #[test]
    fn feature_subsets_most_specific_first() {
        assert_eq!(
            compatible_targets("amdgcn-amd-amdhsa--gfx942:sramecc+:xnack-"),
            [
                "gfx942:sramecc+:xnack-",
                "gfx942:sramecc+",
                "gfx942:xnack-",
                "gfx942"
            ]
        );
        assert_eq!(compatible_targets("gfx1100"), ["gfx1100"]);
        assert_eq!(
            compatible_targets("gfx90a::xnack+"),
            ["gfx90a:xnack+", "gfx90a"]
        );
        assert!(compatible_targets(":xnack+").is_empty());
    }

    #[test]
    fn paths_expand_per_processor_and_subset() {
        let env = Environment::default();
        let paths = candidate_paths(
            &resolved("/opt/r/lib/libk.so"),
            &names(&["gfx90a:xnack-", "gfx9-generic"]),
            &env,
        );
        assert_eq!(
            paths,
            [
                "/opt/r/.kpack/k_gfx90a:xnack-.kpack",
                "/opt/r/.kpack/k_gfx90a.kpack",
                "/opt/r/.kpack/k_gfx9-generic.kpack"
            ]
            .map(PathBuf::from)
        );
    }

    #[test]
    fn environment_overrides() {
        let binary = resolved("/opt/r/lib/libk.so");
        let list = arches(&["gfx1100"]);
        let gfx1100 = names(&["gfx1100"]);
        let env = Environment {
            path: Some(":/a.kpack::/b.kpack".into()),
            path_prefix: Some("/p.kpack".into()),
            disable: None,
        };
        assert_eq!(
            candidate_paths(&binary, &gfx1100, &env),
            [PathBuf::from("/a.kpack"), PathBuf::from("/b.kpack")]
        );
        let env = Environment {
            path: Some(":".into()),
            ..env
        };
        assert_eq!(
            candidate_paths(&binary, &gfx1100, &env),
            [
                PathBuf::from("/p.kpack"),
                PathBuf::from("/opt/r/.kpack/k_gfx1100.kpack")
            ]
        );
        for (value, off) in [("1", true), ("yes", true), ("0", false), ("", false)] {
            let env = Environment {
                disable: Some(value.into()),
                ..Environment::default()
            };
            assert_eq!(env.disabled(), off, "{value:?}");
        }
        let env = Environment {
            disable: Some("1".into()),
            ..Environment::default()
        };
        let found = search(
            &reference(),
            &binary,
            0,
            &list,
            &env,
            Miss::FallThrough,
            &mut |_| unreachable!("a disabled loader opens nothing"),
        );
        assert_eq!(found.outcome, Outcome::Disabled);
    }

    /// The files of a split library: an overlay for `gfx90a:xnack-` holding code object 1, a
    /// plain `gfx90a` archive holding both, and a damaged generic archive.
    fn overlay_and_plain(p: &Path) -> Opened {
        match p.to_str().unwrap() {
            "/r/.kpack/k_gfx90a:xnack-.kpack" => Opened::Archive(index(
                &["gfx90a:xnack-"],
                &[("lib/libk.so#1", "gfx90a:xnack-")],
            )),
            "/r/.kpack/k_gfx90a.kpack" => Opened::Archive(index(
                &["gfx90a"],
                &[("lib/libk.so#0", "gfx90a"), ("lib/libk.so#1", "gfx90a")],
            )),
            "/r/.kpack/k_gfx9-generic.kpack" => Opened::Unreadable("bad magic".into()),
            _ => Opened::Missing,
        }
    }

    #[test]
    fn a_processor_without_archives_finds_none() {
        let binary = resolved("/r/lib/libk.so");
        let mut open = overlay_and_plain;
        let env = Environment::default();
        let list = arches(&["gfx1100"]);
        let s = search(
            &reference(),
            &binary,
            0,
            &list,
            &env,
            Miss::FallThrough,
            &mut open,
        );
        assert_eq!(s.outcome, Outcome::NoArchive);
        assert_eq!(
            s.tried,
            [Tried {
                path: "/r/.kpack/k_gfx1100.kpack".into(),
                opened: Opened::Missing
            }]
        );
        let env = Environment {
            path: Some("/r/.kpack/k_gfx90a.kpack".into()),
            ..Environment::default()
        };
        let s = search(
            &reference(),
            &binary,
            0,
            &list,
            &env,
            Miss::FallThrough,
            &mut open,
        );
        assert_eq!(s.outcome, Outcome::NoArch);
    }

    #[test]
    fn arch_first_then_archives_in_order() {
        let binary = resolved("/r/lib/libk.so");
        let mut open = overlay_and_plain;
        let list = arches(&["gfx90a:xnack-"]);
        let env = Environment::default();
        let s = search(&reference(), &binary, 1, &list, &env, Miss::Stop, &mut open);
        assert_eq!(s.key, "lib/libk.so#1");
        assert_eq!(
            s.outcome,
            Outcome::Found {
                archive: "/r/.kpack/k_gfx90a:xnack-.kpack".into(),
                arch: "gfx90a:xnack-".into()
            }
        );
        // #0 is only in the plain gfx90a archive: the overlay misses it.
        let s = search(&reference(), &binary, 0, &list, &env, Miss::Stop, &mut open);
        assert_eq!(
            s.outcome,
            Outcome::KernelNotFound {
                archive: "/r/.kpack/k_gfx90a:xnack-.kpack".into(),
                arch: "gfx90a:xnack-".into()
            }
        );
        assert_eq!(s.outcome.loader_code(), 5);
        let s = search(
            &reference(),
            &binary,
            0,
            &list,
            &env,
            Miss::FallThrough,
            &mut open,
        );
        assert_eq!(
            s.outcome,
            Outcome::Found {
                archive: "/r/.kpack/k_gfx90a.kpack".into(),
                arch: "gfx90a".into()
            }
        );
        assert_eq!(s.tried.len(), 2);
        let s = search(
            &reference(),
            &binary,
            7,
            &list,
            &env,
            Miss::FallThrough,
            &mut open,
        );
        assert_eq!(s.outcome.loader_code(), 5);
    }

    #[test]
    fn paths_normalise_by_name_as_the_standard_library_does() {
        for (path, normal) in [
            ("a/b/../../x.kpack", "x.kpack"),
            ("../x.kpack", "../x.kpack"),
            ("a/../../x.kpack", "../x.kpack"),
            ("../../x/../.kpack/k", "../../.kpack/k"),
            ("/l/../../abs/./x.kpack", "/abs/x.kpack"),
        ] {
            assert_eq!(
                lexically_normal(Path::new(path)),
                PathBuf::from(normal),
                "{path}"
            );
        }
    }

    #[test]
    fn names_cover_every_feature_setting_most_specific_first() {
        let all = every_target_name();
        let gfx90a: Vec<&String> = all.iter().filter(|n| n.starts_with("gfx90a")).collect();
        assert_eq!(
            gfx90a,
            [
                "gfx90a:sramecc+:xnack+",
                "gfx90a:sramecc+:xnack-",
                "gfx90a:sramecc-:xnack+",
                "gfx90a:sramecc-:xnack-",
                "gfx90a:sramecc+",
                "gfx90a:sramecc-",
                "gfx90a:xnack+",
                "gfx90a:xnack-",
                "gfx90a"
            ]
        );
        assert!(all.contains(&"gfx1100".to_string()));
        assert!(all.contains(&"gfx9-generic:xnack-".to_string()));
        assert!(!all.iter().any(|n| n.starts_with("amdgcnspirv")));
        let asked = TargetId::parse_syntax("gfx906:xnack-").unwrap();
        assert_eq!(
            target_names_for(&asked),
            [
                "gfx906:sramecc+:xnack-",
                "gfx906:sramecc-:xnack-",
                "gfx906:sramecc+",
                "gfx906:sramecc-",
                "gfx906:xnack-",
                "gfx906",
                "gfx9-generic:xnack-",
                "gfx9-generic"
            ]
        );
        assert!(target_names_for(&TargetId::parse_syntax("gfx9999").unwrap()).is_empty());
    }
}
