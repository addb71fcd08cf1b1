//! CUDA code beside other code: fat binaries inside offload binary images (`.llvm.offloading`)
//! stripped entry by entry, programs holding both `.hip_fatbin` and `.nv_fatbin` rewritten in
//! one pass (both sections valid for cuobjdump and clang-offload-bundler-22, every wrapper on
//! its container), and `check` naming AMD and CUDA devices together.

use std::path::{Path, PathBuf};
use std::process::Command;

use object::{Object, ObjectSection};
use serde_json::Value;

use crate::util::cuda::{cuda_entries, cuobjdump, cuobjdump_list};
use crate::util::{offload, samples_dir, succeed, text_output, tool};

/// The CUDA sample `name`.
fn sample(name: &str) -> PathBuf {
    samples_dir().join("cuda").join(name)
}

/// Runs `offload` with `args` on `input`, writing `dir/name`; the output's path.
fn rewrite(command: &str, input: &Path, dir: &Path, name: &str, args: &[&str]) -> PathBuf {
    let out = dir.join(name);
    succeed(
        offload()
            .arg(command)
            .arg(input)
            .args(args)
            .arg("-o")
            .arg(&out),
    );
    out
}

/// `(section, kind, arch)` of every image `ls --json` lists in `path`.
fn listed(path: &Path) -> Vec<(String, String, String)> {
    let out = succeed(offload().args(["ls", "--json"]).arg(path));
    let rows: Vec<Value> = serde_json::from_slice(&out.stdout).unwrap();
    rows.iter()
        .map(|e| {
            let text = |k: &str| e[k].as_str().unwrap_or("-").to_string();
            (text("section"), text("image_kind"), text("arch"))
        })
        .collect()
}

/// Owned rows.
fn rows(rows: &[(&str, &str, &str)]) -> Vec<(String, String, String)> {
    crate::util::cuda::rows(rows)
}

/// The bytes of every entry `offload extract --exact --arch ARCH` writes from `path`.
fn extracted(path: &Path, arch: &str, dir: &Path) -> Vec<Vec<u8>> {
    let out = dir.join(format!(
        "x-{arch}-{}",
        path.file_name().unwrap().to_string_lossy()
    ));
    succeed(
        offload()
            .args(["extract", "--exact", "--arch", arch, "-o"])
            .arg(&out)
            .arg(path),
    );
    crate::util::file_names(&out)
        .iter()
        .map(|name| std::fs::read(out.join(name)).unwrap())
        .collect()
}

/// The image of the first offload binary of `path`, as `llvm-offload-binary-22` extracts it.
fn offload_image(tool: &Path, path: &Path, dir: &Path) -> PathBuf {
    let image = dir.join("image.fatbin");
    succeed(
        Command::new(tool)
            .arg(path)
            .arg(format!("--image=file={},arch=sm_80", image.display())),
    );
    image
}

#[test]
fn fat_binaries_in_offload_binaries_keep_the_entries_asked_for() {
    let dir = tempfile::tempdir().unwrap();
    let input = sample("fatbin-in-offload-binary.o");
    let section = ".llvm.offloading";
    assert_eq!(
        listed(&input),
        rows(&[
            (section, "cubin", "sm_80"),
            (section, "cubin", "sm_90"),
            (section, "ptx", "compute_90"),
        ])
    );
    let kept = rewrite("strip", &input, dir.path(), "90.o", &["--keep", "sm_90"]);
    assert_eq!(
        listed(&kept),
        rows(&[(section, "cubin", "sm_90"), (section, "ptx", "compute_90")])
    );
    assert!(std::fs::metadata(&kept).unwrap().len() < std::fs::metadata(&input).unwrap().len());
    // The entries kept are the bytes they were, still zstd-compressed as stored.
    for arch in ["sm_90", "compute_90"] {
        assert_eq!(
            extracted(&kept, arch, dir.path()),
            extracted(&input, arch, dir.path()),
            "{arch}"
        );
    }
    let entries = cuda_entries(&kept);
    assert!(entries.iter().all(|e| e["cuda"]["compression"] == "zstd"));
    let dropped = rewrite(
        "strip",
        &input,
        dir.path(),
        "80.o",
        &["--keep", "sm_86", "--ptx", "drop"],
    );
    assert_eq!(listed(&dropped), rows(&[(section, "cubin", "sm_80")]));
    // The reference tools read the binary: its metadata as it was, its image a fat binary
    // holding exactly the entries kept.
    if let Some(objdump) = tool("llvm-objdump-22") {
        let out = succeed(Command::new(objdump).arg("--offloading").arg(&dropped));
        let text = String::from_utf8_lossy(&out.stdout);
        assert!(
            text.contains("OFFLOADING IMAGE [0]:\nkind            fatbinary\narch            sm_80\ntriple          nvptx64-nvidia-cuda\nproducer        cuda"),
            "{text}"
        );
        assert!(!text.contains("IMAGE [1]"), "{text}");
    }
    if let (Some(unpack), Some(cuobjdump)) = (tool("llvm-offload-binary-22"), cuobjdump()) {
        let image = offload_image(&unpack, &kept, dir.path());
        assert_eq!(
            cuobjdump_list(&cuobjdump, &image),
            [
                "ELF file    1: image.1.sm_90.cubin",
                "PTX file    1: image.1.sm_90.ptx"
            ]
        );
    }
}

#[test]
fn offload_binaries_of_fat_binaries_in_archives_and_alone_are_stripped() {
    let dir = tempfile::tempdir().unwrap();
    let input = sample("fatbin-in-offload-binary.o");
    let archive = dir.path().join("libk.a");
    succeed(
        Command::new("ar")
            .arg("rcs")
            .arg(&archive)
            .arg(&input)
            .arg(sample("gencode.o")),
    );
    let out = rewrite(
        "strip",
        &archive,
        dir.path(),
        "libk-90.a",
        &["--keep", "sm_90", "--ptx", "drop"],
    );
    assert_eq!(
        listed(&out),
        rows(&[
            (".llvm.offloading", "cubin", "sm_90"),
            (".nv_fatbin", "cubin", "sm_90"),
        ])
    );
    // A bare offload binary file, as clang-offload-packager writes it.
    let file = object::File::parse(&*std::fs::read(&input).unwrap())
        .unwrap()
        .section_by_name(".llvm.offloading")
        .unwrap()
        .data()
        .unwrap()
        .to_vec();
    let bare = dir.path().join("k.bin");
    std::fs::write(&bare, &file).unwrap();
    let stripped = rewrite(
        "strip",
        &bare,
        dir.path(),
        "k90.bin",
        &["--remove", "sm_80"],
    );
    let archs: Vec<String> = listed(&stripped).into_iter().map(|r| r.2).collect();
    assert_eq!(archs, ["sm_90", "compute_90"]);
    // Nothing kept: refused, or with --allow-empty the binary goes whole.
    let (code, _, err) = text_output(
        offload()
            .args(["strip", "--keep", "sm_75", "--ptx", "drop", "-o"])
            .arg(dir.path().join("none.o"))
            .arg(&input),
    );
    assert_eq!(code, 1);
    assert!(
        err.contains("this would remove every device image (3); give --allow-empty to do it"),
        "{err}"
    );
    let empty = rewrite(
        "strip",
        &input,
        dir.path(),
        "empty.o",
        &["--keep", "sm_75", "--ptx", "drop", "--allow-empty"],
    );
    assert!(listed(&empty).is_empty());
}

/// The address each wrapper of `wrappers` (magic `magic`) in the ELF file `data` hands its
/// runtime: the addend of the relative relocation that fills its pointer, else the pointer.
fn wrapper_targets(data: &[u8], wrappers: &str, magic: u32) -> Vec<u64> {
    let file = object::File::parse(data).unwrap();
    let section = file.section_by_name(wrappers).unwrap();
    let bytes = section.data().unwrap();
    let relocated: Vec<(u64, i64)> = file
        .dynamic_relocations()
        .map(|relocations| relocations.map(|(at, r)| (at, r.addend())).collect())
        .unwrap_or_default();
    bytes
        .chunks_exact(24)
        .enumerate()
        .filter(|(_, w)| u32::from_le_bytes(w[..4].try_into().unwrap()) == magic)
        .map(|(k, w)| {
            let at = section.address() + (k * 24 + 8) as u64;
            match relocated.iter().find(|(place, _)| *place == at) {
                Some(&(_, addend)) => addend as u64,
                None => u64::from_le_bytes(w[8..16].try_into().unwrap()),
            }
        })
        .collect()
}

/// The bytes of the loaded file `data` at `address`, up to the end of its section.
fn at_address(data: &[u8], address: u64) -> &[u8] {
    let file = object::File::parse(data).unwrap();
    let section = file
        .sections()
        .find(|s| s.address() <= address && address < s.address() + s.size())
        .unwrap();
    &section.data().unwrap()[(address - section.address()) as usize..]
}

/// The `.hip_fatbin` of `path`, dumped into `dir`.
fn hip_fatbin(path: &Path, dir: &Path) -> PathBuf {
    let data = std::fs::read(path).unwrap();
    let file = object::File::parse(&*data).unwrap();
    let bytes = file.section_by_name(".hip_fatbin").unwrap().data().unwrap();
    let out = dir.join(format!(
        "{}.hip_fatbin",
        path.file_name().unwrap().to_string_lossy()
    ));
    std::fs::write(&out, bytes).unwrap();
    out
}

/// What `clang-offload-bundler-22 -list` lists in the `.hip_fatbin` of `path`, sorted.
fn bundler_list(bundler: &Path, path: &Path, dir: &Path) -> Vec<String> {
    let out = succeed(
        Command::new(bundler)
            .args(["-list", "-type=o"])
            .arg(format!("-input={}", hip_fatbin(path, dir).display())),
    );
    let mut ids: Vec<String> = String::from_utf8_lossy(&out.stdout)
        .lines()
        .map(str::to_string)
        .collect();
    ids.sort();
    ids
}

/// The entry `id` of the `.hip_fatbin` of `path`, as `clang-offload-bundler-22 -unbundle`
/// writes it.
fn unbundled(bundler: &Path, path: &Path, id: &str, dir: &Path) -> Vec<u8> {
    let out = dir.join(format!(
        "{}.{id}",
        path.file_name().unwrap().to_string_lossy()
    ));
    succeed(
        Command::new(bundler)
            .args(["-unbundle", "-type=o"])
            .arg(format!("-targets={id}"))
            .arg(format!("-input={}", hip_fatbin(path, dir).display()))
            .arg(format!("-output={}", out.display())),
    );
    std::fs::read(out).unwrap()
}

/// Checks that every wrapper of the program `path` points at the start of a container of its
/// runtime: a bundle (or a compressed one) for HIP, a fat binary for CUDA.
fn wrappers_point_at_containers(path: &Path) {
    let data = std::fs::read(path).unwrap();
    let hip = wrapper_targets(&data, ".hipFatBinSegment", 0x4849_5046);
    let cuda = wrapper_targets(&data, ".nvFatBinSegment", 0x4662_43b1);
    assert_eq!((hip.len(), cuda.len()), (1, 1), "{}", path.display());
    let bundle = at_address(&data, hip[0]);
    assert!(
        bundle.starts_with(b"__CLANG_OFFLOAD_BUNDLE__") || bundle.starts_with(b"CCOB"),
        "{}",
        path.display()
    );
    assert!(at_address(&data, cuda[0]).starts_with(&0xba55_ed50u32.to_le_bytes()));
}

#[test]
fn programs_with_hip_and_cuda_code_are_stripped_in_one_pass() {
    let dir = tempfile::tempdir().unwrap();
    let bundler = tool("clang-offload-bundler-22");
    let cuobjdump = cuobjdump();
    let hip = "hipv4-amdgcn-amd-amdhsa--";
    for name in ["libmixed.so", "mixed-app"] {
        let input = sample(name);
        wrappers_point_at_containers(&input);
        // Both sections shrink side by side: .hip_fatbin follows .nv_fatbin's packed fat
        // binary, and the bytes both free go in one cut.
        let cases: [(&[&str], &str, &str, u64); 2] = [
            // The HIP section frees a page, the CUDA one less: two pages go together.
            (
                &["--keep", "gfx1100", "--keep", "sm_90"],
                "gfx1100",
                "sm_90",
                8192,
            ),
            // gfx90a's entry lies at the bundle's end: alone, the bundle frees less than the
            // page the fat binary's bytes complete.
            (
                &["--keep", "gfx90a", "--keep", "sm_80"],
                "gfx90a",
                "sm_80",
                4096,
            ),
        ];
        for (k, (args, gfx, sm, smaller)) in cases.into_iter().enumerate() {
            let args = [args, &["--ptx", "drop"][..]].concat();
            let out = rewrite("strip", &input, dir.path(), &format!("{k}-{name}"), &args);
            assert_eq!(
                listed(&out),
                rows(&[
                    (".nv_fatbin", "cubin", sm),
                    (".hip_fatbin", "-", ""),
                    (".hip_fatbin", "-", gfx),
                ]),
                "{name} {args:?}"
            );
            let size = |p: &Path| std::fs::metadata(p).unwrap().len();
            assert_eq!(size(&input) - size(&out), smaller, "{name} {args:?}");
            wrappers_point_at_containers(&out);
            assert_eq!(
                extracted(&out, sm, dir.path()),
                extracted(&input, sm, dir.path())
            );
            if let Some(cuobjdump) = &cuobjdump {
                let stem = format!("{k}-{}", name.trim_end_matches(".so"));
                assert_eq!(
                    cuobjdump_list(cuobjdump, &out),
                    [format!("ELF file    1: {stem}.1.{sm}.cubin")]
                );
            }
            if let Some(bundler) = &bundler {
                let id = format!("{hip}{gfx}");
                assert_eq!(
                    bundler_list(bundler, &out, dir.path()),
                    [id.clone(), "host-x86_64-unknown-linux-gnu-".to_string()]
                );
                assert_eq!(
                    unbundled(bundler, &out, &id, dir.path()),
                    unbundled(bundler, &input, &id, dir.path())
                );
            }
        }
    }
    // .nv_fatbin frees most of itself: .hip_fatbin moves back two pages after it, and three
    // pages go in all.
    for name in ["libmixed.so", "mixed-app"] {
        let input = sample(name);
        let args = [
            "--remove", "sm_80", "--remove", "sm_90", "--remove", "gfx90a",
        ];
        let out = rewrite("strip", &input, dir.path(), &format!("r-{name}"), &args);
        assert_eq!(
            listed(&out),
            rows(&[
                (".nv_fatbin", "ptx", "compute_90"),
                (".hip_fatbin", "-", ""),
                (".hip_fatbin", "-", "gfx1100"),
            ])
        );
        let offset = |p: &Path| {
            let data = std::fs::read(p).unwrap();
            let file = object::File::parse(&*data).unwrap();
            let section = file.section_by_name(".hip_fatbin").unwrap();
            section.file_range().unwrap().0
        };
        assert_eq!(offset(&input) - offset(&out), 8192, "{name}");
        let size = |p: &Path| std::fs::metadata(p).unwrap().len();
        assert_eq!(size(&input) - size(&out), 12288, "{name}");
        wrappers_point_at_containers(&out);
        if let Some(bundler) = &bundler {
            let id = format!("{hip}gfx1100");
            assert_eq!(
                unbundled(bundler, &out, &id, dir.path()),
                unbundled(bundler, &input, &id, dir.path())
            );
        }
        if let Some(cuobjdump) = &cuobjdump {
            let stem = format!("r-{}", name.trim_end_matches(".so"));
            assert_eq!(
                cuobjdump_list(cuobjdump, &out),
                [format!("PTX file    1: {stem}.1.sm_90.ptx")]
            );
        }
    }
    // The program registers the fat binary kept, and only it, with the stand-in CUDA runtime
    // it was linked with.
    let app = dir.path().join("0-mixed-app");
    let (code, out, err) = text_output(&mut Command::new(&app));
    assert_eq!(code, 0, "{err}");
    let lines: Vec<&str> = out.lines().collect();
    assert_eq!(lines.len(), 4, "{out}");
    assert_eq!(lines[1], format!("  fat binary, {} bytes", 16 + 64 + 3448));
    assert_eq!(
        lines[2],
        "    elf sm_90 flags 0x11 stored 3448 hash f0aa45a16da37f4b"
    );
}

#[test]
fn compressing_a_program_with_hip_and_cuda_code_leaves_its_fat_binaries() {
    let dir = tempfile::tempdir().unwrap();
    let input = sample("libmixed.so");
    let compressed = rewrite("compress", &input, dir.path(), "c.so", &[]);
    let plain = rewrite("decompress", &compressed, dir.path(), "d.so", &[]);
    let cuda = rows(&[
        (".nv_fatbin", "cubin", "sm_80"),
        (".nv_fatbin", "cubin", "sm_90"),
        (".nv_fatbin", "ptx", "compute_90"),
    ]);
    for out in [&compressed, &plain] {
        assert_eq!(listed(out)[..3], cuda[..]);
        wrappers_point_at_containers(out);
        for arch in ["sm_80", "sm_90", "compute_90"] {
            assert_eq!(
                extracted(out, arch, dir.path()),
                extracted(&input, arch, dir.path())
            );
        }
    }
    let json = succeed(offload().args(["ls", "--json"]).arg(&compressed));
    let rows: Vec<Value> = serde_json::from_slice(&json.stdout).unwrap();
    assert!(
        rows[3..].iter().all(|r| r["compressed"] == true),
        "{rows:?}"
    );
    if let Some(bundler) = tool("clang-offload-bundler-22") {
        for id in [
            "hipv4-amdgcn-amd-amdhsa--gfx90a",
            "hipv4-amdgcn-amd-amdhsa--gfx1100",
        ] {
            assert_eq!(
                unbundled(&bundler, &plain, id, dir.path()),
                unbundled(&bundler, &input, id, dir.path())
            );
        }
    }
}

/// `offload check --json` of the sample `name` for `devices`: each bundle's runtime and what
/// each device loads from it.
fn check_loads(name: &str, devices: &[&str]) -> (i32, Vec<(String, Vec<String>)>) {
    let mut command = offload();
    command.args(["check", "--json"]).arg(sample(name));
    for d in devices {
        command.args(["--device", d]);
    }
    let (code, out, err) = text_output(&mut command);
    let report: Value = serde_json::from_str(&out).unwrap_or_else(|_| panic!("{err}"));
    let bundles = report["files"][0]["bundles"].as_array().unwrap();
    let loads = bundles
        .iter()
        .map(|b| {
            let each = b["loads"].as_array().unwrap();
            (
                b["runtime"].as_str().unwrap().to_string(),
                each.iter()
                    .map(|l| format!("{} {}", l["loads"].as_str().unwrap(), l["runtime"]))
                    .collect(),
            )
        })
        .collect();
    (code, loads)
}

#[test]
fn check_takes_amd_and_cuda_devices_together() {
    let (code, loads) = check_loads("mixed-app", &["gfx90a", "sm_86"]);
    assert_eq!(code, 0);
    let want = |hip: &[&str], cuda: &[&str]| {
        let owned = |v: &[&str]| v.iter().map(|s| s.to_string()).collect::<Vec<_>>();
        vec![
            ("hip".to_string(), owned(hip)),
            ("cuda".to_string(), owned(cuda)),
        ]
    };
    assert_eq!(
        loads,
        want(
            &["native \"loads\"", "other \"loads\""],
            &["other \"loads\"", "forward \"loads\""]
        )
    );
    // Each runtime by its own rule, in its own order: gfx906 is the HIP runtime's first
    // device, so the bundle fails for gfx90a too; sm_75 fails alone.
    let devices = ["sm_75", "gfx906", "gfx90a", "sm_90"];
    let (code, loads) = check_loads("mixed-app", &devices);
    assert_eq!(code, 1);
    assert_eq!(
        loads,
        want(
            &[
                "other \"loads\"",
                "nothing \"fails\"",
                "native \"fails\"",
                "other \"loads\""
            ],
            &[
                "nothing \"fails\"",
                "other \"loads\"",
                "other \"loads\"",
                "native \"loads\""
            ]
        )
    );
    let mut command = offload();
    command.arg("check").arg(sample("mixed-app"));
    for d in devices {
        command.args(["--device", d]);
    }
    let (_, text, _) = text_output(&mut command);
    assert!(
        text.contains("the load fails with hipErrorInvalidImage for every AMD device: it is the first AMD device."),
        "{text}"
    );
    assert!(
        text.lines().any(|l| l.starts_with("  sm_75 (device 0): ")
            && l.ends_with("mixed-app bundle 2 of 2: it has code for sm_80, sm_90, compute_90")),
        "{text}"
    );
    let (_, loads) = check_loads("mixed-app", &["sm_90", "gfx1100", "gfx906"]);
    assert_eq!(loads[0].1[2], "nothing \"fails\"");
    let (_, text, _) = text_output(offload().arg("check").arg(sample("mixed-app")).args([
        "--device", "sm_90", "--device", "gfx1100", "--device", "gfx906",
    ]));
    assert!(
        text.contains(
            "hipErrorInvalidImage for gfx906 only; the AMD devices before it load the code."
        ),
        "{text}"
    );
}
