//! Finding the external programs some operations run or name, LLVM's tools among them. One
//! rule, which the tests follow too (they call these functions):
//!
//! - A program is looked for as a shell looks for it: the first folder on `PATH` that holds an
//!   executable file of that name ([`on_path`]).
//! - A name ending in `-N`, N a number (`clang-22`, `llvm-objcopy-19`), asks for LLVM release
//!   N: that name on `PATH` first (Debian's versioned names), else the name without `-N` in
//!   LLVM N's `bin` folder ([`llvm_tool`]).
//! - LLVM N's `bin` folder is what `llvm-config-N --bindir` prints (`llvm-config-N` found on
//!   `PATH`), else the first folder on `PATH` whose path ends in `llvm-N/bin`
//!   ([`llvm_bin_dir`]). No folder is assumed.
// Most of these find LLVM's tools for the tests, which compare against them.
#![cfg_attr(not(any(test, feature = "internals")), allow(dead_code))]

use std::path::{Path, PathBuf};

/// The first executable file named `program` in the folders of `PATH`, in order.
pub fn on_path(program: &str) -> Option<PathBuf> {
    Search::from_env().on_path(program)
}

/// Every executable file named `program` in the folders of `PATH`, in their order: for a
/// caller that needs more of it than the name (a Python that imports a module).
pub fn all_on_path(program: &str) -> Vec<PathBuf> {
    Search::from_env().all_on_path(program)
}

/// The program `name` by the rule of this module: on `PATH`, else, when `name` ends in `-N`,
/// the name without it in LLVM N's `bin` folder.
pub fn find(name: &str) -> Option<PathBuf> {
    Search::from_env().find(name)
}

/// LLVM `version`'s tool `name` (unversioned, e.g. `llvm-objcopy`): `name-version` on `PATH`,
/// else `name` in [`llvm_bin_dir`].
pub fn llvm_tool(name: &str, version: &str) -> Option<PathBuf> {
    Search::from_env().llvm_tool(name, version)
}

/// The file `name` (exactly that name) in LLVM `version`'s `bin` folder, if it is an
/// executable: for a caller to which the program's own name matters.
pub fn in_llvm_bin_dir(name: &str, version: &str) -> Option<PathBuf> {
    Search::from_env().in_llvm_bin_dir(name, version)
}

/// LLVM `version`'s `bin` folder: what `llvm-config-<version> --bindir` prints, else the first
/// folder on `PATH` whose path ends in `llvm-<version>/bin`.
pub fn llvm_bin_dir(version: &str) -> Option<PathBuf> {
    Search::from_env().llvm_bin_dir(version)
}

/// The folder `llvm-config-<version> <option>` prints (`--bindir`, `--libdir`), if that
/// program is on `PATH` and prints an existing folder.
pub fn llvm_config(version: &str, option: &str) -> Option<PathBuf> {
    Search::from_env().llvm_config(version, option)
}

/// The folders searched, in order: `PATH`'s, or a test's own.
struct Search(Vec<PathBuf>);

impl Search {
    fn from_env() -> Search {
        let paths = std::env::var_os("PATH").unwrap_or_default();
        Search(std::env::split_paths(&paths).collect())
    }

    fn all_on_path(&self, program: &str) -> Vec<PathBuf> {
        self.0
            .iter()
            .map(|dir| dir.join(program))
            .filter(|candidate| is_executable(candidate))
            .collect()
    }

    fn on_path(&self, program: &str) -> Option<PathBuf> {
        self.all_on_path(program).into_iter().next()
    }

    fn find(&self, name: &str) -> Option<PathBuf> {
        self.on_path(name).or_else(|| {
            let (base, version) = llvm_release(name)?;
            self.in_llvm_bin_dir(base, version)
        })
    }

    fn llvm_tool(&self, name: &str, version: &str) -> Option<PathBuf> {
        self.on_path(&format!("{name}-{version}"))
            .or_else(|| self.in_llvm_bin_dir(name, version))
    }

    fn in_llvm_bin_dir(&self, name: &str, version: &str) -> Option<PathBuf> {
        Some(self.llvm_bin_dir(version)?.join(name)).filter(|p| is_executable(p))
    }

    fn llvm_bin_dir(&self, version: &str) -> Option<PathBuf> {
        self.llvm_config(version, "--bindir").or_else(|| {
            let wanted = Path::new(&format!("llvm-{version}")).join("bin");
            self.0
                .iter()
                .find(|dir| dir.ends_with(&wanted) && dir.is_dir())
                .cloned()
        })
    }

    fn llvm_config(&self, version: &str, option: &str) -> Option<PathBuf> {
        let config = self.on_path(&format!("llvm-config-{version}"))?;
        let out = std::process::Command::new(config)
            .arg(option)
            .output()
            .ok()?;
        let text = String::from_utf8(out.stdout).ok()?;
        Some(PathBuf::from(text.trim())).filter(|dir| out.status.success() && dir.is_dir())
    }
}

/// `name` split into the program and the LLVM release it asks for, when it ends in `-N`.
fn llvm_release(name: &str) -> Option<(&str, &str)> {
    let (base, version) = name.rsplit_once('-')?;
    let numeric = !version.is_empty() && version.bytes().all(|b| b.is_ascii_digit());
    (numeric && !base.is_empty()).then_some((base, version))
}

#[cfg(unix)]
fn is_executable(path: &Path) -> bool {
    use std::os::unix::fs::PermissionsExt;
    std::fs::metadata(path).is_ok_and(|m| m.is_file() && m.permissions().mode() & 0o111 != 0)
}

#[cfg(not(unix))]
fn is_executable(path: &Path) -> bool {
    path.is_file()
}

/// For unit tests: the program `name` found by [`find`]; when it is missing the test is
/// skipped (and the skip counted) with `SKIP: <name> not found`, unless
/// `OFFLOAD_REQUIRE_REFERENCE=1`, which makes it a failure. The integration tests' `util::tool`
/// does the same through the same file.
#[cfg(test)]
pub(crate) fn reference_tool(name: &str) -> Option<PathBuf> {
    skips::reference(find(name), &format!("{name} not found"))
}

/// How a test skips: the integration tests' own module, so that both kinds of test skip,
/// fail and count alike. (The unit tests need only part of it.)
#[cfg(test)]
#[allow(dead_code)]
#[path = "../../../tests/util/skips.rs"]
mod skips;

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_trailing_number_is_an_llvm_release() {
        assert_eq!(
            llvm_release("llvm-objcopy-19"),
            Some(("llvm-objcopy", "19"))
        );
        assert_eq!(llvm_release("clang-22"), Some(("clang", "22")));
        assert_eq!(llvm_release("qemu-aarch64-static"), None);
        assert_eq!(llvm_release("cuobjdump"), None);
        assert_eq!(llvm_release("-19"), None);
        assert_eq!(llvm_release("clang-"), None);
    }

    /// Makes an executable file (or, `executable` false, a plain one) at `path`.
    fn program(path: &Path, executable: bool) {
        use std::os::unix::fs::PermissionsExt;
        std::fs::create_dir_all(path.parent().unwrap()).unwrap();
        std::fs::write(path, "#!/bin/sh\n").unwrap();
        let mode = if executable { 0o755 } else { 0o644 };
        std::fs::set_permissions(path, std::fs::Permissions::from_mode(mode)).unwrap();
    }

    #[test]
    fn versioned_names_come_first_then_the_release_s_bin_folder() {
        let dir = tempfile::tempdir().unwrap();
        let d = dir.path();
        let (first, bin19, bin22) = (
            d.join("a"),
            d.join("opt/llvm-19/bin"),
            d.join("llvm-22/bin"),
        );
        program(&first.join("llvm-objcopy"), true);
        program(&bin19.join("llvm-objcopy"), true);
        program(&bin19.join("clang"), true);
        program(&bin22.join("clang-22"), true);
        program(&bin22.join("clang"), true);
        program(&first.join("cuobjdump"), false);
        let search = Search(vec![first.clone(), bin19.clone(), bin22.clone()]);
        // No llvm-objcopy-19 on the path: LLVM 19's own, not the first unversioned one.
        assert_eq!(
            search.find("llvm-objcopy-19"),
            Some(bin19.join("llvm-objcopy"))
        );
        assert_eq!(
            search.find("llvm-objcopy"),
            Some(first.join("llvm-objcopy"))
        );
        assert_eq!(search.find("clang-22"), Some(bin22.join("clang-22")));
        assert_eq!(search.find("clang-19"), Some(bin19.join("clang")));
        assert_eq!(
            search.llvm_tool("clang", "22"),
            Some(bin22.join("clang-22"))
        );
        assert_eq!(
            search.in_llvm_bin_dir("clang", "22"),
            Some(bin22.join("clang"))
        );
        assert_eq!(search.find("clang-14"), None);
        // A file that is not executable is not a program, as for a shell.
        assert_eq!(search.find("cuobjdump"), None);
    }
}
