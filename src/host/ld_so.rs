//! The shared libraries a program or library loads, found as glibc's dynamic loader (ld.so)
//! finds them: `DT_NEEDED` breadth first, each name loaded once; for each name the loading
//! object's `DT_RPATH` and those of the objects that loaded it (when it has no `DT_RUNPATH`),
//! `LD_LIBRARY_PATH`, the loading object's `DT_RUNPATH`, `/etc/ld.so.cache`, then the default
//! folders, taking only files of the same ELF class and machine.
//!
//! The search reads its candidates through [`Files`]: the file system ([`Disk`]), or another
//! tree of files, such as a package's members where they install
//! ([`crate::host::package::tree`]).
//!
//! Not followed: the `glibc-hwcaps` subfolders and the cache entries for them (a machine
//! reads them by its CPU's level), `LD_PRELOAD`, `/etc/ld.so.preload`, and objects without
//! section headers (their `DT_NEEDED` are not read).

use std::collections::HashSet;
use std::path::{Path, PathBuf};

use object::elf;
use object::endian::{Endianness, U32, U64};
use object::pod::{self, Pod};
use object::read::elf::{Dyn, FileHeader, ProgramHeader};
use object::FileKind;

use crate::error::{Error, Result};
use crate::io::Input;

/// The ELF class and machine of an object: ld.so takes a library only when both match the
/// object that needs it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Abi {
    /// Whether it is a 64-bit object.
    pub is_64: bool,
    /// `e_machine`.
    pub machine: elf::Machine,
}

impl Abi {
    /// The Debian multiarch name of the ABI (`x86_64-linux-gnu`), which names the first
    /// default folders; `None` when it has none here.
    pub fn multiarch(self) -> Option<&'static str> {
        Some(match (self.machine, self.is_64) {
            (elf::EM_X86_64, true) => "x86_64-linux-gnu",
            (elf::EM_X86_64, false) => "x86_64-linux-gnux32",
            (elf::EM_386, false) => "i386-linux-gnu",
            (elf::EM_AARCH64, true) => "aarch64-linux-gnu",
            (elf::EM_PPC64, true) => "powerpc64le-linux-gnu",
            (elf::EM_RISCV, true) => "riscv64-linux-gnu",
            (elf::EM_S390, true) => "s390x-linux-gnu",
            _ => return None,
        })
    }

    /// What `$PLATFORM` stands for (the kernel's `AT_PLATFORM` for the machine).
    fn platform(self) -> &'static str {
        match self.machine {
            elf::EM_X86_64 => "x86_64",
            elf::EM_386 => "i686",
            elf::EM_AARCH64 => "aarch64",
            elf::EM_PPC64 => "powerpc64le",
            elf::EM_RISCV => "riscv64",
            elf::EM_S390 => "s390x",
            _ => "",
        }
    }

    /// What `$LIB` stands for: Debian's glibc says `lib/MULTIARCH`; others `lib64` or `lib`.
    fn lib(self) -> String {
        match self.multiarch() {
            Some(multiarch) => format!("lib/{multiarch}"),
            None if self.is_64 => "lib64".into(),
            None => "lib".into(),
        }
    }

    /// The folders ld.so searches last (Debian's glibc: the multiarch folders, then `/lib`
    /// and `/usr/lib`).
    pub fn default_folders(self) -> Vec<PathBuf> {
        let mut folders = Vec::new();
        if let Some(multiarch) = self.multiarch() {
            folders.push(Path::new("/lib").join(multiarch));
            folders.push(Path::new("/usr/lib").join(multiarch));
        }
        folders.push("/lib".into());
        folders.push("/usr/lib".into());
        folders
    }
}

/// What ld.so reads from an object's dynamic section.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct DynamicInfo {
    /// Its class and machine.
    pub abi: Abi,
    /// The program interpreter it names (`PT_INTERP`): set for a program, not a library.
    pub interpreter: Option<String>,
    /// `DT_NEEDED`, in order.
    pub needed: Vec<String>,
    /// `DT_RPATH`, unless the object also has `DT_RUNPATH` (ld.so then ignores it).
    pub rpath: Option<String>,
    /// `DT_RUNPATH`.
    pub runpath: Option<String>,
    /// `DT_SONAME`.
    pub soname: Option<String>,
    /// Whether `DT_FLAGS_1` has `DF_1_NODEFLIB`: the cache and the default folders are not
    /// searched for its libraries.
    pub nodeflib: bool,
}

/// Reads the dynamic section of the ELF object `data`; the error says why it is not one.
pub fn dynamic_info(data: &[u8]) -> std::result::Result<DynamicInfo, String> {
    let parsed = match FileKind::parse(data) {
        Ok(FileKind::Elf32) => read_dynamic::<elf::FileHeader32<Endianness>>(data),
        Ok(FileKind::Elf64) => read_dynamic::<elf::FileHeader64<Endianness>>(data),
        _ => return Err("not an ELF file".into()),
    };
    parsed.map_err(|e| format!("not a readable ELF file: {e}"))
}

fn read_dynamic<H: FileHeader<Endian = Endianness>>(
    data: &[u8],
) -> object::read::Result<DynamicInfo> {
    let header = H::parse(data)?;
    let endian = header.endian()?;
    let interpreter = header
        .program_headers(endian, data)?
        .iter()
        .find(|p| p.p_type(endian) == elf::PT_INTERP)
        .and_then(|p| p.data(endian, data).ok())
        .map(|bytes| {
            let end = bytes.iter().position(|&b| b == 0).unwrap_or(bytes.len());
            String::from_utf8_lossy(bytes.get(..end).unwrap_or(bytes)).into_owned()
        });
    let mut info = DynamicInfo {
        abi: Abi {
            is_64: header.is_type_64(),
            machine: header.e_machine(endian),
        },
        interpreter,
        needed: Vec::new(),
        rpath: None,
        runpath: None,
        soname: None,
        nodeflib: false,
    };
    let sections = header.sections(endian, data)?;
    let Some((entries, link)) = sections.dynamic(endian, data)? else {
        return Ok(info);
    };
    let strings = sections.strings(endian, data, link)?;
    for entry in entries {
        let tag = entry.tag(endian);
        if tag == elf::DT_NULL {
            break;
        }
        if tag == elf::DT_FLAGS_1 {
            info.nodeflib = entry.val(endian) & elf::DF_1_NODEFLIB.0 != 0;
            continue;
        }
        if !entry.is_string(endian) {
            continue;
        }
        let text = String::from_utf8_lossy(entry.string(endian, strings)?).into_owned();
        match tag {
            elf::DT_NEEDED => info.needed.push(text),
            elf::DT_RPATH => info.rpath = Some(text),
            elf::DT_RUNPATH => info.runpath = Some(text),
            elf::DT_SONAME => info.soname = Some(text),
            _ => {}
        }
    }
    if info.runpath.is_some() {
        info.rpath = None;
    }
    Ok(info)
}

/// The magic and version of glibc's ld.so cache format (glibc 2.32 and newer write only it;
/// older ones write it after the old format).
const CACHE_MAGIC: &[u8; 20] = b"glibc-ld.so.cache1.1";

/// The magic of the old (libc5) format, which older ldconfigs write first.
const OLD_CACHE_MAGIC: &[u8; 11] = b"ld.so-1.7.0";

/// The header of the new cache format.
#[repr(C)]
#[derive(Debug, Clone, Copy)]
struct CacheHeader {
    magic: [u8; 20],
    entry_count: U32<Endianness>,
    strings_size: U32<Endianness>,
    /// 2: little-endian, 3: big-endian (0: not said, taken as the machine's).
    flags: u8,
    padding: [u8; 3],
    extension_offset: U32<Endianness>,
    unused: [U32<Endianness>; 3],
}

/// One library of the new cache format.
#[repr(C)]
#[derive(Debug, Clone, Copy)]
struct CacheEntry {
    flags: U32<Endianness>,
    /// Offset of the library's name, from the start of the new format's header.
    key: U32<Endianness>,
    /// Offset of its path.
    value: U32<Endianness>,
    os_version: U32<Endianness>,
    /// Non-zero for the libraries of `glibc-hwcaps` subfolders.
    hwcap: U64<Endianness>,
}

// SAFETY: both hold byte arrays only (alignment 1, no padding); every bit pattern is valid.
unsafe impl Pod for CacheHeader {}
// SAFETY: as above.
unsafe impl Pod for CacheEntry {}

/// The libraries `/etc/ld.so.cache` lists: name and path, in the cache's order.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct LdSoCache {
    entries: Vec<(String, String)>,
}

impl LdSoCache {
    /// Parses a cache file (the new format, alone or after the old one). Entries for
    /// `glibc-hwcaps` subfolders are left out.
    pub fn parse(data: &[u8]) -> std::result::Result<LdSoCache, String> {
        let start = new_format_start(data)?;
        let new = data.get(start..).unwrap_or_default();
        let (header, rest) = pod::from_bytes::<CacheHeader>(new)
            .map_err(|()| format!("header truncated at {start:#x}"))?;
        if &header.magic != CACHE_MAGIC {
            return Err(format!(
                "no '{}' magic at {start:#x}",
                "glibc-ld.so.cache1.1"
            ));
        }
        let endian = match header.flags & 3 {
            3 => Endianness::Big,
            2 => Endianness::Little,
            _ => Endianness::default(),
        };
        let count = header.entry_count.get(endian) as usize;
        let (entries, _) = pod::slice_from_bytes::<CacheEntry>(rest, count)
            .map_err(|()| format!("{count} entries do not fit in the file"))?;
        let text = |offset: u32| -> Option<String> {
            let tail = new.get(offset as usize..)?;
            let end = tail.iter().position(|&b| b == 0)?;
            Some(String::from_utf8_lossy(tail.get(..end)?).into_owned())
        };
        let mut cache = LdSoCache::default();
        for (i, entry) in entries.iter().enumerate() {
            if entry.hwcap.get(endian) != 0 {
                continue;
            }
            let (Some(name), Some(path)) =
                (text(entry.key.get(endian)), text(entry.value.get(endian)))
            else {
                return Err(format!("entry {i}: a name or path lies past the end"));
            };
            cache.entries.push((name, path));
        }
        Ok(cache)
    }

    /// Reads `path`; a cache that is missing, is not a regular file, is larger than
    /// `CACHE_LIMIT` or does not parse is taken as empty (ld.so goes on without it too).
    pub fn read(path: &Path) -> LdSoCache {
        match crate::io::read_small(path, CACHE_LIMIT) {
            Ok(data) => LdSoCache::parse(&data).unwrap_or_else(|e| {
                tracing::warn!("'{}': not read: {e}", crate::io::shown(&path));
                LdSoCache::default()
            }),
            Err(e) => {
                tracing::debug!("{e}");
                LdSoCache::default()
            }
        }
    }

    /// The paths it lists for `name`, in its order.
    pub fn paths<'s>(&'s self, name: &'s str) -> impl Iterator<Item = &'s str> + 's {
        self.entries
            .iter()
            .filter(move |(key, _)| key == name)
            .map(|(_, path)| path.as_str())
    }
}

/// The largest loader cache read: real ones take tens or hundreds of KiB for thousands of
/// libraries.
pub const CACHE_LIMIT: u64 = 16 << 20;

/// Where the new format starts: at 0, or after the old format's entries.
fn new_format_start(data: &[u8]) -> std::result::Result<usize, String> {
    if !data.starts_with(OLD_CACHE_MAGIC) {
        return Ok(0);
    }
    // The old format: magic (padded to 12), u32 count, then 12-byte entries; the new format
    // follows, aligned to 8.
    let count = data
        .get(12..)
        .and_then(<[u8]>::first_chunk::<4>)
        .map(|b| u32::from_ne_bytes(*b) as usize)
        .ok_or("old format truncated")?;
    let end = count
        .checked_mul(12)
        .and_then(|n| n.checked_add(16))
        .and_then(|n| n.checked_next_multiple_of(8))
        .filter(|&n| n <= data.len())
        .ok_or("old format's entries run past the end")?;
    Ok(end)
}

/// How a library was found.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum FoundVia {
    /// Named on the command line.
    Argument,
    /// The program's interpreter (`PT_INTERP`): ld.so itself, loaded before any library.
    Interpreter,
    /// A `DT_NEEDED` with a `/`: the path itself.
    Path,
    /// A `DT_RPATH` folder.
    Rpath,
    /// An `LD_LIBRARY_PATH` folder.
    LdLibraryPath,
    /// A `DT_RUNPATH` folder.
    Runpath,
    /// `/etc/ld.so.cache`.
    Cache,
    /// A default folder.
    Default,
}

impl FoundVia {
    /// The name `offload check --json` gives it.
    pub fn name(self) -> &'static str {
        match self {
            FoundVia::Argument => "argument",
            FoundVia::Interpreter => "interpreter",
            FoundVia::Path => "path",
            FoundVia::Rpath => "rpath",
            FoundVia::LdLibraryPath => "LD_LIBRARY_PATH",
            FoundVia::Runpath => "runpath",
            FoundVia::Cache => "ld.so.cache",
            FoundVia::Default => "default",
        }
    }
}

/// One object of the load order.
pub struct Loaded {
    /// Its path, as found.
    pub path: PathBuf,
    /// The `DT_NEEDED` name it was loaded by (`None` for the root).
    pub needed_as: Option<String>,
    /// The index of the object that first needed it (`None` for the root).
    pub needed_by: Option<usize>,
    /// How it was found.
    pub found_via: FoundVia,
    /// Its dynamic section.
    pub info: DynamicInfo,
}

/// A `DT_NEEDED` name found nowhere (ldd's "not found").
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Missing {
    /// The name.
    pub name: String,
    /// The index of the object that needs it.
    pub needed_by: usize,
}

/// What ld.so's search depends on besides the objects: `LD_LIBRARY_PATH` and the cache.
#[derive(Debug, Clone, Default)]
pub struct Environment {
    /// `LD_LIBRARY_PATH`, as set.
    pub library_path: Option<String>,
    /// The cache.
    pub cache: LdSoCache,
}

impl Environment {
    /// This process's: `LD_LIBRARY_PATH` and `/etc/ld.so.cache`.
    pub fn of_process() -> Environment {
        Environment {
            library_path: std::env::var("LD_LIBRARY_PATH").ok(),
            cache: LdSoCache::read(Path::new("/etc/ld.so.cache")),
        }
    }
}

/// Where the search finds files: the file system ([`Disk`]), or the members of a package laid
/// out as it installs them. Paths are the search's own: a tree other than the file system
/// names its files as it likes, and no file is opened for them.
pub trait Files {
    /// The dynamic section of the object at `path`, when it is a regular file and an ELF
    /// object of `abi` (ld.so passes over any other candidate).
    fn open(&self, path: &Path, abi: Abi) -> Option<DynamicInfo>;
    /// What the file at `path` really is (links resolved): a file found under two names is
    /// loaded once.
    fn real(&self, path: &Path) -> Option<PathBuf>;
    /// The folder `$ORIGIN` stands for in the object at `path` (`program`: the root, a
    /// program).
    fn origin(&self, path: &Path, program: bool) -> PathBuf;
    /// The folders searched last.
    fn default_folders(&self, abi: Abi) -> Vec<PathBuf>;
}

/// The file system, as ld.so reads it.
pub struct Disk;

impl Files for Disk {
    fn open(&self, path: &Path, abi: Abi) -> Option<DynamicInfo> {
        open_matching(path, abi)
    }

    fn real(&self, path: &Path) -> Option<PathBuf> {
        std::fs::canonicalize(path).ok()
    }

    fn origin(&self, path: &Path, program: bool) -> PathBuf {
        origin_of(path, program)
    }

    fn default_folders(&self, abi: Abi) -> Vec<PathBuf> {
        abi.default_folders()
    }
}

/// `root` and every library it loads, in ld.so's order (breadth first), and the names found
/// nowhere. The error is for `root` itself: unreadable, or not an ELF file.
pub fn load_order(root: &Path, env: &Environment) -> Result<(Vec<Loaded>, Vec<Missing>)> {
    let input = Input::open(root)?;
    let info = dynamic_info(&input).map_err(|e| Error::file(root, e.to_string()))?;
    drop(input);
    Ok(load_order_in(&Disk, root, info, env))
}

/// [`load_order`] of the object at `root` in `files`, its dynamic section `info`.
pub fn load_order_in(
    files: &dyn Files,
    root: &Path,
    info: DynamicInfo,
    env: &Environment,
) -> (Vec<Loaded>, Vec<Missing>) {
    let mut walk = Walk {
        files,
        env,
        loaded: vec![Loaded {
            path: root.to_path_buf(),
            needed_as: None,
            needed_by: None,
            found_via: FoundVia::Argument,
            info,
        }],
        missing: Vec::new(),
        seen: HashSet::new(),
        origins: Vec::new(),
    };
    let program = walk.object(0).info.interpreter.is_some();
    walk.origins.push(files.origin(root, program));
    walk.note(0);
    let interpreter = walk.interpreter();
    let mut next = 0;
    while next < walk.loaded.len() {
        for name in walk.object(next).info.needed.clone() {
            walk.need(&name, next);
        }
        next += 1;
    }
    // ld.so lists itself last, whoever names it.
    if let Some(interpreter) = interpreter {
        walk.origins.push(files.origin(&interpreter.path, false));
        walk.loaded.push(interpreter);
    }
    (walk.loaded, walk.missing)
}

/// The state of a breadth-first walk.
struct Walk<'e> {
    files: &'e dyn Files,
    env: &'e Environment,
    loaded: Vec<Loaded>,
    missing: Vec<Missing>,
    /// The names (needed names, sonames) and real paths of the objects loaded so far.
    seen: HashSet<String>,
    /// The folder `$ORIGIN` stands for, per loaded object.
    origins: Vec<PathBuf>,
}

impl Walk<'_> {
    /// Loaded object `index`: the root, or one the walk loaded and numbered.
    fn object(&self, index: usize) -> &Loaded {
        self.loaded.get(index).expect("an object the walk loaded")
    }

    /// The root's interpreter, opened, with the names it answers to noted: libraries that
    /// need it by its soname get the loaded one.
    fn interpreter(&mut self) -> Option<Loaded> {
        let root = &self.object(0).info;
        let path = PathBuf::from(root.interpreter.clone()?);
        let info = self.files.open(&path, root.abi)?;
        let interpreter = Loaded {
            path,
            needed_as: None,
            needed_by: Some(0),
            found_via: FoundVia::Interpreter,
            info,
        };
        if let Some(soname) = &interpreter.info.soname {
            self.seen.insert(soname.clone());
        }
        if let Some(real) = self.files.real(&interpreter.path) {
            self.seen.insert(real.to_string_lossy().into_owned());
        }
        Some(interpreter)
    }

    /// Notes the names object `index` answers to.
    fn note(&mut self, index: usize) {
        let Some(object) = self.loaded.get(index) else {
            return;
        };
        if let Some(name) = &object.needed_as {
            self.seen.insert(name.clone());
        }
        if let Some(soname) = &object.info.soname {
            self.seen.insert(soname.clone());
        }
        if let Some(real) = self.files.real(&object.path) {
            self.seen.insert(real.to_string_lossy().into_owned());
        }
    }

    /// Loads `name`, needed by object `by`, unless an object already answers to it.
    fn need(&mut self, name: &str, by: usize) {
        if self.seen.contains(name) {
            return;
        }
        let abi = self.object(by).info.abi;
        let Some((path, via, info)) = self.find(name, by, abi) else {
            self.seen.insert(name.to_string());
            self.missing.push(Missing {
                name: name.to_string(),
                needed_by: by,
            });
            return;
        };
        if let Some(real) = self.files.real(&path) {
            if self.seen.contains(real.to_string_lossy().as_ref()) {
                // The same file under another name: ld.so maps it once.
                self.seen.insert(name.to_string());
                return;
            }
        }
        self.origins.push(self.files.origin(&path, false));
        self.loaded.push(Loaded {
            path,
            needed_as: Some(name.to_string()),
            needed_by: Some(by),
            found_via: via,
            info,
        });
        self.note(self.loaded.len() - 1);
    }

    /// Searches for `name` as ld.so does for object `by`.
    fn find(&self, name: &str, by: usize, abi: Abi) -> Option<(PathBuf, FoundVia, DynamicInfo)> {
        if name.contains('/') {
            let path = PathBuf::from(self.expand(name, by, abi)?);
            return (self.files.open(&path, abi)).map(|info| (path, FoundVia::Path, info));
        }
        let loader = &self.object(by).info;
        let mut tries: Vec<(Vec<PathBuf>, FoundVia)> = Vec::new();
        if loader.runpath.is_none() {
            // The loader's DT_RPATH, then those of the objects that loaded it, up to the root.
            let mut at = Some(by);
            while let Some(i) = at {
                if let Some(rpath) = &self.object(i).info.rpath {
                    tries.push((self.folders(rpath, i, abi), FoundVia::Rpath));
                }
                at = self.object(i).needed_by;
            }
        }
        if let Some(list) = &self.env.library_path {
            tries.push((self.folders(list, 0, abi), FoundVia::LdLibraryPath));
        }
        if let Some(runpath) = &loader.runpath {
            tries.push((self.folders(runpath, by, abi), FoundVia::Runpath));
        }
        for (folders, via) in tries {
            for folder in folders {
                let path = folder.join(name);
                if let Some(info) = self.files.open(&path, abi) {
                    return Some((path, via, info));
                }
            }
        }
        if loader.nodeflib {
            return None;
        }
        for path in self.env.cache.paths(name) {
            if let Some(info) = self.files.open(Path::new(path), abi) {
                return Some((path.into(), FoundVia::Cache, info));
            }
        }
        let defaults = self.files.default_folders(abi);
        defaults.into_iter().find_map(|folder| {
            let path = folder.join(name);
            (self.files.open(&path, abi)).map(|info| (path, FoundVia::Default, info))
        })
    }

    /// The folders of a `:`-separated list set by object `of` (an empty element is the
    /// current folder; one with a substitution ld.so cannot make is dropped).
    fn folders(&self, list: &str, of: usize, abi: Abi) -> Vec<PathBuf> {
        list.split([':', ';'])
            .filter_map(|element| {
                let element = if element.is_empty() { "." } else { element };
                self.expand(element, of, abi).map(PathBuf::from)
            })
            .collect()
    }

    /// `text` with `$ORIGIN`, `$LIB` and `$PLATFORM` (and their `${...}` forms) replaced as
    /// for object `of`.
    fn expand(&self, text: &str, of: usize, abi: Abi) -> Option<String> {
        let origin = self.origins.get(of)?.to_string_lossy().into_owned();
        let mut out = String::new();
        let mut rest = text;
        while let Some(at) = rest.find('$') {
            out.push_str(&rest[..at]);
            let after = &rest[at + 1..];
            let (token, tail) = match after.strip_prefix('{') {
                Some(inner) => {
                    let end = inner.find('}')?;
                    (&inner[..end], &inner[end + 1..])
                }
                None => {
                    let end = after
                        .find(|c: char| !(c.is_ascii_alphanumeric() || c == '_'))
                        .unwrap_or(after.len());
                    (&after[..end], &after[end..])
                }
            };
            match token {
                "ORIGIN" => out.push_str(&origin),
                "LIB" => out.push_str(&abi.lib()),
                "PLATFORM" if !abi.platform().is_empty() => out.push_str(abi.platform()),
                // A substitution ld.so does not know: the element is not searched.
                _ => return None,
            }
            rest = tail;
        }
        out.push_str(rest);
        Some(out)
    }
}

/// The folder `$ORIGIN` stands for in the object at `path`: for a program, the folder of the
/// file it really is (ld.so asks the kernel, which resolves links); for a library, the folder
/// of the path it was found at, made absolute.
fn origin_of(path: &Path, program: bool) -> PathBuf {
    let absolute = if program {
        std::fs::canonicalize(path).unwrap_or_else(|_| path.to_path_buf())
    } else if path.is_absolute() {
        path.to_path_buf()
    } else {
        std::env::current_dir()
            .map(|cwd| cwd.join(path))
            .unwrap_or_else(|_| path.to_path_buf())
    };
    absolute
        .parent()
        .map(Path::to_path_buf)
        .unwrap_or_else(|| PathBuf::from("/"))
}

/// The dynamic section of `path` if it is an ELF object of `abi`, as ld.so takes a candidate.
fn open_matching(path: &Path, abi: Abi) -> Option<DynamicInfo> {
    if !path.is_file() {
        return None;
    }
    let input = Input::open(path).ok()?;
    let info = dynamic_info(&input).ok()?;
    (info.abi == abi).then_some(info)
}

#[cfg(test)]
#[allow(clippy::indexing_slicing, clippy::cast_possible_truncation)]
mod tests {
    use super::*;

    /// A cache in the new format, little-endian, with `entries` (name, path, hwcap).
    fn cache_bytes(entries: &[(&str, &str, u64)]) -> Vec<u8> {
        let header = 48;
        let table = header + entries.len() * 24;
        let mut strings = Vec::new();
        let mut records = Vec::new();
        for (name, path, hwcap) in entries {
            let key = table + strings.len();
            strings.extend_from_slice(name.as_bytes());
            strings.push(0);
            let value = table + strings.len();
            strings.extend_from_slice(path.as_bytes());
            strings.push(0);
            records.extend_from_slice(&0x0303u32.to_le_bytes());
            records.extend_from_slice(&(key as u32).to_le_bytes());
            records.extend_from_slice(&(value as u32).to_le_bytes());
            records.extend_from_slice(&0u32.to_le_bytes());
            records.extend_from_slice(&hwcap.to_le_bytes());
        }
        let mut out = CACHE_MAGIC.to_vec();
        out.extend_from_slice(&(entries.len() as u32).to_le_bytes());
        out.extend_from_slice(&(strings.len() as u32).to_le_bytes());
        out.extend_from_slice(&[2, 0, 0, 0]);
        out.extend_from_slice(&[0; 16]);
        out.extend_from_slice(&records);
        out.extend_from_slice(&strings);
        out
    }

    #[test]
    fn the_cache_lists_names_and_paths_in_order_without_hwcaps_entries() {
        let data = cache_bytes(&[
            (
                "libz.so.1",
                "/usr/lib/glibc-hwcaps/x86-64-v3/libz.so.1",
                1 << 62,
            ),
            ("libz.so.1", "/lib/x86_64-linux-gnu/libz.so.1", 0),
            ("libz.so.1", "/lib/i386-linux-gnu/libz.so.1", 0),
            ("libc.so.6", "/lib/x86_64-linux-gnu/libc.so.6", 0),
        ]);
        let cache = LdSoCache::parse(&data).unwrap();
        assert_eq!(
            cache.paths("libz.so.1").collect::<Vec<_>>(),
            [
                "/lib/x86_64-linux-gnu/libz.so.1",
                "/lib/i386-linux-gnu/libz.so.1"
            ]
        );
        assert_eq!(cache.paths("libm.so.6").count(), 0);
    }

    #[test]
    fn a_damaged_cache_says_what_is_wrong() {
        let mut data = cache_bytes(&[("libz.so.1", "/lib/libz.so.1", 0)]);
        assert_eq!(
            LdSoCache::parse(&data[..40]).unwrap_err(),
            "header truncated at 0x0"
        );
        data[20] = 9;
        assert_eq!(
            LdSoCache::parse(&data).unwrap_err(),
            "9 entries do not fit in the file"
        );
        assert_eq!(
            LdSoCache::parse(b"not a cache at all, no magic at all here, none!!!!!").unwrap_err(),
            "no 'glibc-ld.so.cache1.1' magic at 0x0"
        );
    }

    #[test]
    fn this_machines_cache_finds_libc_where_ld_so_does() {
        let Ok(data) = std::fs::read("/etc/ld.so.cache") else {
            return;
        };
        let cache = LdSoCache::parse(&data).unwrap();
        let libc: Vec<&str> = cache.paths("libc.so.6").collect();
        assert!(
            libc.iter().any(|p| Path::new(p).exists()),
            "libc.so.6 in the cache: {libc:?}"
        );
    }
}
