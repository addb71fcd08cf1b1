//! Where the bytes of device code go: per target (processor, generic target, SPIR-V, CUDA
//! SM), per file and in total, as stored and inflated, read from headers only (a compressed
//! bundle is inflated up to its bundle's header, as `ls` does); and what keeping only some
//! devices' code would take away, by the rule `strip --keep` follows.
//!
//! # Example
//!
//! Where the bytes of a bundle file go, per target.
//!
//! ```
//! use offload::format::{bundle, ccob::DEFAULT_MAX_DECOMPRESSED};
//! use offload::ops::du;
//!
//! # fn main() -> Result<(), Box<dyn std::error::Error>> {
//! let dir = tempfile::tempdir()?;
//! let file = dir.path().join("kernels.hipfb");
//! let entries: [(&str, &[u8]); 3] = [
//!     ("host-x86_64-unknown-linux-gnu-", b""),
//!     ("hipv4-amdgcn-amd-amdhsa--gfx90a", &[1; 3000]),
//!     ("hipv4-amdgcn-amd-amdhsa--gfx1100", &[2; 1000]),
//! ];
//! std::fs::write(&file, bundle::to_vec(&entries, 8))?;
//!
//! let usage = du::file_usage(&file, DEFAULT_MAX_DECOMPRESSED, None)?;
//! let targets: Vec<(&str, u64)> = usage.targets.iter().map(|u| (u.target.as_str(), u.stored)).collect();
//! assert_eq!(&targets[..2], [("gfx90a", 3000), ("gfx1100", 1000)]);
//! let total = du::total(&[usage]);
//! assert_eq!(total.iter().map(|u| u.inflated).sum::<u64>(), 4000);
//! # Ok(())
//! # }
//! ```

pub mod html;
pub mod kernels;
mod places;
pub mod report;
pub mod treemap;

use std::collections::{BTreeMap, HashMap};
use std::path::Path;

use serde::Serialize;

use crate::error::Result;
use crate::format::image_target::{ImageTarget, Producer};
use crate::host::package::PackageMember;
use crate::host::scan::{scan_with_archives, DeviceImage, Reading};
use crate::io::Input;
use crate::ops::prune;
use crate::ops::rewrite::RewriteConfig;
use crate::ops::support::image::ImageRecord;

/// The device code of one target in one file, or in all of them.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize)]
pub struct Usage {
    /// The target: a target ID (`gfx90a:xnack+`, `gfx11-generic`, `amdgcnspirv`), a CUDA
    /// SM (`sm_80`, `compute_80` for PTX), else the triple.
    pub target: String,
    /// How many images.
    pub images: u64,
    /// Bytes they take in the file. An image inside a compressed bundle counts for its share
    /// of the compressed bundle, in proportion to its inflated size.
    pub stored: u64,
    /// Bytes they take inflated.
    pub inflated: u64,
    /// Stored bytes `strip --keep` would remove (with `--keep` only).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub removed: Option<u64>,
}

/// The device code of one file, by target, most stored bytes first.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct FileUsage {
    /// The file, as found, as text (a name that is not UTF-8 with replacement characters:
    /// [`FileUsage::path`] is exact).
    pub file: String,
    /// The file's name in base64, present only when it is not UTF-8: its exact bytes.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub file_bytes: Option<String>,
    /// The file, as found: its exact name.
    #[serde(skip)]
    pub path: std::path::PathBuf,
    /// Its targets (for a package, the totals of its members).
    pub targets: Vec<Usage>,
    /// For a package (a wheel, a Debian or conda package, a tarball), each of its members
    /// that holds device code, named `PACKAGE!member`, in package order. Left out of the JSON
    /// for other files.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub members: Vec<FileUsage>,
    /// The targets of its images when it is bare device images only (see
    /// `prune::is_bare`): a strip keeps it whole or prunes it whole.
    #[serde(skip)]
    pub bare: Option<Vec<ImageTarget>>,
    /// The file read (its device and inode), when it is a regular file: what pruning it
    /// removes.
    #[serde(skip)]
    pub read: Option<crate::io::beneath::Identity>,
    /// How many of its device images are embedded as data (see
    /// `crate::host::scan::DeviceImage::embedded`), when it is neither a package nor a
    /// `.kpack` archive: what a rewrite of the file read counts among its images without
    /// scanning it again.
    #[serde(skip)]
    pub embedded: Option<usize>,
    /// Its bytes by package member, section and target, which sum to [`FileUsage::targets`]:
    /// the leaves of `du --html`'s treemap.
    #[serde(skip)]
    pub parts: Vec<Part>,
}

/// The device code of one target in one section of one file (or of one package member):
/// where the treemap of `du --html` puts it.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Part {
    /// The package member that holds it (`PACKAGE!member`), when the file is a package.
    pub member: Option<std::path::PathBuf>,
    /// The section that holds it, inside the archive members that hold it (`member!section`);
    /// empty for a file that is the image (a bare code object, a `.kpack` archive).
    pub section: String,
    /// The target, as [`Usage::target`].
    pub target: String,
    /// How many images.
    pub images: u64,
    /// Bytes they take in the file, as [`Usage::stored`].
    pub stored: u64,
    /// Stored bytes `strip --keep` would remove (0 without `--keep`).
    pub removed: u64,
}

/// What a scan of one file gives `du`, in the order found.
#[derive(Default)]
struct Seen {
    counted: Vec<Counted>,
    /// Each image's translation unit and target, which say what a strip removes.
    units: Vec<(usize, ImageTarget)>,
    /// Whether each image is embedded as data: a strip keeps it whole.
    embedded: Vec<bool>,
    /// Whether every image is a bare device image.
    all_bare: bool,
    /// The package members that hold images, when the file is a package: their numbers and
    /// names.
    members: Vec<(usize, std::path::PathBuf)>,
    /// How many units the code objects of `.kpack` archives among the members took.
    archive_units: usize,
}

impl Seen {
    /// Counts `image`.
    fn image(&mut self, image: &DeviceImage<'_>) {
        self.all_bare &= prune::is_bare(image);
        if image.target.producer == Producer::Host {
            return;
        }
        let target = match image.target.target_id.as_str() {
            "" => image.target.triple.clone(),
            id => id.to_string(),
        };
        let number = image.package.map_or(0, |p| p.number);
        let member = image.package.map(|p| self.member(p));
        let (stored, bundle) = match image.stream {
            Some(stream) => (
                0,
                Some((
                    (number, stream.container.as_ptr() as usize),
                    stream.container.len() as u64,
                )),
            ),
            None if image.compressed && !image.data.is_empty() => (image.data.len() as u64, None),
            None => (image.size, None),
        };
        self.counted.push(Counted {
            target,
            inflated: image.size,
            stored,
            bundle,
            member,
            section: place_of(image),
        });
        self.units.push((image.unit, image.target.clone()));
        self.embedded.push(image.embedded);
    }

    /// Counts the code objects of the `.kpack` archive `bytes`, the package's member
    /// `member`, each a unit of its own (the loader picks one per processor by the archive's
    /// table).
    fn archive(&mut self, member: &PackageMember, bytes: &[u8]) -> Result<()> {
        let listed = crate::ops::ls::list_archive(&member.name, bytes)?;
        let at = self.member(member);
        for image in listed {
            let target = image.code_object_target();
            self.archive_units += 1;
            self.counted.push(Counted {
                target: image.target_name().to_string(),
                inflated: image.size,
                stored: image.source.kpack().map_or(image.size, |k| k.stored_size),
                bundle: None,
                member: Some(at),
                section: String::new(),
            });
            self.units.push((usize::MAX - self.archive_units, target));
            self.embedded.push(false);
        }
        Ok(())
    }

    /// The place of the package member `member` among [`Seen::members`], added when new.
    fn member(&mut self, member: &PackageMember) -> usize {
        if self.members.last().is_none_or(|(n, _)| *n != member.number) {
            self.members.push((member.number, member.name.clone()));
        }
        self.members.len() - 1
    }
}

/// One image as `du` counts it.
#[derive(Clone)]
struct Counted {
    target: String,
    inflated: u64,
    stored: u64,
    /// The compressed bundle it lies in (the package member that holds it, by number, and its
    /// address there), for sharing out its bytes.
    bundle: Option<((usize, usize), u64)>,
    /// The package member that holds it, by its place in the list of members.
    member: Option<usize>,
    /// The section that holds it, as [`Part::section`].
    section: String,
}

/// The section that holds `image`, inside the archive members that hold it: `member!section`.
fn place_of(image: &DeviceImage<'_>) -> String {
    let mut parts: Vec<&str> = image.members.iter().map(String::as_str).collect();
    parts.extend(image.section);
    parts.join("!")
}

/// The parts of a file from its images (`counted`, each marked in `removed` when a strip
/// removes it), by package member (named in `members`), section and target.
fn parts_of(
    counted: &[Counted],
    removed: Option<&[bool]>,
    members: &[(usize, std::path::PathBuf)],
) -> Vec<Part> {
    let mut by_place: BTreeMap<(Option<usize>, &str, &str), Part> = BTreeMap::new();
    for (i, image) in counted.iter().enumerate() {
        let key = (image.member, image.section.as_str(), image.target.as_str());
        let part = by_place.entry(key).or_insert_with(|| Part {
            member: (image.member)
                .and_then(|m| members.get(m))
                .map(|(_, name)| name.clone()),
            section: image.section.clone(),
            target: image.target.clone(),
            ..Part::default()
        });
        part.images += 1;
        part.stored += image.stored;
        if removed.is_some_and(|r| r.get(i).copied().unwrap_or(false)) {
            part.removed += image.stored;
        }
    }
    by_place.into_values().collect()
}

/// The parts of a file that is its images (a `.kpack` archive, a file `ls` listed): one per
/// target, in no section.
fn whole_parts(targets: &[Usage]) -> Vec<Part> {
    targets
        .iter()
        .map(|usage| Part {
            member: None,
            section: String::new(),
            target: usage.target.clone(),
            images: usage.images,
            stored: usage.stored,
            removed: usage.removed.unwrap_or(0),
        })
        .collect()
}

/// The usage of the file at `path`; `keep` (a strip configuration) fills in
/// [`Usage::removed`].
pub fn file_usage(
    path: &Path,
    max_decompressed: u64,
    keep: Option<&RewriteConfig>,
) -> Result<FileUsage> {
    input_usage(path, &Input::open(path)?, max_decompressed, keep)
}

/// [`file_usage`] of the file at `path` opened as `input`: for a caller that reads it again
/// next (a strip), through the same map and the pages this reading brought in.
pub fn input_usage(
    path: &Path,
    input: &Input,
    max_decompressed: u64,
    keep: Option<&RewriteConfig>,
) -> Result<FileUsage> {
    if input.starts_with(&crate::format::kpack::MAGIC) {
        return archive_usage(path, input, max_decompressed, keep);
    }
    let seen = std::cell::RefCell::new(Seen {
        all_bare: true,
        ..Seen::default()
    });
    let problems = scan_with_archives(
        path,
        input,
        max_decompressed,
        Reading::Headers,
        &mut |image| seen.borrow_mut().image(image),
        &|member, bytes| seen.borrow_mut().archive(member, bytes),
    )?;
    let Seen {
        mut counted,
        units,
        embedded,
        all_bare,
        members,
        ..
    } = seen.into_inner();
    if let Some(problem) = problems.into_iter().next() {
        return Err(problem);
    }
    input.intact()?;
    let embedded_count = embedded.iter().filter(|&&embedded| embedded).count();
    share_compressed(&mut counted);
    // A package is never a file of bare images: its members are judged one by one.
    let bare = (all_bare && !units.is_empty() && members.is_empty()).then(|| {
        // The file is the images: pruned, all its bytes go.
        if let [only] = counted.as_mut_slice() {
            only.stored = input.len() as u64;
        }
        units.iter().map(|(_, target)| target.clone()).collect()
    });
    let removed = keep.map(|config| {
        let mut removed = removed(&units, config);
        for (gone, embedded) in removed.iter_mut().zip(&embedded) {
            *gone &= !embedded;
        }
        removed
    });
    let mut usage = tally(path, &counted, removed.as_deref());
    usage.members = members
        .iter()
        .enumerate()
        .map(|(i, (_, name))| {
            let (theirs, gone): (Vec<&Counted>, Vec<bool>) = (counted.iter())
                .enumerate()
                .filter(|(_, c)| c.member == Some(i))
                .map(|(k, c)| (c, removed.as_ref().is_some_and(|r| r[k])))
                .unzip();
            let theirs: Vec<Counted> = theirs.into_iter().cloned().collect();
            tally(name, &theirs, removed.as_ref().map(|_| gone.as_slice()))
        })
        .collect();
    usage.parts = parts_of(&counted, removed.as_deref(), &members);
    usage.bare = bare;
    usage.read = input.identity();
    usage.embedded = crate::host::package::kind(input)
        .is_none()
        .then_some(embedded_count);
    Ok(usage)
}

/// The usage of the `.kpack` archive at `path` (read as `input`): its code objects, each a
/// whole file a runtime loads, so that a strip keeps or prunes the archive whole, as it does
/// a file of bare device images.
fn archive_usage(
    path: &Path,
    input: &Input,
    max_decompressed: u64,
    keep: Option<&RewriteConfig>,
) -> Result<FileUsage> {
    let (images, _) = crate::ops::ls::list_file(path, max_decompressed)?;
    let targets: Vec<ImageTarget> = images.iter().map(ImageRecord::code_object_target).collect();
    let mut usage = listed_usage(path, &images);
    if let Some(config) = keep {
        // Each code object on its own: the loader picks one per processor by the archive's
        // table, not among them.
        let units: Vec<(usize, ImageTarget)> = targets.iter().cloned().enumerate().collect();
        let removed = removed(&units, config);
        for usage in &mut usage.targets {
            let gone = images
                .iter()
                .zip(&removed)
                .filter(|(image, gone)| **gone && image.target_id == usage.target)
                .filter_map(|(image, _)| image.source.kpack().map(|k| k.stored_size))
                .sum();
            usage.removed = Some(gone);
        }
    }
    usage.parts = whole_parts(&usage.targets);
    usage.bare = (!targets.is_empty()).then_some(targets);
    usage.read = input.identity();
    Ok(usage)
}

/// The usage of the file `file` as `offload ls` lists it, `images`: host entries left out,
/// an image inside a compressed bundle stored as such counting for its share of the bundle,
/// a code object of a `.kpack` archive or an entry of a CUDA fat binary for its bytes as
/// stored.
pub fn listed_usage(file: &Path, images: &[ImageRecord]) -> FileUsage {
    let mut counted: Vec<Counted> = images
        .iter()
        .filter(|image| image.producer != Producer::Host)
        .map(|image| {
            let source = &image.source;
            let (stored, bundle) = match (source.kpack(), source.cuda(), &image.compressed_bundle) {
                (Some(k), _, _) => (k.stored_size, None),
                (None, Some(c), _) => (c.stored_size, None),
                (None, None, Some(place)) => {
                    let number = image.package.as_ref().map_or(0, |p| p.number);
                    (0, Some(((number, place.offset as usize), place.size)))
                }
                (None, None, None) => (image.size, None),
            };
            Counted {
                target: image.target_name().to_string(),
                inflated: image.size,
                stored,
                bundle,
                member: None,
                section: String::new(),
            }
        })
        .collect();
    share_compressed(&mut counted);
    let mut usage = tally(file, &counted, None);
    usage.parts = whole_parts(&usage.targets);
    usage
}

/// The usage of the file `file` from its images, each marked in `removed` when a strip
/// removes it.
fn tally(file: &Path, counted: &[Counted], removed: Option<&[bool]>) -> FileUsage {
    let mut by_target: BTreeMap<String, Usage> = BTreeMap::new();
    for (i, image) in counted.iter().enumerate() {
        let usage = by_target.entry(image.target.clone()).or_default();
        usage.images += 1;
        usage.stored += image.stored;
        usage.inflated += image.inflated;
        if let Some(removed) = removed {
            *usage.removed.get_or_insert(0) += if removed[i] { image.stored } else { 0 };
        }
    }
    FileUsage {
        file: file.to_string_lossy().into_owned(),
        file_bytes: crate::io::bytes_unless_text(file),
        path: file.to_path_buf(),
        targets: sorted(by_target),
        members: Vec::new(),
        bare: None,
        read: None,
        embedded: None,
        parts: Vec::new(),
    }
}

/// Gives each image inside a compressed bundle its share of the bundle's stored bytes.
fn share_compressed(counted: &mut [Counted]) {
    let mut inflated: HashMap<(usize, usize), u64> = HashMap::new();
    for image in counted.iter() {
        if let Some((bundle, _)) = image.bundle {
            *inflated.entry(bundle).or_default() += image.inflated;
        }
    }
    for image in counted.iter_mut() {
        if let Some((bundle, len)) = image.bundle {
            let total = inflated[&bundle].max(1);
            image.stored =
                (u128::from(len) * u128::from(image.inflated) / u128::from(total)) as u64;
        }
    }
}

/// Which images `config` removes (each given with its translation unit and target), judged
/// unit by unit as a rewrite judges them.
fn removed(images: &[(usize, ImageTarget)], config: &RewriteConfig) -> Vec<bool> {
    let mut units: BTreeMap<usize, Vec<usize>> = BTreeMap::new();
    for (i, (unit, _)) in images.iter().enumerate() {
        units.entry(*unit).or_default().push(i);
    }
    let mut removed = vec![false; images.len()];
    for members in units.values() {
        let targets: Vec<ImageTarget> = members.iter().map(|&i| images[i].1.clone()).collect();
        for (&i, kept) in members.iter().zip(config.keeps(&targets)) {
            removed[i] = !kept;
        }
    }
    removed
}

/// Usages most stored bytes first, then by name.
fn sorted(by_target: BTreeMap<String, Usage>) -> Vec<Usage> {
    let mut usages: Vec<Usage> = by_target
        .into_iter()
        .map(|(target, usage)| Usage { target, ..usage })
        .collect();
    usages.sort_by(|a, b| {
        b.stored
            .cmp(&a.stored)
            .then_with(|| a.target.cmp(&b.target))
    });
    usages
}

/// The usage of all `files` together, by target.
pub fn total(files: &[FileUsage]) -> Vec<Usage> {
    let mut tally = Tally::default();
    for file in files {
        tally.add(file);
    }
    tally.total()
}

/// The usage of files counted one at a time, by target: what [`total`] gives without holding
/// the files' usages.
#[derive(Debug, Default)]
pub struct Tally {
    by_target: BTreeMap<String, Usage>,
}

impl Tally {
    /// Adds the targets of `file`.
    pub fn add(&mut self, file: &FileUsage) {
        for usage in &file.targets {
            let sum = match self.by_target.get_mut(&usage.target) {
                Some(sum) => sum,
                None => self.by_target.entry(usage.target.clone()).or_default(),
            };
            sum.images += usage.images;
            sum.stored += usage.stored;
            sum.inflated += usage.inflated;
            if let Some(removed) = usage.removed {
                *sum.removed.get_or_insert(0) += removed;
            }
        }
    }

    /// The usage of the files added, by target, most stored bytes first.
    pub fn total(self) -> Vec<Usage> {
        sorted(self.by_target)
    }
}
