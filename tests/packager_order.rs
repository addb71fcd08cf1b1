//! clang-offload-packager 19 stores an image's string entries in the iteration order of a
//! `DenseMap<StringRef, StringRef>`. These tests run the real packagers (clang-offload-packager
//! 19 and llvm-offload-binary 22) on many sets of keys (every length class of LLVM's string
//! hash, and enough keys to make the map grow) and check that `llvm_hash::dense_map_order`
//! predicts the stored order, and that `write_v1` with that order gives each packager's bytes.
//!
//! Each packager is skipped, with a message, when it is not on `PATH`, unless
//! `OFFLOAD_REQUIRE_REFERENCE=1`.

use std::collections::HashSet;
use std::path::{Path, PathBuf};
use std::process::Command;

use offload::format::offload_binary::{self, ImageKind, OffloadBinary, OffloadKind};
use offload::llvm::adt::hash::dense_map_order;
use offload::target::processor::LlvmVersion;

use crate::util;

/// The packagers run, with the LLVM release each is.
const PACKAGERS: [(&str, LlvmVersion); 2] = [
    ("clang-offload-packager-19", LlvmVersion::V19),
    ("llvm-offload-binary-22", LlvmVersion::V22),
];

/// Characters of generated keys: anything but `,` and `=`, which the packager splits on.
const KEY_CHARS: &[u8] = b"abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789_-.:+/";

/// A small deterministic generator (splitmix64), so that failures can be replayed.
struct Rng(u64);

impl Rng {
    fn next(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9e37_79b9_7f4a_7c15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
        z ^ (z >> 31)
    }

    fn below(&mut self, n: usize) -> usize {
        (self.next() % n as u64) as usize
    }

    fn in_range(&mut self, low: usize, high: usize) -> usize {
        low + self.below(high - low + 1)
    }

    fn key(&mut self, len: usize) -> String {
        (0..len)
            .map(|_| KEY_CHARS[self.below(KEY_CHARS.len())] as char)
            .collect()
    }
}

/// One `--image` argument: its items in command-line order.
struct Image {
    items: Vec<(String, String)>,
}

impl Image {
    fn argument(&self) -> String {
        let items: Vec<String> = self.items.iter().map(|(k, v)| format!("{k}={v}")).collect();
        format!("--image={}", items.join(","))
    }
}

/// `count` distinct generated keys with lengths in `low..=high` (none of them `file`, `kind`
/// or `triple`), with short values, and `file` and `triple` at random positions.
fn generated(rng: &mut Rng, count: usize, low: usize, high: usize, file: &str) -> Image {
    let mut seen: HashSet<String> = ["file", "kind", "triple"]
        .iter()
        .map(|s| s.to_string())
        .collect();
    let mut items = Vec::with_capacity(count + 2);
    while items.len() < count {
        let len = rng.in_range(low, high);
        let key = rng.key(len);
        if seen.insert(key.clone()) {
            let value = format!("v{}", items.len());
            items.push((key, value));
        }
    }
    let at = rng.below(items.len() + 1);
    items.insert(at, ("file".into(), file.into()));
    let at = rng.below(items.len() + 1);
    items.insert(at, ("triple".into(), "amdgcn-amd-amdhsa".into()));
    Image { items }
}

/// What clang-offload-packager 19 stores for one image: the string entries in the map's
/// order, repeated keys joined with `,`, without `file` and `kind`.
fn expected_strings(image: &Image) -> Vec<(Vec<u8>, Vec<u8>)> {
    let mut keys: Vec<&[u8]> = Vec::new();
    let mut values: Vec<(String, String)> = Vec::new();
    for (k, v) in &image.items {
        keys.push(k.as_bytes());
        match values.iter_mut().find(|(key, _)| key == k) {
            Some((_, joined)) => {
                joined.push(',');
                joined.push_str(v);
            }
            None => values.push((k.clone(), v.clone())),
        }
    }
    dense_map_order(&keys)
        .into_iter()
        .filter(|k| *k != b"file" && *k != b"kind")
        .map(|k| {
            let value = &values
                .iter()
                .find(|(key, _)| key.as_bytes() == k)
                .unwrap()
                .1;
            (k.to_vec(), value.as_bytes().to_vec())
        })
        .collect()
}

struct Packager {
    tool: PathBuf,
    name: &'static str,
    version: LlvmVersion,
    dir: tempfile::TempDir,
}

impl Packager {
    /// Every packager of [`PACKAGERS`] that is installed.
    fn all() -> Vec<Packager> {
        PACKAGERS
            .iter()
            .filter_map(|&(name, version)| {
                let tool = util::tool(name)?;
                let dir = tempfile::tempdir().unwrap();
                std::fs::write(dir.path().join("img.o"), b"\x01\x02\x03 an image").unwrap();
                Some(Packager {
                    tool,
                    name,
                    version,
                    dir,
                })
            })
            .collect()
    }

    fn dir(&self) -> &Path {
        self.dir.path()
    }

    /// The packager's output for `image`, or its stderr when it fails.
    fn run(&self, image: &Image) -> Result<Vec<u8>, String> {
        let out = self.dir().join("out.bin");
        let _ = std::fs::remove_file(&out);
        let result = Command::new(&self.tool)
            .current_dir(self.dir())
            .arg("-o")
            .arg(&out)
            .arg(image.argument())
            .output()
            .map_err(|e| format!("cannot run {}: {e}", self.name))?;
        if !result.status.success() {
            return Err(String::from_utf8_lossy(&result.stderr).into_owned());
        }
        std::fs::read(&out).map_err(|e| e.to_string())
    }
}

fn show(strings: &[(Vec<u8>, Vec<u8>)]) -> Vec<String> {
    strings
        .iter()
        .map(|(k, _)| String::from_utf8_lossy(k).into_owned())
        .collect()
}

/// Runs the packager on `image` and compares the stored order and the bytes with ours;
/// returns a description of the differences.
fn check(packager: &Packager, name: &str, image: &Image) -> Option<String> {
    let name = format!("{}: {name}", packager.name);
    let bytes = match packager.run(image) {
        Ok(bytes) => bytes,
        Err(e) => return Some(format!("{name}: the packager failed: {e}")),
    };
    let binary = match OffloadBinary::parse(&bytes) {
        Ok(binary) => binary,
        Err(e) => return Some(format!("{name}: cannot read the packager's output: {e}")),
    };
    let stored: Vec<(Vec<u8>, Vec<u8>)> = binary.entries()[0]
        .strings
        .iter()
        .map(|(k, v)| (k.to_vec(), v.to_vec()))
        .collect();
    let expected = expected_strings(image);
    if stored != expected {
        return Some(format!(
            "{name}: order differs ({} keys)\n  packager: {:?}\n  ours:     {:?}",
            expected.len(),
            show(&stored),
            show(&expected)
        ));
    }
    let strings: Vec<(&[u8], &[u8])> = expected
        .iter()
        .map(|(k, v)| (k.as_slice(), v.as_slice()))
        .collect();
    let kind = image
        .items
        .iter()
        .find(|(k, _)| k == "kind")
        .map_or(OffloadKind::None, |(_, v)| match packager.version {
            LlvmVersion::V19 => OffloadKind::from_name_llvm19(v.as_bytes()),
            LlvmVersion::V22 | LlvmVersion::V23 => OffloadKind::from_name_llvm22(v.as_bytes()),
        });
    let ours = offload_binary::write_v1(
        ImageKind::Object,
        kind,
        0,
        &strings,
        b"\x01\x02\x03 an image",
    );
    if ours != bytes {
        return Some(format!(
            "{name}: same order but different bytes: {}",
            util::first_difference(&bytes, &ours)
        ));
    }
    None
}

fn report(title: &str, failures: Vec<String>, runs: usize) {
    util::visible(&format!(
        "{title}: {runs} packager runs, {} differences",
        failures.len()
    ));
    assert!(failures.is_empty(), "{}", failures.join("\n"));
}

#[test]
fn every_length_class_orders_as_the_packager() {
    for packager in Packager::all() {
        // Lengths of LLVM's hash classes: 1-3, 4-8, 9-16, 17-32, 33-64, and the long-string state
        // machine (one block, several blocks, a multiple of 64, a partial last block).
        let classes = [
            (1, 3),
            (4, 8),
            (9, 16),
            (17, 32),
            (33, 64),
            (65, 127),
            (128, 128),
            (129, 300),
            (1, 200),
        ];
        let counts = [1, 2, 3, 7, 12, 20, 33];
        let mut rng = Rng(19);
        let mut failures = Vec::new();
        let mut runs = 0;
        for (low, high) in classes {
            for count in counts {
                // Short classes have few distinct keys: 1-3 characters give plenty here.
                let image = generated(&mut rng, count, low, high, "img.o");
                runs += 1;
                failures.extend(check(
                    &packager,
                    &format!("{count} keys of {low}-{high} bytes"),
                    &image,
                ));
            }
        }
        report(
            &format!("{}: length classes", packager.name),
            failures,
            runs,
        );
    }
}

#[test]
fn growing_maps_order_as_the_packager() {
    for packager in Packager::all() {
        // The map has 64 buckets and doubles before the insertion that would bring it to 3/4
        // load: the 48th key (with file and triple) moves to 128 buckets, the 96th to 256.
        let counts = [
            30, 44, 45, 46, 47, 60, 92, 93, 94, 95, 150, 189, 190, 191, 400,
        ];
        let mut rng = Rng(64);
        let mut failures = Vec::new();
        let mut runs = 0;
        for count in counts {
            for (low, high) in [(2, 12), (5, 90)] {
                let image = generated(&mut rng, count, low, high, "img.o");
                runs += 1;
                failures.extend(check(
                    &packager,
                    &format!("{count} keys of {low}-{high} bytes"),
                    &image,
                ));
            }
        }
        report(&format!("{}: growth", packager.name), failures, runs);
    }
}

#[test]
fn special_items_order_as_the_packager() {
    for packager in Packager::all() {
        let image = |items: &[(&str, &str)]| Image {
            items: items
                .iter()
                .map(|(k, v)| (k.to_string(), v.to_string()))
                .collect(),
        };
        let cases = [
            (
                "triple and arch",
                image(&[
                    ("file", "img.o"),
                    ("triple", "amdgcn-amd-amdhsa"),
                    ("arch", "gfx906"),
                ]),
            ),
            (
                "kind takes a bucket",
                image(&[
                    ("kind", "openmp"),
                    ("file", "img.o"),
                    ("triple", "t"),
                    ("arch", "a"),
                    ("extra", "x"),
                ]),
            ),
            (
                "repeated keys join their values",
                image(&[
                    ("file", "img.o"),
                    ("arch", "a"),
                    ("triple", "t"),
                    ("arch", "b"),
                    ("zeta", ""),
                    ("arch", "c"),
                ]),
            ),
            (
                "the empty key",
                image(&[("file", "img.o"), ("triple", "t"), ("", "empty-key")]),
            ),
            (
                "values with equals signs and empty values",
                image(&[
                    ("file", "img.o"),
                    ("triple", "t"),
                    ("opts", "a=b=c"),
                    ("arch", ""),
                    ("empty", ""),
                ]),
            ),
            (
                "keys of exactly 64, 65, 128 and 129 bytes",
                image(&[
                    ("file", "img.o"),
                    ("triple", "t"),
                    (&"k".repeat(64), "64"),
                    (&"k".repeat(65), "65"),
                    (&"q".repeat(128), "128"),
                    (&"q".repeat(129), "129"),
                    (&"z".repeat(63), "63"),
                ]),
            ),
        ];
        let mut failures = Vec::new();
        for (name, image) in &cases {
            failures.extend(check(&packager, name, image));
        }
        report(
            &format!("{}: special items", packager.name),
            failures,
            cases.len(),
        );
    }
}
