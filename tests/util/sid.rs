//! LLVM 23 as the reference, run in a minimal Debian sid root (LLVM 23 needs glibc 2.38, newer
//! than Debian 12's): `.ci/sid-root` makes the root and `OFFLOAD_SID_ROOT` names it. A test
//! copies its inputs into a work folder inside the root, runs the tool there with `chroot`
//! (as root), and reads what it wrote from outside. Without the root the test skips, or fails
//! under `OFFLOAD_REQUIRE_REFERENCE=1`.

use std::path::{Path, PathBuf};
use std::process::{Command, Output};

use super::skips;

/// The sid root with LLVM 23 in it.
pub struct Sid {
    root: PathBuf,
}

/// A work folder inside the root, removed when dropped.
pub struct SidDir {
    dir: tempfile::TempDir,
    inside: String,
}

impl SidDir {
    /// The folder, seen from outside the root.
    pub fn path(&self) -> &Path {
        self.dir.path()
    }

    /// The folder, seen from inside the root.
    pub fn inside(&self) -> &str {
        &self.inside
    }

    /// Copies `file` into the folder under `name`; returns its path outside.
    pub fn copy_in(&self, file: &Path, name: &str) -> PathBuf {
        let to = self.path().join(name);
        std::fs::copy(file, &to).unwrap_or_else(|e| panic!("{}: {e}", file.display()));
        to
    }
}

/// The sid root `OFFLOAD_SID_ROOT` names, when LLVM 23's tools are in it; else a skip.
pub fn llvm23() -> Option<Sid> {
    let root = std::env::var_os("OFFLOAD_SID_ROOT").map(PathBuf::from);
    let found = root.filter(|r| r.join("usr/bin/llvm-offload-binary-23").is_file());
    skips::reference(
        found.map(|root| Sid { root }),
        "no Debian sid root with LLVM 23 (OFFLOAD_SID_ROOT; .ci/sid-root makes one)",
    )
}

impl Sid {
    /// A fresh work folder inside the root.
    pub fn work_dir(&self) -> SidDir {
        let tmp = self.root.join("tmp");
        let dir = tempfile::Builder::new()
            .prefix("offload-test-")
            .tempdir_in(&tmp)
            .unwrap_or_else(|e| panic!("{}: {e}", tmp.display()));
        let name = dir
            .path()
            .file_name()
            .unwrap()
            .to_string_lossy()
            .into_owned();
        SidDir {
            dir,
            inside: format!("/tmp/{name}"),
        }
    }

    /// Runs `program` (a name on the root's `PATH`, or a path inside it) with `args` in the
    /// root, from the work folder `dir`.
    pub fn run(&self, dir: &SidDir, program: &str, args: &[&str]) -> Output {
        Command::new("chroot")
            .arg(&self.root)
            .args([
                "sh",
                "-c",
                "cd \"$0\" && shift && exec \"$@\"",
                dir.inside(),
                "-",
            ])
            .arg(program)
            .args(args)
            .env(
                "PATH",
                "/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin",
            )
            .output()
            .unwrap_or_else(|e| panic!("chroot {}: {e}", self.root.display()))
    }
}
