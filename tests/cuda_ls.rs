//! `offload ls` on CUDA fat binaries: every cubin and PTX entry, where it lies and how it is
//! stored, against what NVIDIA's cuobjdump lists (the goldens of `samples/cuda/make.sh`, and
//! cuobjdump itself when it is installed, on the samples and on `libcurand.so`).

use std::path::Path;

use serde_json::Value;

use crate::util::cuda::{
    cuda_entries, cuobjdump, cuobjdump_list, cuobjdump_names, libcurand, samples,
};
use crate::util::{offload, samples_dir, succeed};

#[test]
fn entries_are_those_cuobjdump_lists_in_its_order_and_names() {
    for path in samples() {
        let ours = cuobjdump_names(&path, &cuda_entries(&path));
        assert!(!ours.is_empty(), "{}", path.display());
        let golden = samples_dir().join("cuda/extracted").join(format!(
            "{}.list",
            path.file_stem().unwrap().to_string_lossy()
        ));
        if let Ok(text) = std::fs::read_to_string(&golden) {
            let want: Vec<&str> = text.lines().collect();
            assert_eq!(ours, want, "{}", path.display());
        }
        if let Some(tool) = cuobjdump() {
            assert_eq!(ours, cuobjdump_list(&tool, &path), "{}", path.display());
        }
    }
}

#[test]
fn libcurand_lists_as_cuobjdump_lists_it() {
    let (Some(tool), Some(lib)) = (cuobjdump(), libcurand()) else {
        return;
    };
    let entries = cuda_entries(&lib);
    let ours = cuobjdump_names(&lib, &entries);
    assert_eq!(ours, cuobjdump_list(&tool, &lib));
    let cubins = entries
        .iter()
        .filter(|e| e["image_kind"] == "cubin")
        .count();
    let ptx = entries.iter().filter(|e| e["image_kind"] == "ptx").count();
    assert_eq!((cubins, ptx), (143, 10));
}

/// The bytes of `path`.
fn bytes(path: &Path) -> Vec<u8> {
    std::fs::read(path).unwrap()
}

#[test]
fn each_entry_says_where_it_lies_and_how_it_is_stored() {
    let plain = samples_dir().join("cuda/gencode.o");
    let data = bytes(&plain);
    let entries = cuda_entries(&plain);
    let arches: Vec<&str> = entries
        .iter()
        .map(|e| e["arch"].as_str().unwrap())
        .collect();
    assert_eq!(arches, ["sm_80", "sm_90", "compute_90"]);
    for e in &entries {
        assert_eq!(e["triple"], "nvptx64-nvidia-cuda");
        assert_eq!(e["section"], ".nv_fatbin");
        assert_eq!(e["compressed"], false);
        assert_eq!(e["cuda"]["compression"], "none");
        let at = e["offset"].as_u64().unwrap() as usize;
        assert_eq!(e["cuda"]["stored_offset"], e["offset"]);
        let head: &[u8] = if e["image_kind"] == "cubin" {
            b"\x7fELF"
        } else {
            b"\n\n"
        };
        assert!(data[at..].starts_with(head), "{e}");
    }
    let zstd = samples_dir().join("cuda/gencode-zstd.o");
    let data = bytes(&zstd);
    for e in cuda_entries(&zstd) {
        assert_eq!(e["compressed"], true);
        assert_eq!(e["offset"], Value::Null);
        assert_eq!(e["cuda"]["compression"], "zstd");
        let at = e["cuda"]["stored_offset"].as_u64().unwrap() as usize;
        assert!(data[at..].starts_with(&[0x28, 0xb5, 0x2f, 0xfd]), "{e}");
    }
    let lz = cuda_entries(&samples_dir().join("cuda/gencode-lz.o"));
    let stored: Vec<&str> = lz
        .iter()
        .map(|e| e["cuda"]["compression"].as_str().unwrap())
        .collect();
    assert_eq!(stored, ["none", "none", "lz"]);
    // The inflated size is listed; the stored one beside it.
    assert_eq!(lz[2]["size"], 497);
    assert!(lz[2]["cuda"]["stored_size"].as_u64().unwrap() < 497);
    let rdc = cuda_entries(&samples_dir().join("cuda/rdc.o"));
    assert!(rdc.iter().all(|e| e["section"] == "__nv_relfatbin"));
    let special = cuda_entries(&samples_dir().join("cuda/arch-specific.o"));
    let arches: Vec<&str> = special
        .iter()
        .map(|e| e["arch"].as_str().unwrap())
        .collect();
    assert_eq!(arches, ["sm_90a", "compute_90a", "sm_100f", "sm_120"]);
}

#[test]
fn the_table_shows_kind_arch_and_compressed_places() {
    let out = succeed(
        offload()
            .arg("ls")
            .arg(samples_dir().join("cuda/gencode-lz.o")),
    );
    let text = String::from_utf8_lossy(&out.stdout);
    let lines: Vec<&str> = text.lines().collect();
    assert!(lines[1].contains("cubin  sm_80 "), "{text}");
    assert!(lines[3].contains("ptx    compute_90"), "{text}");
    assert!(
        lines[3].ends_with(".nv_fatbin (lz, 358 bytes at 0x1eb0)"),
        "{text}"
    );
}

#[test]
fn clangs_new_driver_objects_are_read() {
    // Without -fgpu-rdc: a fat binary in .nv_fatbin; with it, relocatable cubins as offload
    // binary images.
    let plain = cuda_entries(&samples_dir().join("cuda/clang-new-driver.o"));
    let arches: Vec<&str> = plain.iter().map(|e| e["arch"].as_str().unwrap()).collect();
    assert_eq!(arches, ["sm_80", "sm_90"]);
    let out = succeed(
        offload()
            .args(["ls", "--json"])
            .arg(samples_dir().join("cuda/clang-new-driver-rdc.o")),
    );
    let rdc: Vec<Value> = serde_json::from_slice(&out.stdout).unwrap();
    let images: Vec<(&str, &str, &str)> = rdc
        .iter()
        .map(|e| {
            let text = |k: &str| e[k].as_str().unwrap();
            (text("section"), text("image_kind"), text("arch"))
        })
        .collect();
    assert_eq!(
        images,
        [
            (".llvm.offloading", "o", "sm_80"),
            (".llvm.offloading", "o", "sm_90")
        ]
    );
}

#[test]
fn fat_binaries_inside_offload_binaries_are_read() {
    // As clang's new driver stores them: an offload binary image of kind `fatbin`.
    use object::{Object, ObjectSection};
    let dir = tempfile::tempdir().unwrap();
    let object = bytes(&samples_dir().join("cuda/gencode-zstd.o"));
    let file = object::File::parse(&*object).unwrap();
    let fatbin = file.section_by_name(".nv_fatbin").unwrap().data().unwrap();
    let fatbin_path = dir.path().join("k.fatbin");
    std::fs::write(&fatbin_path, fatbin).unwrap();
    let packed = dir.path().join("k.bin");
    succeed(
        offload()
            .arg("packager")
            .arg("-o")
            .arg(&packed)
            .arg(format!(
                "--image=file={},triple=nvptx64-nvidia-cuda,arch=sm_80,kind=cuda",
                fatbin_path.display()
            )),
    );
    let entries = cuda_entries(&packed);
    let arches: Vec<&str> = entries
        .iter()
        .map(|e| e["arch"].as_str().unwrap())
        .collect();
    assert_eq!(arches, ["sm_80", "sm_90", "compute_90"]);
    assert!(entries.iter().all(|e| e["cuda"]["compression"] == "zstd"));
}

#[test]
fn damaged_fat_binaries_are_errors_naming_the_file_section_and_offset() {
    let dir = tempfile::tempdir().unwrap();
    let good = bytes(&samples_dir().join("cuda/gencode.o"));
    // The second entry's payload size (its header follows the first cubin, at 0x400 in the
    // file, 3240 bytes) made larger than what is left of the fat binary.
    let second = 0x400 + 3240;
    let mut damaged = good.clone();
    assert_eq!(damaged[second], 2, "an ELF entry's kind");
    damaged[second + 8..second + 16].copy_from_slice(&(1u64 << 40).to_le_bytes());
    let path = dir.path().join("damaged.o");
    std::fs::write(&path, &damaged).unwrap();
    let (code, out, err) = crate::util::text_output(offload().arg("ls").arg(&path));
    assert_eq!(code, 1, "{out}");
    assert!(
        err.contains("section '.nv_fatbin': offset 0x")
            && err
                .contains("CUDA fat binary entry payload of 1099511627776 bytes runs past the end"),
        "{err}"
    );
    let (code, _, err) = crate::util::text_output(
        offload()
            .args(["strip", "--keep", "sm_80", "-o"])
            .arg(dir.path().join("out.o"))
            .arg(&path),
    );
    assert_eq!(code, 1);
    assert!(
        err.contains("damaged.o") && err.contains("runs past the end"),
        "{err}"
    );
    assert!(!dir.path().join("out.o").exists());
}
