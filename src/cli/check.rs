//! `offload check`: whether a program and the libraries it loads have code for each GPU, as
//! a table or as JSON.

use std::io::Write;
use std::path::PathBuf;

use clap::Parser;

use crate::loads::runtime;
use crate::ops::check::{self, Device};
use crate::ops::support::found::FoundList;
use crate::ops::support::gpus::{self, FeatureEnv, Visible};
use crate::ops::support::inputs::Taken;
use crate::target::lists::{self, Requirement};
use crate::target::target_id::TargetIdBuf;

mod gate;
mod kpack;
mod report;
mod text;

use crate::cli::jobs::{self, Work};

const PROG: &str = "offload check";

/// Say, for each GPU and each bundle of a program or library and of every shared library it
/// loads, what the HIP runtime loads: native, generic or SPIR-V code, or nothing, and what the
/// runtime then does. For a binary split by kpack (HIPK wrappers, a `.rocm_kpack_ref`
/// section), each code object it asks for is searched for as the kpack loader searches,
/// `ROCM_KPACK_PATH`, `ROCM_KPACK_PATH_PREFIX` and `ROCM_KPACK_DISABLE` as set: the archive
/// and key each device finds, or every path searched and what was there. Files are read in
/// parallel (-j), each library once; for more than one file the report ends with `total:`
/// lines: the files and bundles, and per device how they load (not with --json). A PE
/// image (a Windows program or DLL) or a COFF object is checked alone, its own bundles:
/// the DLLs it loads are not searched for (the library search followed is ELF's), and a note
/// says so. A package (a wheel, a Debian or conda package, a tarball) is checked as the tree
/// it installs to: each ELF program and shared library member, with what it loads from the
/// package, named PACKAGE!member; a library the package does not hold is reported as not in
/// the package, never looked for on this machine. Device images embedded as data (a program's read-only data, which no runtime
/// registers: the program loads them itself) are reported apart, after the others. Exit
/// status: 0 when every device has code in every bundle and code object a runtime is given
/// (and, with --require-embedded, in every image embedded as data), 1 when a device is left
/// without code, 2 for a usage error, no GPU found, or a file that cannot be read.
#[derive(Debug, Parser)]
#[command(name = "offload check")]
pub(crate) struct Args {
    /// A device, in the runtime's order: a target ID (`gfx90a:sramecc+:xnack-`) or the
    /// runtime's full ISA name (`amdgcn-amd-amdhsa--gfx90a:sramecc+:xnack-`), or a CUDA
    /// compute capability (`sm_89`: checked against CUDA fat binaries). Repeat for
    /// several; AMD and CUDA devices may be named together, each checked by its runtime.
    /// Without it, the GPUs the kernel driver lists (KFD topology; the folder
    /// `OFFLOAD_KFD_TOPOLOGY` names, if set).
    #[arg(long = "device", value_name = "ISA")]
    devices: Vec<String>,
    /// Print one JSON object: the devices, every file with its bundles, the libraries not found
    /// (with --require, and the gate's verdicts under "required").
    #[arg(long)]
    json: bool,
    /// A release gate: every file with device code must carry code for each of these targets,
    /// else exit 1 naming the file. Our target IDs (gfx90a, sm_90), TORCH_CUDA_ARCH_LIST
    /// ("8.0;9.0+PTX": +PTX asks for PTX too), PYTORCH_ROCM_ARCH, CMAKE_CUDA_ARCHITECTURES
    /// ("80-real;90-virtual": 80 asks for code and PTX, -real code alone, -virtual PTX alone)
    /// and CMAKE_HIP_ARCHITECTURES ("gfx90a;gfx942"); repeatable. Prints a table of files
    /// against targets instead of the report; each target is checked as the one GPU of a machine.
    #[arg(long = "require", value_name = "TARGETS", conflicts_with = "devices")]
    require: Vec<String>,
    /// With --require: `text` (the default), `json` (as --json), or `github` (annotations a
    /// GitHub Actions log shows as errors on the files).
    #[arg(long, value_name = "text|json|github", requires = "require")]
    format: Option<String>,
    /// Let device images embedded as data (which the program loads itself, such as cubins
    /// for `cuModuleLoadData` in a library's read-only data) decide the exit status too: by
    /// default they are reported apart, and a device without code in them fails nothing.
    #[arg(long)]
    require_embedded: bool,
    /// The CUDA release of the machine's driver (`12.4`): PTX of a newer PTX ISA and entries
    /// compressed in a way it cannot inflate (zstd before 12.4) are noted per file and count as
    /// code a device is without (exit 1).
    #[arg(long, value_name = "CUDA")]
    driver: Option<crate::loads::cuda_driver::Version>,
    /// The programs, shared libraries and packages to check, and folders (their ELF programs
    /// and shared libraries; with -r, their trees').
    #[arg(required = true)]
    files: Vec<PathBuf>,
    #[command(flatten)]
    work: Work,
    #[command(flatten)]
    general: crate::cli::general::GeneralOpts,
}

crate::cli::subcommand::subcommand!(Args, PROG, run, general);

/// Runs `offload check` with `args` (without the program name) and returns the exit status.
fn run(args: Args) -> i32 {
    let stderr = std::io::stderr();
    let required = match required(&args.require) {
        Ok(required) => required,
        Err(message) => {
            let _ = writeln!(stderr.lock(), "{PROG}: error: --require: {message}");
            return 2;
        }
    };
    let devices = match devices(
        if required.is_empty() {
            &args.devices
        } else {
            &[]
        },
        !required.is_empty(),
    ) {
        Ok(devices) => devices,
        Err(message) => {
            let _ = writeln!(stderr.lock(), "{PROG}: error: {message}");
            return 2;
        }
    };
    // From folders, only what a loader loads: objects and archives are not checked.
    let (files, walk_failed) = args
        .work
        .tree
        .files_taking(PROG, &args.files, Taken::Loadable);
    if walk_failed {
        return 2;
    }
    let pool = match args.work.pool(PROG) {
        Ok(pool) => pool,
        Err(code) => return code,
    };
    for root in files.paths() {
        if let Some(note) = check::checked_alone_note(&root) {
            let _ = writeln!(std::io::stderr().lock(), "{PROG}: note: {note}");
        }
    }
    if required.is_empty() {
        let asked = report::Asked {
            prog: PROG,
            devices: &devices,
            json: args.json,
            several: jobs::several(&args.files, files.len()),
            driver: args.driver,
            require_embedded: args.require_embedded,
            max_decompressed: args.general.max_decompressed,
        };
        return report::run(&asked, &pool, &files);
    }
    gate_out(&args, &required, &pool, &files)
}

/// The requirements of every `--require` list, in order.
fn required(lists: &[String]) -> Result<Vec<Requirement>, String> {
    let mut all = Vec::new();
    for list in lists {
        all.extend(lists::requirements(list)?);
    }
    Ok(all)
}

/// The machines the gate checks, each a list of devices, and for each requirement the machine
/// and device it is judged on: the CUDA targets together (the driver loads for each device
/// alone), each AMD target alone (the HIP runtime gives an entry to one device of a machine
/// only, so two AMD targets on one machine would take each other's code).
fn machines(required: &[Requirement]) -> (Vec<Vec<String>>, Vec<(usize, usize)>) {
    let mut machines: Vec<Vec<String>> = Vec::new();
    let mut at = Vec::new();
    for r in required {
        let cuda = crate::loads::cuda::is_cuda_target(&r.target);
        let found = machines.iter().position(|m| {
            m.contains(&r.target)
                || (cuda && m.iter().all(|t| crate::loads::cuda::is_cuda_target(t)))
        });
        let k = found.unwrap_or_else(|| {
            machines.push(Vec::new());
            machines.len() - 1
        });
        let machine = &mut machines[k];
        let device = machine
            .iter()
            .position(|t| *t == r.target)
            .unwrap_or_else(|| {
                machine.push(r.target.clone());
                machine.len() - 1
            });
        at.push((k, device));
    }
    (machines, at)
}

/// Runs the gate of `--require` on `files` (a walk's list), a check of them on each machine
/// on `pool`, and prints it in the format asked for; the exit status: 2 when a file could not
/// be read, 1 when a required target is missing, else 0.
fn gate_out(
    args: &Args,
    required: &[Requirement],
    pool: &rayon::ThreadPool,
    files: &FoundList,
) -> i32 {
    let (machines, at) = machines(required);
    let mut devices_of = Vec::new();
    for machine in &machines {
        match devices(machine, true) {
            Ok(devices) => devices_of.push(devices),
            Err(message) => {
                let _ = writeln!(std::io::stderr().lock(), "{PROG}: error: {message}");
                return 2;
            }
        }
    }
    let format = if args.json {
        "json"
    } else {
        args.format.as_deref().unwrap_or("text")
    };
    // The errors of reading the files: said as they come, or kept for the annotations.
    let mut errors = gate::Errors::new(format == "github");
    let gated = gate::check(
        &gate::Asked {
            required,
            at: &at,
            devices_of: &devices_of,
            embedded: args.require_embedded,
            max_decompressed: args.general.max_decompressed,
        },
        pool,
        files,
        &mut errors,
    );
    let gate = match gated.and_then(|gate| errors.seal().map(|()| gate)) {
        Ok(gate) => gate,
        Err(e) => {
            let _ = writeln!(
                std::io::stderr().lock(),
                "{PROG}: error: {}",
                crate::error::io_message(&e)
            );
            return 2;
        }
    };
    let stdout = std::io::stdout();
    let mut out = std::io::BufWriter::with_capacity(1 << 16, stdout.lock());
    let written = match format {
        "text" => gate::table(&gate, errors.count, &mut out),
        "github" => gate::github(&gate, &errors, &mut out),
        "json" => gate::json(&gate, &mut out),
        other => {
            let _ = writeln!(
                std::io::stderr().lock(),
                "{PROG}: error: --format {other}: text, json or github"
            );
            return 2;
        }
    };
    if let Err(e) = written.and_then(|()| out.flush()) {
        return crate::cli::stdout_failed(PROG, &mut std::io::stderr().lock(), &e);
    }
    if errors.count > 0 {
        2
    } else {
        i32::from(gate.failures > 0)
    }
}

/// The devices named with `--device` (or, `only_named`, for the gate), else those of the KFD
/// topology; the error says what is wrong or that none was found.
fn devices(named: &[String], only_named: bool) -> Result<Vec<Device>, String> {
    if !named.is_empty() || only_named {
        let targets = named
            .iter()
            .map(|text| runtime::parse_device(text).map(|t| (t, None)))
            .collect::<Result<Vec<(TargetIdBuf, Option<u32>)>, _>>()
            .map_err(|e| format!("--device: {e}"))?;
        return Ok(Device::list(&targets));
    }
    let folder = gpus::topology_folder();
    let var = |name| std::env::var(name).ok();
    let (sramecc, xnack) = (var("HSA_ENABLE_SRAMECC"), var("HSA_XNACK"));
    let env = FeatureEnv {
        sramecc: sramecc.as_deref(),
        xnack: xnack.as_deref(),
        noretry: gpus::noretry(&folder),
    };
    let rocr = var("ROCR_VISIBLE_DEVICES");
    let hip = var("HIP_VISIBLE_DEVICES").or_else(|| var("CUDA_VISIBLE_DEVICES"));
    let shown = Visible {
        rocr: rocr.as_deref(),
        hip: hip.as_deref(),
    };
    // No topology at all is "no GPU"; one that cannot be read (a properties file that is a
    // FIFO, a device or too large) is named.
    let listed = gpus::read_topology(&folder, env).map_err(|e| e.to_string())?;
    let any = !listed.is_empty();
    let found = gpus::visible(listed, shown);
    if any && found.is_empty() {
        return Err(format!(
            "no GPU visible: the kernel driver lists some under '{}', but              ROCR_VISIBLE_DEVICES, HIP_VISIBLE_DEVICES or CUDA_VISIBLE_DEVICES hides them all",
            crate::io::shown(&folder)
        ));
    }
    if found.is_empty() {
        return Err(format!(
            "no GPU found: the kernel driver lists none under '{}'; name the devices with \
             --device (e.g. --device gfx90a:sramecc+:xnack- --device gfx1101)",
            crate::io::shown(&folder)
        ));
    }
    let targets: Vec<(TargetIdBuf, Option<u32>)> = found
        .into_iter()
        .map(|g| (g.target, Some(g.node)))
        .collect();
    Ok(Device::list(&targets))
}
