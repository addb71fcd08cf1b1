//! How each command's cost grows with its input, on the smallest steps of benches/growth.sh:
//! synthetic programs of 16, 32 and 64 MB and trees of 100, 200 and 400 small programs, each
//! step measured (and shown with --nocapture). For ls and du (as tables and as JSON), strip,
//! kpack and extract, the peak anonymous memory at the largest step must stay within 16 MiB of
//! the smallest's, and the CPU time (user and system, of the child alone, the median of three
//! runs) must not grow more than twice as fast as the input.
//!
//! The inputs are made here from the sample code objects, as the bench makes them: each padded
//! to 1 MiB, bundled into three bundles of mixed targets (offload bundler), each bundle of a
//! program a copy of one of them with a counter in each code object's padding (no two alike),
//! wrapped in a host object of its own (offload wrapper --kind=hip) and all linked by `cc`
//! into a shared library. Time is CPU time from `wait4`, not wall time, so that a busy machine
//! does not fail the test; memory is sampled from /proc every millisecond.

use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::Duration;

use crate::util::{self, offload, samples_dir};

/// The program sizes, in MiB of bundles.
const SIZES: [u64; 3] = [16, 32, 64];

/// The trees' numbers of files.
const FILES: [usize; 3] = [100, 200, 400];

/// How much more anonymous memory the largest step may take than the smallest.
const MEMORY_SLACK_KIB: u64 = 16 << 10;

/// CPU time under this counts as this much: a run of a few milliseconds is mostly the
/// program starting, and a ratio of two such times says nothing about growth.
const TIME_FLOOR: f64 = 0.02;

/// One run's cost: CPU seconds (user and system) and peak anonymous memory in KiB.
#[derive(Clone, Copy, Debug)]
struct Cost {
    cpu: f64,
    anon_kib: u64,
}

/// The `RssAnon` of process `pid` in KiB, or 0 once it is gone.
fn anon_kib(pid: u32) -> u64 {
    let status = std::fs::read_to_string(format!("/proc/{pid}/status")).unwrap_or_default();
    status
        .lines()
        .find_map(|line| line.strip_prefix("RssAnon:"))
        .and_then(|rest| rest.trim().trim_end_matches("kB").trim().parse().ok())
        .unwrap_or(0)
}

/// Runs `args` in `dir` once: its CPU time from `wait4` and its anonymous peak, sampled.
fn run_once(dir: &Path, args: &[&str]) -> Cost {
    run_limited(dir, args, None)
}

/// [`run_once`], with at most `open_files` descriptors open when given.
// The child is reaped by `wait4`, which gives its resource usage too; std's `wait` would not.
#[allow(clippy::zombie_processes)]
fn run_limited(dir: &Path, args: &[&str], open_files: Option<libc::rlim_t>) -> Cost {
    use std::os::unix::process::CommandExt;
    let mut command = offload();
    command
        .current_dir(dir)
        .args(args)
        .env("RAYON_NUM_THREADS", "2")
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::null());
    if let Some(limit) = open_files {
        // SAFETY: setrlimit only, between fork and exec.
        unsafe {
            command.pre_exec(move || {
                let limit = libc::rlimit {
                    rlim_cur: limit,
                    rlim_max: limit,
                };
                if libc::setrlimit(libc::RLIMIT_NOFILE, &limit) != 0 {
                    return Err(std::io::Error::last_os_error());
                }
                Ok(())
            });
        }
    }
    let child = command.spawn().unwrap();
    let pid = child.id();
    let mut peak = 0;
    let mut status = 0;
    // SAFETY: an all-zero rusage is a valid value of that plain C struct.
    let mut usage: libc::rusage = unsafe { std::mem::zeroed() };
    loop {
        peak = peak.max(anon_kib(pid));
        // SAFETY: `pid` is our child, not yet reaped (std's `Child` is never waited on here);
        // `status` and `usage` are valid for writes.
        let done =
            unsafe { libc::wait4(pid as libc::pid_t, &mut status, libc::WNOHANG, &mut usage) };
        assert!(done >= 0, "wait4: {}", std::io::Error::last_os_error());
        if done != 0 {
            break;
        }
        std::thread::sleep(Duration::from_millis(1));
    }
    if !(libc::WIFEXITED(status) && libc::WEXITSTATUS(status) == 0) {
        // Run it again to show why it failed.
        util::succeed(offload().current_dir(dir).args(args));
        panic!("offload {args:?} failed once (status {status:#x}), then succeeded");
    }
    let seconds = |t: libc::timeval| t.tv_sec as f64 + t.tv_usec as f64 / 1e6;
    Cost {
        cpu: seconds(usage.ru_utime) + seconds(usage.ru_stime),
        anon_kib: peak,
    }
}

/// Three runs of `args` in `dir`, each after `prepare` removes what the last wrote.
fn three_runs(dir: &Path, args: &[&str], prepare: &dyn Fn()) -> Vec<Cost> {
    (0..3)
        .map(|_| {
            prepare();
            run_once(dir, args)
        })
        .collect()
}

/// What runs of one command on one input say: the median CPU time, and the largest anonymous
/// peak (a short run's peak may fall between two samples; the largest is the one least likely
/// missed). Not the least time: a run's system time varies with how much of its file system
/// work the kernel happens to do in threads of its own, and the least of a few runs of a
/// command writing hundreds of files may be half the others.
fn summary(runs: &[Cost]) -> Cost {
    let mut times: Vec<f64> = runs.iter().map(|c| c.cpu).collect();
    times.sort_by(f64::total_cmp);
    Cost {
        cpu: times.get(times.len() / 2).copied().unwrap_or(0.0),
        anon_kib: runs.iter().map(|c| c.anon_kib).max().unwrap_or(0),
    }
}

/// The three bundles of mixed targets in `dir`, from the sample code objects padded to `pad`
/// bytes, aligned to `align`.
fn variants(dir: &Path, pad: usize, align: u32) -> Vec<PathBuf> {
    std::fs::create_dir_all(dir).unwrap();
    let objects = [
        "kernel-gfx906",
        "kernel-gfx90a",
        "kernel-gfx90a_xnack+",
        "kernel-gfx90a_xnack-",
        "kernel-gfx908_sramecc+_xnack-",
    ];
    for (seed, name) in (1..).zip(objects) {
        let mut bytes = std::fs::read(samples_dir().join(format!("dev/{name}.hsaco"))).unwrap();
        let more = pad.saturating_sub(bytes.len());
        bytes.extend(util::noise(seed, more));
        std::fs::write(dir.join(format!("{name}.co")), bytes).unwrap();
    }
    let dev = "hipv4-amdgcn-amd-amdhsa--";
    let sets: [(&str, &[&str]); 3] = [
        ("a", &["gfx906", "gfx90a"]),
        ("b", &["gfx90a:xnack+", "gfx90a:xnack-"]),
        ("c", &["gfx906", "gfx908:sramecc+:xnack-", "gfx90a"]),
    ];
    sets.iter()
        .map(|(name, targets)| {
            let mut ids = vec!["host-x86_64-unknown-linux-gnu-".to_string()];
            let mut inputs = vec!["-input=/dev/null".to_string()];
            for target in *targets {
                ids.push(format!("{dev}{target}"));
                let file = format!("kernel-{}.co", target.replace(':', "_"));
                inputs.push(format!("-input={file}"));
            }
            let out = format!("{name}.bundle");
            util::succeed(
                offload()
                    .current_dir(dir)
                    .args(["bundler", "-type=o", &format!("-bundle-align={align}")])
                    .arg(format!("-targets={}", ids.join(",")))
                    .args(&inputs)
                    .arg(format!("-output={out}")),
            );
            dir.join(out)
        })
        .collect()
}

/// Where each code object of a bundle ends: (offset, size) of its entries with 16 bytes or
/// more, from the bundle's header.
fn entry_ends(bundle: &[u8]) -> Vec<usize> {
    let word = |at: usize| {
        let bytes: [u8; 8] = bundle[at..at + 8].try_into().unwrap();
        usize::try_from(u64::from_le_bytes(bytes)).unwrap()
    };
    let mut at = 32;
    let mut ends = Vec::new();
    for _ in 0..word(24) {
        let (offset, size, id) = (word(at), word(at + 8), word(at + 16));
        at += 24 + id;
        if size >= 16 {
            ends.push(offset + size - 8);
        }
    }
    ends
}

/// `cc -shared` of `objects` into `out`.
fn link(cc: &Path, objects: &[PathBuf], out: &Path) {
    let status = Command::new(cc)
        .args([
            "-shared",
            "-nostdlib",
            "-Wl,-z,noseparate-code",
            "-Wl,-z,max-page-size=4096",
        ])
        .arg("-o")
        .arg(out)
        .args(objects)
        .status()
        .unwrap();
    assert!(status.success(), "cc -shared -o {}", out.display());
}

/// The synthetic programs of `SIZES` in `dir`, `lib16.so` and so on: each the bundles of the
/// one before and more.
fn programs(cc: &Path, dir: &Path) -> Vec<PathBuf> {
    let variants: Vec<(Vec<u8>, Vec<usize>)> = variants(&dir.join("variants"), 1 << 20, 4096)
        .iter()
        .map(|path| {
            let bytes = std::fs::read(path).unwrap();
            let ends = entry_ends(&bytes);
            (bytes, ends)
        })
        .collect();
    let mut objects = Vec::new();
    let mut written = 0u64;
    let mut out = Vec::new();
    for size in SIZES {
        while written < size << 20 {
            let number = objects.len();
            let (bytes, ends) = &variants[number % variants.len()];
            let mut bundle = bytes.clone();
            for &end in ends {
                bundle[end..end + 8].copy_from_slice(&(number as u64).to_le_bytes());
            }
            let image = dir.join(format!("{number}.bin"));
            std::fs::write(&image, &bundle).unwrap();
            let object = dir.join(format!("{number}.o"));
            util::succeed(
                offload()
                    .args(["wrapper", "--kind=hip", "--filetype=obj", "-o"])
                    .args([&object, &image]),
            );
            std::fs::remove_file(&image).unwrap();
            objects.push(object);
            written += bundle.len() as u64;
        }
        let program = dir.join(format!("lib{size}.so"));
        link(cc, &objects, &program);
        out.push(program);
    }
    out
}

/// The trees of `FILES` in `dir`, `tree100` and so on: copies of three small libraries, 100
/// to a folder, in folders of ten.
fn trees(cc: &Path, dir: &Path) -> Vec<PathBuf> {
    trees_of(cc, dir, &FILES)
}

/// The trees of `counts` files in `dir`, as [`trees`] makes them.
fn trees_of(cc: &Path, dir: &Path, counts: &[usize]) -> Vec<PathBuf> {
    let small = dir.join("small");
    let libraries: Vec<Vec<u8>> = variants(&small, 0, 1)
        .iter()
        .map(|bundle| {
            let object = bundle.with_extension("o");
            util::succeed(
                offload()
                    .args(["wrapper", "--kind=hip", "--filetype=obj", "-o"])
                    .args([&object, bundle]),
            );
            let library = bundle.with_extension("so");
            link(cc, &[object], &library);
            std::fs::read(library).unwrap()
        })
        .collect();
    counts
        .iter()
        .map(|&n| {
            let tree = dir.join(format!("tree{n}"));
            for i in 0..n {
                let folder = tree.join(format!("{}/{}", i / 1000, i / 100 % 10));
                std::fs::create_dir_all(&folder).unwrap();
                let bytes = &libraries[i % libraries.len()];
                std::fs::write(folder.join(format!("lib{i}.so")), bytes).unwrap();
            }
            tree
        })
        .collect()
}

/// The commands measured on `input` (a program, or with `-r` a tree), writing into `out`.
fn commands(input: &str, tree: bool) -> Vec<(&'static str, Vec<String>)> {
    let r = if tree { vec!["-r"] } else { vec![] };
    let with = |words: &[&str]| -> Vec<String> {
        let mut args: Vec<String> = words[..1].iter().map(|w| w.to_string()).collect();
        args.extend(r.iter().map(|w| w.to_string()));
        args.extend(words[1..].iter().map(|w| w.to_string()));
        args.push(input.to_string());
        args
    };
    let mut out = vec![
        ("ls", with(&["ls"])),
        ("ls --json", with(&["ls", "--json"])),
        ("du", with(&["du"])),
        ("du --json", with(&["du", "--json"])),
        ("strip", with(&["strip", "--keep", "gfx90a", "-o", "out"])),
        ("kpack", with(&["kpack", "-o", "out"])),
        (
            "extract",
            with(&["extract", "--arch", "gfx90a", "-o", "out"]),
        ),
    ];
    if !tree {
        // A program's stripped copy is a file, not a folder.
        out[4].1 = vec!["strip", "--keep", "gfx90a", "-o", "out.so", input]
            .into_iter()
            .map(String::from)
            .collect();
    }
    out
}

/// The costs of each command at each step of `inputs` (file names in `dir`), and the failures
/// of the growth rules between the first and last step, `scale` times the input apart.
fn check_growth(dir: &Path, inputs: &[String], tree: bool, scale: f64) -> Vec<String> {
    let clean = || {
        for name in ["out", "out.so"] {
            let path = dir.join(name);
            let _ = std::fs::remove_dir_all(&path);
            let _ = std::fs::remove_file(&path);
        }
    };
    let mut failures = Vec::new();
    let names: Vec<&str> = commands("", tree).iter().map(|(n, _)| *n).collect();
    for (index, name) in names.iter().enumerate() {
        let measure = |input: &String| {
            let args = commands(input, tree).swap_remove(index).1;
            let args: Vec<&str> = args.iter().map(String::as_str).collect();
            three_runs(dir, &args, &clean)
        };
        let mut runs: Vec<Vec<Cost>> = inputs.iter().map(measure).collect();
        let mut costs: Vec<Cost> = runs.iter().map(|r| summary(r)).collect();
        let steps: Vec<String> = inputs
            .iter()
            .zip(&costs)
            .map(|(input, c)| format!("{input} {:.3} s CPU, {} KiB", c.cpu, c.anon_kib))
            .collect();
        eprintln!("growth: {name}: {}", steps.join("; "));
        let slow = |costs: &[Cost]| {
            costs[costs.len() - 1].cpu > 2.0 * scale * costs[0].cpu.max(TIME_FLOOR)
        };
        if slow(&costs) {
            // CPU time too varies on a busy machine (other programs' use of the caches and of
            // the core's other thread, the kernel's locks other tests' writes hold): the first
            // and last steps are measured three times more, one beside the other in turn, so
            // that a busy moment falls on both, and the median of the six counts. A cost that
            // grows with the square of the input (16x for 4x) still fails.
            let last = costs.len() - 1;
            let args = |at: usize| commands(&inputs[at], tree).swap_remove(index).1;
            for _ in 0..3 {
                for at in [0, last] {
                    let args = args(at);
                    let args: Vec<&str> = args.iter().map(String::as_str).collect();
                    clean();
                    runs[at].push(run_once(dir, &args));
                }
            }
            for at in [0, last] {
                costs[at] = summary(&runs[at]);
            }
            eprintln!(
                "growth: {name}, again: {:.3} -> {:.3} s CPU",
                costs[0].cpu,
                costs[costs.len() - 1].cpu
            );
        }
        let (first, last) = (costs[0], costs[costs.len() - 1]);
        // strip holds the bundles it keeps in a spill, in memory up to a fixed size and in a
        // temporary file past it: memory that fills up to that bound on small inputs, not
        // memory that grows with the input.
        let bound = if *name == "strip" && !tree {
            offload::io::spill::IN_MEMORY >> 10
        } else {
            0
        };
        if last.anon_kib > first.anon_kib.max(bound) + MEMORY_SLACK_KIB {
            failures.push(format!(
                "{name}: anonymous peak {} KiB at {}, {} KiB at {}",
                last.anon_kib,
                inputs[inputs.len() - 1],
                first.anon_kib,
                inputs[0]
            ));
        }
        if slow(&costs) {
            failures.push(format!(
                "{name}: {:.3} s of CPU at {}, {:.3} s at {} ({scale}x the input)",
                last.cpu,
                inputs[inputs.len() - 1],
                first.cpu,
                inputs[0]
            ));
        }
    }
    clean();
    failures
}

#[test]
fn memory_stays_flat_and_time_grows_linearly() {
    // Without cc (to link the synthetic programs) the test skips with a message.
    let Some(cc) = util::tool("cc") else {
        return;
    };
    let dir = tempfile::tempdir().unwrap();
    let programs = programs(&cc, dir.path());
    let trees = trees(&cc, dir.path());
    let name = |p: &PathBuf| p.file_name().unwrap().to_string_lossy().into_owned();
    let programs: Vec<String> = programs.iter().map(name).collect();
    let trees: Vec<String> = trees.iter().map(name).collect();
    let scale = |steps: &[f64]| steps[steps.len() - 1] / steps[0];
    let mut failures = check_growth(
        dir.path(),
        &programs,
        false,
        scale(&SIZES.map(|s| s as f64)),
    );
    failures.extend(check_growth(
        dir.path(),
        &trees,
        true,
        scale(&FILES.map(|n| n as f64)),
    ));
    assert!(
        failures.is_empty(),
        "cost grows faster than the input:\n{}",
        failures.join("\n")
    );
}

/// Makes trees of `counts` small libraries, runs each of `commands` (the tree's path added)
/// three times over each, and fails naming each command whose anonymous peak grows by more
/// than `bound` bytes for each file more. Without cc (to link the libraries) it skips with a
/// message.
fn assert_flat_per_file(counts: &[usize; 2], commands: &[&[&str]], bound: u64) {
    let Some(cc) = util::tool("cc") else {
        return;
    };
    let dir = tempfile::tempdir().unwrap();
    let trees = trees_of(&cc, dir.path(), counts);
    let clean = || {
        let _ = std::fs::remove_dir_all(dir.path().join("out"));
    };
    let mut failures = Vec::new();
    for words in commands {
        let costs: Vec<Cost> = trees
            .iter()
            .map(|tree| {
                let mut args: Vec<String> = words.iter().map(|w| w.to_string()).collect();
                if args.last().map(String::as_str) == Some(EACH_FOLDER) {
                    // Each of the tree's top folders named, in order of their names.
                    args.pop();
                    let mut folders: Vec<PathBuf> = std::fs::read_dir(tree)
                        .unwrap()
                        .map(|e| e.unwrap().path())
                        .collect();
                    folders.sort();
                    args.extend(folders.iter().map(|f| f.to_str().unwrap().to_string()));
                } else {
                    args.push(tree.to_str().unwrap().to_string());
                }
                let args: Vec<&str> = args.iter().map(String::as_str).collect();
                summary(&three_runs(dir.path(), &args, &clean))
            })
            .collect();
        let grown = costs[1].anon_kib.saturating_sub(costs[0].anon_kib) << 10;
        let per_file = grown / (counts[1] - counts[0]) as u64;
        let name = words[..2].join(" ");
        eprintln!(
            "growth: {name}: {} KiB at {} files, {} KiB at {}: {per_file} bytes per file",
            costs[0].anon_kib, counts[0], costs[1].anon_kib, counts[1]
        );
        if per_file > bound {
            failures.push(format!(
                "{name}: {per_file} bytes of anonymous memory per file"
            ));
        }
    }
    clean();
    assert!(failures.is_empty(), "{}", failures.join("\n"));
}

/// The trees' numbers of files for the check of memory per file: far enough apart that a few
/// hundred bytes per file show over the noise of a run.
const MANY: [usize; 2] = [200, 3200];

/// Anonymous memory a command over a tree may take for each file more: the walk's list of
/// paths and the names given to outputs fit, a report or record held for each file until the
/// end (about 2 KB) does not.
const PER_FILE_BYTES: u64 = 1024;

#[test]
fn tree_commands_hold_nothing_per_file() {
    // `extract -r` is measured in groups of 8 files, by
    // `extract_into_a_folder_that_exists_holds_nothing_per_output`: it reads 256 files at a
    // time, and the memory of one such group, which the smaller tree does not fill, would
    // count here as memory per file.
    let commands: [&[&str]; 4] = [
        &["strip", "-r", "--keep", "gfx90a", "-o", "out"],
        &["compress", "-r", "-o", "out"],
        &["decompress", "-r", "-o", "out"],
        &["kpack", "-r", "-o", "out"],
    ];
    assert_flat_per_file(&MANY, &commands, PER_FILE_BYTES);
}

/// The trees' numbers of files for the check of the commands that hold no list of the files:
/// both past what a table's rows take in memory before they are spooled (1 MiB), so that
/// what differs between them is what is kept per file.
const WIDE: [usize; 2] = [6400, 19200];

/// Anonymous memory `ls -r`, `du -r`, `strip -r` and `kpack -r` may take for each file more:
/// the walk's list is read back from a mapped file, so nothing of a file (its path, about 200
/// bytes with the list held in memory) stays once it is done; `kpack -r` keeps the binaries
/// it split, for its summary, in a temporary file too (about 220 bytes a file held before).
const FLAT_PER_FILE_BYTES: u64 = 64;

#[test]
fn tree_listings_and_strip_hold_no_list_of_the_files() {
    let commands: [&[&str]; 4] = [
        &["ls", "-r"],
        &["du", "-r"],
        &["strip", "-r", "--keep", "gfx90a", "-o", "out"],
        &["kpack", "-r", "-o", "out"],
    ];
    assert_flat_per_file(&WIDE, &commands, FLAT_PER_FILE_BYTES);
}

#[test]
fn extract_into_a_folder_that_exists_holds_nothing_per_output() {
    // Without cc (to link the small libraries) the test skips with a message.
    let Some(cc) = util::tool("cc") else {
        return;
    };
    let dir = tempfile::tempdir().unwrap();
    let trees = trees_of(&cc, dir.path(), &MANY);
    // The folder exists, with a file in it: the outputs are moved into it at the end.
    let prepare = || {
        let out = dir.path().join("out");
        let _ = std::fs::remove_dir_all(&out);
        std::fs::create_dir(&out).unwrap();
        std::fs::write(out.join("notes.txt"), b"mine").unwrap();
    };
    // Under `ulimit -n 64` the files are read 8 at a time: both trees are read in many
    // groups, so that what differs between them is what is kept per file, not the memory
    // of one group of 256 files, which the 200 files of the smaller tree do not fill (with
    // the pools of freed memory of each thread, that alone is about 1 KiB per file more
    // here, into a new folder as into one that exists).
    let costs: Vec<Cost> = trees
        .iter()
        .map(|tree| {
            let args = ["extract", "-r", "--arch", "gfx90a", "-o", "out"];
            let mut args = args.to_vec();
            args.push(tree.to_str().unwrap());
            let runs: Vec<Cost> = (0..3)
                .map(|_| {
                    prepare();
                    run_limited(dir.path(), &args, Some(64))
                })
                .collect();
            summary(&runs)
        })
        .collect();
    let outputs = std::fs::read_dir(dir.path().join("out")).unwrap().count();
    // Each file's images (one or two), and the file that was there.
    assert!(outputs > MANY[1], "{outputs} files in the folder");
    let grown = costs[1].anon_kib.saturating_sub(costs[0].anon_kib) << 10;
    let per_file = grown / (MANY[1] - MANY[0]) as u64;
    eprintln!(
        "growth: extract -r into a folder that exists: {} KiB at {} files, {} KiB at {}: \
         {per_file} bytes per file",
        costs[0].anon_kib, MANY[0], costs[1].anon_kib, MANY[1]
    );
    assert!(
        per_file <= PER_FILE_BYTES,
        "extract -r into a folder that exists: {per_file} bytes of anonymous memory per file"
    );
}

/// Every file under `dir` (symbolic links as their targets), by its path under it.
fn files_under(dir: &Path) -> std::collections::BTreeMap<PathBuf, Vec<u8>> {
    let mut files = std::collections::BTreeMap::new();
    let mut folders = vec![dir.to_path_buf()];
    while let Some(folder) = folders.pop() {
        for entry in std::fs::read_dir(&folder).unwrap() {
            let path = entry.unwrap().path();
            let meta = std::fs::symlink_metadata(&path).unwrap();
            let relative = path.strip_prefix(dir).unwrap().to_path_buf();
            if meta.is_dir() {
                folders.push(path);
            } else if meta.file_type().is_symlink() {
                let target = std::fs::read_link(&path).unwrap();
                files.insert(relative, target.into_os_string().into_encoded_bytes());
            } else {
                files.insert(relative, std::fs::read(&path).unwrap());
            }
        }
    }
    files
}

#[test]
fn kpack_of_a_tree_writes_the_same_bytes_on_any_number_of_threads() {
    // Without cc (to link the small libraries) the test skips with a message.
    let Some(cc) = util::tool("cc") else {
        return;
    };
    let dir = tempfile::tempdir().unwrap();
    // More files than a group (64) holds, with a file without device code and a link.
    let tree = trees_of(&cc, dir.path(), &[150]).remove(0);
    std::fs::write(tree.join("README"), b"no device code").unwrap();
    std::os::unix::fs::symlink("0/0/lib1.so", tree.join("libone.so")).unwrap();
    for extra in [&[][..], &["--compression", "zstd"][..]] {
        let split = |threads: &str| {
            let out = dir.path().join("out");
            let _ = std::fs::remove_dir_all(&out);
            let output = util::succeed(
                offload()
                    .args(["kpack", "-r", "-o"])
                    .arg(&out)
                    .args(extra)
                    .arg(&tree)
                    .env("RAYON_NUM_THREADS", threads),
            );
            (output.stdout, files_under(&out))
        };
        let (text, files) = split("1");
        // 150 split binaries, 5 archives, the README and the link copied.
        assert_eq!(files.len(), 150 + 5 + 2, "{:?}", files.keys());
        assert!(
            String::from_utf8_lossy(&text).ends_with("2 files without HIP device code copied\n"),
            "{}",
            String::from_utf8_lossy(&text)
        );
        for run in 0..3 {
            let (again, more) = split("8");
            assert_eq!(again, text, "run {run} {extra:?}: the listing differs");
            assert_eq!(more.len(), files.len());
            for ((name, a), (other, b)) in files.iter().zip(&more) {
                assert_eq!(name, other);
                assert!(a == b, "run {run} {extra:?}: {} differs", name.display());
            }
        }
    }
}

/// Anonymous memory `check -r` may take for each file more: it keeps a hash of each file's
/// real path (16 bytes, in a table sized for the files named, up to twice that), to check
/// each library once however many programs load it; the rest of a file's part of the report
/// waits in an unnamed temporary file. It took about 2 KB per file while every file's report
/// was held until the end.
const CHECK_PER_FILE_BYTES: u64 = 256;

#[test]
fn tree_reports_hold_nothing_per_file() {
    // `targets -r` and `verify -r` keep nothing of a file: they took 1.3 KB and 200 bytes per
    // file while every file's answer or line was held until the end.
    let commands: [&[&str]; 3] = [
        &["targets", "-r"],
        &["targets", "-r", "--json"],
        &["verify", "-r"],
    ];
    assert_flat_per_file(&WIDE, &commands, FLAT_PER_FILE_BYTES);
    // Every bundle of the trees has code for the AMD device (the CUDA one takes no part): the
    // check exits 0. Two devices, a row each per file: the smaller tree's rows already fill
    // what a table holds in memory.
    let commands: [&[&str]; 2] = [
        &[
            "check",
            "-r",
            "--device",
            "gfx90a:xnack+",
            "--device",
            "sm_80",
        ],
        &["check", "-r", "--device", "gfx90a:xnack+", "--json"],
    ];
    assert_flat_per_file(&WIDE, &commands, CHECK_PER_FILE_BYTES);
}

/// Anonymous memory `du -r --kernels` (as a table and as JSON) and `strip`, `compress` and
/// `decompress -r --in-place` may take for each file more: where each copy of a code object
/// is and which files hold each function are written to an unnamed file as found (about 230
/// bytes a file were held before), and the tasks of files rewritten in place are made from the
/// walk's list as they are reached, only files with several names remembered (about 200
/// bytes a file were held before). The in-place commands run last, each over the trees the
/// one before left.
#[test]
fn kernel_reports_and_rewrites_in_place_hold_nothing_per_file() {
    let commands: [&[&str]; 5] = [
        &["du", "-r", "--kernels"],
        &["du", "-r", "--kernels", "--json"],
        &["strip", "-r", "--in-place", "--keep", "gfx90a"],
        &["compress", "-r", "--in-place"],
        &["decompress", "-r", "--in-place"],
    ];
    assert_flat_per_file(&WIDE, &commands, FLAT_PER_FILE_BYTES);
}

/// Anonymous memory `check -r --require` may take for each file more: each machine's check
/// keeps the hashes of the real paths `check -r` keeps, and each file's verdicts wait in an
/// unnamed temporary file until the gate is written. It took 2.1 KB per file with one machine
/// and 2.7 KB with two while every machine's whole report was held until the end.
const GATE_PER_FILE_BYTES: u64 = 256;

#[test]
fn the_release_gate_holds_nothing_per_file() {
    // Every bundle of the trees has code for gfx90a:xnack+, and sm_80 (a machine of its own)
    // judges none of them: the gate passes, as a table, as JSON and as annotations.
    let commands: [&[&str]; 3] = [
        &["check", "-r", "--require", "gfx90a:xnack+,sm_80"],
        &[
            "check",
            "-r",
            "--require",
            "gfx90a:xnack+",
            "--format",
            "json",
        ],
        &[
            "check",
            "-r",
            "--require",
            "gfx90a:xnack+",
            "--format",
            "github",
        ],
    ];
    assert_flat_per_file(&WIDE, &commands, GATE_PER_FILE_BYTES);
}

/// Anonymous memory `extract -r` and `check -r` may take for each file more, for what they
/// remember of every file: the names given to the outputs (with the number last given for
/// each name numbered), to keep them apart in one folder, and the hashes of the real paths
/// of the files checked, to check each library once. Both are tables of 128-bit hashes that
/// move into a mapped temporary file once they are large (0 to 43 bytes per file measured
/// here, the most while the whole suite ran beside it); held on the heap, the names took 136
/// bytes per file (about two outputs each). What is left is the freed memory of the threads'
/// pools, which a longer run spreads wider (the largest heap of `check -r --json` is the same
/// at both sizes). The paths' hashes held on the heap took 63 bytes per file, under what the
/// noise of a run lets this test tell apart: for `check -r` it catches anything larger held
/// per file, such as a report.
const REMEMBERED_PER_FILE_BYTES: u64 = 96;

/// In place of the tree, in [`assert_flat_per_file`]'s commands: each of its top folders.
const EACH_FOLDER: &str = "EACH-FOLDER";

#[test]
fn several_inputs_and_the_driver_s_check_hold_nothing_per_file() {
    // Given several folders, a rewrite into a folder and `kpack -r` remember each output's
    // path, and a rewrite in place each file met; `check --driver` each file's path: each a
    // table of 128-bit keys out of memory once it is large.
    let commands: [&[&str]; 4] = [
        &["kpack", "-r", "-o", "out", EACH_FOLDER],
        &["strip", "-r", "--keep", "gfx90a", "-o", "out", EACH_FOLDER],
        &["strip", "-r", "--in-place", "--keep", "gfx90a", EACH_FOLDER],
        &[
            "check",
            "-r",
            "--device",
            "gfx90a:xnack+",
            "--driver",
            "12.4",
            "--json",
        ],
    ];
    assert_flat_per_file(&WIDE, &commands, FLAT_PER_FILE_BYTES);
}

#[test]
fn names_given_and_paths_checked_are_not_held_per_file() {
    // Two targets asked for: most files give two outputs, each a name to remember. The check
    // is measured as JSON: the report for people holds parts of its own in memory up to a
    // bound, which the smaller tree may not reach (see `tree_reports_hold_nothing_per_file`).
    let commands: [&[&str]; 2] = [
        &[
            "extract", "-r", "--arch", "gfx90a", "--arch", "gfx906", "-o", "out",
        ],
        &["check", "-r", "--device", "gfx90a:xnack+", "--json"],
    ];
    assert_flat_per_file(&WIDE, &commands, REMEMBERED_PER_FILE_BYTES);
}
