//! The `offload-extract` command: `offload extract` under its own name.

fn main() {
    let mut args: Vec<std::ffi::OsString> = std::env::args_os().collect();
    if let Some(first) = args.first_mut() {
        *first = "offload-extract".into();
    }
    std::process::exit(offload::cli::main(args));
}
