//! What a device named with `--device` loads from each bundle (the HIP runtime's choice,
//! [`crate::loads::runtime`]) and from each CUDA fat binary (the CUDA driver's,
//! [`crate::loads::cuda`]), and why a device loads nothing from one.

use std::collections::BTreeMap;

use crate::loads::cuda;
use crate::loads::openmp;
use crate::loads::runtime::{self, Load, Why};
use crate::ops::extract::chosen::{Chosen, Found};
use crate::ops::extract::options::ExtractConfig;
use crate::target::target_id::{TargetId, TargetIdBuf};

/// Whether `device` is a CUDA device (`sm_86`), which `--device` takes by the CUDA driver's
/// rule, not the HIP runtime's.
pub(super) fn is_cuda_device(device: &TargetIdBuf) -> bool {
    cuda::is_cuda_target(device.as_str())
}

/// Adds to `chosen` what the CUDA driver loads for each CUDA device of `config.devices` from
/// each fat binary (by translation unit, in file order) of the file `name`: the cubin closest
/// to the device, else the newest PTX it may compile ([`cuda::driver_pick`]); notes in
/// `found` the devices that load something and the fat binaries a device loads nothing from.
pub(super) fn driver_picks(
    config: &ExtractConfig,
    name: &str,
    fatbins: BTreeMap<usize, Vec<Chosen>>,
    chosen: &mut Vec<Chosen>,
    found: &mut Found,
) {
    for (d, device) in config
        .devices
        .iter()
        .enumerate()
        .filter(|(_, d)| is_cuda_device(d))
    {
        for (number, entries) in (1..).zip(fatbins.values()) {
            let names: Vec<&str> = entries.iter().map(|c| c.image.target_id.as_str()).collect();
            let Some((pick, via)) = cuda::driver_load(device.as_str(), &names) else {
                found.missing.push((
                    d,
                    false,
                    format!(
                        "{device} loads nothing from CUDA fat binary {number} of '{name}': no cubin or PTX it runs"
                    ),
                ));
                continue;
            };
            if let Some(hit) = found.devices.get_mut(d) {
                *hit = true;
            }
            let mut c = entries[pick].clone();
            tracing::info!(
                fatbin = number,
                via = via.name(),
                "{device} loads {}",
                c.image.target_id
            );
            c.via = via;
            c.asked = device.to_string();
            c.bundle = Some(number);
            chosen.push(c);
        }
    }
}

/// Adds to `chosen` each bare code object of the file `name` (in file order) for the AMD
/// devices of `config.devices` that `hipModuleLoad` builds it for: the same processor with no
/// feature set otherwise, or a generic target that covers the processor. Notes in `found`
/// the devices that load one and the code objects a device cannot load.
pub(super) fn module_picks(
    config: &ExtractConfig,
    name: &str,
    modules: Vec<Chosen>,
    chosen: &mut Vec<Chosen>,
    found: &mut Found,
) {
    for (number, module) in (1..).zip(modules) {
        let image = TargetId::parse_syntax(&module.image.target_id);
        let cuda_module = cuda::is_cuda_target(&module.image.target_id);
        let what = if cuda_module { "module" } else { "code object" };
        for (d, device) in config.devices.iter().enumerate() {
            if is_cuda_device(device) != cuda_module {
                continue;
            }
            let via = if cuda_module {
                cuda::driver_load(device.as_str(), &[module.image.target_id.as_str()])
                    .map(|(_, via)| via)
            } else {
                openmp::builds(&device.target_id(), &image)
            };
            let Some(via) = via else {
                let fails = if cuda_module {
                    "cuModuleLoad fails with CUDA_ERROR_NO_BINARY_FOR_GPU"
                } else {
                    "hipModuleLoad fails with hipErrorNoBinaryForGpu"
                };
                found.missing.push((
                    d,
                    false,
                    format!(
                        "{device} cannot load {what} {number} of '{name}' ({fails}): it is for {}",
                        module.image.target_id
                    ),
                ));
                continue;
            };
            if let Some(hit) = found.devices.get_mut(d) {
                *hit = true;
            }
            let mut c = module.clone();
            tracing::info!(code_object = number, via = via.name(), "{device} loads it");
            let label = if cuda_module { "module" } else { "code-object" };
            c.label = format!("{label}{number}-{}-for-{device}", module.image.target_id);
            c.via = via;
            c.asked = device.to_string();
            c.bundle = Some(number);
            c.device_pick = true;
            chosen.push(c);
        }
    }
}

/// An AMDGPU image of an offload binary, kept until its place is seen whole.
pub(super) struct OffloadedImage {
    pub(super) chosen: Chosen,
    /// Whether OpenMP made it (else HIP, or no kind: linked into a bundle).
    pub(super) openmp: bool,
    /// Whether it is bitcode a program registers, compiled for any AMDGPU device when loaded.
    pub(super) jit: bool,
}

/// Adds to `chosen` what each AMD device of `config.devices` loads from the AMDGPU images of
/// the offload binaries of each place (by unit, in file order) of the file `name`. OpenMP's:
/// the first image compatible with the device (libomptarget, LLVM 21 and later), bitcode a
/// program registers for any device; others, linked into a bundle, the HIP runtime's pick
/// (native, else generic, else SPIR-V). Notes in `found` the devices that load one and the
/// places a device loads nothing from.
pub(super) fn offload_picks(
    config: &ExtractConfig,
    name: &str,
    units: BTreeMap<usize, Vec<OffloadedImage>>,
    chosen: &mut Vec<Chosen>,
    found: &mut Found,
) {
    for (number, unit) in (1..).zip(units.into_values()) {
        let openmp = unit.iter().all(|i| i.openmp);
        let images: Vec<openmp::Image<'_>> = unit
            .iter()
            .map(|i| openmp::Image {
                target_id: TargetId::parse_syntax(&i.chosen.image.target_id),
                jit: i.jit,
            })
            .collect();
        for (d, device) in config.devices.iter().enumerate() {
            if is_cuda_device(device) {
                continue;
            }
            let Some((pick, via)) = openmp::pick(&device.target_id(), &images, openmp) else {
                found.missing.push((
                    d,
                    false,
                    format!("{device} loads nothing from offload binaries {number} of '{name}'"),
                ));
                continue;
            };
            if let Some(hit) = found.devices.get_mut(d) {
                *hit = true;
            }
            let mut c = unit[pick].chosen.clone();
            c.label = format!("offload{number}-{}-for-{device}", c.image.target_id);
            c.via = via;
            c.asked = device.to_string();
            c.bundle = Some(number);
            c.device_pick = true;
            chosen.push(c);
        }
    }
}

/// One entry of a bundle, kept until the bundle is seen whole.
pub(super) struct SeenEntry {
    pub(super) id: String,
    pub(super) size: u64,
    pub(super) compressed: bool,
    /// The image, ready to write, for the entries the runtime may pick.
    pub(super) chosen: Option<Chosen>,
}

/// Whether the runtime may pick the entry `id` for some device: its kind is one comgr or the
/// bundler gives a HIP request (`hip`, `hipv4`, `hcc`, `openmp`).
pub(super) fn runtime_may_pick(id: &str) -> bool {
    matches!(
        id.split('-').next(),
        Some("hip" | "hipv4" | "hcc" | "openmp")
    )
}

/// Adds to `chosen` what the runtime loads for each of `config.devices` from each bundle of
/// the file `name`, and notes in `found` the devices that load something and the bundles a
/// device loads nothing from.
pub(super) fn runtime_picks(
    config: &ExtractConfig,
    name: &str,
    bundles: BTreeMap<usize, Vec<SeenEntry>>,
    chosen: &mut Vec<Chosen>,
    found: &mut Found,
) {
    for (number, entries) in (1..).zip(bundles.into_values()) {
        let compressed = entries.first().is_some_and(|e| e.compressed);
        let bundle = runtime::Bundle::from_entries(
            entries.iter().map(|e| (e.id.as_str(), e.size)),
            compressed,
        );
        let hip: Vec<(usize, TargetIdBuf)> = config
            .devices
            .iter()
            .cloned()
            .enumerate()
            .filter(|(_, device)| !is_cuda_device(device))
            .collect();
        if hip.is_empty() {
            continue;
        }
        let devices: Vec<TargetIdBuf> = hip.iter().map(|(_, device)| device.clone()).collect();
        let loads = runtime::loads(&devices, &bundle);
        for ((d, device), load) in hip.iter().map(|(d, device)| (*d, device)).zip(loads) {
            let (index, via) = match load {
                Load::Entry(index, via) => (index, via),
                Load::Nothing(why) => {
                    found.missing.push((
                        d,
                        why != Why::NoCompatibleEntry,
                        lacking(device, number, name, why),
                    ));
                    continue;
                }
            };
            if let Some(hit) = found.devices.get_mut(d) {
                *hit = true;
            }
            let Some(seen) = entries.get(index) else {
                continue;
            };
            let Some(mut c) = seen.chosen.clone() else {
                continue;
            };
            tracing::info!(
                bundle = number,
                via = via.name(),
                "{device} loads {}",
                seen.id
            );
            c.label = format!("bundle{number}-{}-for-{device}", seen.id);
            c.via = via;
            c.asked = device.to_string();
            c.bundle = Some(number);
            c.device_pick = true;
            chosen.push(c);
        }
    }
}

/// The warning for a device that loads nothing from bundle `number` of the file `name`.
fn lacking(device: &TargetIdBuf, number: usize, name: &str, why: Why) -> String {
    format!(
        "{device} loads nothing from bundle {number} of '{name}': {}",
        why.describe()
    )
}
