//! `check --require`: a release gate. Each required target (from the lists users write, see
//! [`crate::target::lists`]) is checked against every file of the report: an AMD target must
//! load code (native or generic) from every bundle and kpack code object of a file; a CUDA
//! target asked for its code must load a cubin (its own SM's, or one of an earlier minor of its
//! major) from every CUDA fat binary, and one asked for PTX must find PTX it can compile.
//! rocBLAS and hipBLASLt must also have a kernel catalogue for an AMD target's processor. A
//! file with no device code for the target's runtime is not judged.

use std::io;
use std::os::unix::ffi::OsStrExt;
use std::path::{Path, PathBuf};

use rayon::prelude::*;
use serde::Serialize;

use super::package;
use crate::error::Error;
use crate::format::cuda_fatbin::EntryKind;
use crate::loads::cuda;
use crate::ops::check::{CatalogueEnvironment, Catalogues, Device, FileReport, NotFound, Receiver};
use crate::ops::support::found::{
    owned, put_bytes, put_number, take_bytes, take_number, FoundList, Records,
};
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

/// The gate made a file at a time: each machine's check ([`super::check_each`]) hands its
/// files to [`Gating::machine`]'s receiver, which judges each file with device code on the
/// requirements of that machine and keeps its verdicts as a record (in an unnamed temporary
/// file past a few pages, [`Records`]); [`Gating::finish`] puts the machines' verdicts of each
/// file side by side. Nothing of a file is held in memory once it is judged.
pub struct Gating<'r> {
    requirements: &'r [Requirement],
    /// For each requirement, the machine and the device of it that it is judged on.
    at: Vec<(usize, usize)>,
    embedded: bool,
    /// Each machine's verdicts, a file a record ([`put_row`]).
    machines: Vec<Records>,
}

impl<'r> Gating<'r> {
    /// A gate of `requirements`, requirement `k` judged on device `at[k].1` of machine
    /// `at[k].0` (each target checked as the GPU of a machine of its own); images embedded as
    /// data count when `embedded` says so.
    pub fn new(requirements: &'r [Requirement], at: &[(usize, usize)], embedded: bool) -> Self {
        let count = at.iter().map(|&(m, _)| m + 1).max().unwrap_or(0);
        Gating {
            requirements,
            at: at.to_vec(),
            embedded,
            machines: std::iter::repeat_with(Records::default)
                .take(count)
                .collect(),
        }
    }

    /// The receiver of machine `machine`'s check, of the devices `devices`: each file is given
    /// its kernel catalogues (the variables read from `env`) and judged; the errors go to
    /// `errors` from the first machine's check only (every machine reads the same files).
    pub fn machine<'g>(
        &'g mut self,
        machine: usize,
        devices: &[Device],
        env: &'g CatalogueEnvironment,
        errors: &'g mut dyn FnMut(Error) -> io::Result<()>,
    ) -> MachineGate<'g, 'r> {
        MachineGate {
            gating: self,
            machine,
            catalogues: Catalogues::new(devices, env),
            errors,
        }
    }

    /// Checks `packages` (each the tree it installs to) on every machine of `devices_of`,
    /// each package read once for all of them (a compressed package costs its inflating each
    /// time), a few at a time on `pool`; each machine's files judged as its receiver judges
    /// them ([`Gating::machine`]), after the files of that machine's check.
    pub fn packages(
        &mut self,
        pool: &rayon::ThreadPool,
        packages: &[PathBuf],
        devices_of: &[Vec<Device>],
        env: &CatalogueEnvironment,
        max_decompressed: u64,
        errors: &mut dyn FnMut(Error) -> io::Result<()>,
    ) -> io::Result<()> {
        for chunk in packages.chunks(PACKAGES_AT_ONCE) {
            let checked: Vec<Vec<package::PackageCheck>> = pool.install(|| {
                (chunk.par_iter())
                    .map(|p| package::check_package(p, devices_of, max_decompressed))
                    .collect()
            });
            for checks in checked {
                for (machine, (check, devices)) in checks.into_iter().zip(devices_of).enumerate() {
                    let mut gate = self.machine(machine, devices, env, errors);
                    for file in check.files {
                        gate.file(file)?;
                    }
                    for e in check.errors {
                        gate.error(e)?;
                    }
                }
            }
        }
        Ok(())
    }

    /// The verdicts of `file` on the requirements judged on `machine`, kept. Whether a file
    /// has device code is the first machine's to say (a machine of CUDA devices sees no
    /// bundles in a HIP file, say): the others keep every file.
    fn add(&mut self, machine: usize, file: &FileReport) -> io::Result<()> {
        let no_code = file.bundles.is_empty() && file.kpack.is_none() && file.catalogues.is_empty();
        if no_code && machine == 0 {
            return Ok(());
        }
        let verdicts: Vec<Verdict> = (self.requirements.iter().zip(&self.at).enumerate())
            .filter(|(_, (_, at))| at.0 == machine)
            .map(|(k, (r, at))| verdict(file, k, r, at.1, self.embedded))
            .collect();
        let Some(records) = self.machines.get_mut(machine) else {
            return Ok(());
        };
        let mut record = Vec::new();
        put_row(&mut record, &file.path, &verdicts);
        records.append(&record)
    }

    /// The gate: every file the first machine judged, in its order, with its verdicts on
    /// every machine, each file's found again in the others' records by its path (the same
    /// files in the same order, unless the tree changed between the checks: a file not found
    /// again fails the requirements of that machine).
    pub fn finish(mut self) -> io::Result<Gate> {
        for records in &mut self.machines {
            records.seal()?;
        }
        let mut rows = Records::default();
        let (mut files, mut failures) = (0, 0);
        let mut after: Vec<&[u8]> = self.machines.iter().map(Records::bytes).collect();
        let mut first = self.machines.first().map_or(&[][..], Records::bytes);
        while let Some((path, mut verdicts, rest)) = take_row(first) {
            first = rest;
            for rest in after.iter_mut().skip(1) {
                verdicts.extend(found_again(rest, &path));
            }
            let row = self.completed(path, verdicts);
            failures += row.verdicts.iter().filter(|v| !v.ok).count();
            files += 1;
            let mut record = Vec::new();
            put_row(&mut record, &row.path, &row.verdicts);
            rows.append(&record)?;
        }
        rows.seal()?;
        Ok(Gate {
            required: (self.requirements.iter())
                .map(|r| RequiredTarget {
                    written: r.written.clone(),
                    target: r.target.clone(),
                    code: r.code,
                    ptx: r.ptx,
                })
                .collect(),
            rows,
            files,
            failures,
        })
    }

    /// The row of `path` with `verdicts` in the requirements' order, a failing one for each
    /// requirement its file was not judged on.
    fn completed(&self, path: PathBuf, verdicts: Vec<Verdict>) -> Row {
        let verdicts = (0..self.requirements.len())
            .map(|k| {
                let found = verdicts.iter().find(|v| v.requirement == k).cloned();
                found.unwrap_or_else(|| Verdict {
                    requirement: k,
                    loads: "missing".to_string(),
                    ok: false,
                    why: Some("not found again when checked for this target".to_string()),
                })
            })
            .collect();
        Row { path, verdicts }
    }
}

/// The verdicts of the file at `path` in the records `rest`: the next record's (or a later
/// one's, should a file have been left out), `rest` moved past it; none when no record is
/// of that path.
fn found_again(rest: &mut &[u8], path: &Path) -> Vec<Verdict> {
    let mut ahead = *rest;
    while let Some((other, verdicts, after)) = take_row(ahead) {
        ahead = after;
        if other == path {
            *rest = after;
            return verdicts;
        }
    }
    Vec::new()
}

/// How many packages are checked at once: each holds the reports of its members on every
/// machine until they are judged.
const PACKAGES_AT_ONCE: usize = 8;

/// The packages among `files` (a walk's list), in order, and the list of the other files:
/// `None` when there is no package, the other files being `files`. The gate checks a package
/// once for all its machines ([`Gating::packages`]), the other files once for each.
pub fn apart_packages(files: &FoundList) -> io::Result<(Option<FoundList>, Vec<PathBuf>)> {
    let packages: Vec<PathBuf> = files.paths().filter(|p| package::is_package(p)).collect();
    if packages.is_empty() {
        return Ok((None, packages));
    }
    let mut others = FoundList::new();
    for found in files.iter().filter(|f| !packages.contains(&f.path)) {
        others.push_found(&found)?;
    }
    others.seal()?;
    Ok((Some(others), packages))
}

/// A machine's check handed over to a [`Gating`] (see [`Gating::machine`]).
pub struct MachineGate<'g, 'r> {
    gating: &'g mut Gating<'r>,
    machine: usize,
    catalogues: Catalogues<'g>,
    errors: &'g mut dyn FnMut(Error) -> io::Result<()>,
}

impl Receiver for MachineGate<'_, '_> {
    fn error(&mut self, error: Error) -> io::Result<()> {
        if self.machine == 0 {
            (self.errors)(error)?;
        }
        Ok(())
    }

    fn file(&mut self, mut file: FileReport) -> io::Result<()> {
        self.catalogues.add(&mut file);
        self.gating.add(self.machine, &file)
    }

    fn not_found(&mut self, _missing: NotFound) -> io::Result<()> {
        Ok(())
    }
}

/// The gate: the requirements, and each file with device code judged against them, kept
/// out of memory and read back a row at a time.
pub struct Gate {
    /// The requirements, as written and as checked.
    pub required: Vec<RequiredTarget>,
    /// Every file with device code, in load order ([`put_row`]).
    rows: Records,
    /// How many files.
    pub files: usize,
    /// How many verdicts fail.
    pub failures: usize,
}

impl Gate {
    /// Every file with device code, in load order, with its verdicts.
    pub fn rows(&self) -> impl Iterator<Item = Row> + '_ {
        let mut bytes = self.rows.bytes();
        std::iter::from_fn(move || {
            let (path, verdicts, rest) = take_row(bytes)?;
            bytes = rest;
            Some(Row { path, verdicts })
        })
    }
}

/// Appends to `record` the row of the file at `path` with `verdicts`: the path, the number
/// of verdicts, then each one's requirement, whether it holds, how it loads and why not.
fn put_row(record: &mut Vec<u8>, path: &Path, verdicts: &[Verdict]) {
    put_bytes(record, path.as_os_str().as_bytes());
    put_number(record, verdicts.len());
    for v in verdicts {
        put_number(record, v.requirement);
        record.push(u8::from(v.ok));
        put_bytes(record, v.loads.as_bytes());
        record.push(u8::from(v.why.is_some()));
        put_bytes(record, v.why.as_deref().unwrap_or_default().as_bytes());
    }
}

/// The row at the start of `bytes` ([`put_row`]'s) and the bytes after it.
fn take_row(bytes: &[u8]) -> Option<(PathBuf, Vec<Verdict>, &[u8])> {
    let text = |b: &[u8]| String::from_utf8_lossy(b).into_owned();
    let (path, rest) = take_bytes(bytes)?;
    let (count, mut rest) = take_number(rest)?;
    let mut verdicts = Vec::new();
    for _ in 0..count {
        let (requirement, after) = take_number(rest)?;
        let (&ok, after) = after.split_first()?;
        let (loads, after) = take_bytes(after)?;
        let (&has_why, after) = after.split_first()?;
        let (why, after) = take_bytes(after)?;
        verdicts.push(Verdict {
            requirement,
            loads: text(loads),
            ok: ok != 0,
            why: (has_why != 0).then(|| text(why)),
        });
        rest = after;
    }
    Some((owned(path), verdicts, rest))
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
    use crate::format::bundle;
    use crate::loads::kpack_search;
    use crate::ops::check::Environment;

    /// The reports of files of `targets` (one bundle each) checked for `device`.
    fn reports(dir: &Path, targets: &[&str], device: &str) -> Vec<FileReport> {
        let paths: Vec<PathBuf> = (targets.iter().enumerate())
            .map(|(k, target)| {
                let path = dir.join(format!("k{k}.hipfb"));
                let entry = format!("hipv4-amdgcn-amd-amdhsa--{target}");
                let entries: [(&str, &[u8]); 2] =
                    [("host-x86_64-unknown-linux-gnu-", b""), (&entry, b"code")];
                std::fs::write(&path, bundle::to_vec(&entries, 8)).unwrap();
                path
            })
            .collect();
        let roots: Vec<&Path> = paths.iter().map(PathBuf::as_path).collect();
        let devices = Device::list(&[(device.parse().unwrap(), None)]);
        let max = crate::format::ccob::DEFAULT_MAX_DECOMPRESSED;
        let (env, kpack_env) = (Environment::default(), kpack_search::Environment::default());
        let (report, errors) = super::super::check(&roots, &devices, &env, &kpack_env, max, &());
        assert!(errors.is_empty(), "{errors:?}");
        report.files
    }

    #[test]
    fn each_machine_judges_its_targets_and_the_rows_put_them_side_by_side() {
        let dir = tempfile::tempdir().unwrap();
        let requirements = crate::target::lists::requirements("gfx90a;gfx1100").unwrap();
        let on_gfx90a = reports(dir.path(), &["gfx90a", "gfx1100", "gfx90a"], "gfx90a");
        let on_gfx1100 = reports(dir.path(), &["gfx90a", "gfx1100", "gfx90a"], "gfx1100");
        let mut gating = Gating::new(&requirements, &[(0, 0), (1, 0)], false);
        for file in &on_gfx90a {
            gating.add(0, file).unwrap();
        }
        // The second machine's check left the first file out (the tree changed between).
        for file in on_gfx1100.iter().skip(1) {
            gating.add(1, file).unwrap();
        }
        let gate = gating.finish().unwrap();
        let rows: Vec<(String, Vec<(bool, String)>)> = gate
            .rows()
            .map(|row| {
                let name = row.path.file_name().unwrap().to_string_lossy().into_owned();
                let verdicts = row.verdicts.into_iter().map(|v| (v.ok, v.loads)).collect();
                (name, verdicts)
            })
            .collect();
        let verdict = |ok, loads: &str| (ok, loads.to_string());
        assert_eq!(
            rows,
            [
                (
                    "k0.hipfb".into(),
                    vec![verdict(true, "native"), verdict(false, "missing")]
                ),
                (
                    "k1.hipfb".into(),
                    vec![verdict(false, "missing"), verdict(true, "native")]
                ),
                (
                    "k2.hipfb".into(),
                    vec![verdict(true, "native"), verdict(false, "missing")]
                ),
            ]
        );
        assert_eq!((gate.files, gate.failures), (3, 3));
        let first = gate.rows().next().unwrap();
        assert_eq!(
            first.verdicts[1].why.as_deref(),
            Some("not found again when checked for this target")
        );
        let last = gate.rows().nth(2).unwrap();
        assert_eq!(
            last.verdicts[1].why.as_deref(),
            Some("no code it loads in 1 of 1 fat binaries or bundles")
        );
        assert_eq!(gate.required[1].written, "gfx1100");
    }

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
