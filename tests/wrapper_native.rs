//! `offload wrapper --kind=...` native objects (llvm-offload-wrapper 22's modules) and COFF
//! objects of either personality: linked and run against LLVM's own output and the stand-in
//! runtimes, against the real libomptarget, linked by ld.lld for AArch64 and by lld-link into a
//! DLL, each result read back to the image bytes.

use std::path::{Path, PathBuf};
use std::process::Command;

use object::{Object as _, ObjectSection as _, ObjectSymbol as _};

use crate::util;
use crate::util::native::{link_and_run, runs_with_libomptarget, support};
use crate::util::{offload, samples_dir, succeed, text_output, OFFLOAD};
use crate::wrapper::{assert_sparse_image_at, sparse_image};

fn images() -> Vec<PathBuf> {
    let s = samples_dir().join("dev");
    vec![
        s.join("kernel-gfx906.hsaco"),
        s.join("kernel-gfx90a_xnack+.hsaco"),
    ]
}

/// The kinds, with how many images each wraps.
const KINDS: [(&str, usize); 3] = [("hip", 1), ("cuda", 1), ("openmp", 2)];

/// `--kind=K [--triple=T] -o OUT` and the images a kind wraps.
fn args(kind: &str, count: usize, triple: Option<&str>, out: &str) -> Vec<String> {
    let mut args = vec![format!("--kind={kind}"), "-o".into(), out.into()];
    args.extend(triple.map(|t| format!("--triple={t}")));
    args.extend(images()[..count].iter().map(|i| i.display().to_string()));
    args
}

/// Runs `offload wrapper args` in `dir` and checks it succeeded.
fn wrap(dir: &Path, args: &[String]) {
    let (code, _, err) = text_output(offload().current_dir(dir).arg("wrapper").args(args));
    assert_eq!(code, 0, "{args:?}: {err}");
}

#[test]
fn native_objects_of_every_kind_register_what_llvm_s_do() {
    let (Some(upstream), Some(clang)) = (
        util::tool("llvm-offload-wrapper-22"),
        util::tool("clang-22"),
    ) else {
        return;
    };
    let clang = clang.as_path();
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    let link = d.join("llvm-offload-wrapper");
    std::os::unix::fs::symlink(OFFLOAD, &link).unwrap();
    let runtime = support("offload_runtime22.c");
    for (kind, count) in KINDS {
        succeed(
            Command::new(&upstream)
                .current_dir(d)
                .args(args(kind, count, None, "llvm.bc")),
        );
        succeed(
            Command::new(clang)
                .current_dir(d)
                .args(["-c", "llvm.bc", "-o", "llvm.o"]),
        );
        let theirs = link_and_run(clang, &runtime, &d.join("llvm.o"), &d.join("llvm"));
        // The runtime saw the wrapper and each entry of the kind (the runtime defines some).
        assert!(theirs.contains("register"), "{theirs}");
        assert!(theirs.contains("function_a"), "{theirs}");
        // An unwinder walks through the constructor (its `.eh_frame`), in ours as in LLVM's.
        assert!(theirs.contains("unwinds through the wrapper"), "{theirs}");
        // The subcommand writes an object for `.o`; the llvm-offload-wrapper program writes
        // one when asked with --filetype=obj.
        wrap(d, &args(kind, count, None, "ours.o"));
        let mut by_link = args(kind, count, None, "link.o");
        by_link.push("--filetype=obj".into());
        succeed(Command::new(&link).current_dir(d).args(&by_link));
        for ours in ["ours.o", "link.o"] {
            let data = std::fs::read(d.join(ours)).unwrap();
            let file = object::File::parse(&*data).unwrap();
            assert_eq!(file.format(), object::BinaryFormat::Elf, "{kind} {ours}");
            let program = d.join(ours).with_extension("exe");
            assert_eq!(
                link_and_run(clang, &runtime, &d.join(ours), &program),
                theirs,
                "{kind} {ours}"
            );
        }
    }
}

#[test]
fn the_llvm_offload_wrapper_program_still_writes_bitcode_for_o() {
    let dir = tempfile::tempdir().unwrap();
    let link = dir.path().join("llvm-offload-wrapper");
    std::os::unix::fs::symlink(OFFLOAD, &link).unwrap();
    if util::any_tool(&["llvm-as-22", "llvm-as-19"]).is_none() {
        return;
    }
    succeed(
        Command::new(&link)
            .current_dir(dir.path())
            .args(args("hip", 1, None, "w.o")),
    );
    let data = std::fs::read(dir.path().join("w.o")).unwrap();
    assert_eq!(
        &data[..4],
        b"BC\xc0\xde",
        "bitcode, as LLVM writes for any name"
    );
}

#[test]
fn the_openmp_native_object_links_with_the_real_libomptarget() {
    let dir = tempfile::tempdir().unwrap();
    wrap(dir.path(), &args("openmp", 1, None, "w.o"));
    runs_with_libomptarget(Path::new("cc"), dir.path(), &["w.o"]);
}

/// The bytes `len` long at virtual address `address` of a linked program or library.
fn bytes_at<'a>(file: &object::File<'a>, address: u64, len: u64) -> &'a [u8] {
    file.sections()
        .find_map(|s| {
            let offset = address.checked_sub(s.address())?;
            let data = s.data().ok()?;
            let end = offset.checked_add(len)?;
            (end <= data.len() as u64).then(|| &data[offset as usize..end as usize])
        })
        .unwrap_or_else(|| panic!("no section holds {len} bytes at {address:#x}"))
}

fn u64_at(file: &object::File, address: u64) -> u64 {
    u64::from_le_bytes(bytes_at(file, address, 8).try_into().unwrap())
}

/// Checks the `__tgt_bin_desc` at `descriptor` of a linked file: `images` images whose
/// pointers lead to exactly the bytes of the files. Returns the addresses of its pointers.
fn check_descriptor(file: &object::File, descriptor: u64, images: &[PathBuf]) -> Vec<u64> {
    let count = u32::from_le_bytes(bytes_at(file, descriptor, 4).try_into().unwrap());
    assert_eq!(count as usize, images.len());
    let table = u64_at(file, descriptor + 8);
    let mut pointers = vec![descriptor + 8, descriptor + 16, descriptor + 24];
    for (i, image) in images.iter().enumerate() {
        let record = table + 32 * i as u64;
        let (start, end) = (u64_at(file, record), u64_at(file, record + 8));
        let expected = std::fs::read(image).unwrap();
        assert!(bytes_at(file, start, end - start) == expected, "image {i}");
        pointers.extend([record, record + 8, record + 16, record + 24]);
    }
    pointers
}

/// Checks the fat binary wrapper at `wrapper` of a linked file: `magic`, version 1, and a
/// pointer to exactly the bytes of `image`. Returns the pointer's address.
fn check_fatbin_wrapper(file: &object::File, wrapper: u64, magic: u32, image: &Path) -> u64 {
    let head = bytes_at(file, wrapper, 8);
    assert_eq!(head[..4], magic.to_le_bytes());
    assert_eq!(head[4..], 1u32.to_le_bytes());
    let expected = std::fs::read(image).unwrap();
    let start = u64_at(file, wrapper + 8);
    assert!(bytes_at(file, start, expected.len() as u64) == expected);
    wrapper + 8
}

/// The magic of a kind's fat binary wrapper.
fn magic(kind: &str) -> u32 {
    if kind == "hip" {
        0x4849_5046
    } else {
        0x4662_43b1
    }
}

#[test]
fn aarch64_objects_of_every_kind_link_and_point_at_their_images() {
    let (Some(lld), Some(clang)) = (util::tool("ld.lld-22"), util::tool("clang-22")) else {
        return;
    };
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    // The stand-in runtime, freestanding: the functions the modules call, and an entry point.
    std::fs::write(
        d.join("runtime.c"),
        "void *__hipRegisterFatBinary(void *w) { return w; }\n\
         void *__cudaRegisterFatBinary(void *w) { return w; }\n\
         void __cudaRegisterFatBinaryEnd(void *h) {}\n\
         #define STUBS(R) void __##R##UnregisterFatBinary(void *h) {} \\\n\
           int __##R##RegisterFunction(void) { return 0; } void __##R##RegisterVar(void) {} \\\n\
           void __##R##RegisterManagedVar(void) {} void __##R##RegisterSurface(void) {} \\\n\
           void __##R##RegisterTexture(void) {}\n\
         STUBS(hip) STUBS(cuda)\n\
         void __tgt_register_lib(void *d) {} void __tgt_unregister_lib(void *d) {}\n\
         int atexit(void (*f)(void)) { return 0; }\n\
         void _start(void) {}\n",
    )
    .unwrap();
    succeed(Command::new(&clang).current_dir(d).args([
        "--target=aarch64-linux-gnu",
        "-ffreestanding",
        "-c",
        "runtime.c",
        "-o",
        "runtime.o",
    ]));
    for (kind, count) in KINDS {
        wrap(
            d,
            &args(kind, count, Some("aarch64-unknown-linux-gnu"), "w.o"),
        );
        // A static program: the pointers are resolved in place.
        succeed(
            Command::new(&lld)
                .current_dir(d)
                .args(["-static", "runtime.o", "w.o", "-o", "w"]),
        );
        let data = std::fs::read(d.join("w")).unwrap();
        let file = object::File::parse(&*data).unwrap();
        assert_eq!(file.architecture(), object::Architecture::Aarch64);
        let symbol = |name: &str| file.symbol_by_name(name).unwrap().address();
        if kind == "openmp" {
            check_descriptor(&file, symbol(".omp_offloading.descriptor"), &images()[..2]);
        } else {
            check_fatbin_wrapper(&file, symbol(".fatbin_wrapper"), magic(kind), &images()[0]);
        }
        // The constructor is in .init_array.
        let init = file.section_by_name(".init_array").unwrap();
        let reg = if kind == "openmp" {
            ".omp_offloading.descriptor_reg".to_string()
        } else {
            format!(".{kind}.fatbin_reg")
        };
        assert_eq!(u64_at(&file, init.address()), symbol(&reg), "{kind}");
    }
}

/// Links `objects` (in `dir`) with the Windows stand-in runtime into `name.dll` by lld-link.
fn link_dll(dir: &Path, objects: &[&str], name: &str) -> Option<Vec<u8>> {
    let clang = util::tool("clang-22")?;
    let lld_link = util::any_tool(&["lld-link-19", "lld-link-22"])?;
    succeed(
        Command::new(clang)
            .current_dir(dir)
            .args(["--target=x86_64-pc-windows-msvc", "-O1", "-c"])
            .arg(support("windows_runtime.c"))
            .args(["-o", "runtime.obj"]),
    );
    succeed(
        Command::new(lld_link)
            .current_dir(dir)
            .args(["/dll", "/noentry", "/nodefaultlib", "runtime.obj"])
            .args(objects)
            .arg(format!("/out:{name}.dll")),
    );
    Some(std::fs::read(dir.join(format!("{name}.dll"))).unwrap())
}

/// The addresses (image base included) the base relocations of a DLL cover.
fn base_relocations(data: &[u8]) -> Vec<u64> {
    let pe = object::read::pe::PeFile64::parse(data).unwrap();
    let base = pe.relative_address_base();
    let mut blocks = pe
        .data_directories()
        .relocation_blocks(data, &pe.section_table())
        .unwrap()
        .unwrap();
    let mut addresses = Vec::new();
    while let Some(block) = blocks.next().unwrap() {
        for reloc in block {
            if reloc.typ == object::pe::IMAGE_REL_BASED_DIR64 {
                addresses.push(base + u64::from(reloc.virtual_address));
            }
        }
    }
    addresses
}

/// Function `index` of those the DLL's `.CRT` section (its `.CRT$XC*` and `.CRT$XT*`) points
/// at.
fn crt_function(file: &object::File, index: u64) -> u64 {
    let crt = file.section_by_name(".CRT").expect("a .CRT section");
    u64_at(file, crt.address() + 8 * index)
}

/// Where the `lea rcx, [rip + X]` after `sub rsp, 40` at `function` leads.
fn lea_target(file: &object::File, function: u64) -> u64 {
    let code = bytes_at(file, function, 11);
    assert_eq!(code[..7], [0x48, 0x83, 0xec, 0x28, 0x48, 0x8d, 0x0d]);
    let displacement = i32::from_le_bytes(code[7..].try_into().unwrap());
    (function + 11).wrapping_add_signed(displacement.into())
}

/// Checks the DLL `name` linked from the COFF object `object` of `kind` (in `dir`): the
/// constructor in `.CRT`, the wrapper or descriptor pointing at the images, every pointer
/// base-relocated.
fn check_dll_of(dir: &Path, kind: &str, count: usize, object: &str) -> Option<()> {
    let object_data = std::fs::read(dir.join(object)).unwrap();
    let object_file = object::File::parse(&*object_data).unwrap();
    assert_eq!(object_file.format(), object::BinaryFormat::Coff);
    assert!(
        object_file.section_by_name(".CRT$XCA00101").is_some(),
        "{kind} {object}"
    );
    let data = link_dll(dir, &[object], kind)?;
    let file = object::File::parse(&*data).unwrap();
    let relocated = base_relocations(&data);
    let ctor = crt_function(&file, 0);
    // The constructor is the object's first function.
    let text = object_file.section_by_name(".text.startup").unwrap();
    assert_eq!(
        bytes_at(&file, ctor, 4),
        &text.data().unwrap()[..4],
        "{kind} {object}"
    );
    let pointers = if kind == "openmp" {
        check_descriptor(&file, lea_target(&file, ctor), &images()[..count])
    } else {
        // lld-link keeps eight characters of a section's name.
        let segment = if kind == "hip" {
            ".hipFatB"
        } else {
            ".nvFatBi"
        };
        let wrapper = file.section_by_name(segment).unwrap().address();
        vec![check_fatbin_wrapper(
            &file,
            wrapper,
            magic(kind),
            &images()[0],
        )]
    };
    let crt = file.section_by_name(".CRT").unwrap().address();
    for pointer in pointers.into_iter().chain([crt]) {
        assert!(
            relocated.contains(&pointer),
            "{kind} {object}: {pointer:#x} is not relocated"
        );
    }
    // The constructor has its unwind information: a `.pdata` entry that starts at it.
    let pdata = file.section_by_name(".pdata").expect("a .pdata section");
    let image_base = file.relative_address_base();
    let starts: Vec<u64> = pdata
        .data()
        .unwrap()
        .chunks_exact(12)
        .map(|entry| image_base + u64::from(u32::from_le_bytes(entry[..4].try_into().unwrap())))
        .collect();
    assert!(starts.contains(&ctor), "{kind} {object}: {starts:x?}");
    Some(())
}

#[test]
fn coff_objects_of_every_kind_link_into_a_dll_that_points_at_the_images() {
    const TRIPLE: &str = "x86_64-pc-windows-msvc";
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    let upstream = util::tool("llvm-offload-wrapper-22");
    for (kind, count) in KINDS {
        wrap(d, &args(kind, count, Some(TRIPLE), "w.obj"));
        if check_dll_of(d, kind, count, "w.obj").is_none() {
            return;
        }
        // The checks hold for LLVM's module and for our IR text and bitcode, compiled by
        // clang-22.
        let Some(upstream) = &upstream else {
            continue;
        };
        succeed(Command::new(upstream).current_dir(d).args(args(
            kind,
            count,
            Some(TRIPLE),
            "llvm.bc",
        )));
        wrap(d, &args(kind, count, Some(TRIPLE), "ours.ll"));
        wrap(d, &args(kind, count, Some(TRIPLE), "ours.bc"));
        for (module, object) in [
            ("llvm.bc", "llvm.obj"),
            ("ours.ll", "ours-ll.obj"),
            ("ours.bc", "ours-bc.obj"),
        ] {
            succeed(
                Command::new(util::tool("clang-22").unwrap())
                    .current_dir(d)
                    .args([
                        "-w",
                        "-c",
                        "--target=x86_64-pc-windows-msvc",
                        module,
                        "-o",
                        object,
                    ]),
            );
            check_dll_of(d, kind, count, object);
        }
    }
}

#[test]
fn the_clang_offload_wrapper_coff_object_links_into_a_dll_that_points_at_the_images() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    let images = images();
    let mut args: Vec<String> = vec![
        "--target=x86_64-pc-windows-msvc".into(),
        "-o".into(),
        "w.obj".into(),
    ];
    for (image, arch) in images.iter().zip(["gfx906", "gfx90a:xnack+"]) {
        args.push(format!("--offload-arch={arch}"));
        args.push(image.display().to_string());
    }
    wrap(d, &args);
    let object_data = std::fs::read(d.join("w.obj")).unwrap();
    let object = object::File::parse(&*object_data).unwrap();
    for section in [".CRT$XCA00001", ".CRT$XTA00001", "omp_offloading_entries"] {
        assert!(object.section_by_name(section).is_some(), "{section}");
    }
    let Some(data) = link_dll(d, &["w.obj"], "omp") else {
        return;
    };
    let file = object::File::parse(&*data).unwrap();
    let dtor = crt_function(&file, 1);
    // The destructor's argument is the descriptor.
    let pointers = check_descriptor(&file, lea_target(&file, dtor), &images);
    let relocated = base_relocations(&data);
    for pointer in pointers {
        assert!(
            relocated.contains(&pointer),
            "{pointer:#x} is not relocated"
        );
    }
}

#[test]
fn a_large_image_is_copied_into_place_in_elf_and_coff_objects() {
    const LARGE: u64 = 300 << 20;
    let dir = tempfile::tempdir().unwrap();
    sparse_image(&dir.path().join("large.bin"), LARGE);
    for (triple, output, section) in [
        ("x86_64-unknown-linux-gnu", "w.o", ".hip_fatbin"),
        ("x86_64-pc-windows-msvc", "w.obj", ".hip_fatbin"),
        ("aarch64-unknown-linux-gnu", "w.o", ".hip_fatbin"),
    ] {
        let triple = format!("--triple={triple}");
        let args = ["wrapper", "--kind=hip", &triple, "-o", output, "large.bin"];
        // Far less address space than the image: it must not be read into memory nor mapped.
        let (out, _) = crate::bombs::run(dir.path(), &args, 64 << 20);
        assert_eq!(
            out.status.code(),
            Some(0),
            "{}",
            String::from_utf8_lossy(&out.stderr)
        );
        let output = std::fs::File::open(dir.path().join(output)).unwrap();
        let length = output.metadata().unwrap().len();
        let cache = object::read::ReadCache::new(output);
        let object = object::File::parse(&cache).unwrap();
        let (start, size) = object
            .section_by_name(section)
            .unwrap()
            .file_range()
            .unwrap();
        assert_eq!(size, LARGE, "{triple}");
        assert_eq!(
            start % 4096,
            0,
            "{triple}: large images start on a page boundary"
        );
        assert_eq!(length, start + size, "{triple}");
        let output = std::fs::File::open(dir.path().join(args[4])).unwrap();
        assert_sparse_image_at(&output, start, LARGE);
    }
}

#[test]
fn bad_native_requests_are_clear_errors_and_write_nothing() {
    let dir = tempfile::tempdir().unwrap();
    let image = images()[0].display().to_string();
    let cases: [(&[&str], &str); 3] = [
        (
            &[
                "--kind=hip",
                "--triple=x86_64-w64-windows-gnu",
                "-o",
                "w.o",
                &image,
            ],
            "'x86_64-w64-windows-gnu': unsupported target triple",
        ),
        (
            &["--kind=hip", "-o", "w.o", &image, &image],
            "CUDA / HIP offloading uses a single fatbinary or offload bundle",
        ),
        (
            &["--kind=cuda", "-o", "w.o", "missing.bin"],
            "'missing.bin': No such file or directory",
        ),
    ];
    for (args, expected) in cases {
        let (code, _, err) =
            text_output(offload().current_dir(dir.path()).arg("wrapper").args(args));
        assert_eq!(code, 1, "{args:?}: {err}");
        assert!(err.contains(expected), "{args:?}: {err}");
        assert!(!dir.path().join("w.o").exists(), "{args:?}");
    }
}

#[test]
fn a_bundled_hip_native_object_registers_what_its_bitcode_does() {
    let Some(clang) = util::tool("clang-22") else {
        return;
    };
    let clang = clang.as_path();
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    let runtime = support("offload_runtime22.c");
    let mut outputs = Vec::new();
    for output in ["w.o", "w.bc"] {
        let mut args = vec!["--kind=hip".to_string(), "--bundle".into(), "-o".into()];
        args.push(output.into());
        args.extend(images().iter().map(|i| i.display().to_string()));
        wrap(d, &args);
        let object = if output == "w.bc" {
            succeed(
                Command::new(clang)
                    .current_dir(d)
                    .args(["-c", "w.bc", "-o", "bc.o"]),
            );
            "bc.o"
        } else {
            output
        };
        let program = d.join(object).with_extension("exe");
        outputs.push(link_and_run(clang, &runtime, &d.join(object), &program));
    }
    assert!(
        outputs[0].contains("hip register: magic 48495046"),
        "{}",
        outputs[0]
    );
    assert_eq!(outputs[0], outputs[1]);
}

#[test]
fn aarch64_objects_register_under_qemu_what_llvm_s_do() {
    let (Some(upstream), Some(clang), Some(lld), Some(qemu)) = (
        util::tool("llvm-offload-wrapper-22"),
        util::tool("clang-22"),
        util::tool("ld.lld-22"),
        util::tool("qemu-aarch64-static"),
    ) else {
        return;
    };
    const TRIPLE: &str = "aarch64-linux-gnu";
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    // The runtime, without a C library: it runs the constructors itself.
    succeed(
        Command::new(&clang)
            .current_dir(d)
            .arg(format!("--target={TRIPLE}"))
            .args([
                "-ffreestanding",
                "-fno-builtin",
                "-fno-stack-protector",
                "-O1",
                "-c",
            ])
            .arg(support("freestanding_runtime22.c"))
            .args(["-o", "runtime.o"]),
    );
    let run = |object: &str| {
        let program = format!("{object}.exe");
        succeed(Command::new(&lld).current_dir(d).args([
            "-static",
            "-e",
            "_start",
            "runtime.o",
            object,
            "-o",
            &program,
        ]));
        let (code, out, err) = text_output(Command::new(&qemu).current_dir(d).arg(&program));
        assert_eq!(code, 0, "{object}: {err}");
        out
    };
    for (kind, count) in KINDS {
        succeed(Command::new(&upstream).current_dir(d).args(args(
            kind,
            count,
            Some(TRIPLE),
            "llvm.bc",
        )));
        succeed(Command::new(&clang).current_dir(d).args([
            "-w",
            &format!("--target={TRIPLE}"),
            "-c",
            "llvm.bc",
            "-o",
            "llvm.o",
        ]));
        let theirs = run("llvm.o");
        assert!(theirs.contains("register"), "{theirs}");
        assert!(theirs.contains("function_a"), "{theirs}");
        wrap(d, &args(kind, count, Some(TRIPLE), "ours.o"));
        assert_eq!(run("ours.o"), theirs, "{kind}");
    }
}
