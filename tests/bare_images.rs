//! Bare device images of every kind, told by their content wherever they lie: CUDA cubins and
//! PTX nvcc wrote (extracted by cuobjdump), SPIR-V and device bitcode clang wrote, AMDGPU code
//! objects; as files, archive members and data embedded in a host object's `.rodata`
//! (`samples/bare/make.sh` makes the samples). `ls`, `du`, `verify`, `extract` and `check` see
//! them; `check` and `extract --device` apply `cuModuleLoad`'s rule to cubins and PTX.

use std::fs;
use std::path::{Path, PathBuf};

use serde_json::Value;

use crate::util::{self, offload, offload_in, skips, succeed, text_output};

fn bare() -> PathBuf {
    util::samples_dir().join("bare")
}

/// The committed files each bare image of the samples was made from.
fn originals() -> Vec<(&'static str, Vec<u8>)> {
    let samples = util::samples_dir();
    [
        ("cubin", "cuda/extracted/gencode/gencode.1.sm_80.cubin"),
        ("ptx", "cuda/extracted/gencode/gencode.1.sm_90.ptx"),
        ("o", "dev/kernel-gfx90a_xnack+.hsaco"),
        ("spv", "bare/kernel.spv"),
        ("bc", "dev/kernel-gfx90a.bc"),
    ]
    .into_iter()
    .map(|(kind, path)| (kind, fs::read(samples.join(path)).unwrap()))
    .collect()
}

/// `ls --json` of `file` in `dir`: one row per image.
fn listed(dir: &Path, file: &str) -> Vec<Value> {
    let (code, stdout, stderr) = offload_in(dir, &["ls", "--json", file]);
    assert_eq!(code, 0, "{stderr}");
    serde_json::from_str::<Value>(&stdout)
        .unwrap()
        .as_array()
        .unwrap()
        .clone()
}

fn row(image: &Value) -> (String, String, String, String) {
    let text = |key: &str| image[key].as_str().unwrap_or("-").to_string();
    (
        text("image_kind"),
        text("arch"),
        text("triple"),
        text("offload_kind"),
    )
}

fn rows(expected: &[(&str, &str, &str, &str)]) -> Vec<(String, String, String, String)> {
    expected
        .iter()
        .map(|(a, b, c, d)| (a.to_string(), b.to_string(), c.to_string(), d.to_string()))
        .collect()
}

const EXPECTED: [(&str, &str, &str, &str); 5] = [
    ("cubin", "sm_80", "nvptx64-nvidia-cuda", "cubin"),
    ("ptx", "compute_90", "nvptx64-nvidia-cuda", "ptx"),
    ("o", "gfx90a:xnack+", "amdgcn-amd-amdhsa", "code-object"),
    ("spv", "", "spirv64", "spirv"),
    ("bc", "gfx90a", "amdgcn-amd-amdhsa", "bitcode"),
];

#[test]
fn bare_images_embedded_in_data_are_listed_at_their_offsets_with_their_bytes() {
    let images = listed(&bare(), "embedded.o");
    assert_eq!(images.iter().map(row).collect::<Vec<_>>(), rows(&EXPECTED));
    let object = fs::read(bare().join("embedded.o")).unwrap();
    for (image, (kind, original)) in images.iter().zip(originals()) {
        assert_eq!(image["section"], ".rodata");
        let offset = image["offset"].as_u64().unwrap() as usize;
        let size = image["size"].as_u64().unwrap() as usize;
        assert_eq!(size, original.len(), "{kind}");
        assert_eq!(&object[offset..offset + size], &original[..], "{kind}");
    }
    // The chance magics before them (".version", ELF, "BC" in text) are no images.
    assert_eq!(images.len(), 5);
}

#[test]
fn bare_images_as_archive_members_and_files_are_listed_by_content() {
    let images = listed(&bare(), "bare.a");
    let mut expected = EXPECTED.to_vec();
    expected.remove(3);
    assert_eq!(images.iter().map(row).collect::<Vec<_>>(), rows(&expected));
    let members: Vec<&str> = images
        .iter()
        .map(|i| i["member"].as_str().unwrap())
        .collect();
    assert_eq!(
        members,
        [
            "gencode.1.sm_80.cubin",
            "gencode.1.sm_90.ptx",
            "kernel-gfx90a_xnack+.hsaco",
            "kernel-gfx90a.bc"
        ]
    );
    // Files, whatever their names: the content decides.
    let dir = tempfile::tempdir().unwrap();
    for (n, (_, bytes)) in originals().into_iter().enumerate() {
        fs::write(dir.path().join(format!("image{n}.bin")), bytes).unwrap();
    }
    fs::write(
        dir.path().join("notes.txt"),
        "// .version 8.8\n.target sm_80\n",
    )
    .unwrap();
    fs::write(dir.path().join("host.bc"), host_bitcode()).unwrap();
    let mut all = Vec::new();
    for n in 0..5 {
        all.extend(listed(dir.path(), &format!("image{n}.bin")));
    }
    assert_eq!(all.iter().map(row).collect::<Vec<_>>(), rows(&EXPECTED));
    for name in ["notes.txt", "host.bc"] {
        assert_eq!(listed(dir.path(), name), Vec::<Value>::new(), "{name}");
    }
    // A tree walk takes them too, by their first bytes.
    let (code, out, err) = offload_in(dir.path(), &["du", "-r", "."]);
    assert_eq!(code, 0, "{err}");
    for arch in ["sm_80", "compute_90", "gfx90a:xnack+", "spirv64", "gfx90a "] {
        assert!(out.contains(arch), "{arch} missing from:\n{out}");
    }
}

/// Bitcode for the host (x86-64), which is no device image, made by clang (a bare magic when
/// it is missing and not required).
fn host_bitcode() -> Vec<u8> {
    let dir = tempfile::tempdir().unwrap();
    fs::write(
        dir.path().join("host.c"),
        "int host(int x) { return x + 1; }\n",
    )
    .unwrap();
    if !made_by(
        "clang-22",
        dir.path(),
        &["-c", "-emit-llvm", "host.c", "-o", "host.bc"],
    ) {
        return b"BC\xc0\xde\0\0\0\0".to_vec();
    }
    fs::read(dir.path().join("host.bc")).unwrap()
}

#[test]
fn extract_and_verify_take_bare_images_whole() {
    let dir = tempfile::tempdir().unwrap();
    let (code, _, err) = offload_in(
        &bare(),
        &[
            "extract",
            "--arch",
            "sm_80",
            "--arch",
            "gfx90a:xnack+",
            "-o",
            dir.path().to_str().unwrap(),
            "embedded.o",
        ],
    );
    assert_eq!(code, 0, "{err}");
    let mut written: Vec<Vec<u8>> = util::file_names(dir.path())
        .iter()
        .map(|n| fs::read(dir.path().join(n)).unwrap())
        .collect();
    written.sort();
    let originals = originals();
    // The bitcode for gfx90a too: code a gfx90a:xnack+ device can take.
    let mut expected = vec![
        originals[0].1.clone(),
        originals[2].1.clone(),
        originals[4].1.clone(),
    ];
    expected.sort();
    assert_eq!(written, expected, "{:?}", util::file_names(dir.path()));
    let (code, out, err) = offload_in(&bare(), &["verify", "embedded.o", "bare.a", "kernel.spv"]);
    assert_eq!(code, 0, "{out}{err}");
}

/// `check --json` of `file` in `dir` for `devices`: exit code, and per module its runtime and
/// what each device loads.
fn checked(dir: &Path, file: &str, devices: &[&str]) -> (i32, Vec<(String, Vec<String>)>) {
    let mut command = offload();
    command.current_dir(dir).args(["check", "--json"]);
    for device in devices {
        command.args(["--device", device]);
    }
    let (code, stdout, _) = text_output(command.arg(file));
    let modules = util::check_units(&stdout)
        .into_iter()
        .map(|(runtime, loads)| (runtime, loads.into_iter().map(|(l, _)| l).collect()))
        .collect();
    (code, modules)
}

fn modules(expected: &[(&str, &[&str])]) -> Vec<(String, Vec<String>)> {
    expected
        .iter()
        .map(|(r, l)| (r.to_string(), l.iter().map(|s| s.to_string()).collect()))
        .collect()
}

#[test]
fn check_loads_bare_cubins_and_ptx_as_cu_module_load_does() {
    let gencode = util::samples_dir().join("cuda/extracted/gencode");
    let devices = ["sm_80", "sm_86", "sm_90", "gfx90a"];
    // A cubin runs on its SM and later minor versions of its major one.
    let (code, report) = checked(&gencode, "gencode.1.sm_80.cubin", &devices);
    assert_eq!(code, 1);
    assert_eq!(
        report,
        modules(&[("cuda-module", &["native", "forward", "nothing", "other"])])
    );
    // PTX is compiled for its SM and any later one.
    let (code, report) = checked(&gencode, "gencode.1.sm_90.ptx", &devices);
    assert_eq!(code, 1);
    assert_eq!(
        report,
        modules(&[("cuda-module", &["nothing", "nothing", "ptx", "other"])])
    );
    let (code, report) = checked(&gencode, "gencode.1.sm_90.ptx", &["sm_90", "sm_100"]);
    assert_eq!(code, 0);
    assert_eq!(report, modules(&[("cuda-module", &["ptx", "ptx"])]));
    // In words, with the driver's error.
    let (code, out, _) = text_output(offload().current_dir(&gencode).args([
        "check",
        "--device",
        "sm_90",
        "gencode.1.sm_80.cubin",
    ]));
    assert_eq!(code, 1);
    assert!(
        out.contains(
            "gencode.1.sm_80.cubin module 1 (sm_80): cuModuleLoad on sm_90 fails with \
             CUDA_ERROR_NO_BINARY_FOR_GPU"
        ),
        "{out}"
    );
    // Embedded in data: each module checked alone, by its own runtime's rule.
    // The program loads them itself: no device fails the check for them alone.
    let (code, report) = checked(&bare(), "embedded.o", &["sm_90", "gfx90a:xnack+"]);
    assert_eq!(code, 0);
    assert_eq!(
        report,
        modules(&[
            ("cuda-module", &["nothing", "other"]),
            ("cuda-module", &["ptx", "other"]),
            ("module", &["other", "native"]),
        ])
    );
}

#[test]
fn extract_device_writes_the_bare_module_each_cuda_device_loads() {
    let dir = tempfile::tempdir().unwrap();
    let (code, out, err) = offload_in(
        &bare(),
        &[
            "extract",
            "--device",
            "sm_86",
            "--device",
            "sm_90",
            "-o",
            dir.path().to_str().unwrap(),
            "bare.a",
        ],
    );
    // Each device fails to load one of the two: said, and the exit code says it.
    assert_eq!(code, 1, "{out}{err}");
    let names = util::file_names(dir.path());
    assert_eq!(
        names,
        [
            "bare.a-gencode.1.sm_80.cubin-module1-sm_80-for-sm_86.cubin",
            "bare.a-gencode.1.sm_90.ptx-module2-compute_90-for-sm_90.ptx"
        ],
        "{out}{err}"
    );
    let originals = originals();
    assert_eq!(
        fs::read(dir.path().join(&names[0])).unwrap(),
        originals[0].1
    );
    assert_eq!(
        fs::read(dir.path().join(&names[1])).unwrap(),
        originals[1].1
    );
    for line in [
        "offload extract: warning: sm_90 cannot load module 1 of 'bare.a' (cuModuleLoad fails \
         with CUDA_ERROR_NO_BINARY_FOR_GPU): it is for sm_80",
        "offload extract: warning: sm_86 cannot load module 2 of 'bare.a' (cuModuleLoad fails \
         with CUDA_ERROR_NO_BINARY_FOR_GPU): it is for compute_90",
    ] {
        assert!(err.contains(line), "{err}");
    }
}

/// Runs `tool` with `args` in `dir`, when it is there (required under
/// OFFLOAD_REQUIRE_REFERENCE=1); `false` when it was skipped.
fn made_by(tool: &str, dir: &Path, args: &[&str]) -> bool {
    let Some(path) = skips::reference(util::tool(tool), tool) else {
        return false;
    };
    succeed(std::process::Command::new(path).current_dir(dir).args(args));
    true
}

#[test]
fn images_clang_writes_for_nvptx_and_spirv_are_listed() {
    let dir = tempfile::tempdir().unwrap();
    let hip = util::samples_dir().join("src/kernel.hip");
    let kernel = util::samples_dir().join("linked/kscale.cu");
    let kernel = kernel.to_str().unwrap();
    fs::write(
        dir.path().join("k.cl"),
        "__kernel void k(__global int *x) { x[get_global_id(0)] += 1; }\n",
    )
    .unwrap();
    let cuda = [
        "-x",
        "cuda",
        "--cuda-device-only",
        "-nocudainc",
        "-nocudalib",
        "--offload-arch=sm_89",
        "-Xclang",
        "-target-feature",
        "-Xclang",
        "+ptx80",
    ];
    let ptx: Vec<&str> = cuda
        .iter()
        .copied()
        .chain(["-S", kernel, "-o", "k.ptx"])
        .collect();
    let bc: Vec<&str> = cuda
        .iter()
        .copied()
        .chain(["-emit-llvm", "-c", kernel, "-o", "k-nv.bc"])
        .collect();
    let made = made_by("clang-22", dir.path(), &ptx)
        && made_by("clang-22", dir.path(), &bc)
        && made_by(
            "clang-22",
            dir.path(),
            &["--target=spirv32", "-c", "k.cl", "-o", "k32.spv"],
        )
        && made_by(
            "clang-22",
            dir.path(),
            &["--target=spirv64", "-c", "k.cl", "-o", "k64.spv"],
        )
        // AMDGPU bitcode for a processor with xnack on and sramecc off, and for none (as
        // device libraries are built).
        && made_by(
            "clang-22",
            dir.path(),
            &[
                "-x",
                "hip",
                "-nogpulib",
                "-nogpuinc",
                "--offload-arch=gfx942:sramecc-:xnack+",
                "--cuda-device-only",
                "-emit-llvm",
                "-c",
                hip.to_str().unwrap(),
                "-o",
                "k-amd.bc",
            ],
        )
        && made_by(
            "clang-22",
            dir.path(),
            &[
                "--target=amdgcn-amd-amdhsa",
                "-nogpulib",
                "-emit-llvm",
                "-c",
                "k.cl",
                "-o",
                "k-any.bc",
            ],
        );
    if !made {
        return;
    }
    let mut all = Vec::new();
    for file in [
        "k.ptx", "k-nv.bc", "k32.spv", "k64.spv", "k-amd.bc", "k-any.bc",
    ] {
        let images = listed(dir.path(), file);
        assert_eq!(images.len(), 1, "{file}");
        let size = fs::metadata(dir.path().join(file)).unwrap().len();
        assert_eq!(images[0]["size"].as_u64(), Some(size), "{file}");
        all.extend(images);
    }
    assert_eq!(
        all.iter().map(row).collect::<Vec<_>>(),
        rows(&[
            ("ptx", "compute_89", "nvptx64-nvidia-cuda", "ptx"),
            ("bc", "sm_89", "nvptx64-nvidia-cuda", "bitcode"),
            ("spv", "", "spirv32", "spirv"),
            ("spv", "", "spirv64", "spirv"),
            (
                "bc",
                "gfx942:sramecc-:xnack+",
                "amdgcn-amd-amdhsa",
                "bitcode"
            ),
            ("bc", "", "amdgcn-amd-amdhsa", "bitcode"),
        ])
    );
}

#[test]
fn damaged_bare_images_are_not_images_and_nothing_panics() {
    let dir = tempfile::tempdir().unwrap();
    for (n, (kind, bytes)) in originals().into_iter().enumerate() {
        // Cut at every 97th byte: still the image (PTX and SPIR-V end where they are cut), or
        // none; an ELF file cut short is named as unreadable. Never a panic.
        for cut in (0..bytes.len()).step_by(97) {
            let name = format!("cut{n}-{cut}");
            fs::write(dir.path().join(&name), &bytes[..cut]).unwrap();
            let (code, stdout, stderr) = offload_in(dir.path(), &["ls", "--json", &name]);
            assert!(matches!(code, 0 | 1), "{kind} cut at {cut}: {stderr}");
            assert!(!stderr.contains("panicked"), "{stderr}");
            if code == 1 {
                assert!(stderr.contains(&format!("'{name}': ")), "{stderr}");
                continue;
            }
            let images: Vec<Value> = serde_json::from_str(&stdout).unwrap();
            if matches!(kind, "cubin" | "o" | "bc") {
                assert_eq!(images, Vec::<Value>::new(), "{kind} cut at {cut}");
            }
            for image in &images {
                assert!(image["size"].as_u64().unwrap() <= cut as u64);
            }
        }
    }
}

#[test]
fn strip_keeps_bare_archive_members_whole_and_prunes_bare_files_of_every_kind() {
    let dir = tempfile::tempdir().unwrap();
    let archive = dir.path().join("mixed.a");
    fs::copy(bare().join("bare.a"), &archive).unwrap();
    let object = util::samples_dir().join("archive/kernel-rdc.o");
    succeed(
        std::process::Command::new("ar")
            .arg("q")
            .arg(&archive)
            .arg(&object),
    );
    let (code, out, err) = offload_in(
        dir.path(),
        &["strip", "--keep", "gfx906", "mixed.a", "-o", "out.a"],
    );
    assert_eq!(code, 0, "{out}{err}");
    assert!(out.contains("mixed.a: 7 device images went to 5"), "{out}");
    // The bare members are what they were, byte for byte; the object lost its gfx90a code.
    let members = |path: &Path| -> Vec<(String, Vec<u8>)> {
        let listed = listed(
            path.parent().unwrap(),
            path.file_name().unwrap().to_str().unwrap(),
        );
        let bytes = fs::read(path).unwrap();
        listed
            .iter()
            .filter(|i| i["offload_kind"] != "hip" && i["offload_kind"] != "host")
            .map(|i| {
                let at = i["offset"].as_u64().unwrap() as usize;
                let size = i["size"].as_u64().unwrap() as usize;
                (
                    i["member"].as_str().unwrap().to_string(),
                    bytes[at..at + size].to_vec(),
                )
            })
            .collect()
    };
    assert_eq!(members(&archive), members(&dir.path().join("out.a")));
    let arches: Vec<String> = listed(dir.path(), "out.a")
        .iter()
        .map(|i| i["arch"].as_str().unwrap().to_string())
        .collect();
    assert_eq!(
        arches,
        [
            "sm_80",
            "compute_90",
            "gfx90a:xnack+",
            "gfx90a",
            "gfx906",
            ""
        ]
    );
    // A tree of bare files: those for other targets go; SPIR-V, which names no processor,
    // stays.
    let tree = dir.path().join("tree");
    fs::create_dir(&tree).unwrap();
    let names = ["k.cubin", "k.ptx", "k-gfx90a.hsaco", "k.spv", "k.bc"];
    for (name, (_, bytes)) in names.iter().zip(originals()) {
        fs::write(tree.join(name), bytes).unwrap();
    }
    // du counts in REMOVED what the prune takes: the cubin, the code object and the bitcode
    // for gfx90a, whole.
    let (code, out, err) = offload_in(
        dir.path(),
        &["du", "-r", "--json", "--keep", "sm_90", "tree"],
    );
    assert_eq!(code, 0, "{err}");
    let report: Value = serde_json::from_str(&out).unwrap();
    let mut removed: Vec<(String, u64)> = report["files"]
        .as_array()
        .unwrap()
        .iter()
        .map(|f| {
            let name = f["file"].as_str().unwrap().trim_start_matches("tree/");
            let bytes = f["targets"].as_array().unwrap()[0]["removed"]
                .as_u64()
                .unwrap();
            (name.to_string(), bytes)
        })
        .collect();
    removed.sort();
    let size = |n: usize| originals()[n].1.len() as u64;
    assert_eq!(
        removed,
        [
            ("k-gfx90a.hsaco".to_string(), size(2)),
            ("k.bc".to_string(), size(4)),
            ("k.cubin".to_string(), size(0)),
            ("k.ptx".to_string(), 0),
            ("k.spv".to_string(), 0),
        ]
    );
    let (code, out, err) = offload_in(
        dir.path(),
        &[
            "strip",
            "-r",
            "--keep",
            "sm_90",
            "--prune",
            "--in-place",
            "tree",
        ],
    );
    assert_eq!(code, 0, "{out}{err}");
    assert_eq!(util::file_names(&tree), ["k.ptx", "k.spv"], "{out}");
    for (name, (_, bytes)) in names.iter().zip(originals()) {
        if let Ok(now) = fs::read(tree.join(name)) {
            assert_eq!(now, bytes, "{name}");
        }
    }
}

#[test]
fn bare_cubins_nvcc_writes_name_their_sm_as_cuobjdump_does() {
    let dir = util::samples_dir().join("cuda/bare");
    let expected = [
        ("kernel-compute_100a.ptx", "compute_100a"),
        ("kernel-sm_100a.cubin", "sm_100a"),
        // A family cubin says only its SM, as cuobjdump names it.
        ("kernel-sm_100f.cubin", "sm_100"),
        ("kernel-sm_89.cubin", "sm_89"),
        ("kernel-sm_90a.cubin", "sm_90a"),
    ];
    for (file, arch) in expected {
        let images = listed(&dir, file);
        assert_eq!(images.len(), 1, "{file}");
        assert_eq!(images[0]["arch"], arch, "{file}");
        let size = fs::metadata(dir.join(file)).unwrap().len();
        assert_eq!(images[0]["size"].as_u64(), Some(size), "{file}");
    }
    let Some(cuobjdump) = skips::reference(crate::util::cuda::cuobjdump(), "cuobjdump") else {
        return;
    };
    for (file, arch) in expected.iter().filter(|(f, _)| f.ends_with(".cubin")) {
        let (code, out, err) = text_output(
            std::process::Command::new(&cuobjdump)
                .current_dir(&dir)
                .args(["-lelf", file]),
        );
        assert_eq!(code, 0, "{err}");
        let stem = file.trim_end_matches(".cubin");
        assert_eq!(
            out.trim(),
            format!("ELF file    1: {stem}.{arch}.cubin"),
            "{file}"
        );
    }
}

/// 65,536 made-up cubin headers in a row, each claiming the 65,535 section headers after them,
/// the last of which lies beyond the data: each header alone is read to its end and refused.
fn made_up_headers() -> Vec<u8> {
    const HEADERS: usize = 1 << 16;
    const SECTIONS: usize = 65_535;
    let table = 64 * HEADERS;
    let mut data = vec![0u8; table + 64 * SECTIONS];
    for i in 0..HEADERS {
        let h = &mut data[64 * i..64 * (i + 1)];
        h[..9].copy_from_slice(b"\x7fELF\x02\x01\x01\x41\x08");
        h[16..18].copy_from_slice(&2u16.to_le_bytes());
        h[18..20].copy_from_slice(&190u16.to_le_bytes());
        h[20..24].copy_from_slice(&1u32.to_le_bytes());
        h[40..48].copy_from_slice(&((table - 64 * i) as u64).to_le_bytes());
        h[48..52].copy_from_slice(&0x5a00u32.to_le_bytes());
        h[52..54].copy_from_slice(&64u16.to_le_bytes());
        h[58..60].copy_from_slice(&64u16.to_le_bytes());
        h[60..62].copy_from_slice(&(SECTIONS as u16).to_le_bytes());
    }
    for s in 0..SECTIONS {
        let entry = &mut data[table + 64 * s..table + 64 * (s + 1)];
        entry[4..8].copy_from_slice(&1u32.to_le_bytes());
        if s == SECTIONS - 1 {
            entry[24..32].copy_from_slice(&(1u64 << 40).to_le_bytes());
        }
    }
    data
}

#[test]
fn made_up_elf_headers_in_data_cost_no_more_than_their_bytes() {
    let dir = tempfile::tempdir().unwrap();
    fs::write(dir.path().join("headers.bin"), made_up_headers()).unwrap();
    fs::write(
        dir.path().join("k.s"),
        "  .section .rodata\n  .incbin \"headers.bin\"\n",
    )
    .unwrap();
    let Some(cc) = skips::reference(util::tool("cc"), "cc (an object holding data)") else {
        return;
    };
    succeed(
        std::process::Command::new(cc)
            .current_dir(dir.path())
            .args(["-c", "k.s", "-o", "k.o"]),
    );
    // Each header read in full would be 4 billion section headers: the scan reads a bounded
    // number per byte of the file, and finds no image.
    let started = std::time::Instant::now();
    let (code, out, err) = offload_in(dir.path(), &["ls", "--json", "k.o"]);
    assert_eq!(code, 0, "{err}");
    assert_eq!(out.trim(), "[]");
    assert!(
        started.elapsed() < std::time::Duration::from_secs(60),
        "{:?}",
        started.elapsed()
    );
}

#[test]
fn compress_and_decompress_keep_bare_images_as_they_are() {
    let dir = tempfile::tempdir().unwrap();
    let tree = dir.path().join("tree");
    fs::create_dir(&tree).unwrap();
    let names = ["k.cubin", "k.ptx", "k.hsaco", "k.spv", "k.bc"];
    for (name, (_, bytes)) in names.iter().zip(originals()) {
        fs::write(tree.join(name), bytes).unwrap();
    }
    fs::copy(
        util::samples_dir().join("linked/hip-app"),
        tree.join("hip-app"),
    )
    .unwrap();
    for command in ["compress", "decompress"] {
        let out_dir = dir.path().join(command);
        let (code, out, err) = offload_in(
            dir.path(),
            &[command, "-r", "tree", "-o", out_dir.to_str().unwrap()],
        );
        assert_eq!(code, 0, "{command}: {out}{err}");
        assert!(
            out.contains("tree/k.hsaco: 1 device images went to 1, 4232 bytes to 4232"),
            "{out}"
        );
        for (name, (_, bytes)) in names.iter().zip(originals()) {
            assert_eq!(
                fs::read(out_dir.join(name)).unwrap(),
                bytes,
                "{command} {name}"
            );
        }
        // In place: left as they are.
        let (code, out, err) = offload_in(dir.path(), &[command, "-r", "tree", "--in-place"]);
        assert_eq!(code, 0, "{command}: {out}{err}");
        for (name, (_, bytes)) in names.iter().zip(originals()) {
            assert_eq!(
                fs::read(tree.join(name)).unwrap(),
                bytes,
                "{command} {name}"
            );
        }
    }
}

/// Debian's comgr library (`libamd-comgr2`), which embeds ROCm's device libraries as bitcode.
fn comgr_library() -> Option<PathBuf> {
    let dir = Path::new("/usr/lib/x86_64-linux-gnu");
    let found = fs::read_dir(dir).ok().and_then(|entries| {
        entries
            .filter_map(|e| e.ok())
            .map(|e| e.path())
            .filter(|p| {
                p.file_name()
                    .is_some_and(|n| n.to_string_lossy().starts_with("libamd_comgr.so."))
                    && !p.is_symlink()
            })
            .max()
    });
    skips::reference(found, "libamd_comgr.so (libamd-comgr2)")
}

#[test]
fn the_device_libraries_comgr_embeds_are_found_whole_as_bitcode() {
    let Some(library) = comgr_library() else {
        return;
    };
    let Some(dis) = util::llvm_bin_tool("llvm-dis", "22") else {
        return;
    };
    let dir = library.parent().unwrap();
    let name = library.file_name().unwrap().to_str().unwrap();
    let images = listed(dir, name);
    // ocml, ockl, the oclc_* control libraries and more: built for no processor.
    assert!(images.len() >= 20, "{images:?}");
    let bytes = fs::read(&library).unwrap();
    let scratch = tempfile::tempdir().unwrap();
    for image in &images {
        assert_eq!(row(image).0, "bc");
        assert_eq!(image["triple"], "amdgcn-amd-amdhsa");
        assert_eq!(image["arch"], "");
        assert_eq!(image["section"], ".rodata");
        // Each ends where its last block ends: LLVM reads it whole, as a module for AMDGPU.
        let at = image["offset"].as_u64().unwrap() as usize;
        let size = image["size"].as_u64().unwrap() as usize;
        let file = scratch.path().join("one.bc");
        fs::write(&file, &bytes[at..at + size]).unwrap();
        let (code, out, err) = text_output(
            std::process::Command::new(&dis)
                .arg(&file)
                .args(["-o", "-"]),
        );
        assert_eq!(code, 0, "at {at}: {err}");
        assert!(
            out.contains("target triple = \"amdgcn-amd-amdhsa\""),
            "at {at}"
        );
    }
}
