//! Scanning one input for what `extract` asks for: every image found is a candidate, ready to
//! write; once the scan has seen each translation unit whole, `--arch` keeps what a device
//! with each target ID loads from it, and `--device` what the runtime or the CUDA driver
//! loads from each bundle or fat binary ([`crate::ops::extract::picks`]).

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use crate::error::{Error, Result};
use crate::format::cuda_fatbin::EntryKind;
use crate::format::image_target::Producer;
use crate::format::offload_binary::ImageKind;
use crate::host::scan::{scan_with_archives, DeviceImage, Origin, Reading};
use crate::io::slice::offset_within;
use crate::io::Input;
use crate::loads::hip::Via;
use crate::ops::extract::chosen::{Bytes, Chosen, Found, Held, Streamed};
use crate::ops::extract::names::{extension, CudaNames};
use crate::ops::extract::options::{chosen_in_unit, may_be_chosen, passes_filters, ExtractConfig};
use crate::ops::extract::picks::{
    driver_picks, is_cuda_device, module_picks, offload_picks, runtime_may_pick, runtime_picks,
    OffloadedImage, SeenEntry,
};
use crate::ops::support::image::ImageRecord;
use crate::target::target_id::TargetId;

/// What a scan of one input keeps until it has seen the input whole.
struct Seen<'c> {
    config: &'c ExtractConfig,
    /// The file's name, as given.
    name: PathBuf,
    /// The input's number among the inputs.
    index: usize,
    /// Images that may be chosen, with their unit and target ID: which are is known only
    /// once a unit is seen whole.
    candidates: Vec<(usize, String, Chosen)>,
    /// The entries of each bundle, by unit, for `--device`.
    bundles: BTreeMap<usize, Vec<SeenEntry>>,
    /// The entries of each CUDA fat binary, by unit, for a CUDA `--device`.
    fatbins: BTreeMap<usize, Vec<Chosen>>,
    /// The bare code objects, in file order, for `--device`.
    modules: Vec<Chosen>,
    /// The AMDGPU images of offload binaries, by unit, for `--device`.
    offloaded: BTreeMap<usize, Vec<OffloadedImage>>,
    /// Whether the input is a linked program or library, whose bitcode images are compiled
    /// when loaded.
    linked: bool,
    cuda_names: CudaNames,
}

impl Seen<'_> {
    /// Keeps `found` (of `input`) where it may be chosen.
    fn see(&mut self, input: &Input, found: &DeviceImage<'_>) {
        let config = self.config;
        let cuda_name = self.cuda_names.next(found);
        let passes = passes_filters(config, found.target);
        let make = || {
            let mut c = candidate(&self.name, self.index, input, found);
            c.name.clone_from(&cuda_name);
            c
        };
        if self.cuda_names.for_devices && cuda_name.is_some() && passes {
            self.fatbins.entry(found.unit).or_default().push(make());
        }
        if !config.devices.is_empty() && passes {
            match found.origin {
                Origin::Bare(bare) if bare.kind.is_module() => self.modules.push(make()),
                Origin::OffloadImage(entry) if found.target.triple.starts_with("amdgcn") => {
                    let image = OffloadedImage {
                        chosen: make(),
                        openmp: found.target.producer == Producer::OpenMp,
                        jit: entry.image_kind == ImageKind::Bitcode
                            && found.members.is_empty()
                            && found.package.map_or(self.linked, |p| p.linked),
                    };
                    self.offloaded.entry(found.unit).or_default().push(image);
                }
                _ => {}
            }
        }
        if !config.devices.is_empty() {
            if let Some(id) = found.origin.entry_id() {
                self.bundles.entry(found.unit).or_default().push(SeenEntry {
                    id: id.to_string(),
                    size: found.size,
                    compressed: found.compressed,
                    chosen: (runtime_may_pick(id) && passes)
                        .then(|| candidate(&self.name, self.index, input, found)),
                });
            }
        }
        let stored = found.target.target_id();
        if !passes || !stored.is_some_and(|stored| may_be_chosen(config, &stored)) {
            tracing::debug!(
                offset = found.offset,
                "passed over {}",
                found.target.target_id
            );
            return;
        }
        let c = make();
        self.candidates
            .push((found.unit, found.target.target_id.clone(), c));
    }
}

/// Adds to `chosen` the candidates the target IDs asked for load, unit by unit, noting
/// in `found` the target IDs that load any.
fn choose_by_target_id(
    candidates: Vec<(usize, String, Chosen)>,
    config: &ExtractConfig,
    chosen: &mut Vec<Chosen>,
    found: &mut Found,
) {
    let mut units: BTreeMap<usize, Vec<usize>> = BTreeMap::new();
    for (i, (unit, _, _)) in candidates.iter().enumerate() {
        units.entry(*unit).or_default().push(i);
    }
    let mut verdicts: Vec<Option<(Via, usize)>> = vec![None; candidates.len()];
    for members in units.values() {
        let ids: Vec<Option<TargetId<'_>>> = members
            .iter()
            .map(|&i| TargetId::parse_syntax(&candidates[i].1))
            .collect();
        for (&i, verdict) in members
            .iter()
            .zip(chosen_in_unit(config, &ids, &mut found.arches))
        {
            verdicts[i] = verdict;
        }
    }
    for ((_, _, mut c), verdict) in candidates.into_iter().zip(verdicts) {
        let Some((via, asked)) = verdict else {
            continue;
        };
        c.via = via;
        c.asked = config.arches[asked].to_string();
        tracing::info!(
            member = c.image.member,
            section = c.image.section,
            offset = c.image.offset,
            size = c.image.size,
            via = via.name(),
            "chose {} for {}",
            c.label,
            c.asked
        );
        chosen.push(c);
    }
}

/// Scans the input `index` (`path`) and adds the images `config` asks for to `chosen`, in the
/// order found; returns the damage found on the way, and the package members that are
/// `.kpack` archives, each held (in memory, or a temporary file when large) to be read as an
/// archive named alone is.
pub(super) fn choose(
    config: &ExtractConfig,
    index: usize,
    path: &Path,
    input: &Input,
    chosen: &mut Vec<Chosen>,
    found: &mut Found,
) -> Result<(Vec<Error>, Vec<super::PackedArchive>)> {
    tracing::debug!(size = input.len(), "scanning");
    let mut seen = Seen {
        config,
        name: path.to_path_buf(),
        index,
        candidates: Vec::new(),
        bundles: BTreeMap::new(),
        fatbins: BTreeMap::new(),
        modules: Vec::new(),
        offloaded: BTreeMap::new(),
        linked: crate::host::is_linked_elf(input),
        cuda_names: CudaNames::new(path, config.devices.iter().any(is_cuda_device)),
    };
    // Compressed bundles are inflated up to their bundle's header: which images to write
    // is known from their IDs, and only their streams are inflated, once chosen.
    let packed = std::cell::RefCell::new(Vec::new());
    let archives = |member: &crate::host::package::PackageMember, bytes: &[u8]| -> Result<()> {
        let mut held = crate::io::spill::Spill::new();
        let failed = |e| Error::io(&member.name, e);
        held.append(bytes).map_err(failed)?;
        let held = held.finish().map_err(failed)?.into_input();
        let file = String::from_utf8_lossy(member.file_name()).into_owned();
        packed.borrow_mut().push((member.name.clone(), file, held));
        Ok(())
    };
    let problems = scan_with_archives(
        path,
        input,
        config.max_decompressed,
        Reading::Headers,
        &mut |image: &DeviceImage<'_>| seen.see(input, image),
        &archives,
    )?;
    let Seen {
        name,
        candidates,
        bundles,
        fatbins,
        modules,
        offloaded,
        ..
    } = seen;
    choose_by_target_id(candidates, config, chosen, found);
    // The picks' messages name the file as people read it.
    let name = crate::io::shown(&name).into_owned();
    runtime_picks(config, &name, bundles, chosen, found);
    driver_picks(config, &name, fatbins, chosen, found);
    module_picks(config, &name, modules, chosen, found);
    offload_picks(config, &name, offloaded, chosen, found);
    Ok((problems, packed.into_inner()))
}

/// Where the bytes of `found`, an image of `input`, are.
fn bytes_of(input: &Input, found: &DeviceImage<'_>) -> Bytes {
    // Bytes of the input, or, when they are not in it as such, held.
    let held = |bytes: &[u8]| match offset_within(input, bytes) {
        Some(start) => Held::Input(start, bytes.len()),
        None => Held::Owned(bytes.into()),
    };
    if let Some(stream) = found.stream {
        return Bytes::Stream(Streamed {
            container: held(stream.container),
            at: stream.offset,
            start: stream.start,
            end: stream.end,
        });
    }
    match found.origin {
        // Inside a compressed container: held, as stored.
        Origin::CudaEntry(entry) => Bytes::Cuda(held(entry.payload), entry.stored()),
        _ => match found.offset.and_then(|_| offset_within(input, found.data)) {
            Some(start) => Bytes::Input(start, found.data.len()),
            None => Bytes::Owned(found.data.to_vec()),
        },
    }
}

/// The member an image's output is named after: the innermost archive member, after the
/// file name of the package member that holds it when the file is a package.
fn member_of(found: &DeviceImage<'_>) -> Option<String> {
    let package = found
        .package
        .map(|p| String::from_utf8_lossy(p.file_name()).into_owned());
    match (package, found.members.last()) {
        (Some(package), Some(member)) => Some(format!("{package}-{member}")),
        (package, member) => package.or_else(|| member.cloned()),
    }
}

/// An image found in the file `name` (input `index`), ready to be written if it is chosen.
fn candidate(name: &Path, index: usize, input: &Input, found: &DeviceImage<'_>) -> Chosen {
    let image = ImageRecord::found(name, found);
    let label = match found.origin.entry_id() {
        Some(id) => id.to_string(),
        None => format!(
            "{}-{}-{}",
            image.producer.name(),
            image.triple.as_str(),
            image.target_id
        ),
    };
    let ext = match found.origin {
        Origin::CudaEntry(entry) if entry.kind == EntryKind::Ptx => "ptx",
        Origin::CudaEntry(_) => "cubin",
        _ => extension(&image, found.data),
    };
    Chosen {
        member: member_of(found),
        bytes: bytes_of(input, found),
        input: index,
        label,
        ext,
        image,
        via: Via::Native,
        asked: String::new(),
        bundle: None,
        device_pick: false,
        name: None,
    }
}
