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
use crate::format::kpack::record::BundleRecord;
use crate::format::kpack::{
    split_toc_key, Archive, HipWrapper, KernelEntry, KpackRef, Scheme, Wrapped, ELF_REF_SECTION,
    PE_REF_SECTION,
};
use crate::io::{shown, Input};
use crate::loads::kpack_search::{
    self, lexically_normal, ArchiveIndex, Environment, Miss, Opened, Search,
};

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
    /// The reference's bytes.
    pub bytes: &'a [u8],
    /// The code-object index of each HIPK wrapper, in wrapper order.
    pub indices: Vec<u64>,
}

impl SplitBinary<'_> {
    /// The record of the bundles a split by this crate emptied, from the reference (the binary
    /// named `path` in errors): `None` for a reference without one (split by AMD's splitter).
    pub fn record(&self, path: &Path) -> Result<Option<BundleRecord>> {
        BundleRecord::from_reference(self.bytes).map_err(|e| {
            Error::format_in(path, format!("{} at {:#x}", self.section, self.offset), e)
        })
    }
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
    let (offset, size) = section.file_range().unwrap_or_default();
    let bytes = section.data().map_err(|e| {
        Error::file(
            path,
            format!(
                "{name} at {offset:#x}: its {size:#x} bytes do not lie in the file, which \
             ends at {:#x} ({e})",
                data.len()
            ),
        )
    })?;
    let reference = KpackRef::parse(bytes)
        .map_err(|e| Error::format_in(path, format!("{name} at {offset:#x}"), e))?;
    let mut indices = Vec::new();
    let wrappers = wrapper_sections(name)
        .iter()
        .find_map(|&n| Some((file.section_by_name(n)?, n)));
    if let Some((wrappers, wrapper_section)) = wrappers {
        let at = wrappers.file_range().map_or(0, |(at, _)| at);
        let bytes = wrappers.data().unwrap_or_default();
        let chunks = HipWrapper::offsets(bytes)
            .into_iter()
            .map(|o| (o, bytes.get(o..)));
        for (i, (offset, chunk)) in chunks.enumerate() {
            let wrapper_at = at + offset as u64;
            match HipWrapper::parse(chunk.unwrap_or_default()) {
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
        bytes,
        indices,
    }))
}

/// The search paths of `reference` as the loader resolves them for the binary at `binary`:
/// absolute ones as written; relative ones against the folder of the binary's real path
/// ([`runtime_path`]), then weakly canonical ([`weakly_canonical`]). `@GFXARCH@` stays in.
pub fn loader_search_paths(binary: &Path, reference: &KpackRef<'_>) -> Vec<PathBuf> {
    let real = runtime_path(binary);
    let folder = real.parent().unwrap_or(Path::new("/"));
    reference
        .kpack_search_paths
        .iter()
        .map(|written| {
            let path = Path::new(written);
            if path.is_absolute() {
                path.to_path_buf()
            } else {
                weakly_canonical(&folder.join(path))
            }
        })
        .collect()
}

/// `path` as `std::filesystem::weakly_canonical` makes it: the longest leading part that
/// exists with its symbolic links resolved (`realpath`), the rest appended and normalised by
/// name.
pub fn weakly_canonical(path: &Path) -> PathBuf {
    if let Ok(real) = std::fs::canonicalize(path) {
        return real;
    }
    let parts: Vec<_> = path.components().collect();
    let mut head = PathBuf::new();
    let mut existing = (PathBuf::new(), 0);
    for (n, part) in parts.iter().enumerate() {
        head.push(part);
        match std::fs::canonicalize(&head) {
            Ok(real) => existing = (real, n + 1),
            Err(_) => break,
        }
    }
    let (mut out, taken) = existing;
    for part in parts.iter().skip(taken) {
        out.push(part);
    }
    lexically_normal(&out)
}

/// The archives a split binary at `binary` loads from, found as the loader finds them: the
/// paths of [`kpack_search::candidate_paths`] for the processor strings `names` (see
/// [`kpack_search::every_target_name`]), each opened only if it is a regular file, each
/// file once. No folder is listed and no other file is opened.
pub fn find_archives(
    binary: &Path,
    reference: &KpackRef<'_>,
    env: &Environment,
    names: &[String],
) -> FoundArchives {
    let searched = loader_search_paths(binary, reference);
    let mut found = FoundArchives {
        disabled: env.disabled(),
        ..FoundArchives::default()
    };
    let candidates = loader_candidates(&searched, env, names);
    found.searched = searched;
    let mut seen = std::collections::HashSet::new();
    for path in candidates {
        match Input::open_regular(&path) {
            Ok(Some(input)) => {
                if seen.insert(input.identity()) {
                    found.archives.push((path, input));
                }
            }
            Ok(None) => {}
            Err(e) => found.problems.push(e.into()),
        }
    }
    found
}

/// The archive paths the loader tries, in its order, for search paths `searched` (resolved by
/// [`loader_search_paths`]) with `@GFXARCH@` standing for each of `names`; none when
/// `ROCM_KPACK_DISABLE` turns the loader off.
fn loader_candidates(searched: &[PathBuf], env: &Environment, names: &[String]) -> Vec<PathBuf> {
    if env.disabled() {
        return Vec::new();
    }
    kpack_search::candidate_paths(searched, names, env)
}

/// The archives found for a split binary, and where they were looked for.
#[derive(Default)]
pub struct FoundArchives {
    /// The binary's search paths as the loader resolved them, `@GFXARCH@` left in.
    pub searched: Vec<PathBuf>,
    /// Whether `ROCM_KPACK_DISABLE` turned the loader off (nothing was opened).
    pub disabled: bool,
    /// The archives, in the loader's order, each mapped.
    pub archives: Vec<(PathBuf, Input)>,
    /// Regular files that could not be opened.
    pub problems: Vec<Error>,
}

impl FoundArchives {
    /// Where the archives were looked for, for people: the environment's list when
    /// `ROCM_KPACK_PATH` names one, else `ROCM_KPACK_PATH_PREFIX`'s and the search paths,
    /// `@GFXARCH@` standing for each processor string tried.
    pub fn where_looked(&self, env: &Environment) -> String {
        if self.disabled {
            return "nowhere: ROCM_KPACK_DISABLE turns kpack loading off".to_string();
        }
        let overridden = kpack_search::split_list(env.path.as_deref());
        let paths = if overridden.is_empty() {
            let mut paths = kpack_search::split_list(env.path_prefix.as_deref());
            paths.extend(self.searched.iter().cloned());
            paths
        } else {
            overridden
        };
        let shown: Vec<String> = paths.iter().map(|p| shown(p).into_owned()).collect();
        shown.join(", ")
    }

    /// The error for a split binary at `binary` for which no archive was found, `what` (such
    /// as ` for its 2 code objects`) after its first words; names and paths escaped.
    pub fn none_found(&self, binary: &Path, what: &str, env: &Environment) -> Error {
        Error::file(
            binary,
            format!(
                "no kpack archive found{what}; looked at {}",
                self.where_looked(env)
            ),
        )
    }
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
                // Stored plain, what is there is what a reader gets, whatever the table says
                // (`verify` reports a difference); compressed, the frame must inflate to it.
                size: match archive.scheme {
                    Scheme::None => stored.size,
                    Scheme::ZstdPerKernel => entry.original_size,
                },
                ordinal: entry.ordinal,
            })
        })
        .collect()
}

/// The code objects for the split binary at `binary` in the archives the loader would find
/// for any device ([`find_archives`] with every processor string), in archive order then
/// table order, and the problems: archives that could not be read, no archive at all, and
/// code objects the binary asks for that no archive holds.
pub fn code_objects_for(
    binary: &Path,
    split: &SplitBinary<'_>,
    env: &Environment,
) -> (Vec<StoredCodeObject>, Vec<Error>) {
    let name = split.reference.kernel_name;
    let ours = |e: &KernelEntry<'_>| split_toc_key(e.key).is_some_and(|(b, _)| b == name);
    let names = kpack_search::every_target_name();
    let set = find_archives(binary, &split.reference, env, &names);
    let mut found = Vec::new();
    let mut problems = Vec::new();
    if set.archives.is_empty() && !set.disabled {
        let what = format!(" for its {} code objects", split.distinct_indices().len());
        problems.push(set.none_found(binary, &what, env));
    }
    for (path, data) in &set.archives {
        let listed = Archive::parse(data)
            .map_err(|e| Error::format(path, e))
            .and_then(|archive| stored_code_objects(path, &archive, &ours));
        match listed.and_then(|list| Ok(data.intact().map(|()| list)?)) {
            Ok(list) => found.extend(list),
            Err(e) => problems.push(e),
        }
    }
    problems.extend(set.problems);
    if !set.archives.is_empty() {
        let held: std::collections::HashSet<u64> = found.iter().filter_map(|c| c.index).collect();
        let lacking: Vec<u64> = split
            .distinct_indices()
            .into_iter()
            .filter(|i| !held.contains(i))
            .collect();
        if !lacking.is_empty() {
            problems.push(Error::file(
                binary,
                format!(
                    "code object{} {} ({}#N) in none of its archives ({})",
                    if lacking.len() == 1 { "" } else { "s" },
                    lacking
                        .iter()
                        .map(u64::to_string)
                        .collect::<Vec<_>>()
                        .join(", "),
                    name,
                    set.archives
                        .iter()
                        .map(|(p, _)| crate::io::shown(p).into_owned())
                        .collect::<Vec<_>>()
                        .join(", ")
                ),
            ));
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
        let opened = Input::open(path).map_err(Error::from);
        self.keep(path, opened)
    }

    /// Takes `input`, the bytes of an archive that is no file of its own (a package's member),
    /// under the name `name`: its number, as [`ArchiveFiles::map`] gives; the error says why
    /// it is no archive.
    pub fn take(&mut self, name: &Path, input: Input) -> Result<usize> {
        self.keep(name, Ok(input))
    }

    /// The archive at `path` if a regular file is there ([`Input::open_regular`]): mapped, as
    /// [`ArchiveFiles::map`]; `None` when nothing or no regular file is there.
    fn map_regular(&mut self, path: &Path) -> Result<Option<usize>> {
        if let Some(known) = self.by_path.get(path) {
            return known.clone().map(Some).map_err(Error::msg);
        }
        match Input::open_regular(path) {
            Ok(None) => Ok(None),
            Ok(Some(input)) => self.keep(path, Ok(input)).map(Some),
            Err(e) => self.keep(path, Err(e.into())).map(Some),
        }
    }

    /// Remembers what `path` held, `opened` and parsed as an archive: its number, or why it
    /// cannot be read.
    fn keep(&mut self, path: &Path, opened: Result<Input>) -> Result<usize> {
        let mapped = opened.and_then(|input| {
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

    /// The archives the loader finds for the split binary at `binary` when `@GFXARCH@`
    /// stands for each of `names`, as [`find_archives`] finds them: their numbers, in the
    /// loader's order, each file once; and the regular files that are no archive.
    pub fn find(
        &mut self,
        binary: &Path,
        reference: &KpackRef<'_>,
        env: &Environment,
        names: &[String],
    ) -> (Vec<usize>, Vec<Error>) {
        let mut numbers: Vec<usize> = Vec::new();
        let mut problems = Vec::new();
        let mut seen = std::collections::HashSet::new();
        let searched = loader_search_paths(binary, reference);
        for path in loader_candidates(&searched, env, names) {
            match self.map_regular(&path) {
                Ok(Some(number)) => {
                    let identity = self.get(number).and_then(|(_, i)| i.identity());
                    if seen.insert(identity) {
                        numbers.push(number);
                    }
                }
                Ok(None) => {}
                Err(e) => problems.push(e),
            }
        }
        (numbers, problems)
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
        let opened = match self.map_regular(path) {
            Ok(None) => Opened::Missing,
            Ok(Some(number)) => match self.archive(number) {
                Some((_, archive)) => Opened::Archive(ArchiveIndex::of(&archive)),
                None => Opened::Unreadable("not a kpack archive".into()),
            },
            Err(e) => Opened::Unreadable(without_path(path, &e.to_string())),
        };
        self.opened.insert(path.to_path_buf(), opened.clone());
        opened
    }

    /// The loader's search, against the files, for code object `index` of the split binary
    /// at `binary`, on a device asking for `arches` ([`kpack_search::device_arches`]), as
    /// today's runtime does (a miss falls through).
    pub fn search(
        &mut self,
        binary: &Path,
        split: &SplitBinary<'_>,
        index: u64,
        arches: &[String],
        env: &Environment,
    ) -> Search {
        let resolved = loader_search_paths(binary, &split.reference);
        kpack_search::search(
            &split.reference,
            &resolved,
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
                .ok_or_else(|| Error::file(path, "not a kpack archive"))?;
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
            .ok_or_else(|| Error::file(path, format!("no code object {key} for {arch}")))
    }
}

/// An error's message without the `'PATH': ` it starts with.
fn without_path(path: &Path, message: &str) -> String {
    let prefix = format!("'{}': ", crate::io::shown(&path));
    message.strip_prefix(&prefix).unwrap_or(message).to_string()
}
