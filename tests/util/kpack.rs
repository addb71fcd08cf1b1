//! AMD's rocm-kpack as an oracle: its C++ loader (built once per test run with g++ around our
//! driver tests/support/kpack_load.cpp) and its Python splitter and archive writer (run
//! through tests/support/kpack_split.py and kpack_pack.py). All are taken from
//! `/work/shared/oracles/rocm-kpack` (or `$ROCM_KPACK_DIR`) at test time; nothing of them is
//! kept in the repository.
//!
//! Missing pieces (the oracle, g++, libmsgpack-cxx-dev, libzstd-dev, python3 with msgpack and
//! zstandard, clang-22) skip the test with a visible message, or fail it under
//! `OFFLOAD_REQUIRE_REFERENCE=1`.

use std::path::{Path, PathBuf};
use std::process::Command;
use std::sync::OnceLock;

use super::{python_with, root, skip, tool};

/// The rocm-kpack checkout, if there is one.
pub fn oracle_dir() -> Option<PathBuf> {
    let dir = std::env::var_os("ROCM_KPACK_DIR")
        .map(PathBuf::from)
        .unwrap_or_else(|| PathBuf::from("/work/shared/oracles/rocm-kpack"));
    let why = format!("rocm-kpack not found at {} (ROCM_KPACK_DIR)", dir.display());
    let found = Some(dir).filter(|dir| dir.join("runtime/src/loader.cpp").is_file());
    super::skips::reference(found, &why)
}

/// The loader driver, built once per test run; `None` (after a skip message) when it cannot be.
pub fn loader() -> Option<PathBuf> {
    static BUILT: OnceLock<Result<PathBuf, String>> = OnceLock::new();
    let oracle = oracle_dir()?;
    let built = BUILT.get_or_init(|| {
        let out = PathBuf::from(env!("CARGO_TARGET_TMPDIR")).join("kpack_load");
        let script = root().join("tests/support/kpack_loader/build.sh");
        let result = Command::new("bash")
            .arg(script)
            .arg(&oracle)
            .arg(&out)
            .output()
            .map_err(|e| e.to_string())?;
        if result.status.success() {
            Ok(out)
        } else {
            Err(String::from_utf8_lossy(&result.stderr).into_owned())
        }
    });
    match built {
        Ok(path) => Some(path.clone()),
        Err(e) => {
            skip(&format!(
                "the kpack loader does not build (apt-get install g++ libmsgpack-cxx-dev libzstd-dev): {e}"
            ));
            None
        }
    }
}

/// What the loader gave for one request: `Ok((size, fnv1a64))` or `Err(error code)`.
pub type Loaded = Result<(u64, u64), i32>;

/// Asks the loader `driver` for code object `index` of the binary at `binary` whose reference
/// bytes are in `metadata`, on a device asking for `arches`, with `env` set (and the loader's
/// variables otherwise cleared).
pub fn load(
    driver: &Path,
    metadata: &Path,
    binary: &Path,
    index: u64,
    arches: &[&str],
    env: &[(&str, &str)],
) -> Loaded {
    let mut command = Command::new(driver);
    command
        .arg(metadata)
        .arg(binary)
        .arg(index.to_string())
        .args(arches);
    for var in [
        "ROCM_KPACK_PATH",
        "ROCM_KPACK_PATH_PREFIX",
        "ROCM_KPACK_DISABLE",
        "ROCM_KPACK_DEBUG",
    ] {
        command.env_remove(var);
    }
    command.envs(env.iter().copied());
    let out = command.output().expect("the loader driver runs");
    let text = String::from_utf8_lossy(&out.stdout);
    let words: Vec<&str> = text.split_whitespace().collect();
    match words.as_slice() {
        ["ok", size, hash] => Ok((
            size.parse().unwrap(),
            u64::from_str_radix(hash, 16).unwrap(),
        )),
        ["error", code] => Err(code.parse().unwrap()),
        _ => panic!(
            "kpack_load: unexpected output {text:?}, {}",
            String::from_utf8_lossy(&out.stderr)
        ),
    }
}

/// The FNV-1a 64-bit hash the loader driver prints.
pub fn fnv1a64(bytes: &[u8]) -> u64 {
    bytes.iter().fold(0xcbf2_9ce4_8422_2325, |h, b| {
        (h ^ u64::from(*b)).wrapping_mul(0x0100_0000_01b3)
    })
}

/// The first Python 3 on `PATH` with msgpack and zstandard (Debian: python3-msgpack
/// python3-zstandard; a virtual environment's Python may lack them).
fn python() -> Option<PathBuf> {
    python_with(&["msgpack", "zstandard"])
}

/// Splits `binaries` (paths relative to `stage`, a folder of built files) with AMD's splitter,
/// as an artifact named `<group>_lib_gfx`: the output tree lies in `out`, with
/// `<group>_lib_generic/stage/...` holding the host files and `<group>_lib_<arch>/stage/.kpack/`
/// the archives. `None` after a skip message when a tool is missing.
pub fn split_with_python(stage: &Path, group: &str, out: &Path) -> Option<()> {
    let oracle = oracle_dir()?;
    let python = python()?;
    let bundler = tool("clang-offload-bundler-22")?;
    let artifact = out.join("in").join(format!("{group}_lib_gfx"));
    copy_tree(stage, &artifact.join("stage"));
    std::fs::write(artifact.join("artifact_manifest.txt"), "stage\n").unwrap();
    let split = out.join("split");
    let tmp = out.join("tmp");
    std::fs::create_dir_all(&split).unwrap();
    std::fs::create_dir_all(&tmp).unwrap();
    // The splitter finds clang-offload-bundler, readelf and objcopy on PATH.
    let llvm_bin = bundler
        .canonicalize()
        .unwrap()
        .parent()
        .unwrap()
        .to_path_buf();
    let path = std::env::join_paths(
        std::iter::once(llvm_bin).chain(std::env::split_paths(&std::env::var_os("PATH").unwrap())),
    )
    .unwrap();
    let result = Command::new(&python)
        .arg(root().join("tests/support/kpack_split.py"))
        .arg(oracle.join("python"))
        .arg("--artifact-dir")
        .arg(&artifact)
        .arg("--output-dir")
        .arg(&split)
        .arg("--artifact-prefix")
        .arg(format!("{group}_lib"))
        .arg("--tmp-dir")
        .arg(&tmp)
        .arg("--clang-offload-bundler")
        .arg(&bundler)
        .env("PATH", path)
        .output()
        .unwrap();
    assert!(
        result.status.success(),
        "the splitter failed: {}{}",
        String::from_utf8_lossy(&result.stdout),
        String::from_utf8_lossy(&result.stderr)
    );
    Some(())
}

/// Writes an archive with AMD's writer (python/rocm_kpack/kpack.py): `scheme` `"none"` or
/// `"zstd-per-kernel"`, `kernels` as (key, arch, file). `None` after a skip message.
pub fn pack_with_python(
    out: &Path,
    scheme: &str,
    group: &str,
    family: &str,
    arches: &[&str],
    kernels: &[(&str, &str, &Path)],
) -> Option<()> {
    let oracle = oracle_dir()?;
    let python = python()?;
    let mut command = Command::new(&python);
    command
        .arg(root().join("tests/support/kpack_pack.py"))
        .arg(oracle.join("python"))
        .arg(out)
        .args([scheme, group, family, &arches.join(",")]);
    for (key, arch, file) in kernels {
        command.arg(key).arg(arch).arg(file);
    }
    super::succeed(&mut command);
    Some(())
}

/// As [`pack_with_python`], each entry with the metadata map AMD's artifact splitter gives it
/// (`{target, source_prefix}`): `kernels` as (key, arch, file, target).
pub fn pack_with_python_metadata(
    out: &Path,
    group: &str,
    arches: &[&str],
    source_prefix: &str,
    kernels: &[(&str, &str, &Path, &str)],
) -> Option<()> {
    let oracle = oracle_dir()?;
    let python = python()?;
    let mut command = Command::new(&python);
    command
        .arg(root().join("tests/support/kpack_pack.py"))
        .arg(oracle.join("python"))
        .arg(out)
        .args(["none", group, arches[0], &arches.join(",")])
        .args(["--metadata", source_prefix]);
    for (key, arch, file, target) in kernels {
        command.arg(key).arg(arch).arg(file).arg(target);
    }
    super::succeed(&mut command);
    Some(())
}

/// Copies the folder `from` to `to`, recursively.
pub fn copy_tree(from: &Path, to: &Path) {
    std::fs::create_dir_all(to).unwrap();
    for entry in std::fs::read_dir(from).unwrap() {
        let entry = entry.unwrap();
        let target = to.join(entry.file_name());
        if entry.file_type().unwrap().is_dir() {
            copy_tree(&entry.path(), &target);
        } else {
            std::fs::copy(entry.path(), target).unwrap();
        }
    }
}

/// What AMD's archive reader (python/rocm_kpack/kpack.py, through
/// tests/support/kpack_read.py) reads from the archive at `path`: per entry `(key, arch, size,
/// md5 hex)`, sorted. `None` after a skip message when a tool is missing.
pub fn read_with_python(path: &Path) -> Option<Vec<(String, String, u64, String)>> {
    let oracle = oracle_dir()?;
    let python = python()?;
    let out = super::succeed(
        Command::new(&python)
            .arg(root().join("tests/support/kpack_read.py"))
            .arg(oracle.join("python"))
            .arg(path),
    );
    let mut rows: Vec<_> = String::from_utf8(out.stdout)
        .unwrap()
        .lines()
        .map(|line| {
            let w: Vec<&str> = line.split(' ').collect();
            (
                w[0].to_string(),
                w[1].to_string(),
                w[2].parse().unwrap(),
                w[3].to_string(),
            )
        })
        .collect();
    rows.sort();
    Some(rows)
}

/// Splits the PE image `input` with AMD's COFF transform (through
/// tests/support/kpack_split_pe.py) into `output`, writing `<kpack_dir>/<prefix>_<arch>.kpack`
/// with code objects keyed `<name>#<wrapper index>` and `search_path` in `.kpackrf`. `None`
/// after a skip message when a tool is missing.
pub fn split_pe_with_python(
    input: &Path,
    output: &Path,
    kpack_dir: &Path,
    prefix: &str,
    name: &str,
    search_path: &str,
) -> Option<()> {
    let oracle = oracle_dir()?;
    let python = python()?;
    super::succeed(
        Command::new(&python)
            .arg(root().join("tests/support/kpack_split_pe.py"))
            .arg(oracle.join("python"))
            .arg(input)
            .arg(output)
            .arg(kpack_dir)
            .args([prefix, name, search_path]),
    );
    Some(())
}

/// What AMD's COFF code makes of the PE image at `path` (through
/// tests/support/kpack_ref_pe.py): its `.kpackrf` reference as read by its reader (`null`
/// when there is none), and the errors and warnings of its structural checks, which run
/// `llvm_objdump` too. `None` after a skip message when a tool is missing.
pub fn read_pe_with_python(path: &Path, llvm_objdump: &Path) -> Option<serde_json::Value> {
    let oracle = oracle_dir()?;
    let python = python()?;
    let out = super::succeed(
        Command::new(&python)
            .arg(root().join("tests/support/kpack_ref_pe.py"))
            .arg(oracle.join("python"))
            .arg(path)
            .arg(llvm_objdump),
    );
    Some(serde_json::from_slice(&out.stdout).expect("the script prints JSON"))
}
