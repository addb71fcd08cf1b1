//! The names `extract` writes under: safe file names, extensions read from an image's first
//! bytes, cuobjdump's names for CUDA entries, and the output files' stems, kept apart.

use std::ffi::{OsStr, OsString};
use std::os::unix::ffi::{OsStrExt, OsStringExt};
use std::path::{Path, PathBuf};

use crate::format::cuda_fatbin::EntryKind;
use crate::format::offload_binary::ImageKind;
use crate::host::scan::{DeviceImage, Origin};
use crate::ops::extract::chosen::Chosen;
use crate::ops::extract::options::ExtractConfig;
use crate::ops::support::image::{ImageRecord, Source};
use crate::ops::support::keys::KeyMap;

/// Makes text safe as part of a file name: letters, digits and `._+-` stay, anything else
/// (`/`, `:`, spaces, `..` cannot survive as a path) becomes `_`.
pub fn safe_name(text: &str) -> String {
    safe_part(text).trim_start_matches('.').to_string()
}

/// `text` with every character but letters, digits and `._+-` made `_`: safe inside a file
/// name, after a part that does not start with a dot.
fn safe_part(text: &str) -> String {
    text.chars()
        .map(|c| {
            if c.is_ascii_alphanumeric() || matches!(c, '.' | '_' | '+' | '-') {
                c
            } else {
                '_'
            }
        })
        .collect()
}

/// The file extension for an image's bytes.
pub(super) fn extension(image: &ImageRecord, data: &[u8]) -> &'static str {
    if data.starts_with(b"\x7fELF") {
        return if image.triple.as_str().starts_with("nvptx") {
            "cubin"
        } else {
            "co"
        };
    }
    if data.starts_with(b"BC\xc0\xde") || data.starts_with(&[0xde, 0xc0, 0x17, 0x0b]) {
        return "bc";
    }
    // SPIR-V's magic number, 0x07230203, little-endian.
    if data.starts_with(&[0x03, 0x02, 0x23, 0x07]) {
        return "spv";
    }
    // An image of a compressed offload binary read from its head: its bytes are not at hand.
    let nvptx = image.triple.as_str().starts_with("nvptx");
    match image.source {
        Source::OffloadImage(ImageKind::Object) if data.is_empty() && nvptx => "cubin",
        Source::OffloadImage(ImageKind::Object) if data.is_empty() => "co",
        Source::OffloadImage(ImageKind::Cubin) if data.is_empty() => "cubin",
        Source::OffloadImage(ImageKind::Bitcode) if data.is_empty() => "bc",
        Source::OffloadImage(ImageKind::Ptx) => "ptx",
        Source::OffloadImage(ImageKind::Fatbinary) => "fatbin",
        Source::OffloadImage(ImageKind::Spirv) => "spv",
        Source::Bare(kind) => kind.image_kind(),
        _ => "bin",
    }
}

/// The name of the file at `path`, for the names of what is extracted from it: its exact
/// bytes (a file name already, it holds no `/`), without leading dots, so that no output is
/// hidden.
pub(super) fn stem(path: &Path) -> OsString {
    let name = path.file_name().map_or(&b"input"[..], OsStr::as_bytes);
    let start = name.iter().position(|&b| b != b'.').unwrap_or(name.len());
    OsString::from_vec(name[start..].to_vec())
}

/// The names cuobjdump gives the entries of CUDA fat binaries in one file: the file's name
/// without its last extension (an archive member's, for a member), the entry's number among
/// the file's entries of its kind, and its SM (a family cubin's without the `f`, PTX's as
/// `sm_XY`): `libcurand.so.12.sm_80` (`.cubin` or `.ptx` follows).
pub(super) struct CudaNames {
    stem: OsString,
    cubins: usize,
    ptx: usize,
    /// Whether a CUDA device was asked for (`--device`): its fat binaries are kept whole
    /// until the scan ends.
    pub(super) for_devices: bool,
}

impl CudaNames {
    /// No entry named yet in the file at `path`.
    pub(super) fn new(path: &Path, for_devices: bool) -> CudaNames {
        CudaNames {
            stem: cuobjdump_stem(&stem(path)),
            cubins: 0,
            ptx: 0,
            for_devices,
        }
    }

    /// The name of `found`, counted, when it is a CUDA entry: the file's name kept byte for
    /// byte, a member's made safe.
    pub(super) fn next(&mut self, found: &DeviceImage<'_>) -> Option<OsString> {
        let Origin::CudaEntry(entry) = found.origin else {
            return None;
        };
        let n = match entry.kind {
            EntryKind::Ptx => &mut self.ptx,
            _ => &mut self.cubins,
        };
        *n += 1;
        let package = found
            .package
            .map(|p| String::from_utf8_lossy(p.file_name()));
        let mut name = match (found.members.last(), package) {
            (Some(member), _) => cuobjdump_stem(safe_name(member).as_ref()),
            // A package's member is named as its file would be.
            (None, Some(file)) => cuobjdump_stem(safe_name(&file).as_ref()),
            (None, None) => self.stem.clone(),
        };
        let sm = entry.sm();
        name.push(format!(".{n}.{}", sm.trim_end_matches('f')));
        Some(name)
    }
}

/// A file name without its last extension, as cuobjdump names what it extracts.
fn cuobjdump_stem(name: &OsStr) -> OsString {
    let bytes = name.as_bytes();
    match bytes.iter().rposition(|&b| b == b'.') {
        Some(dot) if dot > 0 => OsString::from_vec(bytes[..dot].to_vec()),
        _ => name.to_owned(),
    }
}

/// The file each chosen image is written to, before its extension: names say where it came
/// from and what it is; a number keeps them apart, whether built here or cuobjdump's (two
/// inputs may both be named `k.o`, with a `k.2.sm_90` each). cuobjdump's names are told apart
/// with their extension, as a cubin and a PTX entry share a stem (`k.1.sm_90a`). `taken`
/// holds the names given before (to the images of other groups of files), and gets these.
/// The error is the table's, when it cannot grow into a new temporary file.
pub(super) fn output_stems(
    config: &ExtractConfig,
    chosen: &[Chosen],
    taken: &mut Taken,
) -> std::io::Result<Vec<PathBuf>> {
    chosen
        .iter()
        .map(|c| {
            let name = match &c.name {
                Some(name) => unique(name, &format!(".{}", c.ext), taken)?,
                None => {
                    let mut name = stem(&config.files[c.input]);
                    if let Some(member) = &c.member {
                        name.push("-");
                        name.push(safe_part(member));
                    }
                    name.push("-");
                    name.push(safe_part(&c.label));
                    unique(&name, "", taken)?
                }
            };
            Ok(config.output.join(name))
        })
        .collect()
}

/// The names given so far, each with a number: for a name asked for that was given a number,
/// the number of the last one given for it (every number below it was taken then, and still
/// is, so the next search starts there: a tree of a thousand `k.o` looks for each name once,
/// not a thousand times); 1 for any other.
///
/// Each name is held as a 128-bit hash of its bytes, in a table that moves out of memory
/// into a mapped temporary file once it is large ([`KeyMap`]): a tree's outputs are hundreds
/// of thousands of names, and nothing of them stays on the heap (two names of one hash, one
/// chance in 2^128 for a pair, would only number the second).
#[derive(Default)]
pub(super) struct Taken(KeyMap);

impl Taken {
    /// None taken yet, with room for `names` names before the table grows (in a temporary
    /// file at once when they are many, see [`KeyMap::with_capacity`]).
    pub(super) fn with_capacity(names: usize) -> std::io::Result<Taken> {
        KeyMap::with_capacity(names).map(Taken)
    }
}

/// The key of `name` in [`Taken`].
fn key(name: &OsStr) -> u128 {
    xxhash_rust::xxh3::xxh3_128(name.as_bytes())
}

/// `stem`, or the first of `stem-2`, `stem-3`... that with `suffix` after it is not `taken`
/// yet; taken then. The error is the table's, when it cannot grow.
fn unique(stem: &OsStr, suffix: &str, taken: &mut Taken) -> std::io::Result<OsString> {
    let joined = |name: &OsStr| {
        let mut whole = name.to_owned();
        whole.push(suffix);
        key(&whole)
    };
    let numbered = |count: u64| {
        let mut candidate = stem.to_owned();
        if count > 1 {
            candidate.push(format!("-{count}"));
        }
        candidate
    };
    let asked = joined(stem);
    // A name asked for that was never given starts at itself, as does one given as it is.
    let mut count = taken.0.get(asked).unwrap_or(1);
    let mut candidate = numbered(count);
    while taken.0.contains(joined(&candidate)) {
        count += 1;
        candidate = numbered(count);
    }
    // The name asked for is taken when a number is given for it: it keeps the number.
    if count > 1 {
        taken.0.insert(asked, count)?;
    }
    taken.0.insert(joined(&candidate), 1)?;
    Ok(candidate)
}

/// `stem` with `.ext` after it (a stem may hold dots of its own).
pub(super) fn with_extension(stem: &Path, ext: &str) -> PathBuf {
    let mut name = stem.as_os_str().to_owned();
    name.push(".");
    name.push(ext);
    PathBuf::from(name)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_never_leave_the_folder() {
        assert_eq!(safe_name("../../etc/passwd"), "_.._etc_passwd");
        assert_eq!(safe_name("a/b:c d"), "a_b_c_d");
        assert_eq!(
            safe_name("hip-amdgcn-amd-amdhsa--gfx90a:xnack+"),
            "hip-amdgcn-amd-amdhsa--gfx90a_xnack+"
        );
    }

    #[test]
    fn a_name_taken_gets_the_first_number_free() {
        let mut taken = Taken::default();
        let names: Vec<OsString> = ["k.2.sm_90", "k.2.sm_90-2", "k.2.sm_90", "k.2.sm_90"]
            .into_iter()
            .map(|n| unique(n.as_ref(), ".cubin", &mut taken).unwrap())
            .collect();
        assert_eq!(
            names,
            ["k.2.sm_90", "k.2.sm_90-2", "k.2.sm_90-3", "k.2.sm_90-4"]
        );
        // Another extension is another name.
        assert_eq!(
            unique("k.2.sm_90".as_ref(), ".ptx", &mut taken).unwrap(),
            "k.2.sm_90"
        );
    }

    #[test]
    fn the_input_name_is_kept_byte_for_byte() {
        let path = Path::new(OsStr::from_bytes(b"lib/..a\xff\n-b.o"));
        assert_eq!(stem(path).as_bytes(), b"a\xff\n-b.o");
        assert_eq!(stem(Path::new("/")), "input");
        assert_eq!(cuobjdump_stem(&stem(path)).as_bytes(), b"a\xff\n-b");
    }
}
