//! Command-line front ends: the `offload` command and the LLVM-compatible personalities it
//! takes on when started through a link named after an LLVM tool.

pub mod check;
pub mod du;
pub mod extract;
pub mod general;
pub mod inputs;
pub mod jobs;
pub mod kpack;
pub mod kpack_wheels;
pub mod links;
pub mod ls;
pub mod manual;
pub mod personalities;
pub mod prune;
pub mod registry;
pub mod rewrite;
pub mod streamed;
pub mod subcommand;
pub mod targets;
pub mod verify;
pub mod wrapper;

use std::ffi::OsString;
use std::io::{self, Write};
use std::path::Path;

use clap::Parser;

use crate::target::processor::LlvmVersion;

/// A tool's name without the version suffix distributions give it (`clang-offload-bundler-19`
/// is `clang-offload-bundler`).
fn without_version(name: &str) -> &str {
    split_version(name).0
}

/// The environment variable that chooses the LLVM release `offload bundler` and `offload
/// packager` stand in for, when the name they are started through does not end in one.
pub const LLVM_VERSION_VAR: &str = "OFFLOAD_LLVM_VERSION";

/// The release number a tool's name ends in (`clang-offload-bundler-19`: 19).
fn version_suffix(name: &str) -> Option<u32> {
    split_version(name).1
}

/// A tool's name split into the name and the release number a distribution appends to it
/// (`clang-offload-bundler-19`: `clang-offload-bundler`, 19); a name without one is whole.
fn split_version(name: &str) -> (&str, Option<u32>) {
    match name.rsplit_once('-') {
        Some((tool, version))
            if !version.is_empty() && version.bytes().all(|b| b.is_ascii_digit()) =>
        {
            (tool, version.parse().ok())
        }
        _ => (name, None),
    }
}

/// The LLVM release an LLVM-compatible personality stands in for: the number its name ends in
/// (`clang-offload-bundler-19`), else [`LLVM_VERSION_VAR`], else the newest. Releases 19 and
/// older behave as 19, 20 to 22 as 22, 23 and newer as 23.
pub fn llvm_version(name: &str, var: Option<&str>) -> Result<LlvmVersion, String> {
    if let Some(major) = version_suffix(name) {
        return Ok(LlvmVersion::of_release(major));
    }
    match var {
        None | Some("") => Ok(LlvmVersion::DEFAULT),
        Some(text) => text.trim().parse::<u32>().map(LlvmVersion::of_release).map_err(|_| {
            format!("{LLVM_VERSION_VAR}='{text}': expected an LLVM release number, such as 19, 22 or 23")
        }),
    }
}

/// Makes every buffer of a mebibyte or more a mapping of its own, given back to the system as
/// soon as it is freed. Left to itself, glibc raises that threshold after the first large
/// buffer is freed (zstd windows of tens of megabytes, one per stream inflated), and later
/// ones come from a heap that keeps its high-water mark: the process would hold every window
/// it ever used rather than the ones in use.
fn return_large_buffers_at_once() {
    #[cfg(all(target_os = "linux", target_env = "gnu"))]
    // SAFETY: mallopt only changes a setting of the allocator, before any thread starts.
    unsafe {
        libc::mallopt(libc::M_MMAP_THRESHOLD, 1 << 20);
    }
}

/// Runs the program with its full argument list (program name first) and returns the exit
/// status.
pub fn main(args: Vec<OsString>) -> i32 {
    return_large_buffers_at_once();
    crate::io::remove_temporaries_on_signals();
    general::install_log_from_env();
    general::syncing_from_env();
    // The program's own name chooses a personality and starts messages: shown as text. The
    // arguments stay as the system gave them: a file name is bytes from here to the system
    // call that opens it.
    let argv0 = args
        .first()
        .map_or_else(|| "offload".into(), |a| a.to_string_lossy().into_owned());
    let name = Path::new(&argv0)
        .file_name()
        .map(|n| n.to_string_lossy().into_owned())
        .unwrap_or_default();
    let stem = name.strip_suffix(".exe").unwrap_or(&name);
    let rest = args.get(1..).unwrap_or_default();
    match run_personality(&argv0, &name, stem, rest) {
        Some(code) => code,
        None => run_subcommand(rest),
    }
}

/// The arguments of a tool that parses text (the LLVM-named personalities, `offload wrapper`)
/// as text; `None`, with the reason said on standard error under `name`, when one is not
/// UTF-8. They are refused rather than read with a replacement character, which would name
/// another file.
pub(crate) fn text_args(name: &str, args: &[OsString]) -> Option<Vec<String>> {
    let mut text = Vec::with_capacity(args.len());
    for arg in args {
        match arg.to_str() {
            Some(arg) => text.push(arg.to_string()),
            None => {
                let _ = writeln!(
                    io::stderr(),
                    "{name}: error: argument '{}' is not valid UTF-8: this tool takes file \
                     names as text; offload's own commands (ls, extract, strip, ...) take any name",
                    crate::io::shown(arg)
                );
                return None;
            }
        }
    }
    Some(text)
}

/// Runs the LLVM-named tool (or `offload-extract`) the program is called as (`name`, without
/// `.exe`: `stem`), with `rest`; `None` when it is called otherwise.
fn run_personality(argv0: &str, name: &str, stem: &str, rest: &[OsString]) -> Option<i32> {
    let version = || {
        let var = std::env::var(LLVM_VERSION_VAR).ok();
        llvm_version(stem, var.as_deref()).inspect_err(|message| {
            let _ = writeln!(io::stderr(), "{name}: error: {message}");
        })
    };
    let tool = without_version(stem);
    if tool == "offload-extract" {
        return Some(extract::run("offload-extract", rest));
    }
    let known = [
        "clang-offload-bundler",
        "offload-bundler",
        "clang-offload-packager",
        "offload-packager",
        "llvm-offload-binary",
        "clang-offload-wrapper",
        "offload-wrapper",
        "llvm-offload-wrapper",
    ];
    if !known.contains(&tool) {
        return None;
    }
    let Some(rest) = text_args(name, rest) else {
        return Some(1);
    };
    let rest = personalities::llvm_cl::expand_response_files(rest);
    let code = match tool {
        "clang-offload-bundler" | "offload-bundler" => match version() {
            Ok(version) => personalities::bundler::run(argv0, &rest, version),
            Err(_) => 1,
        },
        "clang-offload-packager" | "offload-packager" | "llvm-offload-binary" => match version() {
            Ok(version) => personalities::packager::run(argv0, &rest, version),
            Err(_) => 1,
        },
        "clang-offload-wrapper" | "offload-wrapper" => {
            personalities::clang_offload_wrapper::run(argv0, &rest)
        }
        _ => match version() {
            Ok(version) => personalities::llvm_offload_wrapper::run(argv0, &rest, version),
            Err(_) => 1,
        },
    };
    Some(code)
}

/// Runs `offload SUBCOMMAND ARGS...`, `rest` being the subcommand and its arguments.
fn run_subcommand(rest: &[OsString]) -> i32 {
    registry::Commands::standard().run(rest)
}

/// What `offload --version` prints: the version, the git commit when built from a checkout,
/// and the LLVM releases the personalities stand in for.
pub(crate) fn version_text() -> String {
    let commit = option_env!("OFFLOAD_GIT_COMMIT").map_or_else(String::new, |c| format!(" ({c})"));
    let releases: Vec<String> = LlvmVersion::ALL
        .iter()
        .map(|v| v.major().to_string())
        .collect();
    let (last, earlier) = releases.split_last().expect("at least one release");
    format!(
        "offload {}{commit}\nstands in for LLVM {} and {last}\n",
        env!("CARGO_PKG_VERSION"),
        earlier.join(", ")
    )
}

/// Runs `offload bundler` with `args`, as the LLVM release [`LLVM_VERSION_VAR`] names (else the
/// newest).
pub(crate) fn run_bundler(args: &[OsString]) -> i32 {
    run_llvm_tool("bundler", args)
}

/// Runs `offload packager` with `args`, as the LLVM release [`LLVM_VERSION_VAR`] names (else
/// the newest).
pub(crate) fn run_packager(args: &[OsString]) -> i32 {
    run_llvm_tool("packager", args)
}

/// `offload bundler` or `offload packager` (`tool`) with `args`, behaving as the LLVM release
/// [`LLVM_VERSION_VAR`] names (else the newest) does.
fn run_llvm_tool(tool: &str, args: &[OsString]) -> i32 {
    let prog = format!("offload {tool}");
    let Some(args) = text_args(&prog, args) else {
        return 1;
    };
    let var = std::env::var(LLVM_VERSION_VAR).ok();
    let version = match llvm_version("offload", var.as_deref()) {
        Ok(version) => version,
        Err(message) => {
            let _ = writeln!(io::stderr(), "{prog}: error: {message}");
            return 1;
        }
    };
    if tool == "bundler" {
        personalities::bundler::run(&prog, &args, version)
    } else {
        personalities::packager::run(&prog, &args, version)
    }
}

/// Writes `text` to `out` and flushes it, so that a failure shows now and not, unseen, when the
/// program ends.
pub(crate) fn write_flushed(out: &mut dyn Write, text: &[u8]) -> io::Result<()> {
    out.write_all(text)?;
    out.flush()
}

/// Says on `err` that standard output failed with `e`, and returns the exit status for it (1).
pub(crate) fn stdout_failed(prog: &str, err: &mut dyn Write, e: &io::Error) -> i32 {
    let _ = writeln!(
        err,
        "{prog}: error: standard output: {}",
        crate::error::io_message(e)
    );
    1
}

/// Writes `text` to `out` (standard output, or a buffer in tests). When it cannot be written
/// (a full disk, a closed pipe), says so on `err` and gives the exit status to return.
pub(crate) fn write_out(
    prog: &str,
    out: &mut dyn Write,
    err: &mut dyn Write,
    text: &[u8],
) -> Result<(), i32> {
    write_flushed(out, text).map_err(|e| stdout_failed(prog, err, &e))
}

/// Prints `text` on standard output; see [`write_out`].
pub(crate) fn print(prog: &str, text: &str) -> Result<(), i32> {
    write_out(
        prog,
        &mut io::stdout().lock(),
        &mut io::stderr().lock(),
        text.as_bytes(),
    )
}

/// Parses the arguments of a subcommand named `prog`. On `--help`, `--version` or a mistake,
/// prints what clap has to say and gives the exit status to return: 0 after help or version
/// (1 when standard output failed), 2 after a mistake.
pub(crate) fn parse_args<T: Parser>(prog: &str, args: &[OsString]) -> Result<T, i32> {
    T::try_parse_from(std::iter::once(OsString::from(prog)).chain(args.iter().cloned()))
        .map_err(|e| clap_exit(prog, &e))
}

/// Prints clap's help, version or usage error `e` and returns the exit status for it.
fn clap_exit(prog: &str, e: &clap::Error) -> i32 {
    if e.use_stderr() {
        let _ = e.print();
        return 2;
    }
    match e.print().and_then(|()| io::stdout().flush()) {
        Ok(()) => 0,
        Err(io_error) => stdout_failed(prog, &mut io::stderr().lock(), &io_error),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_name_then_the_variable_then_the_newest_choose_the_llvm_release() {
        let v = |name: &str, var: Option<&str>| llvm_version(name, var).unwrap();
        assert_eq!(v("clang-offload-bundler-19", Some("22")), LlvmVersion::V19);
        assert_eq!(v("clang-offload-bundler-22", None), LlvmVersion::V22);
        assert_eq!(v("clang-offload-bundler-18", None), LlvmVersion::V19);
        assert_eq!(v("clang-offload-packager-21", None), LlvmVersion::V22);
        assert_eq!(v("clang-offload-bundler", Some("19")), LlvmVersion::V19);
        assert_eq!(v("offload", Some(" 23 ")), LlvmVersion::V23);
        assert_eq!(v("offload", Some("22")), LlvmVersion::V22);
        assert_eq!(v("clang-offload-bundler-24", None), LlvmVersion::V23);
        assert_eq!(v("llvm-offload-binary", None), LlvmVersion::DEFAULT);
        assert_eq!(v("offload", Some("")), LlvmVersion::DEFAULT);
        assert_eq!(
            llvm_version("offload", Some("latest")).unwrap_err(),
            "OFFLOAD_LLVM_VERSION='latest': expected an LLVM release number, such as 19, 22 or 23"
        );
    }

    #[test]
    fn versioned_tool_names_start_the_same_personality() {
        assert_eq!(
            without_version("clang-offload-bundler-19"),
            "clang-offload-bundler"
        );
        assert_eq!(
            without_version("clang-offload-packager-22"),
            "clang-offload-packager"
        );
        assert_eq!(
            without_version("clang-offload-bundler"),
            "clang-offload-bundler"
        );
        assert_eq!(without_version("offload-extract"), "offload-extract");
        assert_eq!(without_version("offload"), "offload");
    }
}
