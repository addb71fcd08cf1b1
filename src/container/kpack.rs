//! Split binaries and their `.kpack` archives as files: the reference and HIPK wrappers a
//! split program or shared library keeps, the archives its search paths name on disk, and the
//! code objects those archives hold for it.
//!
//! Code-object indices are the HIP wrappers' own (`reserved1`), which is what the loader asks
//! for. AMD's Python splitter numbers code objects per processor instead; the two agree only
//! when every translation unit targets the same processors, so for other binaries an archive
//! it wrote is read here (and by the loader) with its indices shifted.

use std::collections::HashMap;
use std::path::{Path, PathBuf};

use object::{Object, ObjectSection};

use crate::error::{Error, Result};
use crate::format::kpack::{
    split_toc_key, Archive, HipWrapper, KernelEntry, KpackRef, Scheme, Wrapped, ELF_REF_SECTION,
    GFXARCH, PE_REF_SECTION,
};
use crate::format::kpack_search::{
    self, resolve_search_path, ArchiveIndex, Environment, Miss, Opened, Search,
};
use crate::io::Input;

/// The sections of HIP wrappers, by the reference section beside them: an ELF file's
/// `.hipFatBinSegment`; a PE image's `.hipFatB` (its name cut to eight bytes), or the long
/// name a linker keeping long names writes.
fn wrapper_sections(reference_section: &str) -> &'static [&'static str] {
    if reference_section == PE_REF_SECTION {
        &[".hipFatB", ".hipFatBinSegment"]
    } else {
        &[".hipFatBinSegment"]
    }
}

/// What a split binary keeps of its device code.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SplitBinary<'a> {
    /// The reference to its archives.
    pub reference: KpackRef<'a>,
    /// The section holding the reference.
    pub section: &'static str,
    /// The file offset of the reference.
    pub offset: u64,
    /// The code-object index of each HIPK wrapper, in wrapper order.
    pub indices: Vec<u64>,
}

/// The kpack reference and wrappers of the object file `data` (named `path` in errors), or
/// `None` when it has no reference section (not split, or not an object file).
pub fn split_binary<'a>(path: &Path, data: &'a [u8]) -> Result<Option<SplitBinary<'a>>> {
    let Ok(file) = object::File::parse(data) else {
        return Ok(None);
    };
    let Some((section, name)) = [ELF_REF_SECTION, PE_REF_SECTION]
        .into_iter()
        .find_map(|name| Some((file.section_by_name(name)?, name)))
    else {
        return Ok(None);
    };
    let offset = section.file_range().map_or(0, |(at, _)| at);
    let bytes = section
        .data()
        .map_err(|e| Error::msg(format!("'{}': {name}: {e}", path.display())))?;
    let reference = KpackRef::parse(bytes)
        .map_err(|e| Error::format_in(path, format!("{name} at {offset:#x}"), e))?;
    let mut indices = Vec::new();
    let wrappers = wrapper_sections(name)
        .iter()
        .find_map(|&n| Some((file.section_by_name(n)?, n)));
    if let Some((wrappers, wrapper_section)) = wrappers {
        let at = wrappers.file_range().map_or(0, |(at, _)| at);
        let bytes = wrappers.data().unwrap_or_default();
        for (i, chunk) in bytes.chunks_exact(HipWrapper::SIZE).enumerate() {
            let wrapper_at = at + (i * HipWrapper::SIZE) as u64;
            match HipWrapper::parse(chunk) {
                Ok(Wrapped::Kpack { index, .. }) => indices.push(index),
                Ok(Wrapped::Bundle { .. }) => {}
                Err(e) => {
                    let context = format!("{wrapper_section} wrapper {i} at {wrapper_at:#x}");
                    return Err(Error::format_in(path, context, e));
                }
            }
        }
    }
    Ok(Some(SplitBinary {
        reference,
        section: name,
        offset,
        indices,
    }))
}

/// The archives a split binary at `binary` may load from, without a device to choose among
/// processors: `ROCM_KPACK_PATH` when it names any; else `ROCM_KPACK_PATH_PREFIX`, then each
/// search path resolved against the binary's folder, a path with `@GFXARCH@` standing for
/// every file of its folder that fits the pattern (in name order). Only paths that exist.
pub fn archive_paths(binary: &Path, reference: &KpackRef<'_>, env: &Environment) -> Vec<PathBuf> {
    let list = |value: &Option<String>| -> Vec<PathBuf> {
        value
            .as_deref()
            .unwrap_or_default()
            .split(':')
            .filter(|p| !p.is_empty())
            .map(PathBuf::from)
            .collect()
    };
    let overridden = list(&env.path);
    let mut paths = if overridden.is_empty() {
        let mut paths = list(&env.path_prefix);
        for search_path in &reference.kpack_search_paths {
            let resolved = resolve_search_path(binary, search_path);
            if resolved.to_string_lossy().contains(GFXARCH) {
                paths.extend(matching_files(&resolved));
            } else {
                paths.push(resolved);
            }
        }
        paths
    } else {
        overridden
    };
    paths.retain(|p| p.is_file());
    let mut seen = std::collections::HashSet::new();
    paths.retain(|p| seen.insert(p.canonicalize().unwrap_or_else(|_| p.clone())));
    paths
}

/// The files of `pattern`'s folder whose names fit its file name, `@GFXARCH@` standing for
/// any non-empty text, in name order.
fn matching_files(pattern: &Path) -> Vec<PathBuf> {
    let (Some(dir), Some(name)) = (pattern.parent(), pattern.file_name()) else {
        return Vec::new();
    };
    let name = name.to_string_lossy();
    let Some((before, after)) = name.split_once(GFXARCH) else {
        return Vec::new();
    };
    let Ok(entries) = std::fs::read_dir(dir) else {
        return Vec::new();
    };
    let mut found: Vec<PathBuf> = entries
        .filter_map(|e| e.ok())
        .filter(|e| {
            let n = e.file_name().to_string_lossy().into_owned();
            n.len() > before.len() + after.len() && n.starts_with(before) && n.ends_with(after)
        })
        .map(|e| e.path())
        .collect();
    found.sort();
    found
}

/// One code object an archive holds, with where it is stored.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct StoredCodeObject {
    /// The archive.
    pub archive: PathBuf,
    /// The table key, `"<binary>#<index>"`.
    pub key: String,
    /// The code-object index of the key.
    pub index: Option<u64>,
    /// The processor key.
    pub arch: String,
    /// How the archive stores it.
    pub scheme: Scheme,
    /// Where its stored bytes (plain, or its zstd frame) lie in the archive.
    pub stored_offset: u64,
    /// How many stored bytes.
    pub stored_size: u64,
    /// Its size as a code object.
    pub size: u64,
    /// Its ordinal: its place among the archive's stored code objects.
    pub ordinal: u64,
}

/// The entries of `archive` (read from `path`) that `keep` accepts, with where each is stored.
pub fn stored_code_objects(
    path: &Path,
    archive: &Archive<'_>,
    keep: &dyn Fn(&KernelEntry<'_>) -> bool,
) -> Result<Vec<StoredCodeObject>> {
    archive
        .entries
        .iter()
        .filter(|e| keep(e))
        .map(|entry| {
            let stored = archive
                .stored_of(entry)
                .map_err(|e| Error::format(path, e))?;
            Ok(StoredCodeObject {
                archive: path.to_path_buf(),
                key: entry.key.to_string(),
                index: split_toc_key(entry.key).map(|(_, i)| i),
                arch: entry.arch.to_string(),
                scheme: archive.scheme,
                stored_offset: stored.offset,
                stored_size: stored.size,
                size: entry.original_size,
                ordinal: entry.ordinal,
            })
        })
        .collect()
}

/// The code objects for the split binary at `binary` in the archives `archive_paths` finds,
/// in archive order then table order, and the archives that could not be read.
pub fn code_objects_for(
    binary: &Path,
    split: &SplitBinary<'_>,
    env: &Environment,
) -> (Vec<StoredCodeObject>, Vec<Error>) {
    let name = split.reference.kernel_name;
    let ours = |e: &KernelEntry<'_>| split_toc_key(e.key).is_some_and(|(b, _)| b == name);
    let mut found = Vec::new();
    let mut problems = Vec::new();
    for path in archive_paths(binary, &split.reference, env) {
        // Mapped: only the header and the table are read.
        let listed = Input::open(&path).and_then(|data| {
            let archive = Archive::parse(&data).map_err(|e| Error::format(&path, e))?;
            let list = stored_code_objects(&path, &archive, &ours)?;
            data.intact()?;
            Ok(list)
        });
        match listed {
            Ok(list) => found.extend(list),
            Err(e) => problems.push(e),
        }
    }
    (found, problems)
}

impl SplitBinary<'_> {
    /// The code-object indices the wrappers ask for, each once, in wrapper order.
    pub fn distinct_indices(&self) -> Vec<u64> {
        let mut seen = std::collections::HashSet::new();
        self.indices
            .iter()
            .copied()
            .filter(|i| seen.insert(*i))
            .collect()
    }
}

/// The path the runtime knows a binary by: the loader takes it from `/proc/self/maps`, which
/// names the file itself, symbolic links resolved. `path` as it is when it cannot be resolved.
pub fn runtime_path(path: &Path) -> PathBuf {
    std::fs::canonicalize(path).unwrap_or_else(|_| path.to_path_buf())
}

/// `.kpack` archives opened (mapped) as they are asked for, each once, with what the loader
/// would make of each path.
#[derive(Default)]
pub struct ArchiveFiles {
    /// The archives mapped, in the order first read.
    inputs: Vec<(PathBuf, Input)>,
    /// Where each path's archive is in `inputs`, or why it could not be read.
    by_path: HashMap<PathBuf, std::result::Result<usize, String>>,
    /// What each path held, as the search sees it.
    opened: HashMap<PathBuf, Opened>,
    /// The code objects of each archive read so far, by key and processor.
    stored: HashMap<usize, HashMap<(String, String), StoredCodeObject>>,
}

impl ArchiveFiles {
    /// None opened yet.
    pub fn new() -> ArchiveFiles {
        ArchiveFiles::default()
    }

    /// The archive at `path`, mapped: its number (for [`ArchiveFiles::get`]); the error says
    /// why it cannot be read, naming the file.
    pub fn map(&mut self, path: &Path) -> Result<usize> {
        if let Some(known) = self.by_path.get(path) {
            return known.clone().map_err(Error::msg);
        }
        let mapped = Input::open(path).and_then(|input| {
            Archive::parse(&input).map_err(|e| Error::format(path, e))?;
            Ok(input)
        });
        let known = match mapped {
            Ok(input) => {
                self.inputs.push((path.to_path_buf(), input));
                Ok(self.inputs.len() - 1)
            }
            Err(e) => Err(e.to_string()),
        };
        self.by_path.insert(path.to_path_buf(), known.clone());
        known.map_err(Error::msg)
    }

    /// The path and bytes of archive `number`.
    pub fn get(&self, number: usize) -> Option<(&Path, &Input)> {
        self.inputs.get(number).map(|(p, i)| (p.as_path(), i))
    }

    /// The archive `number`, parsed (it parsed when mapped).
    pub fn archive(&self, number: usize) -> Option<(&Path, Archive<'_>)> {
        let (path, input) = self.get(number)?;
        Some((path, Archive::parse(input).ok()?))
    }

    /// What the loader finds at `path`: no regular file, a file that is no archive (and why,
    /// with the byte offset), or an archive.
    pub fn open(&mut self, path: &Path) -> Opened {
        if let Some(opened) = self.opened.get(path) {
            return opened.clone();
        }
        let opened = if !path.is_file() {
            Opened::Missing
        } else {
            match self.map(path) {
                Ok(number) => match self.archive(number) {
                    Some((_, archive)) => Opened::Archive(ArchiveIndex::of(&archive)),
                    None => Opened::Unreadable("not a kpack archive".into()),
                },
                Err(e) => Opened::Unreadable(without_path(path, &e.to_string())),
            }
        };
        self.opened.insert(path.to_path_buf(), opened.clone());
        opened
    }

    /// The loader's search, against the files, for code object `index` of the split binary
    /// whose runtime path (see [`runtime_path`]) is `binary`, on a device asking for `arches`
    /// ([`kpack_search::device_arches`]), as today's runtime does (a miss falls through).
    pub fn search(
        &mut self,
        binary: &Path,
        split: &SplitBinary<'_>,
        index: u64,
        arches: &[String],
        env: &Environment,
    ) -> Search {
        kpack_search::search(
            &split.reference,
            binary,
            index,
            arches,
            env,
            Miss::FallThrough,
            &mut |p| self.open(p),
        )
    }

    /// The code object `key` for processor `arch` in the archive at `path` (mapped before),
    /// with where it is stored.
    pub fn stored(&mut self, path: &Path, key: &str, arch: &str) -> Result<StoredCodeObject> {
        let number = self.map(path)?;
        if !self.stored.contains_key(&number) {
            // The whole table once, not once per code object asked for.
            let (path, archive) = self
                .archive(number)
                .ok_or_else(|| Error::msg(format!("'{}': not a kpack archive", path.display())))?;
            let all = stored_code_objects(path, &archive, &|_| true)?
                .into_iter()
                .map(|c| ((c.key.clone(), c.arch.clone()), c))
                .collect();
            self.stored.insert(number, all);
        }
        self.stored
            .get(&number)
            .and_then(|all| all.get(&(key.to_string(), arch.to_string())))
            .cloned()
            .ok_or_else(|| {
                Error::msg(format!(
                    "'{}': no code object {key} for {arch}",
                    path.display()
                ))
            })
    }
}

/// An error's message without the `'PATH': ` it starts with.
fn without_path(path: &Path, message: &str) -> String {
    let prefix = format!("'{}': ", path.display());
    message.strip_prefix(&prefix).unwrap_or(message).to_string()
}
