//! `offload check`: whether a program and the libraries it loads have code for each GPU, as
//! a table or as JSON.

use std::io::Write;
use std::path::{Path, PathBuf};

use clap::Parser;

use crate::container::ld_so::Environment;
use crate::format::kpack_search;
use crate::format::runtime;
use crate::format::target_id::TargetIdBuf;
use crate::ops::check::{self, Device};
use crate::ops::gpus::{self, FeatureEnv};

const PROG: &str = "offload check";

/// Say, for each GPU and each bundle of a program or library and of every shared library it
/// loads, what the HIP runtime loads: native, generic or SPIR-V code, or nothing, and what the
/// runtime then does. For a binary split by kpack (HIPK wrappers, a `.rocm_kpack_ref`
/// section), each code object it asks for is searched for as the kpack loader searches,
/// `ROCM_KPACK_PATH`, `ROCM_KPACK_PATH_PREFIX` and `ROCM_KPACK_DISABLE` as set: the archive
/// and key each device finds, or every path searched and what was there. Exit status: 0 when
/// every device has code in every bundle and code object, 1 when a device is left without
/// code, 2 for a usage error, no GPU found, or a file that cannot be read.
#[derive(Debug, Parser)]
#[command(name = "offload check")]
struct Args {
    /// A device, in the runtime's order: a target ID (`gfx90a:sramecc+:xnack-`) or the
    /// runtime's full ISA name (`amdgcn-amd-amdhsa--gfx90a:sramecc+:xnack-`), or a CUDA
    /// compute capability (`sm_89`: checked against CUDA fat binaries). Repeat for
    /// several. Without it, the GPUs the kernel driver lists (KFD topology; the folder
    /// `OFFLOAD_KFD_TOPOLOGY` names, if set).
    #[arg(long = "device", value_name = "ISA")]
    devices: Vec<String>,
    /// Print one JSON object: the devices, every file with its bundles, the libraries not found.
    #[arg(long)]
    json: bool,
    /// The programs and shared libraries to check, and folders (their files; with -r, their
    /// trees).
    #[arg(required = true)]
    files: Vec<PathBuf>,
    #[command(flatten)]
    tree: super::inputs::TreeOpts,
    #[command(flatten)]
    general: super::general::GeneralOpts,
}

/// Runs `offload check` with `args` (without the program name) and returns the exit status.
pub fn run(args: &[String]) -> i32 {
    let args: Args = match super::parse_args(PROG, args) {
        Ok(a) => a,
        Err(code) => return code,
    };
    args.general.install_log();
    let stderr = std::io::stderr();
    let devices = match devices(&args.devices) {
        Ok(devices) => devices,
        Err(message) => {
            let _ = writeln!(stderr.lock(), "{PROG}: error: {message}");
            return 2;
        }
    };
    let (files, walk_failed) = args.tree.paths(PROG, &args.files);
    if walk_failed {
        return 2;
    }
    let roots: Vec<&Path> = files.iter().map(PathBuf::as_path).collect();
    let kpack_env = kpack_search::Environment::from_vars(|name| std::env::var(name).ok());
    let (report, errors) = check::check(
        &roots,
        &devices,
        &Environment::of_process(),
        &kpack_env,
        args.general.max_decompressed,
    );
    for e in &errors {
        let _ = writeln!(stderr.lock(), "{PROG}: error: {e}");
    }
    let text = if args.json {
        match serde_json::to_string_pretty(&report) {
            Ok(json) => json + "\n",
            Err(e) => {
                let _ = writeln!(stderr.lock(), "{PROG}: error: JSON: {e}");
                return 2;
            }
        }
    } else {
        check::text(&report)
    };
    if let Err(code) = super::print(PROG, &text) {
        return code;
    }
    if !errors.is_empty() {
        2
    } else {
        i32::from(!report.every_device_has_code)
    }
}

/// The devices named with `--device`, else those of the KFD topology; the error says what
/// is wrong or that none was found.
fn devices(named: &[String]) -> Result<Vec<Device>, String> {
    if !named.is_empty() {
        let targets = named
            .iter()
            .map(|text| runtime::parse_device(text).map(|t| (t, None)))
            .collect::<Result<Vec<(TargetIdBuf, Option<u32>)>, _>>()
            .map_err(|e| format!("--device: {e}"))?;
        return Ok(Device::list(&targets));
    }
    let folder = gpus::topology_folder();
    let sramecc = std::env::var("HSA_ENABLE_SRAMECC").ok();
    let xnack = std::env::var("HSA_XNACK").ok();
    let env = FeatureEnv {
        sramecc: sramecc.as_deref(),
        xnack: xnack.as_deref(),
    };
    let found = gpus::read_topology(&folder, env).unwrap_or_default();
    if found.is_empty() {
        return Err(format!(
            "no GPU found: the kernel driver lists none under '{}'; name the devices with \
             --device (e.g. --device gfx90a:sramecc+:xnack- --device gfx1101)",
            folder.display()
        ));
    }
    let targets: Vec<(TargetIdBuf, Option<u32>)> = found
        .into_iter()
        .map(|g| (g.target, Some(g.node)))
        .collect();
    Ok(Device::list(&targets))
}
