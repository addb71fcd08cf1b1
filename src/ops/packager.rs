//! Packing images into offload binaries and unpacking them, as clang-offload-packager 19 and
//! llvm-offload-binary 22 do, byte for byte. The two differ in the offload kinds they name
//! (`hip` is 3 for LLVM 19, 4 for LLVM 22, which also names `sycl`) and in the keys an image
//! to pack needs (`file` and `triple` for LLVM 19, `file` alone for LLVM 22). LLVM 23 packs
//! every image into one version 2 binary, reads version 2 when unpacking, and names each file
//! it names itself on standard output.
//!
//! # Example
//!
//! Pack an image into an offload binary and unpack it again, as `clang-offload-packager` does.
//!
//! ```
//! use offload::format::offload_binary::OffloadBinary;
//! use offload::ops::packager::{self, ImageArgs, Unpacked};
//! use offload::target::processor::LlvmVersion;
//!
//! # fn main() -> Result<(), Box<dyn std::error::Error>> {
//! let dir = tempfile::tempdir()?;
//! let image = dir.path().join("gfx90a.co");
//! std::fs::write(&image, b"code for gfx90a")?;
//! let packed = dir.path().join("packed.out");
//! let args = ImageArgs::parse(&format!(
//!     "file={},triple=amdgcn-amd-amdhsa,arch=gfx90a,kind=hip",
//!     image.display()
//! ));
//! assert_eq!(args.get("arch"), Some("gfx90a"));
//! packager::pack(&packed, &[args], LlvmVersion::V19)?;
//!
//! let bytes = std::fs::read(&packed)?;
//! let binary = OffloadBinary::parse(&bytes)?;
//! assert_eq!(binary.entries()[0].arch(), b"gfx90a");
//! assert_eq!(binary.entries()[0].image, b"code for gfx90a");
//!
//! let out = dir.path().join("unpacked.co");
//! let select = ImageArgs::parse(&format!("file={},arch=gfx90a", out.display()));
//! let (mut stdout, mut log) = (Vec::new(), Vec::new());
//! packager::unpack(&packed, &[select], Unpacked::IntoFiles, LlvmVersion::V19, &mut stdout, &mut log, "")?;
//! assert_eq!(std::fs::read(&out)?, b"code for gfx90a");
//! # Ok(())
//! # }
//! ```

use std::ffi::OsStr;
use std::io::Write;
use std::path::{Path, PathBuf};

use crate::error::{Error, Result};
use crate::format::ccob::DEFAULT_MAX_DECOMPRESSED;
use crate::format::offload_binary::{self, ImageKind, OffloadKind, VERSION_1, VERSION_2};
use crate::host::archive::write_archive;
use crate::host::scan::{scan, Origin, Places};
use crate::io::{Closed, Input, Output};
use crate::llvm::adt::hash::{dense_map_order_with, StringHash};
use crate::target::processor::LlvmVersion;

/// The key-value items of one `--image=` argument: keys in the order they first appear, the
/// values of a repeated key joined with `,`.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct ImageArgs {
    items: Vec<(String, String)>,
}

impl ImageArgs {
    /// Parses `key=value,key=value,...`: items are split at `,`, each at its first `=`; an
    /// item without `=` is a key with an empty value.
    pub fn parse(text: &str) -> ImageArgs {
        let mut args = ImageArgs::default();
        for item in text.split(',') {
            let (key, value) = item.split_once('=').unwrap_or((item, ""));
            match args.items.iter_mut().find(|(k, _)| k == key) {
                Some((_, joined)) => {
                    joined.push(',');
                    joined.push_str(value);
                }
                None => args.items.push((key.to_string(), value.to_string())),
            }
        }
        args
    }

    /// The value of `key`.
    pub fn get(&self, key: &str) -> Option<&str> {
        self.items
            .iter()
            .find(|(k, _)| k == key)
            .map(|(_, v)| v.as_str())
    }

    /// The items, keys in the order they first appeared.
    pub fn items(&self) -> &[(String, String)] {
        &self.items
    }

    /// The files named by `file=`, split at `,`.
    fn files(&self) -> Vec<&str> {
        self.get("file")
            .map_or_else(Vec::new, |f| f.split(',').collect())
    }
}

/// The offload kind the packager of `version` stores for the name given as `kind=`.
fn offload_kind_named(version: LlvmVersion, name: &str) -> OffloadKind {
    match version {
        LlvmVersion::V19 => OffloadKind::from_name_llvm19(name.as_bytes()),
        LlvmVersion::V22 | LlvmVersion::V23 => OffloadKind::from_name_llvm22(name.as_bytes()),
    }
}

/// Checks that `image` has the keys the packager of `version` needs to pack it, failing with
/// that packager's message.
fn check_required_keys(version: LlvmVersion, image: &ImageArgs) -> Result<()> {
    let has = |key: &str| image.get(key).is_some();
    match version {
        LlvmVersion::V19 if !(has("file") && has("triple")) => Err(Error::msg(
            "'file' and 'triple' are required image arguments",
        )),
        LlvmVersion::V22 | LlvmVersion::V23 if !has("file") => {
            Err(Error::msg("'file' is a required image arguments"))
        }
        _ => Ok(()),
    }
}

/// The keys of `image` in the order of the packager's `DenseMap`, whose string hash changed in
/// LLVM 23.
fn key_order(image: &ImageArgs, version: LlvmVersion) -> Vec<&[u8]> {
    let keys: Vec<&[u8]> = image.items.iter().map(|(k, _)| k.as_bytes()).collect();
    let hash = match version {
        LlvmVersion::V19 | LlvmVersion::V22 => StringHash::City,
        LlvmVersion::V23 => StringHash::Xxh3,
    };
    dense_map_order_with(hash, &keys)
}

/// The string entries of `image` in the order the packager of `version` stores them: its keys
/// but `file` and `kind`, in the order of its hash map.
fn image_strings(image: &ImageArgs, version: LlvmVersion) -> Vec<(&[u8], &[u8])> {
    key_order(image, version)
        .into_iter()
        .filter(|k| *k != b"file" && *k != b"kind")
        .map(|k| {
            let value = image
                .get(std::str::from_utf8(k).expect("keys come from a str"))
                .expect("every ordered key is an item");
            (k, value.as_bytes())
        })
        .collect()
}

/// One file to pack, opened, with its entry's metadata.
struct Packed<'i> {
    path: PathBuf,
    input: Input,
    image_kind: ImageKind,
    offload_kind: OffloadKind,
    strings: Vec<(&'i [u8], &'i [u8])>,
}

impl Packed<'_> {
    fn layout_input(&self) -> offload_binary::EntryLayoutInput<'_> {
        offload_binary::EntryLayoutInput {
            image_kind: self.image_kind,
            offload_kind: self.offload_kind,
            flags: 0,
            strings: &self.strings,
            image_size: self.input.len() as u64,
        }
    }
}

/// Opens every file of every image, checking each image's keys as the packager of `version`
/// does.
fn open_all(images: &[ImageArgs], version: LlvmVersion) -> Result<Vec<Packed<'_>>> {
    let mut packed = Vec::new();
    for image in images {
        check_required_keys(version, image)?;
        let strings = image_strings(image, version);
        let offload_kind = offload_kind_named(version, image.get("kind").unwrap_or_default());
        for file in image.files() {
            let path = PathBuf::from(file);
            let input = Input::open(&path)?;
            let image_kind = ImageKind::of_packager_input_llvm19(file.as_bytes(), &input);
            tracing::info!(
                triple = image.get("triple"),
                arch = image.get("arch"),
                size = input.len(),
                "packing {file}"
            );
            packed.push(Packed {
                path,
                input,
                image_kind,
                offload_kind,
                strings: strings.clone(),
            });
        }
    }
    Ok(packed)
}

/// Packs every file of every image into `output` as the packager of `version` does, with the
/// image's other keys as string entries in the packager's order: LLVM 19 and 22 write one
/// version 1 offload binary per file, one after another; LLVM 23 one version 2 binary
/// holding them all.
#[tracing::instrument(skip_all, fields(output = %output.display(), images = images.len()))]
pub fn pack(output: &Path, images: &[ImageArgs], version: LlvmVersion) -> Result<()> {
    let packed = open_all(images, version)?;
    let mut out = Output::create(output)?;
    let mut write = |entries: &[Packed<'_>], format_version: u32| -> Result<()> {
        let inputs: Vec<_> = entries.iter().map(Packed::layout_input).collect();
        let layout = offload_binary::layout(format_version, &inputs).map_err(|e| {
            let path = entries
                .first()
                .map_or_else(|| output.into(), |p| p.path.clone());
            Error::format(&path, e)
        })?;
        out.write_bytes(&layout.head)?;
        for entry in entries {
            out.write_part(&entry.input, &entry.input)?;
        }
        out.write_bytes(&vec![0; layout.tail_padding as usize])?;
        Ok(())
    };
    if version >= LlvmVersion::V23 {
        write(&packed, VERSION_2)?;
    } else {
        for entry in packed.chunks(1) {
            write(entry, VERSION_1)?;
        }
    }
    Ok(out.commit()?)
}

/// One image found in the input, with what the packager matches and names it by.
struct Candidate {
    /// The name of the buffer it came from: the input as named, or the archive member.
    source: String,
    image_kind: ImageKind,
    offload_kind: OffloadKind,
    strings: Vec<(Vec<u8>, Vec<u8>)>,
    /// Where the image lies in the input file, or its bytes when it is not stored as such.
    bytes: Place,
}

enum Place {
    InFile { offset: usize, len: usize },
    Owned(Vec<u8>),
}

impl Candidate {
    fn get(&self, key: &[u8]) -> &[u8] {
        self.strings
            .iter()
            .rev()
            .find(|(k, _)| k == key)
            .map_or(&[][..], |(_, v)| v)
    }

    fn matches(&self, image: &ImageArgs, version: LlvmVersion) -> bool {
        image.items.iter().all(|(key, value)| match key.as_str() {
            "file" => true,
            "kind" => offload_kind_named(version, value) == self.offload_kind,
            _ => self.get(key.as_bytes()) == value.as_bytes(),
        })
    }

    fn bytes<'a>(&'a self, file: &'a [u8]) -> &'a [u8] {
        match &self.bytes {
            Place::InFile { offset, len } => &file[*offset..*offset + *len],
            Place::Owned(bytes) => bytes,
        }
    }
}

/// Makes a name from image metadata harmless as a file name: no `/`, no NUL.
fn file_name_part(bytes: &[u8]) -> String {
    String::from_utf8_lossy(bytes).replace(['/', '\0'], "_")
}

/// Where unpacked images go.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Unpacked {
    /// Each into its own file.
    IntoFiles,
    /// All those an `--image` selects into the static archive its `file=` names (`--archive`).
    IntoArchive,
}

/// Unpacks the images of `input` (an offload binary, an object or a program holding them, an
/// archive of such) that each of `images` selects, as the packager of `version` matches them:
/// written to the image's `file=`, or, without one, to `<input stem>-<triple>-<arch>.<n>.<kind>`
/// in the current folder; with `archive`, into the static archive named by `file=`. Warnings
/// go to `log`, each prefixed with `prefix`; LLVM 23 names each file it names itself on
/// `out` (`Extracted: <name>`).
#[tracing::instrument(skip_all, fields(file = %input_path.display(), images = images.len()))]
pub fn unpack(
    input_path: &Path,
    images: &[ImageArgs],
    into: Unpacked,
    version: LlvmVersion,
    out: &mut dyn Write,
    log: &mut dyn Write,
    prefix: &str,
) -> Result<()> {
    let input = Input::open(input_path)?;
    let candidates = candidates_in(input_path, &input, version, log, prefix)?;
    tracing::debug!(offload_binaries = candidates.len(), "scanned");
    let stem = input_path.file_stem().unwrap_or_default();
    let unpacking = Unpacking {
        input: &input,
        stem,
        prefix,
        announces: version >= LlvmVersion::V23,
    };
    // Each output is closed once written, so that thousands of images never hold thousands of
    // open files; they are all put in place at the end.
    let mut outputs: Vec<Closed> = Vec::new();
    for image in images {
        let matches: Vec<&Candidate> = candidates
            .iter()
            .filter(|c| c.matches(image, version))
            .collect();
        tracing::info!(
            triple = image.get("triple"),
            arch = image.get("arch"),
            matches = matches.len(),
            file = image.get("file"),
            "unpacking"
        );
        match into {
            Unpacked::IntoArchive => outputs.push(unpacking.archive(image, &matches)?),
            Unpacked::IntoFiles => unpacking.files(image, &matches, out, log, &mut outputs)?,
        }
    }
    Ok(crate::io::place_all(outputs)?)
}

/// The offload binary images of the input, where LLVM looks for them. It fails on the first
/// offload binary that does not parse, and LLVM 19 and 22 take binaries of versions 2 and 3
/// for unparsable (LLVM 23, version 3); so do we, saying which others are damaged too, damage
/// in file order first, then the binaries of other versions: the last is the error returned.
fn candidates_in(
    input_path: &Path,
    file: &[u8],
    version: LlvmVersion,
    log: &mut dyn Write,
    prefix: &str,
) -> Result<Vec<Candidate>> {
    // The archive writer takes text for the member an input's image becomes.
    let name = input_path.to_string_lossy().into_owned();
    let shown = crate::io::shown(input_path);
    let mut candidates = Vec::new();
    let mut other_versions = Vec::new();
    let mut problems = scan(
        input_path,
        file,
        Places::OffloadBinaries,
        DEFAULT_MAX_DECOMPRESSED,
        &mut |found| {
            let Origin::OffloadImage(entry) = found.origin else {
                return;
            };
            if !reads_version(version, entry.binary_version) {
                if entry.index == 0 {
                    let e = unread_version(&shown, found.members, found.offset, entry, version);
                    other_versions.push(e);
                }
                return;
            }
            let bytes = match found.offset {
                Some(at) => Place::InFile {
                    offset: at as usize,
                    len: entry.image.len(),
                },
                None => Place::Owned(entry.image.to_vec()),
            };
            candidates.push(Candidate {
                // LLVM names the buffer an image came from: the input, or the member.
                source: found
                    .members
                    .last()
                    .cloned()
                    .unwrap_or_else(|| name.clone()),
                image_kind: entry.image_kind,
                offload_kind: entry.offload_kind,
                strings: entry
                    .strings
                    .iter()
                    .map(|(k, v)| (k.to_vec(), v.to_vec()))
                    .collect(),
                bytes,
            });
        },
    )?;
    problems.extend(other_versions);
    if let Some(last) = problems.pop() {
        for problem in &problems {
            let _ = writeln!(log, "{prefix}error: {problem}");
        }
        return Err(last);
    }
    Ok(candidates)
}

/// Whether the packager of `version` reads offload binaries of `binary_version`.
fn reads_version(version: LlvmVersion, binary_version: u32) -> bool {
    match version {
        LlvmVersion::V19 | LlvmVersion::V22 => binary_version == VERSION_1,
        LlvmVersion::V23 => binary_version == VERSION_1 || binary_version == VERSION_2,
    }
}

/// The error for an offload binary of a version the packager of `version` cannot read: where
/// its version field is (when the image lies in the file as such).
fn unread_version(
    file: &str,
    members: &[String],
    image_offset: Option<u64>,
    entry: &offload_binary::OffloadEntry<'_>,
    version: LlvmVersion,
) -> Error {
    let mut place: String = members.iter().map(|m| format!("member '{m}': ")).collect();
    let binary_start = image_offset.and_then(|at| at.checked_sub(entry.image_offset));
    if let Some(start) = binary_start {
        place.push_str(&format!("offset {:#x}: ", start + 4));
    }
    let reads = match version {
        LlvmVersion::V19 | LlvmVersion::V22 => {
            "clang-offload-packager 19 and llvm-offload-binary 22 read version 1 only"
        }
        LlvmVersion::V23 => "llvm-offload-binary 23 reads versions 1 and 2 only",
    };
    Error::msg(format!(
        "'{file}': {place}offload binary version {}: {reads}",
        entry.binary_version
    ))
}

/// What unpacking one `--image` needs to know.
struct Unpacking<'a> {
    input: &'a Input,
    /// The input's name without its extension, byte for byte.
    stem: &'a OsStr,
    prefix: &'a str,
    /// Whether each file named from the metadata is announced (LLVM 23).
    announces: bool,
}

impl Unpacking<'_> {
    /// `--archive`: the matches, as the members of the static archive `file=` names.
    fn archive(&self, image: &ImageArgs, matches: &[&Candidate]) -> Result<Closed> {
        let Some(target) = image.get("file") else {
            return Err(Error::msg("Image must have a 'file' argument."));
        };
        let file: &[u8] = self.input;
        let members: Vec<(&str, &[u8])> = matches
            .iter()
            .map(|c| (c.source.as_str(), c.bytes(file)))
            .collect();
        let path = PathBuf::from(target);
        let bytes = write_archive(&path, &members)?;
        let mut out = Output::create(&path)?;
        out.write_bytes(&bytes)?;
        Ok(out.close()?)
    }

    /// Without `--archive`: the last match to `file=`, or each match to a name of its own.
    fn files(
        &self,
        image: &ImageArgs,
        matches: &[&Candidate],
        out: &mut dyn Write,
        log: &mut dyn Write,
        outputs: &mut Vec<Closed>,
    ) -> Result<()> {
        let file: &[u8] = self.input;
        if let Some(target) = image.get("file") {
            if matches.len() > 1 {
                let _ = writeln!(
                    log,
                    "{}warning: Multiple inputs match to a single file, '{target}'",
                    self.prefix
                );
            }
            if let Some(last) = matches.last() {
                let mut output = Output::create(Path::new(target))?;
                output.write_part(self.input, last.bytes(file))?;
                outputs.push(output.close()?);
            }
            return Ok(());
        }
        for (index, c) in matches.iter().enumerate() {
            let mut name = self.stem.to_owned();
            name.push(format!(
                "-{}-{}.{index}.{}",
                file_name_part(c.get(b"triple")),
                file_name_part(c.get(b"arch")),
                c.image_kind.name_llvm19()
            ));
            let shown = crate::io::shown(&name);
            tracing::info!(from = %c.source, "writing {shown}");
            let mut output = Output::create(Path::new(&name))?;
            output.write_part(self.input, c.bytes(file))?;
            outputs.push(output.close()?);
            if self.announces {
                let _ = writeln!(out, "Extracted: {shown}");
            }
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn image_arguments_join_repeated_keys_and_keep_bare_items() {
        let a = ImageArgs::parse("file=a.o,triple=t,arch=x,file=b.o,c.o,arch=");
        assert_eq!(
            a.items(),
            [
                ("file".to_string(), "a.o,b.o".to_string()),
                ("triple".to_string(), "t".to_string()),
                ("arch".to_string(), "x,".to_string()),
                ("c.o".to_string(), String::new()),
            ]
        );
        assert_eq!(a.files(), ["a.o", "b.o"]);
        assert_eq!(ImageArgs::parse("k=v=w").get("k"), Some("v=w"));
    }

    #[test]
    fn names_from_metadata_stay_in_the_folder() {
        assert_eq!(file_name_part(b"../../etc/x"), ".._.._etc_x");
    }
}
