//! The `offload` command.

fn main() {
    std::process::exit(offload::cli::main(std::env::args_os().collect()));
}
