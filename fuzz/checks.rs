//! The checks of the fuzz targets, one function per target, shared with the regression test
//! that replays every input the fuzzers ever crashed on (tests/fuzz_regressions.rs).

#![allow(dead_code)]
use offload::format::bundle::{self as bundle_format, Bundle};
use offload::format::ccob as ccob_format;
use offload::format::cuda_fatbin;
use offload::format::kpack::msgpack;
use offload::format::kpack::{Archive, HipWrapper, KpackRef};
use offload::format::offload_binary::{
    self as offload_binary_format, ImageKind, OffloadBinary, OffloadKind,
};
use offload::format::text_bundle as text_bundle_format;
use offload::host::scan::{scan as scan_file, Places};
use offload::target::entry_id::{EntryId, KindMatching};
use offload::target::target_id::TargetId;

/// Binary bundle headers: parse, order, and read every entry.
pub fn bundle(data: &[u8]) {
    if let Ok(Some(bundle)) = Bundle::parse(data) {
        for entry in
            bundle.entries_in_llvm_order(offload::llvm::adt::string_map::Probing::Quadratic)
        {
            assert!(entry.data.len() as u64 <= data.len() as u64);
        }
        let _ = bundle.size();
    }
}

/// Text bundles with each comment string.
pub fn text_bundle(data: &[u8]) {
    for comment in ["//", "#", ";"] {
        let _ = text_bundle_format::parse(data, comment);
    }
}

/// Compressed bundles: headers, splitting, and decompression under a small cap. Keeping only
/// the bundle a stream starts with must agree with decompressing all of it and parsing that.
pub fn ccob(data: &[u8]) {
    for found in ccob_format::split(data) {
        match found {
            Ok((_, bundle)) => {
                let whole = bundle.decompress(1 << 20);
                let kept = bundle.inflate_bundle(1 << 20);
                match (whole, kept) {
                    (Ok(whole), Ok(kept)) => {
                        let expected = match Bundle::parse(&whole) {
                            Ok(Some(b)) => Ok(whole[..b.size() as usize].to_vec()),
                            Ok(None) => Ok(whole.clone()),
                            Err(e) => Err(e),
                        };
                        assert_eq!(kept, expected);
                    }
                    (Err(a), Err(b)) => assert_eq!(a, b),
                    (whole, kept) => panic!("decompress: {whole:?}, inflate_bundle: {kept:?}"),
                }
            }
            Err(_) => break,
        }
    }
}

/// Offload binaries: every version, split, and inflated under a small cap.
pub fn offload_binary(data: &[u8]) {
    for (_, binary) in offload_binary_format::split(data) {
        let Ok(binary) = binary else { break };
        for entry in binary.entries() {
            let _ = (entry.triple(), entry.arch(), entry.image.len());
        }
        if let Some(payload) = binary.compressed() {
            if let Ok(inflated) = payload.inflate(1 << 20) {
                let _ = OffloadBinary::parse(&inflated);
            }
            let head = payload.inflate_head(1 << 20, |peek| peek.starts_with(b"CCOB"));
            if let Ok(offload_binary_format::PayloadHead::Listed(head)) = head {
                if let Ok(entries) = head.entries() {
                    for entry in &entries {
                        let _ = (entry.triple(), head.peek(entry.index));
                    }
                }
            }
            let fresh = offload::format::ccob::Decoding::Fresh;
            let _ = payload.inflate_prefix(1 << 20, 1 << 16, fresh, |_, _| Ok(()));
        }
    }
}

/// Target IDs and bundle entry IDs.
pub fn target_id(data: &[u8]) {
    let Ok(text) = std::str::from_utf8(data) else {
        return;
    };
    if let Some(id) = TargetId::parse_syntax(text) {
        let _ = id.canonical();
    }
    let entry = EntryId::parse(text);
    let other = EntryId::parse("hipv4-amdgcn-amd-amdhsa--gfx90a:xnack+");
    let _ = entry.is_compatible_with(&other, KindMatching::HipOpenmpCompatible);
    let _ = other.is_compatible_with(&entry, KindMatching::Exact);
}

/// The container scan over ELF, COFF, Mach-O, archives and bare containers, everywhere and
pub fn scan(data: &[u8]) {
    let path = std::path::Path::new("input");
    for places in [Places::Everywhere, Places::OffloadBinaries] {
        let mut count = 0usize;
        let _ = scan_file(path, data, places, 1 << 20, &mut |image| {
            count += image.data.len().min(1);
        });
    }
}

/// Round trips: bundle then parse, compress then decompress, pack then parse give back the
pub fn round_trips(data: &[u8]) {
    let split = data.len() / 2;
    let (a, b) = data.split_at(split);
    let entries = [
        ("host-x86_64-unknown-linux-gnu-", a),
        ("hipv4-amdgcn-amd-amdhsa--gfx90a", b),
    ];
    let align = 1 << (data.first().copied().unwrap_or(0) % 13);
    let bytes = bundle_format::to_vec(&entries, align);
    let parsed = Bundle::parse(&bytes).unwrap().unwrap();
    let got: Vec<(&str, &[u8])> = parsed.entries().iter().map(|e| (e.id, e.data)).collect();
    assert_eq!(got, entries);

    let (compressed, _) =
        ccob_format::compress(data, &ccob_format::CompressOptions::default()).unwrap();
    let back = ccob_format::CompressedBundle::parse(&compressed)
        .unwrap()
        .unwrap();
    assert_eq!(back.decompress(u64::MAX).unwrap(), data);

    let strings: [(&[u8], &[u8]); 2] = [(b"triple", b"amdgcn-amd-amdhsa"), (b"arch", a)];
    if !a.contains(&0) {
        let packed =
            offload_binary_format::write_v1(ImageKind::Object, OffloadKind::OpenMp, 0, &strings, b);
        let binary = OffloadBinary::parse(&packed).unwrap();
        assert_eq!(binary.entries()[0].image, b);
        assert_eq!(binary.entries()[0].arch(), a);
    }
}

/// kpack archives, references, wrappers and the MessagePack under them: nothing panics, every
/// code object reads under a small cap, and re-encoding a decoded value is stable.
pub fn kpack(data: &[u8]) {
    if let Ok((value, used)) = msgpack::read(data) {
        assert!(used <= data.len());
        let encoded = value.to_bytes();
        let (again, again_used) = msgpack::read(&encoded).expect("our own encoding reads back");
        assert_eq!(again_used, encoded.len());
        assert_eq!(again.to_bytes(), encoded);
    }
    if let Ok(archive) = Archive::parse(data) {
        for entry in &archive.entries {
            let whole = archive.code_object(entry, 1 << 20);
            if let Ok(code) = &whole {
                assert!(code.len() as u64 <= 1 << 20);
            }
            // Read through a window, the same bytes, or an error.
            let mut streamed = Vec::new();
            let read =
                archive.read_code_object(entry, 1 << 20, ccob_format::Decoding::Fresh, |piece| {
                    streamed.extend_from_slice(piece);
                    Ok(())
                });
            if let (Ok(code), Ok(())) = (&whole, &read) {
                assert_eq!(&code[..], &streamed[..]);
            }
            if read.is_ok() {
                assert!(whole.is_ok());
            }
        }
    }
    if let Ok(reference) = KpackRef::parse(data) {
        let bytes = reference.to_bytes();
        assert_eq!(
            KpackRef::parse(&bytes).expect("our own reference reads back"),
            reference
        );
    }
    let _ = HipWrapper::parse(data);
}

/// CUDA fat binaries: split a region into fat binaries, read every entry, inflate it within a
/// limit, and write the kept entries back: what is written reads back as the entries kept.
pub fn cuda_fatbin(data: &[u8]) {
    for found in cuda_fatbin::split(data) {
        let Ok((_, fatbin)) = found else { break };
        let mut entries = Vec::new();
        for entry in cuda_fatbin::entries(fatbin) {
            let Ok(entry) = entry else { break };
            if let Ok(contents) = entry.contents(1 << 20) {
                assert!(
                    contents.len() as u64 <= entry.inflated_size.max(entry.payload.len() as u64)
                );
            }
            let _ = entry.target_name();
            entries.push(entry);
        }
        let kept: Vec<_> = entries.iter().copied().step_by(2).collect();
        let written = cuda_fatbin::write_kept(fatbin, &kept);
        let again: Vec<_> = cuda_fatbin::entries(&written)
            .map(|e| e.expect("our own fat binary reads back"))
            .collect();
        assert_eq!(again.len(), kept.len());
        for (a, b) in again.iter().zip(&kept) {
            assert_eq!((a.header, a.payload), (b.header, b.payload));
        }
    }
}

/// The rewriters on any file (ELF and PE programs and objects, archives, bare containers):
/// `strip`, `compress` and `decompress` run through the command line as users run them. A
/// rewrite that succeeds leaves a file that reads back; one that fails leaves nothing.
pub fn rewrite(data: &[u8]) {
    use std::sync::atomic::{AtomicUsize, Ordering};
    static RUN: AtomicUsize = AtomicUsize::new(0);
    let run = RUN.fetch_add(1, Ordering::Relaxed);
    let dir = std::env::temp_dir().join(format!("offload-fuzz-{}-{run}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let input = dir.join("input");
    std::fs::write(&input, data).unwrap();
    let jobs: [&[&str]; 4] = [
        &["strip", "--keep", "gfx90a", "--allow-empty"],
        &["strip", "--remove", "sm_80", "--allow-empty"],
        &["compress"],
        &["decompress"],
    ];
    for job in jobs {
        let output = dir.join("output");
        let _ = std::fs::remove_file(&output);
        let mut args: Vec<std::ffi::OsString> = vec!["offload".into()];
        args.extend(job.iter().map(Into::into));
        args.extend([
            "-j1".into(),
            "-o".into(),
            output.clone().into(),
            input.clone().into(),
        ]);
        if offload::cli::main(args) == 0 {
            if let Ok(bytes) = std::fs::read(&output) {
                scan(&bytes);
            }
        } else {
            assert!(!output.exists(), "a failed {job:?} left its output");
        }
    }
    let _ = std::fs::remove_dir_all(&dir);
}

/// Package manifests (a wheel's RECORD, a conda record, md5sums): an update that edits
/// nothing gives the same bytes; one that removes every other file listed and rewrites the
/// rest gives a manifest that reads back, and doing it again changes nothing more.
pub fn manifests(data: &[u8]) {
    use offload::host::package::manifest::{conda, debian, record, Edit};
    let digest = [7u8; 32];
    let edit = |path: &[u8]| {
        if path.len() % 2 == 0 {
            Some(Edit::Removed)
        } else {
            Some(Edit::Rewritten {
                digest,
                size: path.len() as u64,
            })
        }
    };
    if let Ok((same, counts)) = record::update(data, |_| None) {
        assert_eq!((same.as_slice(), counts.is_empty()), (data, true));
        let (new, _) = record::update(data, edit).expect("an update of a RECORD that reads");
        let (again, counts) = record::update(&new, edit).expect("our own RECORD reads back");
        assert_eq!(again, new);
        assert!(counts.is_empty(), "{counts:?}");
    }
    if let Ok((same, _)) = conda::update(data, |_| None) {
        assert_eq!(same, data);
        let conda_edit = |path: &str| edit(path.as_bytes());
        let (new, _) = conda::update(data, conda_edit).expect("an update of a record that reads");
        let (again, counts) = conda::update(&new, conda_edit).expect("our own record reads back");
        assert_eq!(again, new);
        assert_eq!(counts.removed, 0);
    }
    let md5_edit = |path: &[u8]| match edit(path) {
        Some(Edit::Rewritten { size, .. }) => Some(Edit::Rewritten {
            digest: [9u8; 16],
            size,
        }),
        _ => Some(Edit::Removed),
    };
    if let Ok((same, _)) = debian::update_md5sums(data, |_| None) {
        assert_eq!(same, data);
        let (new, _) = debian::update_md5sums(data, md5_edit).expect("md5sums that read");
        debian::update_md5sums(&new, md5_edit).expect("our own md5sums read back");
    }
}
