//! A check of many files (a tree's) whose report is handed over a part at a time, as it is
//! made, in the order of [`super::check`]'s: the errors of finding what each file loads, then
//! each file checked (in load order, the members of packages last) with its errors, and the
//! libraries found nowhere. What stays of a file once it is handed over is a hash of its real
//! path (16 bytes), to check each library once however many files load it, in a table that
//! moves into a mapped temporary file once it is large ([`KeySet`]); the files still to check
//! wait in an unnamed temporary file past a few pages ([`Records`]).

use std::ffi::OsStr;
use std::os::unix::ffi::OsStrExt;
use std::path::{Path, PathBuf};

use rayon::prelude::*;

use super::{check_file, load_order, package, Device, FileReport, LoadedFile, NotFound};
use crate::error::Error;
use crate::format::md5::Md5;
use crate::loads::kpack_search;
use crate::loads::runtime;
use crate::ops::support::found::{FoundList, Records};
use crate::ops::support::keys::KeySet;
use crate::ops::support::progress::Progress;
use crate::target::target_id::TargetIdBuf;

use super::Environment;

/// How many files are worked on at once: enough to keep every thread busy, few enough that
/// their reports take little memory.
const CHUNK: usize = 256;

/// Where the parts of a report go as they are made.
pub trait Receiver {
    /// An error: a file that cannot be read, or damage found in it.
    fn error(&mut self, error: Error) -> std::io::Result<()>;
    /// A file checked.
    fn file(&mut self, file: FileReport) -> std::io::Result<()>;
    /// A library found nowhere.
    fn not_found(&mut self, missing: NotFound) -> std::io::Result<()>;
}

/// What the whole check found, beside the parts handed over: the kernel catalogues
/// ([`super::Catalogues`]) and a driver's limits are the caller's to weigh in.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Verdict {
    /// [`super::Report::every_device_has_code`].
    pub every_device_has_code: bool,
    /// [`super::Report::embedded_have_code`].
    pub embedded_have_code: bool,
}

/// [`super::check`] of `roots` (a walk's list, or any made with [`FoundList::push`]), each
/// part of its report handed to `receiver` as it is made:
/// the same parts in the same order, the files read a chunk at a time on `pool`, `progress`
/// told of each file checked. The error is `receiver`'s: the check stops there. When the
/// table of the real paths found cannot grow (its temporary file cannot be made), that is
/// an error handed to `receiver`, and the check stops there too, with nothing more checked.
#[allow(clippy::too_many_arguments)]
pub fn check_each(
    pool: &rayon::ThreadPool,
    roots: &FoundList,
    devices: &[Device],
    env: &Environment,
    kpack_env: &kpack_search::Environment,
    max_decompressed: u64,
    progress: &dyn Progress,
    receiver: &mut dyn Receiver,
) -> std::io::Result<Verdict> {
    // Sized for the files named, before any is checked: a table that cannot be made is an
    // error then.
    let mut pending = Pending::default();
    match KeySet::with_capacity(roots.len()) {
        Ok(seen) => pending.seen = seen,
        Err(e) => return seen_failed(&e, receiver),
    }
    let mut roots = roots.paths();
    loop {
        let chunk: Vec<PathBuf> = roots.by_ref().take(CHUNK).collect();
        if chunk.is_empty() {
            break;
        }
        pending.find(pool, &chunk, env, receiver)?;
        if let Some(e) = pending.failed.take() {
            return seen_failed(&e, receiver);
        }
    }
    pending.objects.seal()?;
    pending.packages.seal()?;
    let targets: Vec<TargetIdBuf> = devices
        .iter()
        .filter_map(|d| runtime::parse_device(&d.target_id).ok())
        .collect();
    let mut verdict = Verdict {
        every_device_has_code: true,
        embedded_have_code: true,
    };
    progress.start(pending.count as u64);
    let mut objects = fields(pending.objects.bytes());
    loop {
        let chunk: Vec<LoadedFile> = std::iter::from_fn(|| decode(&mut objects))
            .take(CHUNK)
            .collect();
        if chunk.is_empty() {
            break;
        }
        let checked: Vec<(Option<FileReport>, Vec<Error>)> = pool.install(|| {
            (chunk.par_iter())
                .map(|object| {
                    let checked =
                        check_file(object, devices, &targets, kpack_env, max_decompressed);
                    progress.advance(1);
                    checked
                })
                .collect()
        });
        for (file, problems) in checked {
            for problem in problems {
                receiver.error(problem)?;
            }
            if let Some(file) = file {
                verdict.add(&file);
                receiver.file(file)?;
            }
        }
    }
    progress.finish();
    check_packages(
        pool,
        &pending.packages,
        devices,
        max_decompressed,
        receiver,
        &mut verdict,
    )?;
    Ok(verdict)
}

/// The end of a check whose table of the real paths found cannot be made or grow: the error
/// handed to `receiver`, nothing checked then.
fn seen_failed(e: &std::io::Error, receiver: &mut dyn Receiver) -> std::io::Result<Verdict> {
    let e = crate::io::io_message(e);
    receiver.error(Error::msg(format!(
        "the real paths of the files found: {e}"
    )))?;
    Ok(Verdict {
        every_device_has_code: false,
        embedded_have_code: false,
    })
}

/// The packages of `packages` (a path a record) checked a chunk at a time, their parts
/// handed to `receiver` in order, a package's after another's.
fn check_packages(
    pool: &rayon::ThreadPool,
    packages: &Records,
    devices: &[Device],
    max_decompressed: u64,
    receiver: &mut dyn Receiver,
    verdict: &mut Verdict,
) -> std::io::Result<()> {
    let machines = [devices.to_vec()];
    let mut paths = fields(packages.bytes()).map(path_of);
    loop {
        let chunk: Vec<PathBuf> = paths.by_ref().take(CHUNK).collect();
        if chunk.is_empty() {
            break;
        }
        let checked: Vec<Vec<package::PackageCheck>> = pool.install(|| {
            (chunk.par_iter())
                .map(|p| package::check_package(p, &machines, max_decompressed))
                .collect()
        });
        for check in checked.into_iter().filter_map(|c| c.into_iter().next()) {
            for file in check.files {
                verdict.add(&file);
                receiver.file(file)?;
            }
            for missing in check.not_found {
                receiver.not_found(missing)?;
            }
            for e in check.errors {
                receiver.error(e)?;
            }
        }
    }
    Ok(())
}

impl Verdict {
    /// Folds in what `file` says.
    fn add(&mut self, file: &FileReport) {
        let loads = |embedded: bool| {
            (file.bundles.iter())
                .filter(|b| b.embedded == embedded)
                .all(|b| b.first_without_code.is_none())
        };
        let kpack_loads = (file.kpack.iter())
            .flat_map(|k| &k.code_objects)
            .flat_map(|co| &co.loads)
            .all(|l| l.loads != "nothing");
        self.every_device_has_code &= loads(false) && kpack_loads;
        self.embedded_have_code &= loads(true);
    }
}

/// The files still to check, and the packages, each once, in order.
#[derive(Default)]
struct Pending {
    /// The real paths of the files found so far (their MD5s).
    seen: KeySet,
    /// The error of `seen` when it could not grow: nothing more is found then.
    failed: Option<std::io::Error>,
    /// The files to check ([`encode`]).
    objects: Records,
    /// How many.
    count: usize,
    /// The packages, checked last (a path a record).
    packages: Records,
}

impl Pending {
    /// Finds what each of `roots` loads (on `pool`): the files not found
    /// before kept to check, the libraries found nowhere and the errors handed over. Stops
    /// at an error of `seen`, kept in `failed`.
    fn find(
        &mut self,
        pool: &rayon::ThreadPool,
        roots: &[PathBuf],
        env: &Environment,
        receiver: &mut dyn Receiver,
    ) -> std::io::Result<()> {
        // A package is the tree it installs to, searched apart from the file system.
        let orders: Vec<Option<crate::error::Result<super::LoadOrder>>> = pool.install(|| {
            (roots.par_iter())
                .map(|root| (!package::is_package(root)).then(|| load_order(root, env)))
                .collect()
        });
        for (root, order) in roots.iter().zip(orders) {
            let order = match order {
                None => {
                    let mut record = Vec::new();
                    put(&mut record, root.as_os_str().as_bytes());
                    self.packages.append(&record)?;
                    continue;
                }
                Some(Err(e)) => {
                    receiver.error(e)?;
                    continue;
                }
                Some(Ok(order)) => order,
            };
            for object in order.objects {
                let real = std::fs::canonicalize(&object.path).unwrap_or(object.path.clone());
                let key = u128::from_le_bytes(Md5::digest(real.as_os_str().as_bytes()));
                match self.seen.insert(key) {
                    Ok(true) => {
                        self.objects.append(&encode(&object))?;
                        self.count += 1;
                    }
                    Ok(false) => {}
                    Err(e) => {
                        self.failed = Some(e);
                        return Ok(());
                    }
                }
            }
            for missing in order.not_found {
                receiver.not_found(missing)?;
            }
        }
        Ok(())
    }
}

/// The names of the ways a file is found, as [`LoadedFile`] carries them.
const FOUND_VIA: [&str; 9] = [
    "argument",
    "interpreter",
    "path",
    "rpath",
    "LD_LIBRARY_PATH",
    "runpath",
    "ld.so.cache",
    "default",
    "member",
];

/// Appends `bytes` to `record`, after their length.
fn put(record: &mut Vec<u8>, bytes: &[u8]) {
    record.extend_from_slice(&(bytes.len() as u64).to_le_bytes());
    record.extend_from_slice(bytes);
}

/// Appends `bytes`, or nothing, to `record`: a flag, then the bytes.
fn put_optional(record: &mut Vec<u8>, bytes: Option<&[u8]>) {
    put(record, &[u8::from(bytes.is_some())]);
    put(record, bytes.unwrap_or_default());
}

/// The fields [`put`] wrote into `bytes`, in order.
fn fields(mut bytes: &[u8]) -> impl Iterator<Item = &[u8]> {
    std::iter::from_fn(move || {
        let (len, rest) = bytes.split_first_chunk::<8>()?;
        let len = usize::try_from(u64::from_le_bytes(*len)).ok()?;
        let field = rest.get(..len)?;
        bytes = rest.get(len..)?;
        Some(field)
    })
}

/// A path from its bytes.
fn path_of(bytes: &[u8]) -> PathBuf {
    PathBuf::from(OsStr::from_bytes(bytes))
}

/// An optional field [`put_optional`] wrote, from `fields`.
fn take_optional<'a>(fields: &mut impl Iterator<Item = &'a [u8]>) -> Option<&'a [u8]> {
    let present = fields.next() == Some(&[1][..]);
    let bytes = fields.next();
    bytes.filter(|_| present)
}

/// The record of a file to check: its path, the name it was needed as, the file that needed
/// it, and how it was found.
fn encode(object: &LoadedFile) -> Vec<u8> {
    let mut record = Vec::new();
    let path = |p: &Path| p.as_os_str().as_bytes().to_vec();
    put(&mut record, &path(&object.path));
    put_optional(&mut record, object.needed_as.as_deref().map(str::as_bytes));
    put_optional(
        &mut record,
        object.needed_by.as_deref().map(path).as_deref(),
    );
    put(&mut record, object.found_via.as_bytes());
    record
}

/// The next file to check of `fields`, whose record [`encode`] made.
fn decode<'a>(fields: &mut impl Iterator<Item = &'a [u8]>) -> Option<LoadedFile> {
    let path = path_of(fields.next()?);
    let needed_as = take_optional(fields).map(|b| String::from_utf8_lossy(b).into_owned());
    let needed_by = take_optional(fields).map(path_of);
    let via = fields.next()?;
    let found_via = FOUND_VIA.iter().find(|name| name.as_bytes() == via)?;
    Some(LoadedFile {
        path,
        needed_as,
        needed_by,
        found_via,
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::format::bundle;
    use crate::host::ld_so::FoundVia;

    /// What a check hands over, kept.
    #[derive(Default)]
    struct Kept {
        files: Vec<FileReport>,
        missing: Vec<NotFound>,
        errors: Vec<String>,
    }

    impl Receiver for Kept {
        fn error(&mut self, error: Error) -> std::io::Result<()> {
            self.errors.push(error.to_string());
            Ok(())
        }
        fn file(&mut self, file: FileReport) -> std::io::Result<()> {
            self.files.push(file);
            Ok(())
        }
        fn not_found(&mut self, missing: NotFound) -> std::io::Result<()> {
            self.missing.push(missing);
            Ok(())
        }
    }

    #[test]
    fn a_check_handed_over_a_file_at_a_time_is_the_whole_report() {
        let dir = tempfile::tempdir().unwrap();
        let mut roots = Vec::new();
        for k in 0..(CHUNK + 3) {
            let path = dir.path().join(format!("k{k}.hipfb"));
            let target = ["gfx90a", "gfx1100"][k % 2];
            let entries: [(&str, &[u8]); 2] = [
                ("host-x86_64-unknown-linux-gnu-", b""),
                (&format!("hipv4-amdgcn-amd-amdhsa--{target}"), b"code"),
            ];
            std::fs::write(&path, bundle::to_vec(&entries, 8)).unwrap();
            roots.push(path);
        }
        // Named twice: checked once. A file that is none: an error.
        roots.push(dir.path().join("k1.hipfb"));
        roots.push(dir.path().join("missing.so"));
        let devices = Device::list(&[("gfx90a".parse().unwrap(), None)]);
        let (env, kpack_env) = (Environment::default(), kpack_search::Environment::default());
        let max = crate::format::ccob::DEFAULT_MAX_DECOMPRESSED;
        let paths: Vec<&Path> = roots.iter().map(PathBuf::as_path).collect();
        let (whole, errors) = super::super::check(&paths, &devices, &env, &kpack_env, max, &());
        let pool = rayon::ThreadPoolBuilder::new()
            .num_threads(2)
            .build()
            .unwrap();
        let mut kept = Kept::default();
        let mut list = FoundList::new();
        for root in &roots {
            list.push(root, root, None, false).unwrap();
        }
        list.seal().unwrap();
        let verdict = check_each(
            &pool,
            &list,
            &devices,
            &env,
            &kpack_env,
            max,
            &(),
            &mut kept,
        )
        .unwrap();
        assert_eq!(kept.files.len(), CHUNK + 3);
        assert_eq!(kept.files, whole.files);
        assert_eq!(kept.missing, whole.not_found);
        let errors: Vec<String> = errors.iter().map(ToString::to_string).collect();
        assert_eq!(kept.errors, errors);
        assert_eq!(errors.len(), 1);
        assert!(!verdict.every_device_has_code);
        assert_eq!(verdict.every_device_has_code, whole.every_device_has_code);
        assert_eq!(verdict.embedded_have_code, whole.embedded_have_code);
    }

    #[test]
    fn a_file_to_check_reads_back_as_kept() {
        let ways = [
            FoundVia::Argument,
            FoundVia::Interpreter,
            FoundVia::Path,
            FoundVia::Rpath,
            FoundVia::LdLibraryPath,
            FoundVia::Runpath,
            FoundVia::Cache,
            FoundVia::Default,
        ];
        let names = ways.map(FoundVia::name).into_iter().chain(["member"]);
        let objects: Vec<LoadedFile> = names
            .enumerate()
            .map(|(k, found_via)| LoadedFile {
                path: PathBuf::from(OsStr::from_bytes(b"/lib/\xffx.so")),
                needed_as: (k % 2 == 0).then(|| format!("lib{k}.so")),
                needed_by: (k % 3 == 0).then(|| PathBuf::from(format!("/bin/{k}"))),
                found_via,
            })
            .collect();
        let mut records = Records::default();
        for object in &objects {
            records.append(&encode(object)).unwrap();
        }
        records.seal().unwrap();
        let mut fields = fields(records.bytes());
        let back: Vec<LoadedFile> = std::iter::from_fn(|| decode(&mut fields)).collect();
        assert_eq!(back.len(), objects.len());
        for (a, b) in objects.iter().zip(&back) {
            assert_eq!(
                (&a.path, &a.needed_as, &a.needed_by, a.found_via),
                (&b.path, &b.needed_as, &b.needed_by, b.found_via)
            );
        }
    }
}
