//! Reading a program or shared library for splitting: its HIP wrappers, the bundles they
//! point at (compressed ones inflated into unnamed temporary files) and their device entries,
//! and the program rewritten without them.

use crate::ops::kpack::config::SplitConfig;
use std::collections::BTreeMap;
use std::path::Path;
use std::sync::Arc;

use rayon::prelude::*;

use crate::error::{Error, Result};
use crate::format::bundle::Bundle;
use crate::format::ccob::CompressedBundle;
use crate::format::image_target::{ImageTarget, Producer};
use crate::format::kpack::record::{BundleRecord, BundleShape, Storage, LOADER_REFERENCE_LIMIT};
use crate::format::kpack::{self as kformat, KpackRef, HIPK_MAGIC};
use crate::host::program::kpack_elf::{self, HipCode};
use crate::host::program::kpack_pe;
use crate::host::program::NewProgram;
use crate::io::spill::{Spill, Spilled};
use crate::ops::support::inflating::{memory_of_whole, Budget};
use crate::target::entry_id::EntryId;

/// The code of one device entry: borrowed from the input, or from a bundle inflated into an
/// unnamed temporary file (mapped: it takes no anonymous memory).
#[derive(Clone)]
pub(super) enum Code<'a> {
    Mapped(&'a [u8]),
    Inflated(Arc<Spilled>, std::ops::Range<usize>),
}

impl Code<'_> {
    pub(super) fn bytes(&self) -> &[u8] {
        match self {
            Code::Mapped(b) => b,
            Code::Inflated(v, r) => v.bytes().get(r.clone()).unwrap_or_default(),
        }
    }
}

/// One device entry of a bundle: its processor, its entry ID as spelled, and its code.
pub(super) struct DeviceEntry<'a> {
    pub(super) arch: String,
    pub(super) id: String,
    pub(super) code: Code<'a>,
}

/// The device entries of one bundle.
pub(super) type Entries<'a> = Vec<DeviceEntry<'a>>;

/// A device entry's target ID, entry ID and bytes, as the bundle holds them.
pub(super) type DeviceBytes<'b> = (String, String, &'b [u8]);

/// One bundle read for splitting.
pub(super) struct ReadBundle<'a> {
    /// Its HIP device entries.
    pub(super) entries: Entries<'a>,
    /// The IDs of its HIP entries whose target ID is no processor key.
    pub(super) refused: Vec<String>,
    /// Its entry IDs and storage, for merging to make it again.
    pub(super) shape: BundleShape,
}

/// A binary read and planned.
pub(super) struct SplitBinary<'a> {
    /// Per code-object index, the bundle (its offset in `.hip_fatbin`) it takes its code from.
    pub(super) bundle_of: Vec<usize>,
    /// The entries of each bundle, by offset.
    pub(super) bundles: BTreeMap<usize, Entries<'a>>,
    pub(super) kernel_name: String,
    /// The name of the folder `kernel_name` is a path under (`stage` for `-r stage`), which
    /// each archive entry's metadata names as AMD's splitter names its prefix.
    pub(super) source_prefix: String,
    pub(super) program: NewProgram<'a>,
}

/// The key a split binary's code objects go under in the archives: its path below the tree,
/// `/` between names. The loader compares keys as text, and the archive's table of contents
/// holds them as text: a path that is not UTF-8 is refused, never spelt with a replacement
/// character, which would give two binaries one key.
fn kernel_name(path: &Path, relative: &Path) -> Result<String> {
    let mut names = Vec::new();
    for component in relative.components() {
        let Some(name) = component.as_os_str().to_str() else {
            return Err(Error::file(
                path,
                "its name is not UTF-8, and the key its code goes under in the .kpack archives \
                 is text (the loader compares it as such): rename it; nothing was written for it",
            ));
        };
        names.push(name);
    }
    Ok(names.join("/"))
}

/// Reads the file `data` (at `path`, going to `relative`): `None` when it is to be copied as
/// it is (not an ELF program or shared library, nor a PE image, with HIP device code).
pub(super) fn read_binary<'a>(
    path: &Path,
    data: &'a [u8],
    relative: &Path,
    search: &[String],
    config: &SplitConfig,
) -> Result<Option<SplitBinary<'a>>> {
    let Some(code) = hip_code_to_split(path, data)? else {
        return Ok(None);
    };
    let bundle_of = bundle_offsets(path, &code)?;
    let mut unique: Vec<usize> = bundle_of.clone();
    unique.sort_unstable();
    unique.dedup();
    let fatbin = code.fatbin;
    let budget = Budget::new();
    let read: BTreeMap<usize, ReadBundle<'a>> = unique
        .par_iter()
        .map(|&at| {
            let context = format!(
                "section '{}': offset {:#x}",
                fatbin.name,
                fatbin.offset + at as u64
            );
            let fail = |e: crate::format::Error| Error::format_in(path, &context, e);
            let here = &fatbin.data[at..];
            let read = device_entries(here, config.max_decompressed, &budget).map_err(fail)?;
            if let Some(id) = read.refused.first() {
                return Err(Error::file(
                    path,
                    format!(
                        "{context}: bundle entry {}: its target ID is not a processor's, so \
                     it names no archive; nothing was written",
                        crate::error::quoted(id)
                    ),
                ));
            }
            Ok((at, read))
        })
        .collect::<Vec<Result<_>>>()
        .into_iter()
        .collect::<Result<_>>()?;
    let mut record = BundleRecord::default();
    for at in &bundle_of {
        if let Some(bundle) = read.get(at) {
            record.push(bundle.shape.clone());
        }
    }
    let bundles = read.into_iter().map(|(at, b)| (at, b.entries)).collect();
    let kernel_name = kernel_name(path, relative)?;
    let reference = KpackRef {
        kernel_name: &kernel_name,
        kpack_search_paths: search.iter().map(String::as_str).collect(),
    };
    let reference = reference_bytes(path, &reference, &record);
    let program = if data.starts_with(b"MZ") {
        kpack_pe::split(data, &reference)
    } else {
        kpack_elf::split(data, &reference)
    };
    let program = program.map_err(|e| Error::container(path, e))?;
    let source_prefix = path
        .ancestors()
        .nth(relative.components().count())
        .and_then(Path::file_name)
        .map(|n| n.to_string_lossy().into_owned())
        .unwrap_or_default();
    Ok(Some(SplitBinary {
        bundle_of,
        bundles,
        kernel_name,
        source_prefix,
        program,
    }))
}

/// The reference's bytes for the binary at `path`, with the record of its bundles unless
/// that would make it longer than AMD's loader reads: then without, and merging will make its
/// bundles as for AMD's splitter.
fn reference_bytes(path: &Path, reference: &KpackRef<'_>, record: &BundleRecord) -> Vec<u8> {
    let recorded = reference.to_bytes_recording(record);
    if recorded.len() <= LOADER_REFERENCE_LIMIT {
        return recorded;
    }
    tracing::warn!(
        path = %path.display(),
        bytes = recorded.len(),
        "the record of the bundles would make the kpack reference too long for the loader; left out"
    );
    reference.to_bytes()
}

/// The HIP code of `data` (at `path`) if it is an ELF program or shared library, or a PE
/// executable or DLL, with device code to split; `None` for a file that is copied as it is. A
/// binary split already is an error.
pub(super) fn hip_code_to_split<'a>(path: &Path, data: &'a [u8]) -> Result<Option<HipCode<'a>>> {
    let parsed = object::File::parse(data);
    if let Err(e) = &parsed {
        if data.starts_with(b"\x7fELF") {
            return Err(unreadable_elf(path, data, e));
        }
    }
    let linked = parsed.as_ref().is_ok_and(|file| {
        matches!(
            object::Object::kind(file),
            object::ObjectKind::Executable | object::ObjectKind::Dynamic
        )
    });
    // A code object or cubin file (Tensile's `.hsaco` and `.co` beside rocBLAS) is a linked
    // ELF file too, for a GPU: it holds no bundle, so it is copied as it is, like any ELF
    // file without `.hip_fatbin`, whatever its machine.
    let fatbin = parsed
        .as_ref()
        .is_ok_and(|file| object::Object::section_by_name(file, ".hip_fatbin").is_some());
    let code = if !linked {
        None
    } else if data.starts_with(b"MZ") {
        kpack_pe::hip_code(data).map_err(|e| Error::container(path, e))?
    } else if !fatbin {
        None
    } else if data.starts_with(b"\x7fELF") {
        kpack_elf::hip_code(data).map_err(|e| Error::container(path, e))?
    } else {
        None
    };
    let Some(code) = code else {
        return Ok(None);
    };
    if let Some((k, w)) = code
        .wrappers
        .iter()
        .enumerate()
        .find(|(_, w)| w.magic == HIPK_MAGIC)
    {
        return Err(Error::file(
            path,
            format!(
                "{} wrapper {k} at {:#x}: already HIPK: {ALREADY_SPLIT}",
                wrapper_section(&code),
                w.at
            ),
        ));
    }
    if code.fatbin.data.iter().all(|&b| b == 0) {
        return Ok(None);
    }
    Ok(Some(code))
}

/// How the error for a binary split already ends.
const ALREADY_SPLIT: &str = "the file is split";

/// Whether `e` is the error [`read_binary`] gives for a binary split already.
pub(super) fn is_already_split(e: &Error) -> bool {
    e.to_string().ends_with(ALREADY_SPLIT)
}

/// The error for a file that starts as an ELF file but does not read as one (cut short, or
/// its headers damaged): copied as it is, it would pass for a file without device code. The
/// program reader names the offset where it can.
fn unreadable_elf(path: &Path, data: &[u8], e: &object::Error) -> Error {
    match kpack_elf::hip_code(data) {
        Err(found) => Error::container(path, found),
        Ok(_) => Error::file(
            path,
            format!("not a readable ELF file ({e}); nothing was written for it"),
        ),
    }
}

/// The section of the wrappers of `code`: `.hipFatB` beside a PE image's `.hip_fat`, else
/// `.hipFatBinSegment`.
pub(super) fn wrapper_section(code: &HipCode<'_>) -> &'static str {
    if code.fatbin.name == ".hip_fat" {
        ".hipFatB"
    } else {
        ".hipFatBinSegment"
    }
}

/// The offset in `.hip_fatbin` (`.hip_fat`) of the bundle each wrapper points at.
pub(super) fn bundle_offsets(path: &Path, code: &HipCode<'_>) -> Result<Vec<usize>> {
    code.wrappers
        .iter()
        .enumerate()
        .map(|(k, w)| {
            let fail = |why: &str| {
                Error::file(
                    path,
                    format!(
                        "{} wrapper {k} at {:#x}: {why}",
                        wrapper_section(code),
                        w.at
                    ),
                )
            };
            let target = w.target.ok_or_else(|| fail("points at nothing"))?;
            if !code.fatbin.holds(target) {
                return Err(fail(&format!(
                    "points at {target:#x}, outside {}",
                    code.fatbin.name
                )));
            }
            Ok((target - code.fatbin.address) as usize)
        })
        .collect()
}

/// The HIP device entries (processor and code) of the bundle or compressed bundle at the
/// start of `here`, empty entries left out; the IDs of HIP entries whose target ID cannot
/// be a processor key ([`kformat::is_processor_key`]); and the bundle's shape.
pub(super) fn device_entries<'a>(
    here: &'a [u8],
    limit: u64,
    budget: &Budget,
) -> std::result::Result<ReadBundle<'a>, crate::format::Error> {
    if let Some(compressed) = CompressedBundle::parse(here)? {
        let storage = Storage::Compressed {
            version: compressed.version,
            method: compressed.method,
            level: compressed.known_level(),
        };
        let at = compressed.header_size();
        let spill_failed = |e: std::io::Error| {
            crate::format::Error::new(
                at,
                crate::format::ErrorKind::Decompress(format!(
                    "a temporary file for the inflated bundle: {}",
                    crate::error::io_message(&e)
                )),
            )
        };
        let mut spill = Spill::on_disk().map_err(spill_failed)?;
        // A large zstd stream is inflated at once into room lent by the budget (its decoder
        // needs no window then, which for a frame made in one piece is as large as the
        // stream) and written on from there.
        budget.run(memory_of_whole(&compressed), |decoding| {
            compressed.inflate_bundle_with(limit, decoding, |piece| {
                spill.append(piece).map_err(spill_failed)
            })
        })??;
        let inflated = Arc::new(spill.finish().map_err(spill_failed)?);
        let bundle = Bundle::parse(inflated.bytes())?.ok_or_else(not_a_bundle)?;
        let base = inflated.bytes().as_ptr() as usize;
        let (entries, refused) = hip_entries(&bundle);
        let shape = shape_of(&bundle, storage);
        let found = entries
            .into_iter()
            .map(|(arch, id, data)| {
                let start = data.as_ptr() as usize - base;
                (arch, id, start..start + data.len())
            })
            .collect::<Vec<_>>();
        let found = found
            .into_iter()
            .map(|(arch, id, range)| DeviceEntry {
                arch,
                id,
                code: Code::Inflated(inflated.clone(), range),
            })
            .collect();
        return Ok(ReadBundle {
            entries: found,
            refused,
            shape,
        });
    }
    let bundle = Bundle::parse(here)?.ok_or_else(not_a_bundle)?;
    let (entries, refused) = hip_entries(&bundle);
    let entries = entries
        .into_iter()
        .map(|(arch, id, data)| DeviceEntry {
            arch,
            id,
            code: Code::Mapped(data),
        })
        .collect();
    Ok(ReadBundle {
        entries,
        refused,
        shape: shape_of(&bundle, Storage::Plain),
    })
}

/// The shape of `bundle`, stored as `storage`: every entry's ID as spelled, in header order.
fn shape_of(bundle: &Bundle<'_>, storage: Storage) -> BundleShape {
    let mut ids: Vec<String> = Vec::with_capacity(bundle.entries().len());
    for entry in bundle.entries() {
        // An ID stored twice is one entry to the readers: recorded once.
        if !ids.iter().any(|id| id == entry.id) {
            ids.push(entry.id.to_string());
        }
    }
    BundleShape { ids, storage }
}

pub(super) fn not_a_bundle() -> crate::format::Error {
    crate::format::Error::new(0, crate::format::ErrorKind::NotAContainer)
}

/// The non-empty HIP device entries of `bundle`: target ID, entry ID and code; and the IDs of
/// the non-empty HIP entries whose target ID is no processor key, which must not be split.
pub(super) fn hip_entries<'b>(bundle: &Bundle<'b>) -> (Vec<DeviceBytes<'b>>, Vec<String>) {
    let mut refused = Vec::new();
    let entries = bundle
        .entries()
        .iter()
        .filter(|e| !e.data.is_empty())
        .filter_map(|e| {
            let target = ImageTarget::of_bundle_entry(e.id);
            if target.producer != Producer::Hip || EntryId::parse(e.id).is_host() {
                return None;
            }
            if !kformat::is_processor_key(&target.target_id) {
                refused.push(e.id.to_string());
                return None;
            }
            Some((target.target_id, e.id.to_string(), e.data))
        })
        .collect();
    (entries, refused)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_record_too_long_for_the_loader_is_left_out_of_the_reference() {
        let reference = KpackRef {
            kernel_name: "lib/libk.so",
            kpack_search_paths: vec!["../.kpack/k_@GFXARCH@.kpack"],
        };
        let shape = |n: usize| BundleShape {
            ids: vec![format!("hipv4-amdgcn-amd-amdhsa--gfx{n}")],
            storage: Storage::Plain,
        };
        let mut record = BundleRecord::default();
        record.push(shape(0));
        let kept = reference_bytes(Path::new("k"), &reference, &record);
        assert!(BundleRecord::from_reference(&kept).unwrap().is_some());
        // Two thousand shapes of their own: over 64 KiB.
        for n in 0..2000 {
            record.push(shape(n));
        }
        assert!(reference.to_bytes_recording(&record).len() > LOADER_REFERENCE_LIMIT);
        let left_out = reference_bytes(Path::new("k"), &reference, &record);
        assert_eq!(left_out, reference.to_bytes());
    }
}
