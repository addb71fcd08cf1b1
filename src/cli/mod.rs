//! Command-line front ends: the `offload` command and the LLVM-compatible personalities it
//! takes on when started through a link named after an LLVM tool.

pub mod bundler;
pub mod extract;
pub mod llvm_cl;
pub mod ls;
pub mod packager;
pub mod rewrite;
pub mod wrapper;

use std::ffi::OsString;
use std::path::Path;

const USAGE: &str = "offload: GPU offload fat binary tools

USAGE: offload <COMMAND> [ARGS...]

COMMANDS:
  bundler    clang-offload-bundler 19, drop-in: same options, same output bytes
  packager   clang-offload-packager 19, drop-in: same options, same output bytes
  ls         list the device images in files (--json for a machine-readable list)
  extract    write the device images a GPU can load (--arch gfx90a)
  wrapper    clang-offload-wrapper: a host object (or .ll, .bc) that registers OpenMP images
  strip      keep only some targets' device code (--keep gfx90a), in place or to a new file
  compress   compress the bundles of a file; decompress does the reverse
  help       print this text

Started through a link named clang-offload-bundler or offload-bundler, this program
behaves as `offload bundler`; through clang-offload-packager or offload-packager, as
`offload packager`.
";

/// Runs the program with its full argument list (program name first) and returns the exit
/// status.
pub fn main(args: Vec<OsString>) -> i32 {
    crate::io::remove_temporaries_on_signals();
    let args: Vec<String> = args
        .into_iter()
        .map(|a| a.to_string_lossy().into_owned())
        .collect();
    let argv0 = args.first().cloned().unwrap_or_else(|| "offload".into());
    let name = Path::new(&argv0)
        .file_name()
        .map(|n| n.to_string_lossy().into_owned())
        .unwrap_or_default();
    let personality = name.strip_suffix(".exe").unwrap_or(&name);
    let rest = args.get(1..).unwrap_or_default();
    match personality {
        "clang-offload-bundler" | "offload-bundler" => return bundler::run(&argv0, rest),
        "clang-offload-packager" | "offload-packager" => return packager::run(&argv0, rest),
        "offload-extract" => return extract::run("offload-extract", rest),
        "clang-offload-wrapper" | "offload-wrapper" => return wrapper::run(&argv0, rest),
        _ => {}
    }
    match rest.first().map(String::as_str) {
        Some("bundler") => bundler::run("offload bundler", &rest[1..]),
        Some("packager") => packager::run("offload packager", &rest[1..]),
        Some("ls") => ls::run(&rest[1..]),
        Some("extract") => extract::run("offload extract", &rest[1..]),
        Some("strip") => rewrite::strip(&rest[1..]),
        Some("wrapper") => wrapper::run("offload wrapper", &rest[1..]),
        Some("compress") => rewrite::compress(&rest[1..]),
        Some("decompress") => rewrite::decompress(&rest[1..]),
        Some("help" | "--help" | "-h") | None => {
            print!("{USAGE}");
            i32::from(rest.is_empty())
        }
        Some("--version" | "-V") => {
            println!("offload {}", env!("CARGO_PKG_VERSION"));
            0
        }
        Some(other) => {
            eprintln!("offload: error: unknown command '{other}' (try `offload help`)");
            2
        }
    }
}
