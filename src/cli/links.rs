//! `offload links`: symbolic links to this program under the names of the LLVM tools it stands
//! in for, so that a toolchain that runs `clang-offload-bundler` runs `offload bundler`.

use std::fs;
use std::io::{self, Write};
use std::path::{Path, PathBuf};

use clap::Parser;

use crate::cli::print;

const PROG: &str = "offload links";

/// The LLVM names this program answers to (see `offload --help`), one link each.
pub const NAMES: [&str; 5] = [
    "clang-offload-bundler",
    "clang-offload-packager",
    "llvm-offload-binary",
    "clang-offload-wrapper",
    "llvm-offload-wrapper",
];

/// Make symbolic links to this program in DIR under the names of the LLVM tools it stands in
/// for: clang-offload-bundler, clang-offload-packager, llvm-offload-binary,
/// clang-offload-wrapper and llvm-offload-wrapper (with --release N, each name ending in -N,
/// which chooses the LLVM release the tool behaves as). DIR is made when missing. A link of
/// ours (to a program named offload) already there is replaced; any other file of those names
/// is left alone, and then no link is made.
///
/// Exit status: 0 when every link was made, 1 otherwise.
#[derive(Debug, Parser)]
#[command(name = "offload links")]
pub(crate) struct Args {
    /// The folder to make the links in.
    dir: PathBuf,
    /// Name the links for this LLVM release (`clang-offload-bundler-19`).
    #[arg(long, value_parser = ["19", "22", "23"])]
    release: Option<String>,
}

crate::cli::subcommand::subcommand!(Args, PROG, run);

/// Runs `offload links` with `args` (without the program name) and returns the exit status.
fn run(args: Args) -> i32 {
    let mut err = io::stderr().lock();
    let program = match std::env::current_exe() {
        Ok(program) => program,
        Err(e) => {
            let _ = writeln!(err, "{PROG}: error: cannot find this program's path: {e}");
            return 1;
        }
    };
    let links = link_paths(&args.dir, args.release.as_deref());
    if let Err(e) = fs::create_dir_all(&args.dir) {
        let _ = writeln!(err, "{PROG}: error: {}: {e}", crate::io::shown(&args.dir));
        return 1;
    }
    let refused: Vec<String> = links.iter().filter_map(|link| refusal(link)).collect();
    if !refused.is_empty() {
        for why in refused {
            let _ = writeln!(err, "{PROG}: error: {why}; no link made");
        }
        return 1;
    }
    let mut made = String::new();
    for link in &links {
        if let Err(e) = make_link(&program, link) {
            let _ = writeln!(err, "{PROG}: error: {}: {e}", crate::io::shown(&link));
            return 1;
        }
        made.push_str(&format!(
            "{} -> {}\n",
            crate::io::shown(&link),
            crate::io::shown(&program)
        ));
    }
    print(PROG, &made).map_or_else(|code| code, |()| 0)
}

/// The links to make in `dir`: every name of [`NAMES`], ending in `-RELEASE` when one is given.
fn link_paths(dir: &Path, release: Option<&str>) -> Vec<PathBuf> {
    NAMES
        .iter()
        .map(|name| match release {
            Some(release) => dir.join(format!("{name}-{release}")),
            None => dir.join(name),
        })
        .collect()
}

/// Why `link` may not be made: something there that is not a link of ours. `None` when nothing
/// is there, or a link to a program named `offload` (an earlier `offload links`).
fn refusal(link: &Path) -> Option<String> {
    let meta = match fs::symlink_metadata(link) {
        Ok(meta) => meta,
        Err(e) if e.kind() == io::ErrorKind::NotFound => return None,
        Err(e) => return Some(format!("{}: {e}", crate::io::shown(&link))),
    };
    if !meta.file_type().is_symlink() {
        return Some(format!(
            "{} exists and is not a symbolic link",
            crate::io::shown(&link)
        ));
    }
    match fs::read_link(link) {
        Ok(target) if is_ours(&target) => None,
        Ok(target) => Some(format!(
            "{} is a link to {}, not to offload",
            crate::io::shown(&link),
            crate::io::shown(&target)
        )),
        Err(e) => Some(format!("{}: {e}", crate::io::shown(&link))),
    }
}

/// Whether a link to `target` is one `offload links` made: to a program named `offload`.
fn is_ours(target: &Path) -> bool {
    target
        .file_stem()
        .is_some_and(|stem| stem == "offload" && target.extension().is_none_or(|e| e == "exe"))
}

/// Makes `link` point at `program`, replacing a link there at once: the new link is made under
/// a temporary name beside it, then renamed over it.
fn make_link(program: &Path, link: &Path) -> io::Result<()> {
    let name = link.file_name().unwrap_or_default().to_string_lossy();
    let temporary = link.with_file_name(format!(".{name}.{}.tmp", std::process::id()));
    let _ = fs::remove_file(&temporary);
    symlink(program, &temporary)?;
    fs::rename(&temporary, link).inspect_err(|_| {
        let _ = fs::remove_file(&temporary);
    })
}

#[cfg(unix)]
fn symlink(program: &Path, link: &Path) -> io::Result<()> {
    std::os::unix::fs::symlink(program, link)
}

#[cfg(windows)]
fn symlink(program: &Path, link: &Path) -> io::Result<()> {
    std::os::windows::fs::symlink_file(program, link)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::target::processor::LlvmVersion;
    use clap::CommandFactory;

    #[test]
    fn the_releases_offered_are_those_stood_in_for() {
        let command = Args::command();
        let release = command
            .get_arguments()
            .find(|a| a.get_id() == "release")
            .unwrap();
        let offered: Vec<String> = release
            .get_possible_values()
            .iter()
            .map(|v| v.get_name().to_string())
            .collect();
        let known: Vec<String> = LlvmVersion::ALL
            .iter()
            .map(|v| v.major().to_string())
            .collect();
        assert_eq!(offered, known);
    }

    #[test]
    fn only_links_to_a_program_named_offload_are_ours() {
        assert!(is_ours(Path::new("/usr/bin/offload")));
        assert!(is_ours(Path::new("offload")));
        assert!(is_ours(Path::new("C:/bin/offload.exe")));
        assert!(!is_ours(Path::new(
            "/usr/lib/llvm-19/bin/clang-offload-bundler"
        )));
        assert!(!is_ours(Path::new("/usr/bin/offload-extract")));
        assert!(!is_ours(Path::new("/usr/bin/offload.sh")));
    }
}
