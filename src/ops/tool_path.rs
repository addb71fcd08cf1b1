//! Finding the LLVM tools some operations run or name, as a shell finds a program: the first
//! folder on `PATH` that holds a file of that name.

use std::path::PathBuf;

/// The first file named `program` in the folders of `PATH`, in order.
pub fn on_path(program: &str) -> Option<PathBuf> {
    let paths = std::env::var_os("PATH")?;
    std::env::split_paths(&paths)
        .map(|dir| dir.join(program))
        .find(|candidate| candidate.is_file())
}
