//! Merging code objects larger than anything held in memory: each is copied into its place in
//! the output file (by the kernel, in parallel), and however many threads do it, the merged
//! file is the same, byte for byte, with every code object where its bundle says.

use std::fs;
use std::path::Path;

use offload::format::kpack::{ArchiveWriter, Scheme};

use crate::kpack_use::contents;
use crate::util::{noise, offload, offload_in, samples_dir, text_output};

/// The committed HIP library split into `dir/out`, its two archives replaced by archives of
/// large code objects (48 MiB in all, past what the merge's spill holds in memory), each of an
/// odd size; the code objects, by processor.
fn large_split(dir: &Path) -> Vec<(&'static str, Vec<Vec<u8>>)> {
    fs::create_dir_all(dir.join("t")).unwrap();
    fs::copy(
        samples_dir().join("linked/libhip.so"),
        dir.join("t/libhip.so"),
    )
    .unwrap();
    let (code, _, err) = offload_in(dir, &["kpack", "-r", "t", "-o", "out"]);
    assert_eq!((code, err.as_str()), (0, ""));
    let mut all = Vec::new();
    for (n, arch) in ["gfx906", "gfx90a"].into_iter().enumerate() {
        let mut writer = ArchiveWriter::new("t", arch, &[arch], Scheme::None);
        let mut objects = Vec::new();
        for (k, key) in ["libhip.so#0", "libhip.so#1"].into_iter().enumerate() {
            let object = noise((n * 2 + k) as u64, (12 << 20) + 4093 * (k + 1));
            writer.add(key, arch, &object).unwrap();
            objects.push(object);
        }
        let path = dir.join(format!("out/.kpack/t_{arch}.kpack"));
        assert!(path.is_file(), "{}", path.display());
        fs::write(path, writer.finish()).unwrap();
        objects.sort();
        all.push((arch, objects));
    }
    all
}

#[test]
fn merging_large_code_objects_in_parallel_gives_the_same_bytes_each_time() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    let objects = large_split(d);
    let mut first: Option<Vec<u8>> = None;
    for round in 0..3 {
        let out = format!("m{round}");
        let (code, _, err) = text_output(
            offload()
                .current_dir(d)
                .env("RAYON_NUM_THREADS", "8")
                .args(["kpack", "--merge", "out/libhip.so", "-o", &out]),
        );
        assert_eq!((code, err.as_str()), (0, ""));
        let merged = fs::read(d.join(&out).join("libhip.so")).unwrap();
        match &first {
            Some(bytes) => assert!(*bytes == merged, "round {round} differs"),
            None => first = Some(merged),
        }
    }
    // Every code object is where its bundle's entry says, as extract finds it.
    for (arch, want) in &objects {
        let name = format!("x_{arch}");
        let (code, _, err) =
            offload_in(d, &["extract", "m0/libhip.so", "--arch", arch, "-o", &name]);
        assert_eq!((code, err.as_str()), (0, ""));
        assert!(contents(&d.join(&name)) == *want, "{arch}");
    }
    let (code, _, err) = offload_in(d, &["verify", "m0/libhip.so"]);
    assert_eq!((code, err.as_str()), (0, ""));
}
