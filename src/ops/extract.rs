//! Extracting the device images a GPU can load from any file: objects, programs, shared
//! libraries, archives, bundles, offload binaries.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use rayon::prelude::*;

use crate::container::archive::write_archive;
use crate::container::scan::{scan, DeviceImage, Places, What};
use crate::error::{Error, Result};
use crate::format::ccob::DEFAULT_MAX_DECOMPRESSED;
use crate::format::target_id::{FeatureSetting, TargetId};
use crate::io::{Closed, Input, Output};
use crate::ops::archive::device_member_name;
use crate::ops::ls::{self, Image};

/// What to extract, and where.
#[derive(Debug, Clone, Default)]
pub struct ExtractConfig {
    /// The files to look into.
    pub files: Vec<PathBuf>,
    /// The target IDs asked for (`gfx90a`, `gfx90a:xnack+`, `sm_80`).
    pub arches: Vec<String>,
    /// Match target IDs exactly instead of by what a device can load.
    pub exact: bool,
    /// Only images for this triple.
    pub triple: Option<String>,
    /// Only images of this offload kind (`hip`, `openmp`, `cuda`, ...).
    pub kind: Option<String>,
    /// The folder to write to, or, when it names a `.a` file and the inputs are archives, the
    /// device archive to write.
    pub output: PathBuf,
}

/// Whether a device with target ID `query` can load an image built for `image`: the same
/// processor, and every feature set in both set alike (a feature either leaves out matches
/// any setting).
pub fn loadable(query: &str, image: &str) -> bool {
    let (Some(q), Some(i)) = (TargetId::parse_syntax(query), TargetId::parse_syntax(image)) else {
        return false;
    };
    if q.processor.is_empty() || q.processor != i.processor {
        return false;
    }
    q.features
        .iter()
        .all(|(name, setting): &(&str, FeatureSetting)| {
            i.feature(name).is_none_or(|s| s == *setting)
        })
}

/// Whether the target IDs are the same once their features are sorted.
fn same_target(query: &str, image: &str) -> bool {
    match (TargetId::parse_syntax(query), TargetId::parse_syntax(image)) {
        (Some(q), Some(i)) => q.canonical() == i.canonical(),
        _ => false,
    }
}

/// Whether `image` is one `config` asks for.
pub fn wanted(config: &ExtractConfig, image: &Image) -> bool {
    if image.offload_kind == "host" || image.arch.is_empty() {
        return false;
    }
    if let Some(triple) = &config.triple {
        if image.triple.trim_end_matches('-') != triple.trim_end_matches('-') {
            return false;
        }
    }
    if let Some(kind) = &config.kind {
        if &image.offload_kind != kind {
            return false;
        }
    }
    config.arches.iter().any(|q| {
        if config.exact {
            same_target(q, &image.arch)
        } else {
            loadable(q, &image.arch)
        }
    })
}

/// Makes text safe as part of a file name: letters, digits and `._+-` stay, anything else
/// (`/`, `:`, spaces, `..` cannot survive as a path) becomes `_`.
pub fn safe_name(text: &str) -> String {
    let cleaned: String = text
        .chars()
        .map(|c| {
            if c.is_ascii_alphanumeric() || matches!(c, '.' | '_' | '+' | '-') {
                c
            } else {
                '_'
            }
        })
        .collect();
    cleaned.trim_start_matches('.').to_string()
}

/// The file extension for an image's bytes.
fn extension(image: &Image, data: &[u8]) -> &'static str {
    if data.starts_with(b"\x7fELF") {
        return if image.triple.starts_with("nvptx") {
            "cubin"
        } else {
            "co"
        };
    }
    if data.starts_with(b"BC\xc0\xde") || data.starts_with(&[0xde, 0xc0, 0x17, 0x0b]) {
        return "bc";
    }
    match image.image_kind.as_deref() {
        Some("s") => "ptx",
        Some("fatbin") => "fatbin",
        Some("spv") => "spv",
        _ => "bin",
    }
}

/// One image to write.
struct Chosen {
    image: Image,
    /// Index of the input file.
    input: usize,
    /// The bytes, when they are not a slice of the input (inflated).
    owned: Option<Vec<u8>>,
    /// Where they are in the input otherwise.
    range: (usize, usize),
    /// The entry ID or metadata the name is built from.
    label: String,
    /// The innermost archive member, for device archive names.
    member: Option<String>,
    ext: &'static str,
}

impl Chosen {
    fn bytes<'a>(&'a self, inputs: &'a [Input]) -> &'a [u8] {
        match &self.owned {
            Some(bytes) => bytes,
            None => &inputs[self.input][self.range.0..self.range.0 + self.range.1],
        }
    }
}

/// Hears how the writing goes, for a progress display.
pub trait Progress: Sync {
    /// The writing starts: `bytes` in all.
    fn start(&self, bytes: u64) {
        let _ = bytes;
    }
    /// `bytes` more were written.
    fn advance(&self, bytes: u64) {
        let _ = bytes;
    }
    /// The writing is over.
    fn finish(&self) {}
}

/// No progress display.
impl Progress for () {}

/// One written file and the image it holds.
#[derive(Debug, Clone)]
pub struct Extracted {
    /// The file written.
    pub path: PathBuf,
    /// The image.
    pub image: Image,
}

fn stem(path: &Path) -> String {
    path.file_name()
        .map(|n| n.to_string_lossy().into_owned())
        .unwrap_or_else(|| "input".into())
}

/// What an extraction did.
#[derive(Debug)]
pub struct Extraction {
    /// The problems found in the inputs (damaged sections), in the order found, whether or not
    /// the extraction succeeded: they do not stop the extraction of the rest, and they are
    /// what `ls` reports for the same files.
    pub problems: Vec<Error>,
    /// The files written, or why nothing was.
    pub result: Result<Vec<Extracted>>,
}

/// Extracts every image `config` asks for. Problems in the inputs are returned beside the
/// result, whatever it is. Nothing is written unless everything can be; when no image matches,
/// that is an error.
#[tracing::instrument(skip_all, fields(files = ?config.files, targets = ?config.arches))]
pub fn extract(config: &ExtractConfig, progress: &dyn Progress) -> Extraction {
    let mut problems = Vec::new();
    let result = extract_noting(config, progress, &mut problems);
    Extraction { problems, result }
}

/// [`extract`], adding the problems found in the inputs to `problems`.
fn extract_noting(
    config: &ExtractConfig,
    progress: &dyn Progress,
    problems: &mut Vec<Error>,
) -> Result<Vec<Extracted>> {
    let inputs: Vec<Input> = config
        .files
        .iter()
        .map(|p| Input::open(p))
        .collect::<Result<_>>()?;
    let mut chosen: Vec<Chosen> = Vec::new();
    for (index, (path, input)) in config.files.iter().zip(&inputs).enumerate() {
        let name = path.to_string_lossy().into_owned();
        let _file = tracing::info_span!("file", file = %name).entered();
        tracing::debug!(size = input.len(), "scanning");
        let base = input.as_ptr() as usize;
        let found = scan(
            path,
            input,
            Places::Everywhere,
            DEFAULT_MAX_DECOMPRESSED,
            &mut |found: &DeviceImage<'_>| {
                let image = ls::record(&name, found);
                if !wanted(config, &image) {
                    tracing::debug!(offset = image.offset, "passed over {}", image.arch);
                    return;
                }
                let label = match found.what {
                    What::BundleEntry(id) => id.to_string(),
                    _ => format!("{}-{}-{}", image.offload_kind, image.triple, image.arch),
                };
                tracing::info!(
                    member = image.member,
                    section = image.section,
                    offset = image.offset,
                    size = image.size,
                    "chose {label}"
                );
                let ext = extension(&image, found.data);
                let start = found.data.as_ptr() as usize;
                let inside = found.offset.is_some()
                    && start >= base
                    && start + found.data.len() <= base + input.len();
                chosen.push(Chosen {
                    member: found.members.last().cloned(),
                    owned: (!inside).then(|| found.data.to_vec()),
                    range: if inside {
                        (start - base, found.data.len())
                    } else {
                        (0, 0)
                    },
                    input: index,
                    label,
                    ext,
                    image,
                });
            },
        )?;
        problems.extend(found);
    }
    if chosen.is_empty() {
        let files: Vec<String> = config
            .files
            .iter()
            .map(|p| format!("'{}'", p.display()))
            .collect();
        return Err(Error::msg(format!(
            "no device image for {} in {}",
            config.arches.join(", "),
            files.join(", ")
        )));
    }

    let archive_out = config.output.extension().is_some_and(|e| e == "a");
    if archive_out {
        let members: Vec<(String, &[u8])> = chosen
            .iter()
            .map(|c| {
                let member = c
                    .member
                    .clone()
                    .unwrap_or_else(|| stem(&config.files[c.input]));
                let name = device_member_name(&member, &c.label, &c.image.arch);
                (name, c.bytes(&inputs))
            })
            .collect();
        for (name, _) in &members {
            tracing::info!(archive = %config.output.display(), "writing member {name}");
        }
        let refs: Vec<(&str, &[u8])> = members.iter().map(|(n, d)| (n.as_str(), *d)).collect();
        let bytes = write_archive(&config.output, &refs)?;
        let mut out = Output::create(&config.output)?;
        out.write_bytes(&bytes)?;
        out.commit()?;
        let written = chosen
            .into_iter()
            .map(|c| Extracted {
                path: config.output.clone(),
                image: c.image,
            })
            .collect();
        return Ok(written);
    }

    std::fs::create_dir_all(&config.output).map_err(|e| Error::io(&config.output, e))?;
    // Names say where each image came from and what it is; a number keeps them apart.
    let mut seen: BTreeMap<String, usize> = BTreeMap::new();
    let names: Vec<PathBuf> = chosen
        .iter()
        .map(|c| {
            let mut name = stem(&config.files[c.input]);
            if let Some(member) = &c.member {
                name.push('-');
                name.push_str(member);
            }
            name.push('-');
            name.push_str(&c.label);
            let mut name = safe_name(&name);
            let count = seen.entry(name.clone()).or_insert(0);
            *count += 1;
            if *count > 1 {
                name.push_str(&format!("-{count}"));
            }
            config.output.join(format!("{name}.{}", c.ext))
        })
        .collect();
    for (c, path) in chosen.iter().zip(&names) {
        tracing::info!(from = %c.image.file, "writing {} to {}", c.label, path.display());
    }
    progress.start(chosen.iter().map(|c| c.image.size).sum());
    // Each output is closed once written: as many files are open as threads write.
    let outputs: Vec<Closed> = chosen
        .par_iter()
        .zip(&names)
        .map(|(c, path)| {
            let mut out = Output::create(path)?;
            let bytes = c.bytes(&inputs);
            out.write_part(&inputs[c.input], bytes)?;
            progress.advance(bytes.len() as u64);
            out.close()
        })
        .collect::<Result<_>>()?;
    crate::io::place_all(outputs)?;
    progress.finish();
    let written = chosen
        .into_iter()
        .zip(names)
        .map(|(c, path)| Extracted {
            path,
            image: c.image,
        })
        .collect();
    Ok(written)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_device_loads_what_agrees_with_it() {
        assert!(loadable("gfx90a", "gfx90a"));
        assert!(loadable("gfx90a", "gfx90a:xnack+"));
        assert!(loadable("gfx90a", "gfx90a:xnack-"));
        assert!(loadable("gfx90a:xnack+", "gfx90a"));
        assert!(loadable("gfx90a:xnack+", "gfx90a:xnack+"));
        assert!(!loadable("gfx90a:xnack+", "gfx90a:xnack-"));
        assert!(loadable("gfx90a:xnack+:sramecc-", "gfx90a:sramecc-"));
        assert!(!loadable("gfx90a", "gfx906"));
        assert!(!loadable("gfx90", "gfx90a"));
        assert!(!loadable("", "gfx90a"));
        assert!(same_target(
            "gfx908:xnack-:sramecc+",
            "gfx908:sramecc+:xnack-"
        ));
        assert!(!same_target("gfx908", "gfx908:xnack-"));
    }

    #[test]
    fn names_never_leave_the_folder() {
        assert_eq!(safe_name("../../etc/passwd"), "_.._etc_passwd");
        assert_eq!(safe_name("a/b:c d"), "a_b_c_d");
        assert_eq!(
            safe_name("hip-amdgcn-amd-amdhsa--gfx90a:xnack+"),
            "hip-amdgcn-amd-amdhsa--gfx90a_xnack+"
        );
    }
}
