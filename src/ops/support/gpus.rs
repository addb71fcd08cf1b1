//! The machine's GPUs as the HIP runtime sees them: the nodes the kernel driver (KFD) lists
//! under `/sys/class/kfd/kfd/topology/nodes`, in node order, each named by its full ISA as
//! ROCr builds it.
//!
//! A node's `gfx_target_version` is `major * 10000 + minor * 100 + stepping` (0 for a CPU);
//! the processor is `gfx` + major in decimal + minor and stepping in hexadecimal (90010:
//! `gfx90a`). Its features are those ROCr gives the agent: `sramecc` (for processors that
//! have it) from `HSA_ENABLE_SRAMECC` (`1`: on, `0`: off), else from the node's capability bit
//! `HSA_CAP_SRAM_EDCSUPPORTED`; `xnack` (for processors that have it) from `HSA_XNACK` (`1`:
//! on, `0`: off), else the driver's per-process default: on when page-fault retry is on
//! (`/sys/module/amdgpu/parameters/noretry` reads `0`, or `-1`, automatic, on a GFX9 processor
//! the driver does not default to no-retry), off otherwise; GFX10 and later never turn it on.
//!
//! Which of them a process sees, and in which order, `ROCR_VISIBLE_DEVICES` says first (indices
//! into the driver's list, or `GPU-` and the node's unique ID in hexadecimal), then
//! `HIP_VISIBLE_DEVICES` (`CUDA_VISIBLE_DEVICES` when it is unset) of what is left. A list ends
//! at its first entry that names no device, or one already named.

use std::path::{Path, PathBuf};

use crate::error::{Error, Result};
use crate::target::processor::Processor;
use crate::target::target_id::TargetIdBuf;

/// Where the driver lists its nodes.
pub const KFD_TOPOLOGY: &str = "/sys/class/kfd/kfd/topology";

/// The environment variable that points the reader at another topology folder (one holding
/// `nodes/N/properties`), for tests and for checking another machine's listing.
pub const TOPOLOGY_VAR: &str = "OFFLOAD_KFD_TOPOLOGY";

/// `HSA_CAP_SRAM_EDCSUPPORTED`: the node's SRAM has ECC enabled.
const CAP_SRAM_EDC: u64 = 0x0400_0000;

/// One GPU of the machine.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Gpu {
    /// The KFD node number.
    pub node: u32,
    /// Its target ID as the runtime reports it (`gfx90a:sramecc+:xnack-`).
    pub target: TargetIdBuf,
    /// Its unique ID (the node's `unique_id`), by which `GPU-` names it; `None` when the
    /// node has none.
    pub unique_id: Option<u64>,
}

/// What ROCr reads from the environment for a GPU's features, and the driver's setting that
/// decides `xnack` when the environment does not.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct FeatureEnv<'a> {
    /// `HSA_ENABLE_SRAMECC`.
    pub sramecc: Option<&'a str>,
    /// `HSA_XNACK`.
    pub xnack: Option<&'a str>,
    /// The amdgpu driver's `noretry` parameter (`-1`: automatic; `None`: not readable, taken
    /// as automatic).
    pub noretry: Option<i64>,
}

/// What chooses the GPUs a process sees: `ROCR_VISIBLE_DEVICES`, then `HIP_VISIBLE_DEVICES`
/// (else `CUDA_VISIBLE_DEVICES`).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Visible<'a> {
    /// `ROCR_VISIBLE_DEVICES`.
    pub rocr: Option<&'a str>,
    /// `HIP_VISIBLE_DEVICES`, or `CUDA_VISIBLE_DEVICES` when that is unset.
    pub hip: Option<&'a str>,
}

/// The GPUs of `gpus` (in the driver's order) a process sees with `visible`, in its order.
pub fn visible(gpus: Vec<Gpu>, visible: Visible<'_>) -> Vec<Gpu> {
    let gpus = match visible.rocr {
        Some(list) => choose(gpus, list, true),
        None => gpus,
    };
    match visible.hip {
        Some(list) => choose(gpus, list, false),
        None => gpus,
    }
}

/// The GPUs `list` names among `gpus`, in its order: by index, or (`by_id`) by `GPU-` and the
/// unique ID in hexadecimal. The list ends at its first entry that names no GPU, or one
/// already named.
fn choose(gpus: Vec<Gpu>, list: &str, by_id: bool) -> Vec<Gpu> {
    let mut chosen: Vec<usize> = Vec::new();
    for entry in list.split(',').map(str::trim) {
        let found = match entry.strip_prefix("GPU-").filter(|_| by_id) {
            Some(id) => u64::from_str_radix(id, 16)
                .ok()
                .and_then(|id| gpus.iter().position(|g| g.unique_id == Some(id))),
            None => entry.parse::<usize>().ok().filter(|&k| k < gpus.len()),
        };
        match found {
            Some(k) if !chosen.contains(&k) => chosen.push(k),
            _ => break,
        }
    }
    chosen
        .into_iter()
        .filter_map(|k| gpus.get(k).cloned())
        .collect()
}

/// Whether the driver turns on page-fault retry (and so `xnack`) for a process on `processor`
/// when the environment does not say: its `noretry` parameter `0`, or automatic on the GFX9
/// processors it does not default to no-retry for (the APUs gfx902, gfx909 and gfx90c, and
/// gfx904). GFX8 and GFX10 processors never have it on.
fn retries(processor: &str, noretry: Option<i64>) -> bool {
    let gfx9 = processor.starts_with("gfx9") && processor.len() == 6;
    let no_retry_by_default = matches!(processor, "gfx900" | "gfx906" | "gfx908" | "gfx90a")
        || processor.starts_with("gfx94")
        || processor.starts_with("gfx95");
    match noretry {
        Some(0) => gfx9,
        Some(n) if n > 0 => false,
        // Automatic: the driver's default for the processor's graphics IP.
        _ => gfx9 && !no_retry_by_default,
    }
}

/// The driver's `noretry` parameter, in the sysfs of the topology folder `topology` (for
/// `/sys/class/kfd/kfd/topology`, `/sys/module/amdgpu/parameters/noretry`); `None` when it
/// cannot be read.
pub fn noretry(topology: &Path) -> Option<i64> {
    let sysfs = topology.ancestors().nth(4)?;
    if !topology.ends_with("class/kfd/kfd/topology") {
        return None;
    }
    let text = crate::io::read_small_text(&sysfs.join("module/amdgpu/parameters/noretry")).ok()?;
    text.trim().parse().ok()
}

/// The processor a `gfx_target_version` names; `None` for 0 (a CPU node).
pub fn processor_of_version(version: u32) -> Option<String> {
    if version == 0 {
        return None;
    }
    let (major, minor, stepping) = (version / 10000, version / 100 % 100, version % 100);
    Some(format!("gfx{major}{minor:x}{stepping:x}"))
}

/// The target ID of a node whose `properties` file reads `text`, or `None` for a CPU node.
pub fn gpu_of_properties(text: &str, env: FeatureEnv<'_>) -> Option<TargetIdBuf> {
    let value = |key: &str| -> Option<u64> {
        text.lines().find_map(|line| {
            let (k, v) = line.split_once(' ')?;
            (k == key).then(|| v.trim().parse().ok()).flatten()
        })
    };
    let version = u32::try_from(value("gfx_target_version")?).ok()?;
    let processor = processor_of_version(version)?;
    let mut id = processor.clone();
    if let Some(row) = Processor::named(&processor) {
        if row.sramecc {
            let on = match env.sramecc {
                Some("1") => true,
                Some("0") => false,
                _ => value("capability").is_some_and(|c| c & CAP_SRAM_EDC != 0),
            };
            id.push_str(if on { ":sramecc+" } else { ":sramecc-" });
        }
        if row.xnack {
            let on = match env.xnack {
                Some("1") => true,
                Some("0") => false,
                _ => retries(&processor, env.noretry),
            };
            id.push_str(if on { ":xnack+" } else { ":xnack-" });
        }
    }
    id.parse().ok()
}

/// The GPUs listed under `topology` (a folder holding `nodes/N/properties`), in node order.
pub fn read_topology(topology: &Path, env: FeatureEnv<'_>) -> Result<Vec<Gpu>> {
    let nodes_dir = topology.join("nodes");
    let entries = match std::fs::read_dir(&nodes_dir) {
        Ok(entries) => entries,
        // No driver, no GPUs.
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(Vec::new()),
        Err(e) => return Err(Error::io(&nodes_dir, e)),
    };
    let mut nodes: Vec<(u32, PathBuf)> = entries
        .filter_map(|e| e.ok())
        .filter_map(|e| {
            let node = e.file_name().to_str()?.parse().ok()?;
            Some((node, e.path().join("properties")))
        })
        .collect();
    nodes.sort();
    let mut gpus = Vec::new();
    for (node, properties) in nodes {
        if std::fs::symlink_metadata(&properties).is_err() {
            // A node without properties lists nothing.
            continue;
        }
        // Bounded, and refused unless a regular file: a FIFO or `/dev/zero` in a topology
        // (a test's, or a damaged one) must not hang or exhaust the command.
        let text = crate::io::read_small_text(&properties)?;
        if let Some(target) = gpu_of_properties(&text, env) {
            let unique_id = text.lines().find_map(|line| {
                let (key, value) = line.split_once(' ')?;
                (key == "unique_id").then(|| value.trim().parse().ok())?
            });
            gpus.push(Gpu {
                node,
                target,
                unique_id,
            });
        }
    }
    Ok(gpus)
}

/// The folder to read: [`TOPOLOGY_VAR`] if set, else [`KFD_TOPOLOGY`].
pub fn topology_folder() -> PathBuf {
    std::env::var_os(TOPOLOGY_VAR)
        .filter(|v| !v.is_empty())
        .map_or_else(|| PathBuf::from(KFD_TOPOLOGY), PathBuf::from)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn versions_name_processors_with_hexadecimal_minor_and_stepping() {
        let names: Vec<String> = [90010, 110000, 90402, 110501, 90012, 100300, 120001, 90500]
            .into_iter()
            .filter_map(processor_of_version)
            .collect();
        assert_eq!(
            names,
            ["gfx90a", "gfx1100", "gfx942", "gfx1151", "gfx90c", "gfx1030", "gfx1201", "gfx950"]
        );
        assert_eq!(processor_of_version(0), None);
    }

    #[test]
    fn features_follow_the_capability_bit_and_the_environment() {
        let mi210 = "cpu_cores_count 0\ngfx_target_version 90010\ncapability 67127936\n";
        let no_ecc = "gfx_target_version 90010\ncapability 2048\n";
        let id = |text, env| gpu_of_properties(text, env).map(|t| t.to_string());
        let none = FeatureEnv::default();
        assert_eq!(id(mi210, none).unwrap(), "gfx90a:sramecc+:xnack-");
        assert_eq!(id(no_ecc, none).unwrap(), "gfx90a:sramecc-:xnack-");
        let forced = FeatureEnv {
            sramecc: Some("0"),
            xnack: Some("1"),
            noretry: None,
        };
        assert_eq!(id(mi210, forced).unwrap(), "gfx90a:sramecc-:xnack+");
        assert_eq!(id("gfx_target_version 110001\n", none).unwrap(), "gfx1101");
        assert_eq!(id("gfx_target_version 0\ncpu_cores_count 16\n", none), None);
        assert_eq!(id("simd_count 0\n", none), None);
    }

    #[test]
    fn xnack_follows_the_environment_else_the_drivers_retry_setting() {
        let id = |version: u32, xnack, noretry| {
            let text = format!("gfx_target_version {version}\n");
            let env = FeatureEnv {
                sramecc: None,
                xnack,
                noretry,
            };
            gpu_of_properties(&text, env).unwrap().to_string()
        };
        // MI210 (gfx90a): off unless retry is on or HSA_XNACK=1; HSA_XNACK=0 wins over it.
        assert_eq!(id(90010, None, None), "gfx90a:sramecc-:xnack-");
        assert_eq!(id(90010, None, Some(-1)), "gfx90a:sramecc-:xnack-");
        assert_eq!(id(90010, None, Some(0)), "gfx90a:sramecc-:xnack+");
        assert_eq!(id(90010, Some("0"), Some(0)), "gfx90a:sramecc-:xnack-");
        assert_eq!(id(90010, Some("1"), Some(1)), "gfx90a:sramecc-:xnack+");
        // MI300 (gfx942) and gfx950: no-retry by default.
        assert_eq!(id(90402, None, Some(-1)), "gfx942:sramecc-:xnack-");
        assert_eq!(id(90500, None, Some(0)), "gfx950:sramecc-:xnack+");
        // A Renoir APU (gfx90c) retries by default; a GFX10 processor never does.
        assert_eq!(id(90012, None, None), "gfx90c:xnack+");
        assert_eq!(id(90012, None, Some(1)), "gfx90c:xnack-");
        assert_eq!(id(100100, None, Some(0)), "gfx1010:xnack-");
    }

    #[test]
    fn visible_devices_choose_and_order_rocr_first_then_hip() {
        let gpu = |node, name: &str, unique_id| Gpu {
            node,
            target: name.parse().unwrap(),
            unique_id,
        };
        let all = vec![
            gpu(1, "gfx90a", Some(0xabc)),
            gpu(2, "gfx1100", Some(0x1234_5678_9abc_def0)),
            gpu(3, "gfx942", None),
        ];
        let nodes = |v: Visible<'_>| -> Vec<u32> {
            visible(all.clone(), v).iter().map(|g| g.node).collect()
        };
        let rocr = |r| Visible {
            rocr: Some(r),
            hip: None,
        };
        assert_eq!(nodes(Visible::default()), [1, 2, 3]);
        assert_eq!(nodes(rocr("2,0")), [3, 1]);
        assert_eq!(nodes(rocr("GPU-123456789ABCDEF0,0")), [2, 1]);
        // The list ends at an entry that names nothing, or one named already.
        assert_eq!(nodes(rocr("1,7,0")), [2]);
        assert_eq!(nodes(rocr("1,1,0")), [2]);
        assert_eq!(nodes(rocr("")), Vec::<u32>::new());
        // HIP's list counts what ROCr's left, and takes no unique IDs.
        let both = Visible {
            rocr: Some("2,1"),
            hip: Some("1"),
        };
        assert_eq!(nodes(both), [2]);
        let hip = Visible {
            rocr: None,
            hip: Some("GPU-abc"),
        };
        assert_eq!(nodes(hip), Vec::<u32>::new());
    }
}
