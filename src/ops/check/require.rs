//! `check --require`: a release gate. Each required target (from the lists users write, see
//! [`crate::target::lists`]) is checked against every file of the report: an AMD target must
//! load code (native or generic) from every bundle and kpack code object of a file; a CUDA
//! target asked for its code must load a cubin (its own SM's, or one of an earlier minor of its
//! major) from every CUDA fat binary, and one asked for PTX must find PTX it can compile.
//! rocBLAS and hipBLASLt must also have a kernel catalogue for an AMD target's processor. A
//! file with no device code for the target's runtime is not judged.

use std::path::PathBuf;

use serde::Serialize;

use crate::format::cuda_fatbin::EntryKind;
use crate::loads::cuda;
use crate::ops::check::{FileReport, Report};
use crate::target::lists::Requirement;

/// One file's verdict on one required target.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Verdict {
    /// The requirement's index.
    pub requirement: usize,
    /// How the target loads the file's code: `native`, `generic`, `forward` (a cubin of an
    /// earlier minor), `ptx`, `native+ptx`..., `missing`, or `-` when the file has no device code
    /// of the target's runtime.
    pub loads: String,
    /// Whether the requirement holds.
    pub ok: bool,
    /// Why it does not.
    pub why: Option<String>,
}

/// One file of the gate.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Row {
    /// The file.
    #[serde(serialize_with = "crate::ops::support::names::text")]
    pub path: PathBuf,
    /// Its verdict on each requirement, in order.
    pub verdicts: Vec<Verdict>,
}

/// The gate: the requirements, and each file with device code judged against them.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Gate {
    /// The requirements, as written and as checked.
    pub required: Vec<RequiredTarget>,
    /// Every file with device code, in load order.
    pub files: Vec<Row>,
    /// How many verdicts fail.
    pub failures: usize,
}

/// A requirement as the JSON shows it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct RequiredTarget {
    /// As written.
    pub written: String,
    /// The device it is checked as.
    pub target: String,
    /// Code it loads without compiling is required.
    pub code: bool,
    /// PTX is required.
    pub ptx: bool,
}

/// Judges every file against `requirements`, requirement `k` on the report and device
/// `runs[k]` (each target checked as the GPU of a machine of its own, the reports of the same
/// files); images embedded as data count when `embedded` says so.
pub fn gate(runs: &[(&Report, usize)], requirements: &[Requirement], embedded: bool) -> Gate {
    let mut files = Vec::new();
    let mut failures = 0;
    let Some((first, _)) = runs.first() else {
        return Gate {
            required: Vec::new(),
            files,
            failures,
        };
    };
    for (n, file) in first.files.iter().enumerate() {
        if file.bundles.is_empty() && file.kpack.is_none() && file.catalogues.is_empty() {
            continue;
        }
        let verdicts: Vec<Verdict> = requirements
            .iter()
            .zip(runs)
            .enumerate()
            .map(|(k, (r, (report, device)))| {
                // The same files in the same order; found by path should an order differ.
                let same = report
                    .files
                    .get(n)
                    .filter(|f| f.path == file.path)
                    .or_else(|| report.files.iter().find(|f| f.path == file.path))
                    .unwrap_or(file);
                verdict(same, k, r, *device, embedded)
            })
            .collect();
        failures += verdicts.iter().filter(|v| !v.ok).count();
        files.push(Row {
            path: file.path.clone(),
            verdicts,
        });
    }
    Gate {
        required: requirements
            .iter()
            .map(|r| RequiredTarget {
                written: r.written.clone(),
                target: r.target.clone(),
                code: r.code,
                ptx: r.ptx,
            })
            .collect(),
        files,
        failures,
    }
}

/// The verdict of `file` on requirement `k`, `r`, checked as device `device`.
fn verdict(file: &FileReport, k: usize, r: &Requirement, device: usize, embedded: bool) -> Verdict {
    let bundles: Vec<_> = file
        .bundles
        .iter()
        .filter(|b| embedded || !b.embedded)
        .filter_map(|b| b.loads.iter().find(|l| l.device == device).map(|l| (b, l)))
        .filter(|(_, l)| l.loads != "other")
        .collect();
    let kpack: Vec<&str> = file
        .kpack
        .iter()
        .flat_map(|k| &k.code_objects)
        .filter_map(|co| co.loads.iter().find(|l| l.device == device))
        .map(|l| l.loads)
        .collect();
    let mut ways: Vec<&str> = bundles
        .iter()
        .map(|(_, l)| l.loads)
        .chain(kpack.iter().copied())
        .collect();
    let judged = ways.len();
    let fail = |why: String| Verdict {
        requirement: k,
        loads: "missing".to_string(),
        ok: false,
        why: Some(why),
    };
    if let Some(why) = no_catalogue(file, device, r) {
        return fail(why);
    }
    if judged == 0 {
        return Verdict {
            requirement: k,
            loads: "-".to_string(),
            ok: true,
            why: None,
        };
    }
    let is_cuda = cuda::is_cuda_target(&r.target);
    let nothing = ways.iter().filter(|w| **w == "nothing").count();
    if r.code {
        let without: usize = if is_cuda {
            ways.iter()
                .filter(|w| !matches!(**w, "native" | "forward"))
                .count()
        } else {
            nothing
        };
        if without > 0 {
            let what = if is_cuda {
                "no cubin it loads"
            } else {
                "no code it loads"
            };
            return fail(format!("{what} in {without} of {judged} {}", units(file)));
        }
    }
    if r.ptx {
        let missing = bundles
            .iter()
            .filter(|(b, _)| !b.targets.iter().any(|t| ptx_serves(t, &r.target)))
            .count();
        if missing > 0 {
            let virtual_arch = r.target.replacen("sm_", "compute_", 1);
            return fail(format!(
                "no PTX for {virtual_arch} or earlier in {missing} of {judged} {}",
                units(file)
            ));
        }
    }
    ways.sort_unstable();
    ways.dedup();
    let mut loads = if ways.contains(&"generic") {
        "generic"
    } else if ways.contains(&"forward") {
        "forward"
    } else if ways.contains(&"ptx") && !ways.contains(&"native") {
        "ptx"
    } else {
        ways.first().copied().unwrap_or("-")
    }
    .to_string();
    if r.ptx && r.code && is_cuda && loads != "ptx" {
        loads.push_str("+ptx");
    } else if r.ptx && !r.code {
        loads = "ptx".to_string();
    }
    Verdict {
        requirement: k,
        loads,
        ok: true,
        why: None,
    }
}

/// Why rocBLAS or hipBLASLt (`file`) fails an AMD target `r` checked as `device`: its kernel
/// catalogue has nothing for the target's processor.
fn no_catalogue(file: &FileReport, device: usize, r: &Requirement) -> Option<String> {
    if cuda::is_cuda_target(&r.target) {
        return None;
    }
    let missing = file
        .catalogues
        .iter()
        .flat_map(|c| &c.devices)
        .find(|d| d.device == device && !d.ok)?
        .missing
        .as_deref()?;
    Some(format!("no Tensile catalogue ({missing})"))
}

/// What a file's units are called in a verdict.
fn units(file: &FileReport) -> &'static str {
    if file.kpack.is_some() && file.bundles.is_empty() {
        "code objects"
    } else {
        "fat binaries or bundles"
    }
}

/// Whether the entry `entry` of a CUDA fat binary is PTX a device `sm` can compile, by the
/// driver's rule ([`cuda::Sm::runs_on`]).
fn ptx_serves(entry: &str, sm: &str) -> bool {
    match (cuda::target_of_name(entry), cuda::Sm::parse(sm)) {
        (Some((kind @ EntryKind::Ptx, ptx)), Some(device)) => ptx.runs_on(kind, device),
        _ => false,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ptx_serves_its_own_and_later_devices() {
        assert!(ptx_serves("compute_80", "sm_90"));
        assert!(ptx_serves("compute_90", "sm_90a"));
        assert!(!ptx_serves("compute_100", "sm_90"));
        assert!(ptx_serves("compute_90a", "sm_90a"));
        assert!(!ptx_serves("compute_90a", "sm_100"));
        assert!(!ptx_serves("sm_90", "sm_90"));
    }
}
