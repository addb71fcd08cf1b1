//! `offload wrapper` against clang-offload-wrapper-14 and the real and a stand-in OpenMP
//! runtime: the native object, the `.ll` and the `.bc` outputs all register the same images.
//! The wrapper runs with a `PATH` holding no LLVM tool: it needs none.

use std::path::{Path, PathBuf};
use std::process::Command;

use crate::util;
use crate::util::native::{link_and_run, runs_with_libomptarget, support};
use crate::util::{offload, samples_dir, succeed, text_output, OFFLOAD};

fn images() -> Vec<PathBuf> {
    let s = samples_dir().join("dev");
    vec![
        s.join("kernel-gfx906.hsaco"),
        s.join("kernel-gfx90a_xnack+.hsaco"),
    ]
}

/// A `PATH` without any tool: the wrapper needs none.
const NO_TOOLS: &str = "/nonexistent-offload-test-path";

/// Runs `offload wrapper args` in `dir` with no tools on `PATH`: the exit code and standard
/// error.
fn wrapper(dir: &Path, args: &[&str]) -> (i32, String) {
    let (code, _, stderr) = text_output(
        offload()
            .current_dir(dir)
            .env("PATH", NO_TOOLS)
            .arg("wrapper")
            .args(args),
    );
    (code, stderr)
}

fn wrap(dir: &Path, output: &str, with_arches: bool) {
    let images = images();
    let mut args: Vec<String> = vec![
        "-target=x86_64-pc-linux-gnu".into(),
        "-o".into(),
        output.into(),
    ];
    for (image, arch) in images.iter().zip(["gfx906", "gfx90a:xnack+"]) {
        if with_arches {
            args.push(format!("--offload-arch={arch}"));
        }
        args.push(image.display().to_string());
    }
    let refs: Vec<&str> = args.iter().map(String::as_str).collect();
    let (code, err) = wrapper(dir, &refs);
    assert_eq!(code, 0, "{err}");
}

/// Links `object` with the stand-in runtime and returns what the program prints.
fn registered(object: &Path) -> String {
    link_and_run(
        Path::new("cc"),
        &support("omp_runtime.c"),
        object,
        &object.with_extension("exe"),
    )
}

const REGISTERED: &str = "register: 2 images
  image 0: 3168 bytes, fnv 85f8dc5f29eb479a, entries 0 bytes
  image 1: 4232 bytes, fnv 887965912cb4de48, entries 0 bytes
  entries 0 bytes
main
unregister: 2 images
";

const INFO: &str = "image info: version 1, image 0 of 2, arch 'gfx906', options (null)
image info: version 1, image 1 of 2, arch 'gfx90a:xnack+', options (null)
";

#[test]
fn the_native_object_registers_images_and_their_target_ids() {
    let dir = tempfile::tempdir().unwrap();
    wrap(dir.path(), "w.o", true);
    assert_eq!(
        registered(&dir.path().join("w.o")),
        format!("{INFO}{REGISTERED}")
    );
    // Small images follow the rest of the object without a page of padding.
    let size = std::fs::metadata(dir.path().join("w.o")).unwrap().len();
    assert!(size < 3168 + 4232 + 4096, "{size} bytes");
}

#[test]
fn llvm_ir_and_bitcode_register_the_same() {
    let Some(clang) = util::tool("clang-19") else {
        return;
    };
    let dir = tempfile::tempdir().unwrap();
    for output in ["w.ll", "w.bc"] {
        wrap(dir.path(), output, true);
        let object = dir.path().join(format!("{output}.o"));
        succeed(
            Command::new(&clang)
                .arg("-c")
                .arg(dir.path().join(output))
                .arg("-o")
                .arg(&object),
        );
        assert_eq!(
            registered(&object),
            format!("{INFO}{REGISTERED}"),
            "{output}"
        );
    }
}

#[test]
fn clang_offload_wrapper_14_registers_the_same_images() {
    let (Some(upstream), Some(clang)) = (
        util::tool("clang-offload-wrapper-14"),
        util::tool("clang-19"),
    ) else {
        return;
    };
    let dir = tempfile::tempdir().unwrap();
    succeed(
        Command::new(upstream)
            .current_dir(dir.path())
            .args(["-target=x86_64-pc-linux-gnu", "-o", "w14.bc"])
            .args(images()),
    );
    succeed(
        Command::new(&clang)
            .current_dir(dir.path())
            .args(["-c", "w14.bc", "-o", "w14.o"]),
    );
    assert_eq!(registered(&dir.path().join("w14.o")), REGISTERED);
    // Ours, without --offload-arch: the same, and image information with empty target IDs.
    wrap(dir.path(), "ours.o", false);
    let ours = registered(&dir.path().join("ours.o"));
    let without_info: String = ours
        .lines()
        .filter(|l| !l.starts_with("image info"))
        .map(|l| format!("{l}\n"))
        .collect();
    assert_eq!(without_info, REGISTERED);
    assert!(ours.contains("arch '', options (null)"), "{ours}");
}

#[test]
fn the_real_libomptarget_takes_the_wrapper() {
    let dir = tempfile::tempdir().unwrap();
    wrap(dir.path(), "w.o", true);
    // The runtime has no __tgt_register_image_info: the weak call is skipped.
    runs_with_libomptarget(Path::new("cc"), dir.path(), &["w.o"]);
}

#[test]
fn an_aarch64_object_links() {
    let Some(lld) = util::tool("ld.lld-19") else {
        return;
    };
    let dir = tempfile::tempdir().unwrap();
    let image = images()[1].display().to_string();
    let (code, err) = wrapper(
        dir.path(),
        &[
            "--target",
            "aarch64-unknown-linux-gnu",
            "-o=w.o",
            "--offload-arch",
            "gfx90a:xnack+",
            &image,
        ],
    );
    assert_eq!(code, 0, "{err}");
    let data = std::fs::read(dir.path().join("w.o")).unwrap();
    let file = object::File::parse(&*data).unwrap();
    assert_eq!(
        object::Object::architecture(&file),
        object::Architecture::Aarch64
    );
    succeed(
        Command::new(lld)
            .current_dir(dir.path())
            .args(["-shared", "w.o", "-o", "libw.so"]),
    );
}

#[test]
fn bad_input_is_a_clear_error_and_writes_nothing() {
    let dir = tempfile::tempdir().unwrap();
    let image = images()[0].display().to_string();
    std::fs::create_dir(dir.path().join("folder")).unwrap();
    let cases: [(&[&str], &str); 9] = [
        (
            &["-target=x86_64-pc-linux-gnu", "-o", "w.o", "missing.hsaco"],
            "'missing.hsaco': No such file or directory",
        ),
        (
            &[
                "-target=x86_64-pc-linux-gnu",
                "-o",
                "w.bc",
                &image,
                "missing.hsaco",
            ],
            "'missing.hsaco': No such file or directory",
        ),
        (
            &["-target=x86_64-pc-linux-gnu", "-o", "w.bc", "folder"],
            "'folder': Is a directory",
        ),
        (
            &["--kind=openmp", "-o", "w.bc", &image, "folder"],
            "'folder': Is a directory",
        ),
        (
            &["--kind=hip", "-o", "w.ll", "missing.hsaco"],
            "'missing.hsaco': No such file or directory",
        ),
        (
            &["-target=mips-unknown-linux-gnu", "-o", "w.o", &image],
            "'mips-unknown-linux-gnu': unsupported target triple",
        ),
        (
            &[
                "-target=x86_64-pc-linux-gnu",
                "-o",
                "w.o",
                &image,
                "--offload-arch=gfx90a",
            ],
            "--offload-arch=gfx90a is not followed by an image",
        ),
        (
            &["-o", "w.o", &image],
            "for the --target option: must be specified at least once!",
        ),
        (
            &["-target=x86_64-pc-linux-gnu", "-o", "w.o"],
            "Not enough positional command line arguments specified!",
        ),
    ];
    for (args, expected) in cases {
        let (code, err) = wrapper(dir.path(), args);
        assert_eq!(code, 1, "{args:?}: {err}");
        assert!(err.contains(expected), "{args:?}: {err}");
        let written: Vec<_> = std::fs::read_dir(dir.path())
            .unwrap()
            .map(|e| e.unwrap().file_name())
            .filter(|name| name != "folder")
            .collect();
        assert!(written.is_empty(), "{args:?}: {written:?}");
    }
}

#[test]
fn a_link_named_clang_offload_wrapper_is_the_wrapper() {
    let dir = tempfile::tempdir().unwrap();
    let link = dir.path().join("clang-offload-wrapper");
    std::os::unix::fs::symlink(OFFLOAD, &link).unwrap();
    let out = Command::new(&link).arg("--help").output().unwrap();
    assert!(out.status.success());
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(
        // As LLVM, the usage line names the program by its file name.
        text.contains("USAGE: clang-offload-wrapper [options] <input files>"),
        "{text}"
    );
    assert!(text.contains("--offload-arch=<target id>"), "{text}");
}

/// The bytes `len` long at `offset` of `file`.
fn read_at(file: &std::fs::File, offset: u64, len: usize) -> Vec<u8> {
    use std::os::unix::fs::FileExt;
    let mut bytes = vec![0; len];
    file.read_exact_at(&mut bytes, offset).unwrap();
    bytes
}

/// Makes `path` a sparse image `len` bytes long with marks at its start, in its middle and at
/// its end: `HEAD` at 0, `MIDL` at `len / 2 + 3`, `TAIL` in the last four bytes.
pub(crate) fn sparse_image(path: &Path, len: u64) {
    use std::os::unix::fs::FileExt;
    let file = std::fs::File::create(path).unwrap();
    file.set_len(len).unwrap();
    for (at, mark) in [(0, b"HEAD"), (len / 2 + 3, b"MIDL"), (len - 4, b"TAIL")] {
        file.write_all_at(mark, at).unwrap();
    }
}

/// Checks that the `len` bytes at `start` of `file` are [`sparse_image`]'s.
pub(crate) fn assert_sparse_image_at(file: &std::fs::File, start: u64, len: u64) {
    assert_eq!(read_at(file, start, 8), b"HEAD\0\0\0\0");
    assert_eq!(read_at(file, start + len / 2, 8), b"\0\0\0MIDL\0");
    assert_eq!(read_at(file, start + len - 8, 8), b"\0\0\0\0TAIL");
}

#[test]
fn a_large_image_is_copied_into_place_not_held() {
    use object::{Object as _, ObjectSection as _, ObjectSymbol as _};
    // Four times the address space the wrapper is given below.
    const LARGE: u64 = 256 << 20;
    let dir = tempfile::tempdir().unwrap();
    // The large image after a small one.
    sparse_image(&dir.path().join("large.bin"), LARGE);
    let small = images()[0].clone();
    let small_bytes = std::fs::read(&small).unwrap();
    let args = [
        "wrapper",
        "-target=x86_64-pc-linux-gnu",
        "-o",
        "w.o",
        small.to_str().unwrap(),
        "large.bin",
    ];
    // Far less address space than the image: it must not be read into memory nor mapped.
    let (out, _) = crate::bombs::run(dir.path(), &args, 64 << 20);
    assert_eq!(
        out.status.code(),
        Some(0),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let output = std::fs::File::open(dir.path().join("w.o")).unwrap();
    let cache = object::read::ReadCache::new(output);
    let object = object::File::parse(&cache).unwrap();
    let rodata = object.section_by_name(".rodata").unwrap();
    let (start, size) = rodata.file_range().unwrap();
    let symbol = |name: &str| {
        let s = object.symbol_by_name(name).unwrap();
        (s.address(), s.size())
    };
    let first = symbol(".omp_offloading.device_image");
    let second = symbol(".omp_offloading.device_image.1");
    let small_len = small_bytes.len() as u64;
    assert_eq!(first, (0, small_len));
    assert_eq!(second, (small_len.next_multiple_of(8), LARGE));
    assert_eq!(size, second.0 + LARGE);
    assert_eq!(start % 4096, 0, "large images start on a page boundary");
    let output = std::fs::File::open(dir.path().join("w.o")).unwrap();
    assert_eq!(output.metadata().unwrap().len(), start + size);
    assert!(read_at(&output, start, small_bytes.len()) == small_bytes);
    assert_sparse_image_at(&output, start + second.0, LARGE);
    // And the program registers both, the large one whole.
    let registered = registered(&dir.path().join("w.o"));
    assert!(
        registered.contains(&format!("image 1: {LARGE} bytes")),
        "{registered}"
    );
}

/// Compiles `module` with `clang`, links it with the stand-in runtime of LLVM 22's wrapper
/// modules, runs it and returns what it prints.
fn registered_22(clang: &Path, module: &Path) -> String {
    let object = module.with_extension("o");
    succeed(
        Command::new(clang)
            .arg("-w")
            .arg("-c")
            .arg(module)
            .arg("-o")
            .arg(&object),
    );
    link_and_run(
        clang,
        &support("offload_runtime22.c"),
        &object,
        &module.with_extension("exe"),
    )
}

#[test]
fn llvm_offload_wrapper_22_modules_register_what_llvm_s_do() {
    let (Some(upstream), Some(clang)) = (
        util::tool("llvm-offload-wrapper-22"),
        util::tool("clang-22"),
    ) else {
        return;
    };
    let dir = tempfile::tempdir().unwrap();
    let link = dir.path().join("llvm-offload-wrapper");
    std::os::unix::fs::symlink(OFFLOAD, &link).unwrap();
    let images = images();
    for (kind, count, expected) in [
        ("hip", 1, "hip register: magic 48495046 version 1"),
        ("cuda", 1, "cuda register end 1"),
        ("openmp", 2, "openmp register: 2 images"),
    ] {
        let args = |out: &str| {
            let mut args = vec![format!("--kind={kind}"), "-o".into(), out.into()];
            args.extend(images[..count].iter().map(|i| i.display().to_string()));
            args
        };
        succeed(
            Command::new(&upstream)
                .current_dir(dir.path())
                .args(args("llvm.bc")),
        );
        let theirs = registered_22(&clang, &dir.path().join("llvm.bc"));
        assert!(theirs.contains(expected), "{theirs}");
        // Through the link, the subcommand, as bitcode and as IR text: the same registrations.
        succeed(
            Command::new(&link)
                .current_dir(dir.path())
                .env("PATH", NO_TOOLS)
                .args(args("ours.bc")),
        );
        succeed(
            offload()
                .current_dir(dir.path())
                .env("PATH", NO_TOOLS)
                .arg("wrapper")
                .args(args("ours.ll")),
        );
        for ours in ["ours.bc", "ours.ll"] {
            assert_eq!(
                registered_22(&clang, &dir.path().join(ours)),
                theirs,
                "{kind} {ours}"
            );
        }
    }
}

#[test]
fn llvm_offload_wrapper_22_command_line_errors_match_llvm_s() {
    let Some(upstream) = util::tool("llvm-offload-wrapper-22") else {
        return;
    };
    let dir = tempfile::tempdir().unwrap();
    // Named as LLVM's, so that the messages name the same program.
    let ours = dir.path().join("llvm-offload-wrapper-22");
    std::os::unix::fs::symlink(OFFLOAD, &ours).unwrap();
    let image = images()[0].display().to_string();
    let cases: [&[&str]; 8] = [
        &[],
        &[&image],
        &["--kind=foo", &image],
        &["--kind=hip", "-o", "x.bc", "missing.bin"],
        &["--kind=hip", "-o", "x.bc", &image, &image],
        &["--kind=cuda", &image],
        &["--bogus", &image],
        &["--help"],
    ];
    for args in cases {
        let run = |tool: &Path| {
            let (code, out, err) =
                text_output(Command::new(tool).current_dir(dir.path()).args(args));
            let path = tool.display().to_string();
            let tidy = |s: String| s.replace(&path, "llvm-offload-wrapper-22");
            (code, tidy(out), tidy(err))
        };
        assert_eq!(run(&ours), run(&upstream), "{args:?}");
        assert!(!dir.path().join("x.bc").exists(), "{args:?}");
    }
}

#[test]
fn llvm_22_openmp_modules_link_with_the_real_libomptarget() {
    let Some(clang) = util::tool("clang-22") else {
        return;
    };
    let dir = tempfile::tempdir().unwrap();
    let image = images()[0].display().to_string();
    let (code, err) = wrapper(dir.path(), &["--kind=openmp", "-o", "w.bc", &image]);
    assert_eq!(code, 0, "{err}");
    runs_with_libomptarget(&clang, dir.path(), &["w.bc"]);
}

/// An image of `len` bytes holding every byte value, quotes and backslashes included.
fn pattern(len: usize) -> Vec<u8> {
    (0..len).map(|i| (i * 37 + 11) as u8).collect()
}

/// The disassembly of `module` by `llvm_dis`, without its first line (which names the file).
fn disassembly(llvm_dis: &Path, module: &Path) -> String {
    let (code, out, err) = text_output(Command::new(llvm_dis).arg(module).args(["-o", "-"]));
    assert_eq!(
        code,
        0,
        "{} {}: {err}",
        llvm_dis.display(),
        module.display()
    );
    out.lines().skip(1).map(|l| format!("{l}\n")).collect()
}

#[test]
fn bitcode_is_the_module_of_the_ir_text() {
    let tools = ["llvm-as-22", "llvm-dis-22", "llvm-dis-19", "opt-22"].map(util::tool);
    let [Some(llvm_as), Some(dis22), Some(dis19), Some(opt)] = tools else {
        return;
    };
    let dir = tempfile::tempdir().unwrap();
    // Sizes around the blob's 32-bit padding, and one of a few KiB.
    let sizes = [0, 1, 3, 4, 5, 3073];
    let mut images = Vec::new();
    for len in sizes {
        let name = format!("i{len}.bin");
        std::fs::write(dir.path().join(&name), pattern(len)).unwrap();
        images.push(name);
    }
    std::fs::write(dir.path().join("zero.bin"), [0; 6]).unwrap();
    let mut cases: Vec<(String, Vec<String>)> = Vec::new();
    let strings = |s: &[&str]| s.iter().map(|s| s.to_string()).collect::<Vec<_>>();
    for image in &images {
        for kind in ["hip", "cuda", "openmp"] {
            let args = strings(&[&format!("--kind={kind}"), image]);
            cases.push((format!("{kind}-{image}"), args));
        }
        let args = strings(&[
            "-target=x86_64-pc-linux-gnu",
            "--offload-arch=gfx906",
            image,
        ]);
        cases.push((format!("omp14-{image}"), args));
    }
    let mut all = strings(&["--kind=openmp"]);
    all.extend(images.iter().cloned());
    all.push("zero.bin".into());
    cases.push(("openmp-all".into(), all));
    let mut all = strings(&["-target=aarch64-unknown-linux-gnu"]);
    for (i, image) in images.iter().enumerate() {
        if i % 2 == 0 {
            all.push(format!(
                "--offload-arch=gfx90a:xnack{}",
                ["+", "-", ""][i % 3]
            ));
        }
        all.push(image.clone());
    }
    all.push("zero.bin".into());
    cases.push(("omp14-all".into(), all));
    for (name, args) in cases {
        let refs: Vec<&str> = args.iter().map(String::as_str).collect();
        let (bc, ll) = (format!("{name}.bc"), format!("{name}.ll"));
        for output in [&bc, &ll] {
            let (code, err) = wrapper(dir.path(), &[&["-o", output.as_str()], &refs[..]].concat());
            assert_eq!(code, 0, "{name}: {err}");
        }
        let ours = dir.path().join(&bc);
        let reference = dir.path().join(format!("{name}.ref.bc"));
        succeed(
            Command::new(&llvm_as)
                .arg(dir.path().join(&ll))
                .arg("-o")
                .arg(&reference),
        );
        succeed(
            Command::new(&opt)
                .args(["-passes=verify", "-o", "/dev/null"])
                .arg(&ours),
        );
        for dis in [&dis22, &dis19] {
            assert_eq!(
                disassembly(dis, &ours),
                disassembly(dis, &reference),
                "{name}, {}",
                dis.display()
            );
        }
        // clang-offload-wrapper's images other than the smallest are blobs: their bytes in
        // place, 32-bit aligned (llvm-offload-wrapper's are LLVM's string records, at
        // whatever bit they start, tests/wrapper_bitcode.rs compares them with LLVM's).
        let written = std::fs::read(&ours).unwrap();
        assert_eq!(written.len() % 4, 0, "{name}");
        let images = args.iter().filter(|_| name.starts_with("omp14"));
        for image in images {
            let Some(len) = image.strip_prefix('i').and_then(|i| i.strip_suffix(".bin")) else {
                continue;
            };
            let bytes = pattern(len.parse().unwrap());
            if bytes.len() >= 4 {
                let at = written.windows(bytes.len()).position(|w| w == bytes);
                assert!(
                    at.is_some_and(|at| at % 4 == 0),
                    "{name}: {image} at {at:?}"
                );
            }
        }
    }
}

#[test]
fn a_large_image_is_copied_into_bitcode_not_held() {
    use std::os::unix::fs::FileExt;
    // Four times the address space the wrapper is given below, and not a multiple of 4.
    const LARGE: u64 = (256 << 20) + 3;
    let dir = tempfile::tempdir().unwrap();
    let large = dir.path().join("large.bin");
    let file = std::fs::File::create(&large).unwrap();
    file.set_len(LARGE).unwrap();
    for (at, mark) in [(0, b"HEAD"), (LARGE / 2, b"MIDL"), (LARGE - 4, b"TAIL")] {
        file.write_all_at(mark, at).unwrap();
    }
    drop(file);
    let small = images()[0].display().to_string();
    let cases: [&[&str]; 2] = [
        &[
            "wrapper",
            "-target=x86_64-pc-linux-gnu",
            "-o",
            "w.bc",
            &small,
            "large.bin",
        ],
        &["wrapper", "--kind=hip", "-o", "w.bc", "large.bin"],
    ];
    for args in cases {
        // Far less address space than the image: it must not be read into memory nor mapped.
        let (out, _) = crate::bombs::run(dir.path(), args, 64 << 20);
        assert_eq!(
            out.status.code(),
            Some(0),
            "{args:?}: {}",
            String::from_utf8_lossy(&out.stderr)
        );
        let output = std::fs::File::open(dir.path().join("w.bc")).unwrap();
        let len = output.metadata().unwrap().len();
        assert!(len > LARGE && len < LARGE + 16384, "{args:?}: {len} bytes");
        // The image is in place after the head of the module: a blob, 32-bit aligned and
        // padded (clang-offload-wrapper), or LLVM's string record of its bytes, starting at
        // any bit (llvm-offload-wrapper).
        let head = read_at(&output, 0, 16384);
        let (at, shift) = find_shifted(&head, b"HEAD").unwrap();
        if args[0] == "wrapper" && args[1].starts_with("-target") {
            assert_eq!((at % 4, shift), (0, 0), "{args:?}");
            assert_eq!(read_at(&output, at + 4, 8), [0; 8], "{args:?}");
        }
        let shifted = |offset: u64, len: usize| {
            let bytes = read_at(&output, offset, len + 1);
            (0..len)
                .map(|i| ((u16::from(bytes[i + 1]) << 8 | u16::from(bytes[i])) >> shift) as u8)
                .collect::<Vec<u8>>()
        };
        assert_eq!(shifted(at + LARGE / 2, 4), b"MIDL", "{args:?}");
        assert_eq!(shifted(at + LARGE - 8, 8), b"\0\0\0\0TAIL", "{args:?}");
    }
}

/// Where `needle` is in `haystack` at any bit: its byte and the bit in that byte.
fn find_shifted(haystack: &[u8], needle: &[u8]) -> Option<(u64, u32)> {
    (0..8).find_map(|shift| {
        let shifted: Vec<u8> = haystack
            .windows(2)
            .map(|w| ((u16::from(w[1]) << 8 | u16::from(w[0])) >> shift) as u8)
            .collect();
        let at = shifted.windows(needle.len()).position(|w| w == needle)?;
        Some((at as u64, shift))
    })
}

#[test]
fn a_megabyte_image_reads_back_through_llvm() {
    let Some(opt) = util::tool("opt-22") else {
        return;
    };
    let dir = tempfile::tempdir().unwrap();
    let image = pattern((3 << 20) + 1);
    std::fs::write(dir.path().join("big.bin"), &image).unwrap();
    for (i, kind) in ["hip", "openmp"].iter().enumerate() {
        let output = format!("w{i}.bc");
        let (code, err) = wrapper(
            dir.path(),
            &[&format!("--kind={kind}"), "-o", &output, "big.bin"],
        );
        assert_eq!(code, 0, "{err}");
        // The image constant read back: its length, and its first and last bytes.
        let (code, text, err) = text_output(
            Command::new(&opt)
                .args(["-passes=verify", "-S", "-o", "-"])
                .arg(dir.path().join(&output)),
        );
        assert_eq!(code, 0, "{kind}: {err}");
        let constant = format!("[{} x i8] c\"\\0B0U", image.len());
        assert!(text.contains(&constant), "{kind}");
    }
}

/// `offload wrapper --kind=hip` given code objects bundles them as clang does (its
/// clang-offload-bundler command line) before wrapping: the program registers the same fat
/// binary as one linked from LLVM's tools.
#[test]
fn a_hip_wrapper_bundles_code_objects_as_clang_does() {
    let (Some(bundler), Some(upstream), Some(clang)) = (
        util::tool("clang-offload-bundler-22"),
        util::tool("llvm-offload-wrapper-22"),
        util::tool("clang-22"),
    ) else {
        return;
    };
    let dir = tempfile::tempdir().unwrap();
    let images = images();
    let (gfx906, gfx90a) = (images[0].to_str().unwrap(), images[1].to_str().unwrap());
    succeed(Command::new(&bundler).current_dir(dir.path()).args([
        "-type=o",
        "-bundle-align=4096",
        "-targets=host-x86_64-pc-linux-gnu,hipv4-amdgcn-amd-amdhsa--gfx906,hipv4-amdgcn-amd-amdhsa--gfx90a:xnack+",
        "-input=/dev/null",
        &format!("-input={gfx906}"),
        &format!("-input={gfx90a}"),
        "-output=clang.hipfb",
    ]));
    succeed(Command::new(&upstream).current_dir(dir.path()).args([
        "--kind=hip",
        "-o",
        "llvm.bc",
        "clang.hipfb",
    ]));
    let theirs = registered_22(&clang, &dir.path().join("llvm.bc"));
    assert!(
        theirs.contains("hip register: magic 48495046 version 1"),
        "{theirs}"
    );
    // Target IDs read from the code objects' headers, or given; in any order: entries are
    // sorted as clang sorts them.
    let cases: [&[&str]; 3] = [
        &["--bundle", "-o", "header.ll", gfx90a, gfx906],
        &[
            "--offload-arch=gfx90a:xnack+",
            gfx90a,
            "--offload-arch",
            "gfx906",
            gfx906,
            "-o",
            "given.bc",
        ],
        &["--bundle", "-o", "after-dashes.bc", "--", gfx906, gfx90a],
    ];
    for args in cases {
        succeed(
            offload()
                .current_dir(dir.path())
                .args(["wrapper", "--kind=hip"])
                .args(args),
        );
        let output = args[args.iter().position(|a| *a == "-o").unwrap() + 1];
        let ours = dir.path().join(output);
        assert_eq!(registered_22(&clang, &ours), theirs, "{args:?}");
    }
    // Compressed: a CCOB of the same bundle, whose code objects come back byte for byte.
    succeed(offload().current_dir(dir.path()).args([
        "wrapper",
        "--kind=hip",
        "--compress",
        "-o",
        "compressed.bc",
        gfx906,
        gfx90a,
    ]));
    let registered = registered_22(&clang, &dir.path().join("compressed.bc"));
    assert!(
        registered.contains("hip register: magic 48495046 version 1"),
        "{registered}"
    );
    let listed = succeed(
        offload()
            .current_dir(dir.path())
            .args(["ls", "--json", "compressed.o"]),
    );
    let listed = String::from_utf8(listed.stdout).unwrap();
    // The empty host entry and the two code objects.
    assert_eq!(
        listed.matches("\"compressed\": true").count(),
        3,
        "{listed}"
    );
    for (arch, image) in [("gfx906", gfx906), ("gfx90a:xnack+", gfx90a)] {
        let out = dir.path().join(format!("out-{arch}"));
        succeed(offload().current_dir(dir.path()).args([
            "extract",
            "compressed.o",
            "--arch",
            arch,
            "-o",
            out.to_str().unwrap(),
        ]));
        let files = crate::util::file_names(&out);
        assert_eq!(files.len(), 1, "{files:?}");
        assert_eq!(
            std::fs::read(out.join(&files[0])).unwrap(),
            std::fs::read(image).unwrap(),
            "{arch}"
        );
    }
    assert_eq!(
        crate::util::temporaries_in(dir.path()),
        Vec::<String>::new()
    );
}

/// Bundling refuses what it cannot name, before writing anything.
#[test]
fn a_hip_bundle_of_an_unknown_image_is_refused() {
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(dir.path().join("k.hip"), "__global__ void k() {}\n").unwrap();
    let gfx906 = images()[0].display().to_string();
    let twice = format!(
        "offload wrapper: error: '{gfx906}' and '{gfx906}' are both for gfx906: a fat binary holds one code object per target ID\n"
    );
    let cases: [(&[&str], &str); 5] = [
        (&["--kind=hip", "--bundle", "-o", "x.ll", &gfx906, &gfx906], &twice),
        (
            &["--kind=hip", "--bundle", "-o", "x.ll", "-"],
            "offload wrapper: error: standard input cannot be bundled: name each code object's file\n",
        ),
        (
            &["--kind=hip", "--bundle", "-o", "x.ll", "k.hip"],
            "offload wrapper: error: 'k.hip': not an AMDGPU code object whose processor is known; name its target ID with --offload-arch\n",
        ),
        (
            &["--kind=hip", "-o", "x.ll", &gfx906, "--offload-arch=gfx906"],
            "offload wrapper: error: --offload-arch=gfx906 is not followed by an image\n",
        ),
        (
            &["--kind=openmp", "--compress", "-o", "x.ll", &gfx906],
            "offload wrapper: error: --bundle, --offload-arch and --compress bundle HIP code objects: they need --kind=hip\n",
        ),
    ];
    for (args, message) in cases {
        assert_eq!(
            wrapper(dir.path(), args),
            (1, message.to_string()),
            "{args:?}"
        );
        assert_eq!(
            crate::util::file_names(dir.path()),
            vec!["k.hip".to_string()],
            "{args:?}"
        );
    }
}

/// `-` is standard input, for both command lines: the same bytes as the image named.
#[test]
fn an_image_from_standard_input_is_wrapped_as_the_file_is() {
    use std::io::Write;
    let dir = tempfile::tempdir().unwrap();
    let image = images()[1].clone();
    let cases: [(&[&str], &str); 3] = [
        (&["-target=x86_64-pc-linux-gnu"], "o"),
        (&["-target=x86_64-pc-linux-gnu"], "bc"),
        (&["--kind=hip"], "bc"),
    ];
    for (options, extension) in cases {
        let named = dir.path().join(format!("named.{extension}"));
        let piped = dir.path().join(format!("piped.{extension}"));
        succeed(
            offload()
                .arg("wrapper")
                .args(options)
                .arg("-o")
                .arg(&named)
                .arg(&image),
        );
        let mut child = offload()
            .arg("wrapper")
            .args(options)
            .arg("-o")
            .arg(&piped)
            .arg("-")
            .stdin(std::process::Stdio::piped())
            .spawn()
            .unwrap();
        let bytes = std::fs::read(&image).unwrap();
        child.stdin.take().unwrap().write_all(&bytes).unwrap();
        assert!(child.wait().unwrap().success(), "{options:?} {extension}");
        assert_eq!(
            std::fs::read(&piped).unwrap(),
            std::fs::read(&named).unwrap(),
            "{options:?} {extension}"
        );
    }
}
