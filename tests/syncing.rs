//! Which outputs reach the disk before they take their place, seen in the system calls the
//! commands make (under strace): a file that replaces one (in place, or over an existing file)
//! is synced before its rename and its folder after; a new file is not, nor a folder that only
//! gained new files. `--sync`, and `OFFLOAD_SYNC=1` for every command, sync every file and
//! folder.

use std::ffi::OsStr;
use std::fs;
use std::path::{Path, PathBuf};
use std::process::Command;

use crate::util::{samples_dir, tool, PINNED_LLVM};

/// The system calls traced: those that put a file's bytes on the disk, and those that put a
/// file in place.
const CALLS: &str = "trace=fsync,fdatasync,syncfs,sync_file_range,rename,renameat,renameat2";

/// A system call of a trace, with the file or folder it was about.
#[derive(Debug, Clone, PartialEq, Eq)]
enum Call {
    /// `fsync` or `fdatasync` of this file or folder.
    Sync(PathBuf),
    /// `syncfs`: every file of the file system on the disk (a new folder written whole).
    SyncFs,
    /// `sync_file_range`: the disk asked to start writing this file.
    WriteBack(PathBuf),
    /// A rename to this path.
    Rename(PathBuf),
}

/// The calls a traced command made, in order.
#[derive(Debug)]
struct Trace(Vec<Call>);

impl Trace {
    /// What was synced, in order.
    fn synced(&self) -> Vec<&Path> {
        self.0
            .iter()
            .filter_map(|c| match c {
                Call::Sync(p) => Some(p.as_path()),
                _ => None,
            })
            .collect()
    }

    /// Where files were renamed to, in order.
    fn renamed(&self) -> Vec<&Path> {
        self.0
            .iter()
            .filter_map(|c| match c {
                Call::Rename(p) => Some(p.as_path()),
                _ => None,
            })
            .collect()
    }

    /// Whether any write-back was started.
    fn wrote_back(&self) -> bool {
        self.0.iter().any(|c| matches!(c, Call::WriteBack(_)))
    }

    /// Where the call `wanted` first is in the trace.
    fn position(&self, wanted: impl Fn(&Call) -> bool) -> Option<usize> {
        self.0.iter().position(wanted)
    }
}

/// The path between the first `<` and `>` of `text`: strace's `-y` name of a descriptor.
fn descriptor_path(text: &str) -> Option<PathBuf> {
    let start = text.find('<')? + 1;
    let end = start + text[start..].find('>')?;
    Some(PathBuf::from(&text[start..end]))
}

/// The destination of a rename line: its last quoted path, relative to the folder of the
/// descriptor before it (`renameat`), else to `cwd`.
fn rename_destination(line: &str, cwd: &Path) -> Option<PathBuf> {
    let close = line.rfind('"')?;
    let open = line[..close].rfind('"')?;
    let name = Path::new(&line[open + 1..close]);
    let base = line[..open]
        .rfind('<')
        .and_then(|at| descriptor_path(&line[at..]))
        .unwrap_or_else(|| cwd.to_path_buf());
    Some(base.join(name))
}

/// The calls of strace's log `text` (`-f -y`), for a command run in `cwd`. Failed calls and
/// the second half of calls that were interrupted are left out.
fn parse(text: &str, cwd: &Path) -> Trace {
    let mut calls = Vec::new();
    for line in text.lines() {
        let Some((_, call)) = line.split_once(' ') else {
            continue;
        };
        let call = call.trim_start();
        if call.starts_with("<...") || line.contains("= -1 ") {
            continue;
        }
        let Some((name, rest)) = call.split_once('(') else {
            continue;
        };
        let parsed = match name {
            "fsync" | "fdatasync" => descriptor_path(rest).map(Call::Sync),
            "syncfs" => Some(Call::SyncFs),
            "sync_file_range" => descriptor_path(rest).map(Call::WriteBack),
            "rename" | "renameat" | "renameat2" => rename_destination(rest, cwd).map(Call::Rename),
            _ => None,
        };
        calls.extend(parsed);
    }
    Trace(calls)
}

/// Runs `offload ARGS` in `dir` (a real path) with the variables `env` under strace, which
/// must succeed: the calls it made. `None` (a skip) without strace.
fn traced(dir: &Path, args: &[impl AsRef<OsStr>], env: &[(&str, &str)]) -> Option<Trace> {
    let strace = tool("strace")?;
    let log = dir.join("strace.log");
    let mut command = Command::new(strace);
    command
        .args(["-f", "-qq", "-y", "-e", CALLS, "-o"])
        .arg(&log)
        .arg("--")
        .arg(crate::util::OFFLOAD)
        .args(args)
        .current_dir(dir)
        .env_remove("OFFLOAD_LOG")
        .env_remove("OFFLOAD_SYNC")
        .env("OFFLOAD_LLVM_VERSION", PINNED_LLVM)
        .env("OFFLOAD_BUNDLER_IGNORE_ENV_VAR", "1");
    for (name, value) in env {
        command.env(name, value);
    }
    crate::util::succeed(&mut command);
    let text = fs::read_to_string(&log).unwrap();
    fs::remove_file(&log).unwrap();
    Some(parse(&text, dir))
}

/// A new folder for a test, by its real path (strace names files by theirs).
fn workspace() -> (tempfile::TempDir, PathBuf) {
    let dir = tempfile::tempdir().unwrap();
    let real = fs::canonicalize(dir.path()).unwrap();
    (dir, real)
}

/// A sample's path as an argument.
fn sample(name: &str) -> String {
    samples_dir().join(name).to_str().unwrap().to_string()
}

/// Whether `synced` is the temporary file of the output `destination`: in its folder, named
/// `.NAME.XXXXXX.tmp`.
fn temporary_of(synced: &Path, destination: &Path) -> bool {
    let name = destination.file_name().unwrap().to_string_lossy();
    let temp = synced.file_name().unwrap_or_default().to_string_lossy();
    synced.parent() == destination.parent()
        && temp.starts_with(&format!(".{name}."))
        && temp.ends_with(".tmp")
}

/// Checks that `trace` put files in place and synced nothing; `what` says which run it is.
fn nothing_synced(trace: &Trace, what: &str) {
    assert!(
        !trace.renamed().is_empty(),
        "{what}: nothing written: {trace:?}"
    );
    assert_eq!(trace.synced(), Vec::<&Path>::new(), "{what}: {trace:?}");
    assert!(!trace.wrote_back(), "{what}: {trace:?}");
    assert!(!trace.0.contains(&Call::SyncFs), "{what}: {trace:?}");
}

/// Checks that every file `trace` put in place was synced before its rename (as its
/// temporary file), and its folder after; `what` says which run it is.
fn everything_synced(trace: &Trace, what: &str) {
    let renamed = trace.renamed();
    assert!(!renamed.is_empty(), "{what}: nothing written: {trace:?}");
    for destination in renamed {
        // Each file as its temporary file, or a new folder's files all at once.
        let synced = trace.position(|c| match c {
            Call::Sync(p) => temporary_of(p, destination),
            Call::SyncFs => true,
            _ => false,
        });
        let put = trace.position(|c| *c == Call::Rename(destination.to_path_buf()));
        let folder = destination.parent().unwrap().to_path_buf();
        let folder_synced = trace
            .0
            .iter()
            .rposition(|c| *c == Call::Sync(folder.clone()));
        assert!(
            synced < put && put < folder_synced && synced.is_some(),
            "{what}: {} is not synced, renamed, then its folder synced: {trace:?}",
            destination.display()
        );
    }
}

/// Checks that the output `destination`, which replaced a file, was synced (as its temporary
/// file), renamed, then its folder synced, and that nothing else was synced.
fn replacement_synced(trace: &Trace, destination: &Path, what: &str) {
    assert_eq!(trace.renamed(), [destination], "{what}: {trace:?}");
    everything_synced(trace, what);
    assert_eq!(trace.synced().len(), 2, "{what}: {trace:?}");
}

/// Makes `dir/tree`, a bundle in each of its folders `a` and `b`.
fn tree_of_two_folders(dir: &Path) {
    for sub in ["tree/a", "tree/b"] {
        fs::create_dir_all(dir.join(sub)).unwrap();
        fs::copy(
            samples_dir().join("bundles/kernel.bc"),
            dir.join(sub).join("k.bc"),
        )
        .unwrap();
    }
}

#[test]
fn extracting_to_a_new_folder_syncs_nothing() {
    let (_temp, dir) = workspace();
    let kernel = sample("bundles/kernel.bc");
    let args = ["extract", &kernel, "--arch", "gfx906", "--arch", "gfx90a"];
    let Some(trace) = traced(&dir, &[&args[..], &["-o", "new/folder"]].concat(), &[]) else {
        return;
    };
    nothing_synced(&trace, "extract");
    // The new folder is written whole under a hidden name, then renamed into place.
    assert_eq!(trace.renamed(), [dir.join("new/folder")], "{trace:?}");
}

#[test]
fn an_in_place_rewrite_syncs_the_file_then_its_folder() {
    let (_temp, dir) = workspace();
    let cases: [(&[&str], &str); 4] = [
        (&["strip", "--keep", "gfx90a"], "bundles/kernel.bc"),
        (&["strip", "--remove", "gfx90a"], "bundles/kernel.bc"),
        (&["compress"], "bundles/kernel.bc"),
        (&["decompress"], "bundles/kernel-z.bc"),
    ];
    for (command, input) in cases {
        let file = dir.join("file.bc");
        fs::copy(samples_dir().join(input), &file).unwrap();
        let args = [command, &["--in-place", "file.bc"]].concat();
        let Some(trace) = traced(&dir, &args, &[]) else {
            return;
        };
        replacement_synced(&trace, &file, &args.join(" "));
        assert_ne!(
            fs::read(&file).unwrap(),
            fs::read(samples_dir().join(input)).unwrap()
        );
    }
}

#[test]
fn a_new_output_is_not_synced_and_one_over_an_existing_file_is() {
    let (_temp, dir) = workspace();
    let kernel = sample("bundles/kernel.bc");
    let strip = ["strip", "--keep", "gfx90a", &kernel, "-o", "out.bc"];
    let Some(new) = traced(&dir, &strip, &[]) else {
        return;
    };
    nothing_synced(&new, "strip -o NEW");
    let out = dir.join("out.bc");
    let over = traced(&dir, &strip, &[]).unwrap();
    replacement_synced(&over, &out, "strip -o EXISTING");
    // Whatever was there: a symbolic link is replaced, so the new file is synced too.
    fs::remove_file(&out).unwrap();
    std::os::unix::fs::symlink("nowhere", &out).unwrap();
    let over_link = traced(&dir, &strip, &[]).unwrap();
    replacement_synced(&over_link, &out, "strip -o LINK");
    // A tree mirrored into a new folder: new files, new folders, nothing synced.
    tree_of_two_folders(&dir);
    let tree = ["strip", "--keep", "gfx90a", "-r", "tree", "-o", "mirror"];
    let mirrored = traced(&dir, &tree, &[]).unwrap();
    nothing_synced(&mirrored, "strip -r -o NEW");
    assert_eq!(mirrored.renamed().len(), 2, "{mirrored:?}");
}

#[test]
fn sync_and_offload_sync_sync_every_file_and_folder() {
    let (_temp, dir) = workspace();
    let kernel = sample("bundles/kernel.bc");
    let extract = ["extract", &kernel, "--arch", "gfx906", "--arch", "gfx90a"];
    // --sync, or OFFLOAD_SYNC set to anything but an empty string or 0.
    let runs = [
        ("by-option", Some("--sync"), None),
        ("by-variable", None, Some("1")),
        ("by-any-value", None, Some("yes")),
    ];
    for (folder, option, value) in runs {
        let args = [&extract[..], &["-o", folder], option.as_slice()].concat();
        let env: Vec<(&str, &str)> = value.map(|v| ("OFFLOAD_SYNC", v)).into_iter().collect();
        let Some(trace) = traced(&dir, &args, &env) else {
            return;
        };
        assert_eq!(trace.renamed(), [dir.join(folder)], "{folder}: {trace:?}");
        everything_synced(&trace, folder);
    }
    for value in ["0", ""] {
        let args = [&extract[..], &["-o", "by-no-value"]].concat();
        let trace = traced(&dir, &args, &[("OFFLOAD_SYNC", value)]).unwrap();
        nothing_synced(&trace, &format!("OFFLOAD_SYNC={value:?}"));
        fs::remove_dir_all(dir.join("by-no-value")).unwrap();
    }
    // A tree of folders: each folder that gained a file is synced.
    tree_of_two_folders(&dir);
    let tree = [
        "strip", "--keep", "gfx90a", "-r", "tree", "-o", "mirror", "--sync",
    ];
    let mirrored = traced(&dir, &tree, &[]).unwrap();
    everything_synced(&mirrored, "strip -r --sync");
    for folder in ["mirror/a", "mirror/b"] {
        let folder = dir.join(folder);
        assert!(
            mirrored.synced().contains(&folder.as_path()),
            "{mirrored:?}"
        );
    }
}

#[test]
fn every_command_that_writes_takes_sync_and_the_llvm_names_the_variable() {
    let (_temp, dir) = workspace();
    let (kernel, kernel_z) = (sample("bundles/kernel.bc"), sample("bundles/kernel-z.bc"));
    let (library, hsaco) = (
        sample("linked/libhip.so"),
        sample("dev/kernel-gfx906.hsaco"),
    );
    let input = format!("-input={kernel}");
    let commands: [&[&str]; 6] = [
        &["compress", &kernel, "-o", "OUT.bc"],
        &["decompress", &kernel_z, "-o", "OUT.bc"],
        &["kpack", &library, "-o", "OUT"],
        &[
            "wrapper",
            "-target=x86_64-pc-linux-gnu",
            "-o",
            "OUT.o",
            "--offload-arch=gfx906",
            &hsaco,
        ],
        &["wrapper", "--kind=hip", "-o", "OUT.o", &hsaco],
        &[
            "bundler",
            "-type=bc",
            "-targets=hipv4-amdgcn-amd-amdhsa--gfx906",
            "-unbundle",
            &input,
            "-output=OUT.bc",
        ],
    ];
    for (n, command) in commands.into_iter().enumerate() {
        let what = command[..2].join(" ");
        let named = |how: &str| -> Vec<String> {
            let out = format!("out{n}-{how}");
            command.iter().map(|a| a.replace("OUT", &out)).collect()
        };
        let Some(plain) = traced(&dir, &named("plain"), &[]) else {
            return;
        };
        nothing_synced(&plain, &what);
        let by_variable = traced(&dir, &named("variable"), &[("OFFLOAD_SYNC", "1")]).unwrap();
        everything_synced(&by_variable, &format!("OFFLOAD_SYNC=1 {what}"));
        // The LLVM tools' command lines stay LLVM's: the variable alone asks them.
        if command[0] != "bundler" {
            let mut args = named("option");
            args.insert(1, "--sync".into());
            let by_option = traced(&dir, &args, &[]).unwrap();
            everything_synced(&by_option, &format!("{what} --sync"));
        }
    }
}
