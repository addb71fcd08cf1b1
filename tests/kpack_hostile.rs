//! Split binaries made hostile: stale and decoy archives, binaries reached through links and
//! `..`, search paths that point at folders the binary has no business reading, and archive
//! sets that lack what the binary asks for. Every command that looks for a split binary's
//! archives must open exactly what AMD's loader opens, and say so when nothing is there.

use std::fs;
use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::Duration;

use offload::format::kpack::{ArchiveWriter, Scheme};

use crate::kpack_use::contents;
use crate::util;
use crate::util::{offload, offload_in, samples_dir, text_output};

/// Splits the committed HIP library into `out` under `dir` (archives `t_gfx906.kpack` and
/// `t_gfx90a.kpack` in `out/.kpack/`), with `extra` arguments.
fn split_library(dir: &Path, extra: &[&str]) -> PathBuf {
    let tree = dir.join("t");
    fs::create_dir_all(&tree).unwrap();
    fs::copy(
        samples_dir().join("linked/libhip.so"),
        tree.join("libhip.so"),
    )
    .unwrap();
    let mut args = vec!["kpack", "-r", "t", "-o", "out"];
    args.extend_from_slice(extra);
    let (code, _, err) = offload_in(dir, &args);
    assert_eq!((code, err.as_str()), (0, ""));
    dir.join("out/libhip.so")
}

/// A decoy archive: code objects 0 and 1 of `libhip.so` for `arch`, made of `fill`.
fn decoy(arch: &str, fill: u8) -> Vec<u8> {
    let mut writer = ArchiveWriter::new("t", arch, &[arch], Scheme::None);
    for key in ["libhip.so#0", "libhip.so#1"] {
        writer.add(key, arch, &[fill; 64]).unwrap();
    }
    writer.finish()
}

/// The gfx90a code objects of the library before it was split, extracted into `dir/name`.
fn unsplit_gfx90a(dir: &Path, name: &str) -> Vec<Vec<u8>> {
    let lib = samples_dir().join("linked/libhip.so");
    let lib = lib.to_str().unwrap();
    let (code, _, err) = offload_in(dir, &["extract", lib, "--arch", "gfx90a", "-o", name]);
    assert_eq!((code, err.as_str()), (0, ""));
    let found = contents(&dir.join(name));
    assert_eq!(found.len(), 2);
    found
}

#[test]
fn a_stale_archive_beside_the_right_one_is_never_read() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    split_library(d, &[]);
    // Sorts before t_gfx90a.kpack, and holds gfx90a code of its own.
    fs::write(d.join("out/.kpack/t_0ld.kpack"), decoy("gfx90a", 0xee)).unwrap();
    let expected = unsplit_gfx90a(d, "unsplit");

    let (code, out, err) = offload_in(
        d,
        &["extract", "out/libhip.so", "--arch", "gfx90a", "-o", "x"],
    );
    assert_eq!((code, err.as_str()), (0, ""), "{out}");
    assert_eq!(contents(&d.join("x")), expected);
    assert!(!out.contains("t_0ld"), "{out}");

    let (code, out, err) = offload_in(d, &["ls", "out/libhip.so"]);
    assert_eq!((code, err.as_str()), (0, ""));
    assert!(!out.contains("t_0ld"), "{out}");
    assert_eq!(out.lines().count(), 4, "{out}");

    let (code, out, err) = offload_in(d, &["verify", "out/libhip.so"]);
    assert!(
        !out.contains("t_0ld") && !err.contains("t_0ld"),
        "{code} {out}{err}"
    );

    // Merged back, the library carries the real code again.
    let (code, _, err) = offload_in(d, &["kpack", "--merge", "out/libhip.so", "-o", "merged"]);
    assert_eq!((code, err.as_str()), (0, ""));
    let (code, _, err) = offload_in(
        d,
        &["extract", "merged/libhip.so", "--arch", "gfx90a", "-o", "m"],
    );
    assert_eq!((code, err.as_str()), (0, ""));
    assert_eq!(contents(&d.join("m")), expected);
}

#[test]
fn a_binary_reached_through_a_link_or_dot_dot_is_looked_up_beside_its_real_file() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    split_library(d, &[]);
    let expected = unsplit_gfx90a(d, "unsplit");
    let real_archive = fs::canonicalize(d.join("out/.kpack/t_gfx90a.kpack")).unwrap();
    // A link in another folder, whose own .kpack/ holds decoys.
    fs::create_dir_all(d.join("elsewhere/.kpack")).unwrap();
    std::os::unix::fs::symlink("../out/libhip.so", d.join("elsewhere/lib.so")).unwrap();
    fs::write(
        d.join("elsewhere/.kpack/t_gfx90a.kpack"),
        decoy("gfx90a", 0xaa),
    )
    .unwrap();
    fs::write(
        d.join("elsewhere/.kpack/t_gfx906.kpack"),
        decoy("gfx906", 0xaa),
    )
    .unwrap();
    // Decoys where a path normalised by name alone would lead from a deeper folder.
    fs::create_dir_all(d.join("a/b/.kpack")).unwrap();
    fs::create_dir_all(d.join("a/b/out/.kpack")).unwrap();
    for folder in ["a/b/.kpack", "a/b/out/.kpack", ".kpack"] {
        fs::create_dir_all(d.join(folder)).unwrap();
        fs::write(d.join(folder).join("t_gfx90a.kpack"), decoy("gfx90a", 0xbb)).unwrap();
    }

    for (cwd, binary) in [
        (d.to_path_buf(), "elsewhere/lib.so"),
        (d.join("a/b"), "../../out/libhip.so"),
        (d.join("a/b"), "../../elsewhere/lib.so"),
    ] {
        let (code, out, err) =
            offload_in(&cwd, &["extract", binary, "--arch", "gfx90a", "-o", "x"]);
        assert_eq!((code, err.as_str()), (0, ""), "{binary}: {out}");
        assert_eq!(contents(&cwd.join("x")), expected, "{binary}");
        fs::remove_dir_all(cwd.join("x")).unwrap();
        let (code, out, err) = offload_in(&cwd, &["ls", binary]);
        assert_eq!((code, err.as_str()), (0, ""), "{binary}");
        let gfx90a: Vec<&str> = out.lines().filter(|l| l.contains(" gfx90a ")).collect();
        assert_eq!(gfx90a.len(), 2, "{binary}: {out}");
        for line in gfx90a {
            assert!(
                line.contains(&format!("-> {}[libhip.so#", real_archive.display())),
                "{binary}: {line}"
            );
        }
    }
}

/// A folder standing for `/etc`: a readable file that is a valid archive for the library,
/// a FIFO and a device named as processors, and a subfolder.
fn private_folder(d: &Path) -> PathBuf {
    let secret = d.join("secret");
    fs::create_dir_all(secret.join("gfx1100")).unwrap();
    fs::write(secret.join("shadow"), decoy("gfx90a", 0x55)).unwrap();
    fs::write(secret.join("tiny"), b"0123456789").unwrap();
    let fifo = secret.join("gfx906");
    let made = Command::new("mkfifo").arg(&fifo).status().unwrap();
    assert!(made.success());
    std::os::unix::fs::symlink("/dev/zero", secret.join("gfx90a")).unwrap();
    secret
}

#[test]
fn a_search_path_into_a_private_folder_opens_only_processor_names_there() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    let secret = private_folder(d);
    let pattern = format!("{}/@GFXARCH@", secret.display());
    let lib = split_library(d, &["--search-path", &pattern]);
    let lib = lib.to_str().unwrap();
    let looked = format!("looked at {pattern}");

    for args in [
        vec!["ls", lib],
        vec!["verify", lib],
        vec!["extract", lib, "--arch", "gfx90a", "-o", "x"],
        vec!["kpack", "--merge", lib, "-o", "merged"],
    ] {
        let mut command = offload();
        command.current_dir(d).args(&args);
        let (code, out, err) = output_within(&mut command, Duration::from_secs(20));
        assert_ne!(code, 0, "{args:?}: {out}{err}");
        for name in ["shadow", "tiny"] {
            assert!(
                !out.contains(name) && !err.contains(name),
                "{args:?}: {out}{err}"
            );
        }
        if args[0] != "extract" {
            assert!(err.contains(&looked), "{args:?}: {err}");
        }
    }
    assert!(!d.join("merged/libhip.so").exists());

    // What is opened there, as the system sees it: only paths named for processors, and no
    // folder is listed.
    let Some(strace) = util::tool("strace") else {
        return;
    };
    let traced = Command::new(&strace)
        .args(["-qq", "-o", "/dev/null", "true"])
        .status();
    if !traced.is_ok_and(|s| s.success()) {
        util::skip("strace cannot trace here (ptrace is not allowed)");
        return;
    }
    let log = d.join("trace");
    let (code, _, _) = text_output(
        Command::new(strace)
            .current_dir(d)
            .args(["-f", "-qq", "-e", "trace=open,openat,getdents64", "-o"])
            .arg(&log)
            .arg(env!("CARGO_BIN_EXE_offload"))
            .args(["ls", lib]),
    );
    assert_eq!(code, 1);
    let trace = fs::read_to_string(&log).unwrap();
    let inside = format!("\"{}/", secret.display());
    let opened: Vec<&str> = trace.lines().filter(|l| l.contains(&inside)).collect();
    assert!(!opened.is_empty(), "{trace}");
    for line in &opened {
        let name = line
            .split(&inside)
            .nth(1)
            .unwrap()
            .split('"')
            .next()
            .unwrap();
        assert!(name.starts_with("gfx"), "opened {name}: {line}");
        assert!(!line.contains("getdents"), "{line}");
    }
    let listed = format!("\"{}\"", secret.display());
    assert!(
        !trace.lines().any(|l| l.contains(&listed)),
        "the folder itself was opened: {trace}"
    );
}

/// Runs `command`, killing it if it has not ended within `limit` (a hang is a failure).
fn output_within(command: &mut Command, limit: Duration) -> (i32, String, String) {
    let mut child = command
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    let start = std::time::Instant::now();
    while child.try_wait().unwrap().is_none() {
        if start.elapsed() > limit {
            let _ = child.kill();
            panic!("{command:?} did not end within {limit:?}");
        }
        std::thread::sleep(Duration::from_millis(20));
    }
    let out = child.wait_with_output().unwrap();
    (
        out.status.code().unwrap_or(-1),
        String::from_utf8_lossy(&out.stdout).into_owned(),
        String::from_utf8_lossy(&out.stderr).into_owned(),
    )
}

#[test]
fn ls_says_when_a_split_binarys_archives_are_missing_or_lack_a_code_object() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    split_library(d, &[]);
    let kpack = d.join("out/.kpack");
    let real = fs::canonicalize(&kpack).unwrap();

    // An archive set that holds code object 0 only.
    let mut gfx90a = ArchiveWriter::new("t", "gfx90a", &["gfx90a"], Scheme::None);
    gfx90a.add("libhip.so#0", "gfx90a", &[1; 64]).unwrap();
    fs::write(kpack.join("t_gfx90a.kpack"), gfx90a.finish()).unwrap();
    fs::remove_file(kpack.join("t_gfx906.kpack")).unwrap();
    let (code, out, err) = offload_in(d, &["ls", "out/libhip.so"]);
    assert_eq!(code, 1, "{out}");
    assert_eq!(out.lines().count(), 2, "{out}");
    assert_eq!(
        err,
        format!(
            "offload ls: error: 'out/libhip.so': code object 1 (libhip.so#N) in none of its \
             archives ({}/t_gfx90a.kpack)\n",
            real.display()
        )
    );

    // No archive at all.
    fs::remove_file(kpack.join("t_gfx90a.kpack")).unwrap();
    let (code, out, err) = offload_in(d, &["ls", "out/libhip.so"]);
    assert_eq!(code, 1, "{out}");
    // Nothing found and the file failed: no empty table a script would read as a result.
    assert_eq!(out, "");
    assert_eq!(
        err,
        format!(
            "offload ls: error: 'out/libhip.so': no kpack archive found for its 2 code objects; \
             looked at {}/t_@GFXARCH@.kpack\n",
            real.display()
        )
    );
    // The loader's own variables still choose, and say where they pointed.
    let (code, _, err) = text_output(
        offload()
            .current_dir(d)
            .env("ROCM_KPACK_PATH", "/nonexistent/a.kpack")
            .args(["ls", "out/libhip.so"]),
    );
    assert_eq!(code, 1);
    assert!(err.ends_with("looked at /nonexistent/a.kpack\n"), "{err}");
}

/// The committed library with its gfx906 entry ID replaced by `id` (as long as the old one).
fn library_with_entry_id(id: &[u8]) -> Vec<u8> {
    let mut bytes = fs::read(samples_dir().join("linked/libhip.so")).unwrap();
    let old = b"hipv4-amdgcn-amd-amdhsa--gfx906";
    assert_eq!(id.len(), old.len());
    let at = bytes.windows(old.len()).position(|w| w == old).unwrap();
    bytes[at..at + old.len()].copy_from_slice(id);
    bytes
}

#[test]
fn an_entry_id_that_would_name_a_path_outside_the_output_is_refused() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    fs::create_dir_all(d.join("t/.kpack/t_x")).unwrap();
    fs::write(d.join("t/.kpack/t_x/keep"), b"a folder of the tree").unwrap();
    for id in [
        &b"hipv4-amdgcn-amd-amdhsa--x/../y"[..],
        b"hipv4-amdgcn-amd-amdhsa--gfx9\n6",
        b"hipv4-amdgcn-amd-amdhsa--gfx90.",
    ] {
        fs::write(d.join("t/libhip.so"), library_with_entry_id(id)).unwrap();
        let _ = fs::remove_dir_all(d.join("out"));
        // The file is named and left out of the split tree; nothing goes anywhere else.
        let (code, _, err) = offload_in(d, &["kpack", "-r", "t", "-o", "out"]);
        assert_eq!(code, 1, "{err}");
        let shown = format!("{:?}", String::from_utf8_lossy(id));
        assert!(
            err.contains(&format!(
                "bundle entry {shown}: its target ID is not a processor's"
            )),
            "{err}"
        );
        assert_eq!(err.lines().count(), 1, "{err}");
        assert!(!d.join("out/libhip.so").exists());
        assert!(!d.join("out/.kpack/y.kpack").exists());
        assert!(!d.join("y.kpack").exists() && !d.join("t/y.kpack").exists());
        assert!(!d.join("out/y.kpack").exists());
        // Named alone, it fails the command and nothing is written.
        let (code, out, _) = offload_in(d, &["kpack", "t/libhip.so", "-o", "alone"]);
        assert_eq!((code, out.as_str()), (1, ""));
        assert!(!d.join("alone").exists());
    }
}

#[test]
fn a_link_already_in_the_output_folder_carries_no_write_elsewhere() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    fs::create_dir_all(d.join("t/sub")).unwrap();
    fs::copy(
        samples_dir().join("linked/libhip.so"),
        d.join("t/sub/libhip.so"),
    )
    .unwrap();
    fs::create_dir_all(d.join("out")).unwrap();
    fs::create_dir_all(d.join("victim")).unwrap();
    std::os::unix::fs::symlink("../victim", d.join("out/sub")).unwrap();
    let (code, _, err) = offload_in(d, &["kpack", "-r", "t", "-o", "out"]);
    assert_eq!(code, 1);
    let victim = fs::canonicalize(d.join("victim")).unwrap();
    assert!(
        err.contains(&format!(
            "resolves to '{}', outside the output folder",
            victim.display()
        )),
        "{err}"
    );
    assert!(fs::read_dir(d.join("victim")).unwrap().next().is_none());
    assert!(!d.join("out/.kpack").exists());
}

#[test]
fn a_link_of_the_tree_that_cannot_be_made_leaves_nothing_in_place() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    fs::create_dir_all(d.join("t")).unwrap();
    fs::copy(
        samples_dir().join("linked/libhip.so"),
        d.join("t/libhip.so"),
    )
    .unwrap();
    std::os::unix::fs::symlink("libhip.so", d.join("t/lnk")).unwrap();
    // The output has a folder where the link goes.
    fs::create_dir_all(d.join("out/lnk")).unwrap();
    let (code, _, err) = offload_in(d, &["kpack", "-r", "t", "-o", "out"]);
    assert_eq!(code, 1);
    assert!(
        err.contains("a folder is there, where a link of the tree goes"),
        "{err}"
    );
    let left: Vec<String> = fs::read_dir(d.join("out"))
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .collect();
    assert_eq!(left, ["lnk"]);

    // A link of the tree named as the archive folder.
    fs::remove_dir_all(d.join("out")).unwrap();
    fs::remove_file(d.join("t/lnk")).unwrap();
    std::os::unix::fs::symlink("libhip.so", d.join("t/.kpack")).unwrap();
    let (code, _, err) = offload_in(d, &["kpack", "-r", "t", "-o", "out"]);
    assert_eq!(code, 1);
    assert!(err.contains("the tree has its own '.kpack'"), "{err}");
    assert!(!d.join("out/libhip.so").exists() && !d.join("out/.kpack").exists());
}

#[test]
fn a_tree_of_thousands_of_files_splits_under_a_low_limit_on_open_files() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    let tree = d.join("t");
    fs::create_dir_all(tree.join("lib")).unwrap();
    fs::copy(
        samples_dir().join("linked/libhip.so"),
        tree.join("lib/libhip.so"),
    )
    .unwrap();
    let files = 3000;
    for n in 0..files {
        fs::write(tree.join(format!("f{n:05}")), format!("file {n}\n")).unwrap();
    }
    let command = format!(
        "ulimit -n 64 && RAYON_NUM_THREADS=8 exec '{}' kpack -r t -o out",
        env!("CARGO_BIN_EXE_offload")
    );
    let (code, _, err) = text_output(Command::new("sh").current_dir(d).args(["-c", &command]));
    assert_eq!((code, err.as_str()), (0, ""));
    for n in 0..files {
        let name = format!("f{n:05}");
        assert_eq!(
            fs::read_to_string(d.join("out").join(&name)).unwrap(),
            format!("file {n}\n")
        );
    }
    assert!(d.join("out/.kpack/t_gfx90a.kpack").is_file());
    let (code, out, err) = offload_in(d, &["ls", "out/lib/libhip.so"]);
    assert_eq!((code, err.as_str()), (0, ""));
    assert_eq!(out.lines().count(), 4, "{out}");
}

/// An archive laid out as `info` and `entries` say, whose one stored code object is `blob`
/// (as stored: plain, or a zstd frame), whatever sizes the table declares.
fn one_blob_archive(
    info: &offload::format::kpack::ArchiveInfo,
    entries: &[offload::format::kpack::TocEntry],
    blob: &[u8],
) -> Vec<u8> {
    let plan = offload::format::kpack::layout(info, &[blob.len() as u64], entries).unwrap();
    let mut bytes = plan.head.clone();
    bytes.extend(plan.count_field(info.scheme));
    bytes.extend(plan.size_field(info.scheme, 0));
    bytes.extend(blob);
    bytes.extend(&plan.toc);
    bytes
}

/// An archive for `gfx90a` whose entries `keys` all name one stored code object: a zstd
/// frame of `zeros` zero bytes (an honest size), made without holding them.
fn zeros_archive(keys: &[&str], arch: &str, zeros: u64) -> Vec<u8> {
    use offload::format::kpack::{ArchiveInfo, TocEntry};
    let mut encoder = zstd::stream::write::Encoder::new(Vec::new(), 1).unwrap();
    let chunk = vec![0u8; 1 << 20];
    let mut left = zeros;
    while left > 0 {
        let n = left.min(chunk.len() as u64) as usize;
        std::io::Write::write_all(&mut encoder, &chunk[..n]).unwrap();
        left -= n as u64;
    }
    let frame = encoder.finish().unwrap();
    let info = ArchiveInfo {
        group_name: "t".into(),
        gfx_arch_family: "gfx90a".into(),
        gfx_arches: vec![arch.into()],
        scheme: Scheme::ZstdPerKernel,
    };
    let entries: Vec<TocEntry> = keys
        .iter()
        .map(|key| TocEntry {
            key: key.to_string(),
            arch: arch.into(),
            ordinal: 0,
            original_size: zeros,
            metadata: None,
        })
        .collect();
    one_blob_archive(&info, &entries, &frame)
}

#[test]
fn merging_inflates_a_large_code_object_straight_into_its_place() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    split_library(d, &[]);
    let kpack = d.join("out/.kpack");
    fs::remove_file(kpack.join("t_gfx906.kpack")).unwrap();
    let zeros = 768 << 20;
    let keys = ["libhip.so#0", "libhip.so#1"];
    fs::write(
        kpack.join("t_gfx90a.kpack"),
        zeros_archive(&keys, "gfx90a", zeros),
    )
    .unwrap();
    // Inflated through a window into a temporary file: the peak resident memory stays far
    // below the code object's size.
    let (code, peak) = peak_anonymous(
        offload()
            .current_dir(d)
            .env("RAYON_NUM_THREADS", "8")
            .args(["kpack", "--merge", "out/libhip.so", "-o", "m"]),
    );
    assert_eq!(code, 0);
    assert!(peak < 200 << 20, "peak anonymous memory {peak} bytes");
    let (code, listed, err) = offload_in(d, &["ls", "--json", "m/libhip.so"]);
    assert_eq!((code, err.as_str()), (0, ""));
    let listed: serde_json::Value = serde_json::from_str(&listed).unwrap();
    let sizes: Vec<u64> = listed
        .as_array()
        .unwrap()
        .iter()
        .filter(|i| i["arch"] == "gfx90a")
        .map(|i| i["size"].as_u64().unwrap())
        .collect();
    assert_eq!(sizes, [zeros], "one bundle shared by both wrappers");
}

#[test]
fn merging_refuses_a_processor_key_that_is_no_target_id() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    split_library(d, &[]);
    let kpack = d.join("out/.kpack");
    let long = "gfx".repeat(200_000);
    for arch in [
        "gfx90a\nfake line",
        "",
        "host-x86_64-unknown-linux-gnu-",
        long.as_str(),
    ] {
        let mut writer = ArchiveWriter::new("t", "gfx90a", &["gfx90a"], Scheme::None);
        for key in ["libhip.so#0", "libhip.so#1"] {
            writer.add(key, arch, &[7; 16]).unwrap();
        }
        fs::write(kpack.join("t_gfx90a.kpack"), writer.finish()).unwrap();
        let (code, out, err2) = offload_in(d, &["kpack", "--merge", "out/libhip.so", "-o", "m"]);
        assert_eq!((code, out.as_str()), (1, ""), "{err2:.400}");
        assert!(
            err2.contains("is no target ID, so it cannot be a bundle entry's"),
            "{arch:.40}: {err2:.400}"
        );
        assert_eq!(err2.lines().count(), 1, "{err2:.400}");
        assert!(err2.len() < 1000, "{:.400}", err2);
        assert!(!d.join("m/libhip.so").exists());
    }
}

#[test]
fn a_plain_code_object_is_listed_and_extracted_at_the_size_stored() {
    use offload::format::kpack::{ArchiveInfo, TocEntry};
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    let info = ArchiveInfo {
        group_name: "t".into(),
        gfx_arch_family: "gfx90a".into(),
        gfx_arches: vec!["gfx90a".into()],
        scheme: Scheme::None,
    };
    // The table declares 4096 bytes; 16 are stored.
    let entries = [TocEntry {
        key: "lib.so#0".into(),
        arch: "gfx90a".into(),
        ordinal: 0,
        original_size: 4096,
        metadata: None,
    }];
    fs::write(
        d.join("a.kpack"),
        one_blob_archive(&info, &entries, &[9u8; 16]),
    )
    .unwrap();
    let (code, json, err) = offload_in(d, &["ls", "--json", "a.kpack"]);
    assert_eq!((code, err.as_str()), (0, ""));
    let listed: serde_json::Value = serde_json::from_str(&json).unwrap();
    assert_eq!(listed[0]["size"], 16);
    let (code, out, err) = offload_in(d, &["extract", "a.kpack", "--arch", "gfx90a", "-o", "x"]);
    assert_eq!((code, err.as_str()), (0, ""));
    assert!(out.contains(" 16 bytes (a.kpack[lib.so#0])"), "{out}");
    assert_eq!(contents(&d.join("x")), [vec![9u8; 16]]);
    let (code, _, err) = offload_in(d, &["verify", "a.kpack"]);
    assert_eq!(code, 1);
    assert!(err.contains("4096"), "{err}");
}

/// The most anonymous memory `command` held at any moment while it ran (`RssAnon`, read
/// every few milliseconds), and its exit status.
fn peak_anonymous(command: &mut Command) -> (i32, u64) {
    let mut child = command
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::null())
        .spawn()
        .unwrap();
    let status = format!("/proc/{}/status", child.id());
    let mut peak = 0u64;
    loop {
        if let Some(done) = child.try_wait().unwrap() {
            return (done.code().unwrap_or(-1), peak);
        }
        let kib = fs::read_to_string(&status).ok().and_then(|text| {
            let line = text.lines().find(|l| l.starts_with("RssAnon:"))?;
            line.split_whitespace().nth(1)?.parse::<u64>().ok()
        });
        peak = peak.max(kib.unwrap_or(0) * 1024);
        std::thread::sleep(Duration::from_millis(2));
    }
}

#[test]
fn splitting_a_large_compressed_bundle_takes_little_memory() {
    use offload::format::bundle;
    use offload::format::ccob::Method;
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    // The library's first bundle (at 0x1000, with room up to the compressed one at 0x6000)
    // becomes a compressed bundle whose gfx90a entry inflates to 256 MiB of zeros.
    let zeros: u64 = 256 << 20;
    let ids = [
        ("host-x86_64-unknown-linux-gnu-", 0),
        ("hipv4-amdgcn-amd-amdhsa--gfx90a", zeros),
    ];
    let layout = bundle::layout(&ids, 4096).unwrap();
    let mut head = layout.header.clone();
    head.resize(layout.offsets[1] as usize, 0);
    let ccob = crate::bombs::compressed_bundle(Method::Zstd, 3, &head, zeros);
    assert!(ccob.len() <= 0x5000, "{} bytes", ccob.len());
    let mut library = fs::read(samples_dir().join("linked/libhip.so")).unwrap();
    library[0x1000..0x6000].fill(0);
    library[0x1000..0x1000 + ccob.len()].copy_from_slice(&ccob);
    fs::create_dir_all(d.join("c")).unwrap();
    fs::write(d.join("c/libhip.so"), library).unwrap();

    // The bundle inflates into a temporary file, not memory; the archive is staged on disk.
    let (code, peak) = peak_anonymous(
        offload()
            .current_dir(d)
            .env("RAYON_NUM_THREADS", "8")
            .args(["kpack", "c/libhip.so", "-o", "k"]),
    );
    assert_eq!(
        code,
        0,
        "{:?}",
        offload_in(d, &["kpack", "c/libhip.so", "-o", "k2"])
    );
    assert!(peak < 100 << 20, "peak anonymous memory {peak} bytes");
    let (code, json, err) = offload_in(d, &["ls", "--json", "k/libhip.so"]);
    assert_eq!((code, err.as_str()), (0, ""));
    let listed: serde_json::Value = serde_json::from_str(&json).unwrap();
    let sizes: Vec<(String, u64)> = listed
        .as_array()
        .unwrap()
        .iter()
        .map(|i| {
            (
                i["kpack"]["key"].as_str().unwrap().to_string(),
                i["size"].as_u64().unwrap(),
            )
        })
        .collect();
    assert_eq!(
        sizes,
        [
            ("libhip.so#0".to_string(), zeros),
            ("libhip.so#1".to_string(), 4232)
        ],
        "{json}"
    );
}

#[test]
fn where_archives_were_looked_for_is_escaped() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    let lib = split_library(d, &["--search-path", "/nowhere/\x1b[31mred\n@GFXARCH@"]);
    let lib = lib.to_str().unwrap();
    for args in [
        vec!["ls", lib],
        vec!["verify", lib],
        vec!["kpack", "--merge", lib, "-o", "m"],
    ] {
        let (code, _, err) = offload_in(d, &args);
        assert_ne!(code, 0, "{args:?}");
        assert!(
            err.contains("looked at /nowhere/\\e[31mred\\n@GFXARCH@"),
            "{args:?}: {err:?}"
        );
        assert!(!err.contains('\x1b'), "{args:?}: {err:?}");
    }
}

#[test]
fn merging_a_large_compressed_bundle_makes_the_bytes_compressing_in_memory_makes() {
    use offload::format::bundle;
    use offload::format::ccob::{self, CompressOptions, Method};
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    // A compressed bundle whose gfx90a entry inflates to 64 MiB, past the size a merge
    // compresses into a mapped temporary file and past what a spill holds in memory.
    let zeros: u64 = 64 << 20;
    let ids = [
        ("host-x86_64-unknown-linux-gnu-", 0),
        ("hipv4-amdgcn-amd-amdhsa--gfx90a", zeros),
    ];
    let layout = bundle::layout(&ids, 4096).unwrap();
    let mut head = layout.header.clone();
    head.resize(layout.offsets[1] as usize, 0);
    let ccob = crate::bombs::compressed_bundle(Method::Zstd, 3, &head, zeros);
    let mut library = fs::read(samples_dir().join("linked/libhip.so")).unwrap();
    library[0x1000..0x6000].fill(0);
    library[0x1000..0x1000 + ccob.len()].copy_from_slice(&ccob);
    fs::create_dir_all(d.join("c")).unwrap();
    fs::write(d.join("c/libhip.so"), library).unwrap();
    let (code, _, err) = offload_in(d, &["kpack", "c/libhip.so", "-o", "k"]);
    assert_eq!((code, err.as_str()), (0, ""));
    let mut first = None;
    for round in 0..3 {
        let _ = fs::remove_dir_all(d.join("m"));
        let (code, _, err) = text_output(
            offload()
                .current_dir(d)
                .env("RAYON_NUM_THREADS", "8")
                .args(["kpack", "--merge", "k/libhip.so", "-o", "m"]),
        );
        assert_eq!(code, 0, "{err}");
        let merged = fs::read(d.join("m/libhip.so")).unwrap();
        let at = merged.windows(4).position(|w| w == b"CCOB").unwrap();
        let (_, found) = ccob::split(&merged[at..]).next().unwrap().unwrap();
        let plain = found.decompress(1 << 30).unwrap();
        assert_eq!(plain.len() as u64, layout.offsets[1] + zeros);
        let options = CompressOptions {
            method: found.method,
            level: found.method.default_level(),
            version: found.version,
        };
        let (want, _) = ccob::compress(&plain, &options).unwrap();
        assert!(merged[at..].starts_with(&want), "round {round}");
        match &first {
            None => first = Some(merged),
            Some(first) => assert!(*first == merged, "round {round} wrote other bytes"),
        }
    }
}

/// The processors of [`one_frame_library`]'s compressed bundle, one code object each.
const ONE_FRAME_ARCHES: [&str; 12] = [
    "gfx900", "gfx902", "gfx906", "gfx908", "gfx90a", "gfx942", "gfx950", "gfx1010", "gfx1030",
    "gfx1100", "gfx1101", "gfx1200",
];

/// The size of each code object of [`one_frame_library`]'s compressed bundle.
const ONE_FRAME_CODE: u64 = 8 << 20;

/// `c/libhip.so` in `d`: the sample library whose first bundle becomes a compressed bundle
/// of [`ONE_FRAME_ARCHES`] code objects of [`ONE_FRAME_CODE`] zero bytes each (96 MiB), its
/// stream one zstd frame made in one piece, as JAX's ROCm plugin stores its bundles: a
/// decoder reading such a frame through a window needs a window as large as the stream.
fn one_frame_library(d: &Path) {
    use offload::format::bundle;
    use offload::format::ccob::{self, CompressOptions, Method};
    let mut ids = vec![("host-x86_64-unknown-linux-gnu-".to_string(), 0)];
    for arch in ONE_FRAME_ARCHES {
        ids.push((format!("hipv4-amdgcn-amd-amdhsa--{arch}"), ONE_FRAME_CODE));
    }
    let layout = bundle::layout(&ids, 4096).unwrap();
    let mut plain = layout.header.clone();
    plain.resize(layout.size as usize, 0);
    let mut compressor = zstd::bulk::Compressor::new(1).unwrap();
    compressor
        .set_parameter(zstd::zstd_safe::CParameter::WindowLog(27))
        .unwrap();
    let stream = compressor.compress(&plain).unwrap();
    // The frame header's descriptor: one segment, its window the whole stream.
    assert_ne!(stream[4] & 0x20, 0, "the frame is not made in one piece");
    let options = CompressOptions {
        method: Method::Zstd,
        level: 1,
        version: 3,
    };
    let total = 32 + stream.len() as u64;
    let hash = ccob::truncated_md5(&plain);
    let mut packed = ccob::header(&options, total, plain.len() as u64, hash).unwrap();
    packed.extend_from_slice(&stream);
    assert!(packed.len() <= 0x5000, "{} bytes", packed.len());
    let mut library = fs::read(samples_dir().join("linked/libhip.so")).unwrap();
    library[0x1000..0x6000].fill(0);
    library[0x1000..0x1000 + packed.len()].copy_from_slice(&packed);
    fs::create_dir_all(d.join("c")).unwrap();
    fs::write(d.join("c/libhip.so"), library).unwrap();
}

#[test]
fn a_bundle_compressed_in_one_frame_is_read_in_memory_that_does_not_follow_its_size() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    one_frame_library(d);
    let stream = ONE_FRAME_ARCHES.len() as u64 * ONE_FRAME_CODE;
    // Less than half the stream: neither a window as large as it nor the stream itself is
    // held, only a code object at a time (du) or nothing of it (kpack: a temporary file).
    let bound = stream / 2;
    let measured = |args: &[&str]| {
        let (code, peak) = peak_anonymous(
            offload()
                .current_dir(d)
                .env("RAYON_NUM_THREADS", "8")
                .args(args),
        );
        assert_eq!(code, 0, "{args:?}: {:?}", offload_in(d, args));
        assert!(peak < bound, "{args:?}: peak anonymous memory {peak} bytes");
    };
    measured(&["du", "--kernels", "c/libhip.so"]);
    measured(&["kpack", "c/libhip.so", "-o", "k"]);

    // Every code object read, each of its own size: twelve copies of one.
    let (code, json, err) = offload_in(d, &["du", "--kernels", "--json", "c/libhip.so"]);
    assert_eq!((code, err.as_str()), (0, ""));
    let report: serde_json::Value = serde_json::from_str(&json).unwrap();
    let total = &report["total"];
    assert_eq!(
        total["code_object_bytes"].as_u64(),
        Some(stream + 4232),
        "{json}"
    );
    let copies = report["code_objects"].as_array().unwrap();
    let zeros = copies.iter().find(|c| c["size"] == ONE_FRAME_CODE).unwrap();
    assert_eq!(zeros["copies"], ONE_FRAME_ARCHES.len());
    // Split: an archive per processor, each holding its code object whole.
    let (code, json, err) = offload_in(d, &["ls", "--json", "k/libhip.so"]);
    assert_eq!((code, err.as_str()), (0, ""));
    let listed: serde_json::Value = serde_json::from_str(&json).unwrap();
    let mut sizes: Vec<(String, u64)> = listed
        .as_array()
        .unwrap()
        .iter()
        .filter(|i| i["kpack"]["key"] == "libhip.so#0")
        .map(|i| {
            let arch = i["arch"].as_str().unwrap_or_default().to_string();
            (arch, i["size"].as_u64().unwrap())
        })
        .collect();
    sizes.sort();
    let mut expected: Vec<(String, u64)> = ONE_FRAME_ARCHES
        .iter()
        .map(|a| (a.to_string(), ONE_FRAME_CODE))
        .collect();
    expected.sort();
    assert_eq!(sizes, expected, "{json}");
}

#[test]
fn a_device_archive_of_inflated_images_holds_none_of_them_in_memory() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    one_frame_library(d);
    let stream = ONE_FRAME_ARCHES.len() as u64 * ONE_FRAME_CODE;
    // Every code object of the compressed bundle, inflated into the archive: less than half
    // of them may be held at once.
    let mut args = vec!["extract", "c/libhip.so", "-o", "dev.a"];
    for arch in ONE_FRAME_ARCHES {
        args.extend(["--arch", arch]);
    }
    let (code, peak) = peak_anonymous(
        offload()
            .current_dir(d)
            .env("RAYON_NUM_THREADS", "8")
            .args(&args),
    );
    assert_eq!(code, 0, "{:?}", offload_in(d, &args));
    assert!(peak < stream / 2, "peak anonymous memory {peak} bytes");
    // The bundle's twelve code objects, whole, and the plain bundle's one.
    let bytes = fs::read(d.join("dev.a")).unwrap();
    let archive = object::read::archive::ArchiveFile::parse(&*bytes).unwrap();
    let mut sizes: Vec<(String, usize)> = archive
        .members()
        .map(|m| {
            let m = m.unwrap();
            let data = m.data(&*bytes).unwrap();
            if data.len() as u64 == ONE_FRAME_CODE {
                assert!(data.iter().all(|&b| b == 0));
            }
            (String::from_utf8_lossy(m.name()).into_owned(), data.len())
        })
        .collect();
    sizes.sort();
    // Named as the bundler names a device archive's members; the plain bundle's gfx90a
    // code object beside the inflated one.
    let mut expected: Vec<(String, usize)> = ONE_FRAME_ARCHES
        .iter()
        .map(|a| {
            let name = format!("libhip-hipv4-amdgcn-amd-amdhsa--{a}libhip.bc");
            (name, ONE_FRAME_CODE as usize)
        })
        .collect();
    expected.push((
        "libhip-hipv4-amdgcn-amd-amdhsa--gfx90alibhip.bc".into(),
        4232,
    ));
    expected.sort();
    assert_eq!(sizes, expected);
}
