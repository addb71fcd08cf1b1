//! The machine's GPUs as the HIP runtime sees them: the nodes the kernel driver (KFD) lists
//! under `/sys/class/kfd/kfd/topology/nodes`, in node order, each named by its full ISA as
//! ROCr builds it.
//!
//! A node's `gfx_target_version` is `major * 10000 + minor * 100 + stepping` (0 for a CPU);
//! the processor is `gfx` + major in decimal + minor and stepping in hexadecimal (90010:
//! `gfx90a`). Its features are those ROCr gives the agent: `sramecc` (for processors that
//! have it) from `HSA_ENABLE_SRAMECC` (`1`: on, `0`: off), else from the node's capability bit
//! `HSA_CAP_SRAM_EDCSUPPORTED`; `xnack` (for processors that have it) on only when
//! `HSA_XNACK=1`: without it the driver's per-process default holds, which is off unless the
//! kernel was booted with `amdgpu.noretry=0` (name such a device with `--device`).

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
}

/// What ROCr reads from the environment for a GPU's features.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct FeatureEnv<'a> {
    /// `HSA_ENABLE_SRAMECC`.
    pub sramecc: Option<&'a str>,
    /// `HSA_XNACK`.
    pub xnack: Option<&'a str>,
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
            id.push_str(if env.xnack == Some("1") {
                ":xnack+"
            } else {
                ":xnack-"
            });
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
            gpus.push(Gpu { node, target });
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
        };
        assert_eq!(id(mi210, forced).unwrap(), "gfx90a:sramecc-:xnack+");
        assert_eq!(id("gfx_target_version 110001\n", none).unwrap(), "gfx1101");
        assert_eq!(id("gfx_target_version 0\ncpu_cores_count 16\n", none), None);
        assert_eq!(id("simd_count 0\n", none), None);
    }
}
