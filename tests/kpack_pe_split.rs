//! `offload kpack` on PE images: executables and DLLs built by clang-22 and lld-link-22 for
//! x86-64 and AArch64 Windows are split in the layout of AMD's COFF transform (compared with
//! its output for the same input, byte for byte outside the differences the docs name), read
//! by AMD's reference reader, structural checks and C++ loader, and merged back to their
//! bundles; damaged images are refused with the file and offset named, nothing written.

use std::fs;
use std::path::Path;

use offload::host::program::kpack_pe;
use offload::host::program::pe::checksum;
use offload::io::spill::Spilled;

use crate::rewrite_pe::{build, check_with_llvm, checksum_at, registered, Entries};
use crate::util;
use crate::util::kpack::{
    fnv1a64, load, loader, read_pe_with_python, read_with_python, split_pe_with_python,
};
use crate::util::offload_in;

/// The processors the built images carry code for.
const ARCHES: [&str; 3] = ["gfx1100", "gfx906", "gfx90a"];

/// One section header of a PE image, as stored.
#[derive(Debug, Clone, PartialEq, Eq)]
struct Header {
    name: String,
    /// Where the header is in the file.
    at: usize,
    virtual_size: u32,
    rva: u32,
    raw_size: u32,
    raw_at: u32,
    characteristics: u32,
}

/// The section headers of the PE image `file`.
fn headers(file: &[u8]) -> Vec<Header> {
    let u16_at = |at: usize| u16::from_le_bytes(file[at..at + 2].try_into().unwrap());
    let u32_at = |at: usize| u32::from_le_bytes(file[at..at + 4].try_into().unwrap());
    let nt = u32_at(0x3c) as usize;
    let table = nt + 24 + usize::from(u16_at(nt + 20));
    (0..usize::from(u16_at(nt + 6)))
        .map(|k| {
            let at = table + 40 * k;
            Header {
                name: String::from_utf8_lossy(&file[at..at + 8])
                    .trim_end_matches('\0')
                    .to_string(),
                at,
                virtual_size: u32_at(at + 8),
                rva: u32_at(at + 12),
                raw_size: u32_at(at + 16),
                raw_at: u32_at(at + 20),
                characteristics: u32_at(at + 36),
            }
        })
        .collect()
}

/// The header of section `name`.
fn header(file: &[u8], name: &str) -> Header {
    headers(file)
        .into_iter()
        .find(|h| h.name == name)
        .unwrap_or_else(|| panic!("no {name}"))
}

/// The optional header's `SizeOfImage`.
fn size_of_image(file: &[u8]) -> u32 {
    let nt = u32::from_le_bytes(file[0x3c..0x40].try_into().unwrap()) as usize;
    u32::from_le_bytes(file[nt + 24 + 56..][..4].try_into().unwrap())
}

/// The bytes `.kpackrf` holds (its `VirtualSize` of its raw data).
fn reference(file: &[u8]) -> Vec<u8> {
    let h = header(file, ".kpackrf");
    file[h.raw_at as usize..][..h.virtual_size as usize].to_vec()
}

/// The device code objects each wrapper of the image `file` registers, by processor.
fn device_code(file: &[u8]) -> Vec<Vec<(String, Vec<u8>)>> {
    registered(file)
        .into_iter()
        .map(|(entries, _)| {
            entries
                .into_iter()
                .filter_map(|(id, code)| {
                    let arch = id.strip_prefix("hipv4-amdgcn-amd-amdhsa--")?;
                    Some((arch.to_string(), code))
                })
                .collect()
        })
        .collect()
}

/// The entry IDs of the bundle each wrapper of the image `file` registers, in header order
/// (a compressed bundle inflated).
fn entry_ids(file: &[u8]) -> Vec<Vec<String>> {
    use offload::format::bundle::Bundle;
    use offload::format::ccob::CompressedBundle;
    let fat = header(file, ".hip_fat");
    (0..header(file, ".hipFatB").virtual_size as usize / 24)
        .map(|k| {
            let here = &file[bundle_range(file, k).start..(fat.raw_at + fat.raw_size) as usize];
            let bytes = match CompressedBundle::parse(here).unwrap() {
                Some(ccob) => ccob.decompress(u64::MAX).unwrap(),
                None => here.to_vec(),
            };
            let bundle = Bundle::parse(&bytes).unwrap().expect("a bundle");
            bundle.entries().iter().map(|e| e.id.to_string()).collect()
        })
        .collect()
}

/// The tools the tests need: clang-22 and lld-link-22; `None` after a skip message.
fn compilers() -> Option<(std::path::PathBuf, std::path::PathBuf)> {
    Some((util::tool("clang-22")?, util::tool("lld-link-22")?))
}

/// Splits `name` (in `d`) with `offload kpack` into `d/out`, archives named `k`, and checks
/// what it printed.
fn split_ours(d: &Path, name: &str, out: &str) {
    let (code, printed, err) = offload_in(d, &["kpack", name, "-o", out, "--name", "k"]);
    assert_eq!((code, err.as_str()), (0, ""), "{printed}");
    assert_eq!(
        printed,
        format!(
            "{out}/{name}: 3 code-object indices\n\
             {out}/.kpack/k_gfx1100.kpack: 2 code objects for gfx1100\n\
             {out}/.kpack/k_gfx906.kpack: 2 code objects for gfx906\n\
             {out}/.kpack/k_gfx90a.kpack: 3 code objects for gfx90a\n"
        )
    );
}

/// Our split `ours` and AMD's `amd` of the image `original` are the same file but for what
/// the docs name: the checksum (computed again in ours; AMD's transform leaves the old one),
/// what `.hip_fat` keeps of its raw data (zeros in ours; AMD's keeps the bundles' first and
/// last bytes), and `.kpackrf`'s size and bytes (ours records the bundles too).
fn compare_with_amds(original: &[u8], ours: &[u8], amd: &[u8]) {
    let (our_headers, amd_headers) = (headers(ours), headers(amd));
    let names: Vec<&str> = our_headers.iter().map(|h| h.name.as_str()).collect();
    assert_eq!(names.last(), Some(&".kpackrf"));
    assert_eq!(our_headers.len(), headers(original).len() + 1);
    for (o, a) in our_headers.iter().zip(&amd_headers) {
        if o.name == ".kpackrf" {
            assert_eq!((o.rva, o.raw_at), (a.rva, a.raw_at));
            assert_eq!(o.characteristics, 0x4000_0040);
            assert_eq!(o.raw_size, o.virtual_size.next_multiple_of(512));
        } else {
            assert_eq!(o, a);
        }
    }
    let fat = header(ours, ".hip_fat");
    let before = header(original, ".hip_fat");
    assert_eq!(
        (fat.rva, fat.virtual_size),
        (before.rva, before.virtual_size)
    );
    // Every whole page went; the 0x280 bytes past the last one keep a 512-byte block.
    assert_eq!(before.virtual_size % 4096, 0x280);
    assert_eq!(fat.raw_size, 0x400);
    let kept = fat.raw_at as usize..(fat.raw_at + fat.raw_size) as usize;
    assert!(ours[kept.clone()].iter().all(|&b| b == 0));
    assert!(amd[kept.clone()].iter().any(|&b| b != 0));
    let mask = |file: &[u8]| {
        let mut file = file.to_vec();
        let at = checksum_at(&file);
        file[at..at + 4].fill(0);
        file[kept.clone()].fill(0);
        let r = header(&file, ".kpackrf");
        file[r.at + 8..r.at + 12].fill(0);
        file[r.at + 16..r.at + 20].fill(0);
        file.truncate(r.raw_at as usize);
        file
    };
    assert_eq!(mask(ours), mask(amd));
    let r = header(ours, ".kpackrf");
    assert_eq!(ours.len(), (r.raw_at + r.raw_size) as usize);
    assert_eq!(
        size_of_image(ours),
        r.rva + r.virtual_size.next_multiple_of(4096)
    );
    assert_eq!(size_of_image(ours), size_of_image(amd));
}

#[test]
fn pe_images_split_as_amds_coff_transform_lays_them_out() {
    let Some((clang, lld_link)) = compilers() else {
        return;
    };
    let (Some(driver), Some(objdump)) = (loader(), util::tool("llvm-objdump-22")) else {
        return;
    };
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    for arch in ["x86_64", "aarch64"] {
        for file in build(&clang, &lld_link, d, arch) {
            let name = file.file_name().unwrap().to_str().unwrap();
            let out = format!("ours-{name}");
            split_ours(d, name, &out);
            let search = ".kpack/k_@GFXARCH@.kpack";
            let amd_dir = d.join(format!("amd-{name}"));
            let amd_path = amd_dir.join(name);
            let kpacks = amd_dir.join(".kpack");
            if split_pe_with_python(&file, &amd_path, &kpacks, "k", name, search).is_none() {
                return;
            }
            let original = fs::read(&file).unwrap();
            let ours_path = d.join(&out).join(name);
            let ours = fs::read(&ours_path).unwrap();
            compare_with_amds(&original, &ours, &fs::read(&amd_path).unwrap());
            check_with_llvm(&ours_path, true);
            assert_ne!(checksum(&ours), checksum(&original));

            // AMD's reader reads the same reference, with our record of the bundles beside;
            // its structural checks (and llvm-objdump) find nothing wrong.
            let Some(read) = read_pe_with_python(&ours_path, &objdump) else {
                return;
            };
            let amds = read_pe_with_python(&amd_path, &objdump).unwrap();
            assert_eq!(read["marker"]["kernel_name"], name);
            assert_eq!(
                read["marker"]["kpack_search_paths"],
                serde_json::json!([search])
            );
            assert_eq!(read["marker"]["kernel_name"], amds["marker"]["kernel_name"]);
            assert!(read["marker"]["offload_bundles"].is_object(), "{read}");
            assert!(amds["marker"].get("offload_bundles").is_none(), "{amds}");
            assert_eq!(read["errors"], serde_json::json!([]), "{read}");
            assert_eq!(read["warnings"], serde_json::json!([]), "{read}");

            // The archives hold what AMD's hold, as its archive reader reads them.
            for processor in ARCHES {
                let archive = format!(".kpack/k_{processor}.kpack");
                let ours = read_with_python(&d.join(&out).join(&archive)).unwrap();
                let amds = read_with_python(&amd_dir.join(&archive)).unwrap();
                assert_eq!(ours, amds, "{name} {processor}");
                assert!(!ours.is_empty());
            }

            // AMD's loader, asked with our reference, finds every code object as it was.
            let metadata = d.join("ref.msgpack");
            fs::write(&metadata, reference(&ours)).unwrap();
            let code = device_code(&original);
            assert_eq!(code.iter().map(Vec::len).sum::<usize>(), 7);
            for (index, by_arch) in code.iter().enumerate() {
                for (processor, code) in by_arch {
                    let isa = format!("amdgcn-amd-amdhsa--{processor}");
                    let loaded = load(&driver, &metadata, &ours_path, index as u64, &[&isa], &[]);
                    let want = Ok((code.len() as u64, fnv1a64(code)));
                    assert_eq!(loaded, want, "{name} #{index} {processor}");
                }
            }
            extract_and_verify(d, name, &format!("{out}/{name}"));
        }
    }
}

/// `offload extract --arch` of the split image `split` gives each processor's code objects
/// as extracted from the image `unsplit`; `offload verify` counts them.
fn extract_and_verify(d: &Path, unsplit: &str, split: &str) {
    for processor in ARCHES {
        let (want, got) = (format!("want-{processor}"), format!("got-{processor}"));
        for (from, to) in [(unsplit, &want), (split, &got)] {
            let _ = fs::remove_dir_all(d.join(to));
            let (code, _, err) = offload_in(d, &["extract", from, "--arch", processor, "-o", to]);
            assert_eq!((code, err.as_str()), (0, ""));
        }
        let contents = |dir: &str| {
            let mut all: Vec<Vec<u8>> = fs::read_dir(d.join(dir))
                .unwrap()
                .map(|e| fs::read(e.unwrap().path()).unwrap())
                .collect();
            all.sort();
            all
        };
        assert_eq!(contents(&got), contents(&want), "{split} {processor}");
    }
    let (code, out, _) = offload_in(d, &["verify", split]);
    assert_eq!(code, 1);
    assert!(
        out.contains(&format!(
            "{split}: 7 code objects in 3 kpack archives sound, 2 problems"
        )),
        "{out}"
    );
}

/// Where wrapper `k`'s bundle lies in the file `file`: from its start to the next wrapper's
/// (the end of `.hip_fat`'s raw data for the last).
fn bundle_range(file: &[u8], k: usize) -> std::ops::Range<usize> {
    let wrappers = header(file, ".hipFatB");
    let fat = header(file, ".hip_fat");
    let nt = u32::from_le_bytes(file[0x3c..0x40].try_into().unwrap()) as usize;
    let base = u64::from_le_bytes(file[nt + 24 + 24..][..8].try_into().unwrap());
    let start_of = |k: usize| {
        let at = wrappers.raw_at as usize + 24 * k + 8;
        let address = u64::from_le_bytes(file[at..at + 8].try_into().unwrap());
        (address - base - u64::from(fat.rva)) as usize + fat.raw_at as usize
    };
    let end = if 24 * (k + 1) < wrappers.virtual_size as usize {
        start_of(k + 1)
    } else {
        (fat.raw_at + fat.raw_size) as usize
    };
    start_of(k)..end
}

#[test]
fn split_pe_images_merge_back_to_their_bundles() {
    let Some((clang, lld_link)) = compilers() else {
        return;
    };
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    for arch in ["x86_64", "aarch64"] {
        for file in build(&clang, &lld_link, d, arch) {
            let name = file.file_name().unwrap().to_str().unwrap();
            let split = format!("split-{name}");
            split_ours(d, name, &split);
            let merged = format!("merged-{name}");
            let from = format!("{split}/{name}");
            let (code, out, err) = offload_in(d, &["kpack", "--merge", &from, "-o", &merged]);
            assert_eq!((code, err.as_str()), (0, ""));
            assert_eq!(
                out,
                format!("{merged}/{name}: 3 bundles, 7 code objects put back\n")
            );
            let original = fs::read(&file).unwrap();
            let merged_path = d.join(&merged).join(name);
            let back = fs::read(&merged_path).unwrap();
            // The same bundles (entry IDs, order, compression) as the original's.
            assert_eq!(registered(&back), registered(&original));
            assert_eq!(entry_ids(&back), entry_ids(&original));
            assert_eq!(entry_ids(&back)[1].len(), 3);
            assert_eq!(headers(&back), headers(&original));
            assert_eq!(size_of_image(&back), size_of_image(&original));
            check_with_llvm(&merged_path, true);
            // Byte for byte, but for the compressed bundle (compressed again here, by another
            // zstd) and the checksum over it.
            assert_eq!(back.len(), original.len());
            let compressed = bundle_range(&original, 1);
            assert!(registered(&original)[1].1);
            let at = checksum_at(&original);
            let differing: Vec<usize> = (0..back.len())
                .filter(|&i| back[i] != original[i])
                .filter(|i| !compressed.contains(i) && !(at..at + 4).contains(i))
                .collect();
            assert_eq!(differing, Vec::<usize>::new(), "{name}");
        }
    }
}

#[test]
fn pe_images_split_by_amds_transform_merge_back() {
    let Some((clang, lld_link)) = compilers() else {
        return;
    };
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    let built = build(&clang, &lld_link, d, "x86_64");
    for file in &built {
        let name = file.file_name().unwrap().to_str().unwrap();
        let split = d.join("amd").join(name);
        let search = ".kpack/k_@GFXARCH@.kpack";
        let kpacks = d.join("amd/.kpack");
        if split_pe_with_python(file, &split, &kpacks, "k", name, search).is_none() {
            return;
        }
        let (code, out, err) =
            offload_in(d, &["kpack", "--merge", &format!("amd/{name}"), "-o", "m"]);
        assert_eq!((code, err.as_str()), (0, ""));
        assert_eq!(
            out,
            format!("m/{name}: 3 bundles, 7 code objects put back\n")
        );
        let original = fs::read(file).unwrap();
        let back = fs::read(d.join("m").join(name)).unwrap();
        // No record of the bundles: each comes back plain, host entry first, then the
        // processors by name; the compressed one no longer fits .hip_fat's place, so the
        // bundles take .kpackrf's, and .hip_fat's becomes .hip_gap.
        let plain = |bundles: Vec<(Entries, bool)>| -> Vec<Entries> {
            bundles.into_iter().map(|(entries, _)| entries).collect()
        };
        let merged = registered(&back);
        assert!(merged.iter().all(|(_, compressed)| !compressed));
        assert_eq!(plain(merged), plain(registered(&original)));
        let names: Vec<String> = headers(&back).into_iter().map(|h| h.name).collect();
        let mut expected: Vec<String> = headers(&original)
            .into_iter()
            .map(|h| h.name.replace(".hip_fat", ".hip_gap"))
            .collect();
        expected.push(".hip_fat".into());
        assert_eq!(names, expected);
        let gap = header(&back, ".hip_gap");
        assert_eq!(gap.rva, header(&original, ".hip_fat").rva);
        let fat = header(&back, ".hip_fat");
        let amd = fs::read(&split).unwrap();
        assert_eq!(fat.rva, header(&amd, ".kpackrf").rva);
        assert_eq!(
            size_of_image(&back),
            (fat.rva + fat.virtual_size).next_multiple_of(4096)
        );
        check_with_llvm(&d.join("m").join(name), true);
    }
}

#[test]
fn a_tree_of_dlls_and_exes_splits_with_r() {
    let Some((clang, lld_link)) = compilers() else {
        return;
    };
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    let built = build(&clang, &lld_link, d, "x86_64");
    fs::create_dir_all(d.join("tree/bin")).unwrap();
    fs::create_dir_all(d.join("tree/share")).unwrap();
    for file in &built {
        fs::copy(file, d.join("tree/bin").join(file.file_name().unwrap())).unwrap();
    }
    fs::write(d.join("tree/share/notes.txt"), "not a binary\n").unwrap();
    let (code, out, err) = offload_in(d, &["kpack", "-r", "tree", "-o", "out"]);
    assert_eq!((code, err.as_str()), (0, ""), "{out}");
    assert_eq!(
        out,
        "out/bin/app-x86_64.exe: 3 code-object indices\n\
         out/bin/kernels-x86_64.dll: 3 code-object indices\n\
         out/.kpack/tree_gfx1100.kpack: 4 code objects for gfx1100\n\
         out/.kpack/tree_gfx906.kpack: 4 code objects for gfx906\n\
         out/.kpack/tree_gfx90a.kpack: 6 code objects for gfx90a\n\
         1 files without HIP device code copied\n"
    );
    assert_eq!(
        fs::read(d.join("out/share/notes.txt")).unwrap(),
        b"not a binary\n"
    );
    let dll = fs::read(d.join("out/bin/kernels-x86_64.dll")).unwrap();
    let bytes = reference(&dll);
    let parsed = offload::format::kpack::KpackRef::parse(&bytes).unwrap();
    assert_eq!(parsed.kernel_name, "bin/kernels-x86_64.dll");
    assert_eq!(
        parsed.kpack_search_paths,
        ["../.kpack/tree_@GFXARCH@.kpack"]
    );
    let (code, out, err) = offload_in(d, &["ls", "out/bin/kernels-x86_64.dll"]);
    assert_eq!((code, err.as_str()), (0, ""));
    assert_eq!(
        out.matches("[bin/kernels-x86_64.dll#2]").count(),
        3,
        "{out}"
    );
    let (code, _, err) = offload_in(
        d,
        &[
            "kpack",
            "--merge",
            "out/bin/app-x86_64.exe",
            "out/bin/kernels-x86_64.dll",
            "-o",
            "back",
        ],
    );
    assert_eq!((code, err.as_str()), (0, ""));
    for file in &built {
        let back = fs::read(d.join("back").join(file.file_name().unwrap())).unwrap();
        assert_eq!(registered(&back), registered(&fs::read(file).unwrap()));
    }
}

#[test]
fn damaged_pe_images_are_refused_naming_the_offset_and_writing_nothing() {
    let Some((clang, lld_link)) = compilers() else {
        return;
    };
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    let [exe, _] = build(&clang, &lld_link, d, "x86_64");
    let original = fs::read(&exe).unwrap();
    let wrappers = header(&original, ".hipFatB").raw_at as usize;
    let rdata = header(&original, ".rdata").raw_at as usize;
    let fat = header(&original, ".hip_fat");
    let base = 0x1_4000_0000u64;
    let damaged = |name: &str, change: &dyn Fn(&mut Vec<u8>)| {
        let mut bytes = original.clone();
        change(&mut bytes);
        fs::write(d.join(name), bytes).unwrap();
    };
    let put = |bytes: &mut Vec<u8>, at: usize, value: &[u8]| {
        bytes[at..at + value.len()].copy_from_slice(value);
    };
    damaged("outside.exe", &|b| {
        put(b, wrappers + 32, &(base + 0x1000).to_le_bytes())
    });
    damaged("magic.exe", &|b| {
        put(b, wrappers + 48, &0x1234_5678u32.to_le_bytes())
    });
    // .rdata's first word has a base relocation: an address into .hip_fat there is a
    // pointer the split would leave dangling.
    let stray = base + u64::from(fat.rva) + 0x100;
    damaged("stray.exe", &|b| put(b, rdata, &stray.to_le_bytes()));
    damaged("short.exe", &|b| b.truncate(fat.raw_at as usize + 0x100));
    let wrappers_header = header(&original, ".hipFatB").at;
    damaged("partial.exe", &|b| {
        put(b, wrappers_header + 8, &0x47u32.to_le_bytes())
    });
    let (code, _, err) = offload_in(d, &["kpack", "app-x86_64.exe", "-o", "split"]);
    assert_eq!((code, err.as_str()), (0, ""));
    // A split image cut short: its archives are where its reference says.
    let split = fs::read(d.join("split/app-x86_64.exe")).unwrap();
    fs::create_dir_all(d.join("cut")).unwrap();
    fs::write(d.join("cut/app-x86_64.exe"), &split[..split.len() - 0x100]).unwrap();
    std::os::unix::fs::symlink("../split/.kpack", d.join("cut/.kpack")).unwrap();
    let cases = [
        (
            &["kpack", "outside.exe", "-o", "o1"][..],
            format!(
                "'outside.exe': .hipFatB wrapper 1 at {:#x}: points at {:#x}, outside .hip_fat",
                wrappers + 24,
                base + 0x1000
            ),
        ),
        (
            &["kpack", "magic.exe", "-o", "o2"][..],
            format!(
                "'magic.exe': offset {:#x}: .hipFatB wrapper 2 has magic 0x12345678, not HIPF",
                wrappers + 48
            ),
        ),
        (
            &["kpack", "stray.exe", "-o", "o3"][..],
            format!(
                "'stray.exe': offset {rdata:#x}: an address inside .hip_fat ({stray:#x}) is not \
                 the start of a bundle"
            ),
        ),
        (
            &["kpack", "short.exe", "-o", "o4"][..],
            format!(
                "'short.exe': offset {:#x}: the raw data of .hip_fat lies outside the file",
                header(&original, ".hip_fat").at
            ),
        ),
        (
            &["kpack", "partial.exe", "-o", "o8"][..],
            format!(
                "'partial.exe': offset {wrappers_header:#x}: .hipFatB's VirtualSize 0x47 is no \
                 whole number of wrappers"
            ),
        ),
        (
            &["kpack", "split/app-x86_64.exe", "-o", "o5"][..],
            format!(
                "'split/app-x86_64.exe': .hipFatB wrapper 0 at {wrappers:#x}: already HIPK: the \
                 file is split"
            ),
        ),
        (
            &["kpack", "--merge", "app-x86_64.exe", "-o", "o6"][..],
            "'app-x86_64.exe': not split: no kpack reference".to_string(),
        ),
        (
            &["kpack", "--merge", "cut/app-x86_64.exe", "-o", "o7"][..],
            format!(
                "'cut/app-x86_64.exe': .kpackrf at {:#x}: its {:#x} bytes do not lie in the \
                 file, which ends at {:#x} (Invalid PE section offset or size)",
                header(&split, ".kpackrf").raw_at,
                header(&split, ".kpackrf").virtual_size,
                split.len() - 0x100
            ),
        ),
    ];
    for (args, message) in &cases {
        let (code, out, err) = offload_in(d, args);
        assert_eq!((code, out.as_str()), (1, ""), "{args:?}");
        assert_eq!(err.trim_end(), format!("offload kpack: error: {message}"));
        let output = args.last().unwrap();
        assert!(
            output.starts_with('o') && !d.join(output).exists(),
            "{args:?}"
        );
    }
}

#[test]
fn any_damage_to_the_headers_is_an_error_or_an_image_never_a_panic() {
    let Some((clang, lld_link)) = compilers() else {
        return;
    };
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    let [exe, _] = build(&clang, &lld_link, d, "x86_64");
    let (code, _, err) = offload_in(d, &["kpack", "app-x86_64.exe", "-o", "split"]);
    assert_eq!((code, err.as_str()), (0, ""));
    let original = fs::read(&exe).unwrap();
    let split = fs::read(d.join("split/app-x86_64.exe")).unwrap();
    let reference = reference(&split);
    let bundles = vec![0u8; 0x5000];
    let starts = [Some(0), Some(0x1000), Some(0x2000)];
    // Every byte of the headers and the section table, and of the wrappers, changed; the
    // files cut short at every 512-byte block.
    let wrappers = header(&split, ".hipFatB").raw_at as usize;
    let places: Vec<usize> = (0..0x400).chain(wrappers..wrappers + 0x48).collect();
    let mut refused = [0usize; 2];
    let mut check = |file: &[u8], split_too: bool| {
        if split_too {
            let _ = kpack_pe::hip_code(file);
            refused[0] += usize::from(kpack_pe::split(file, &reference).is_err());
        }
        let merged = kpack_pe::merge(file, Spilled::Bytes(bundles.clone()), &starts);
        refused[1] += usize::from(merged.is_err());
    };
    for &at in &places {
        for flip in [0x01u8, 0x80, 0xff] {
            for (file, split_too) in [(&original, true), (&split, false)] {
                let mut damaged = file.clone();
                damaged[at] ^= flip;
                check(&damaged, split_too);
            }
        }
    }
    for end in (0..split.len()).step_by(512) {
        check(&original[..end], true);
        check(&split[..end], false);
    }
    // Most changes to the headers break something, and are refused (the counts are of
    // 3,360 images).
    assert!(refused[0] > 500, "{refused:?}");
    assert!(refused[1] > 500, "{refused:?}");
    // Undamaged, both work.
    assert!(kpack_pe::split(&original, &reference).is_ok());
    assert!(kpack_pe::merge(&split, Spilled::Bytes(bundles), &starts).is_ok());
}

#[test]
fn bytes_after_the_last_section_stay_through_a_split_and_a_merge() {
    let Some((clang, lld_link)) = compilers() else {
        return;
    };
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    let [exe, _] = build(&clang, &lld_link, d, "x86_64");
    let mut original = fs::read(&exe).unwrap();
    let overlay: Vec<u8> = (0..300u32).map(|i| (i * 7 + 1) as u8).collect();
    let end = original.len();
    original.extend_from_slice(&overlay);
    fs::write(d.join("ov.exe"), &original).unwrap();
    let (code, _, err) = offload_in(d, &["kpack", "ov.exe", "-o", "s"]);
    assert_eq!((code, err.as_str()), (0, ""));
    let split = fs::read(d.join("s/ov.exe")).unwrap();
    // .kpackrf's raw data follows the overlay, on the next FileAlignment boundary.
    let r = header(&split, ".kpackrf");
    let moved_end = end - 0x9000;
    assert_eq!(split[moved_end..moved_end + 300], overlay[..]);
    assert_eq!(r.raw_at as usize, (moved_end + 300).next_multiple_of(512));
    check_with_llvm(&d.join("s/ov.exe"), true);
    let (code, _, err) = offload_in(d, &["kpack", "--merge", "s/ov.exe", "-o", "m"]);
    assert_eq!((code, err.as_str()), (0, ""));
    let merged = fs::read(d.join("m/ov.exe")).unwrap();
    // The overlay is where it was, then zeros to the FileAlignment boundary .kpackrf had.
    assert_eq!(merged[end..end + 300], overlay[..]);
    assert_eq!(merged.len(), (end + 300).next_multiple_of(512));
    assert!(merged[end + 300..].iter().all(|&b| b == 0));
    assert_eq!(registered(&merged), registered(&original));
    check_with_llvm(&d.join("m/ov.exe"), true);
}
