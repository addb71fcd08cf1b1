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

/// For unit tests: the reference tool `name` from `PATH`; when it is missing the test is
/// skipped with a message, unless OFFLOAD_REQUIRE_REFERENCE=1, which makes it a failure.
#[cfg(test)]
pub(crate) fn reference_tool(name: &str) -> Option<PathBuf> {
    let found = on_path(name);
    if found.is_none() {
        assert_ne!(
            std::env::var("OFFLOAD_REQUIRE_REFERENCE").as_deref(),
            Ok("1"),
            "{name} not found on PATH, and OFFLOAD_REQUIRE_REFERENCE=1 requires it"
        );
        eprintln!("SKIP: {name} not found");
    }
    found
}
