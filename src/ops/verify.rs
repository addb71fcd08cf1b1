//! Checking every compressed bundle of a file whole: each stream inflated to its end and
//! hashed, as listing and extraction (which inflate only what they need) do not; and every
//! compressed entry of a CUDA fat binary, inflated to its end and counted. Streams are
//! checked in parallel, a window at a time, within the memory budget of
//! `crate::ops::support::inflating`.
//! `.kpack` archives, and the archive sets of binaries split by kpack, are checked too
//! (the `kpack` module).
//!
//! # Example
//!
//! Check a file's compressed bundle whole, then find the damage when one byte of it changes.
//!
//! ```
//! use offload::format::{bundle, ccob};
//! use offload::ops::verify;
//!
//! # fn main() -> Result<(), Box<dyn std::error::Error>> {
//! let dir = tempfile::tempdir()?;
//! let file = dir.path().join("kernels.hipfb");
//! let plain = bundle::to_vec(&[("hipv4-amdgcn-amd-amdhsa--gfx90a", &[7; 5000][..])], 8);
//! let (mut packed, _) = ccob::compress(&plain, &ccob::CompressOptions::default())?;
//! std::fs::write(&file, &packed)?;
//!
//! let verified = verify::verify_file(&file, ccob::DEFAULT_MAX_DECOMPRESSED)?;
//! assert_eq!(verified.streams, 1);
//! assert!(verified.bad.is_empty() && verified.problems.is_empty());
//! assert_eq!(verified.inflated, plain.len() as u64);
//!
//! // The hash a version 2 header stores (bytes 16 to 24), changed: the bundle no longer
//! // hashes to it.
//! packed[16] ^= 1;
//! std::fs::write(&file, &packed)?;
//! let verified = verify::verify_file(&file, ccob::DEFAULT_MAX_DECOMPRESSED)?;
//! // A bundle this small is inflated whole while it is found: its damage is among the problems.
//! assert_eq!(verified.bad.len() + verified.problems.len(), 1);
//! # Ok(())
//! # }
//! ```

use std::collections::BTreeMap;
use std::os::unix::ffi::OsStrExt;
use std::path::Path;

use rayon::prelude::*;

use crate::error::{Error, Result};
use crate::format::container::{Container, Origin};
use crate::format::cuda_fatbin::Stored;
use crate::format::kpack as kpack_format;
use crate::format::stream::CompressedStream;
use crate::host::scan::{scan_reading, DeviceImage, InflatedWhole, Places, Reading};
use crate::io::slice::offset_within;
use crate::io::Input;
use crate::ops::support::inflating::{memory_of_cuda, memory_of_whole_stream, Budget};

mod kpack;
pub use kpack::KpackVerified;

/// What checking one file found.
#[derive(Debug)]
pub struct Verified {
    /// The compressed bundles checked.
    pub streams: usize,
    /// Each compressed bundle that is damaged (its stream fails to inflate, inflates to more
    /// or less than its header says, or to bytes whose hash is not the stored one), in file
    /// order, naming the file, the section and the offset.
    pub bad: Vec<Error>,
    /// The compressed offload binaries (version 3) checked: small ones, inflated whole while
    /// they were found, and the others, inflated to their end.
    pub binaries: usize,
    /// Each compressed offload binary that is damaged, in file order, naming the file, the
    /// section and the offset.
    pub binaries_bad: Vec<Error>,
    /// The damage found while looking for the compressed bundles: what `offload ls` reports
    /// for the file (a compressed bundle whose header or bundle header is damaged, or a small
    /// one, inflated whole while listed, that is damaged).
    pub problems: Vec<Error>,
    /// The bytes of the sound compressed bundles.
    pub stored: u64,
    /// The bytes they inflate to.
    pub inflated: u64,
    /// The compressed entries of CUDA fat binaries checked.
    pub cuda: usize,
    /// Each compressed CUDA entry that is damaged (its stream fails to inflate, or inflates to
    /// more or less than its header says), in file order, naming the file, the section and the
    /// offset.
    pub cuda_bad: Vec<Error>,
    /// For a `.kpack` archive, or a binary split by kpack: what its archives hold.
    pub kpack: Option<kpack::KpackVerified>,
}

/// One compressed stream to check: where it is, and where it lies, for errors.
struct Stream {
    /// Its bytes: a range of the input, or held when it is not stored as such.
    bytes: Held,
    /// Its offset in the file.
    offset: Option<u64>,
    /// Member and section, as a scan names them.
    place: String,
    /// What it is: a compressed bundle, or the payload of a CUDA entry, stored so.
    cuda: Option<Stored>,
    /// Whether it is a compressed offload binary rather than a compressed bundle.
    binary: bool,
}

enum Held {
    Input(usize, usize),
    Owned(Vec<u8>),
}

impl Stream {
    /// Its bytes, in `input` or held.
    fn bytes<'i>(&'i self, input: &'i [u8]) -> &'i [u8] {
        match &self.bytes {
            Held::Input(start, len) => input.get(*start..*start + *len).unwrap_or_default(),
            Held::Owned(bytes) => bytes.as_slice(),
        }
    }

    /// The size of the compressed bundle.
    fn len(&self) -> usize {
        match &self.bytes {
            Held::Input(_, len) => *len,
            Held::Owned(bytes) => bytes.len(),
        }
    }
}

/// Inflates and hashes every compressed bundle of the file at `path`. The `Err` is for a file
/// that cannot be read at all.
#[tracing::instrument(skip_all, fields(file = %path.display()))]
pub fn verify_file(path: &Path, max_decompressed: u64) -> Result<Verified> {
    verify_file_within(path, max_decompressed, &Budget::new())
}

/// [`verify_file`], the streams inflated within `budget`: one budget shared by files checked
/// at once keeps them all within it.
pub(crate) fn verify_file_within(
    path: &Path,
    max_decompressed: u64,
    budget: &Budget,
) -> Result<Verified> {
    let input = Input::open(path)?;
    verify_input_within(path, &input, max_decompressed, budget)
}

/// [`verify_input`], but a compressed bundle or compressed CUDA payload whose bytes `known`
/// knows is counted sound without being inflated: a rewrite reading back the file it wrote
/// knows the streams it compressed and the CUDA entries it copied as they were stored.
pub(crate) fn verify_input_except(
    path: &Path,
    input: &Input,
    max_decompressed: u64,
    known: &(dyn Fn(&[u8]) -> bool + Sync),
) -> Result<Verified> {
    let checking = Checking {
        known,
        copied: &|_| false,
        visit: &mut |_| {},
    };
    verify_input_checking(path, input, max_decompressed, &Budget::new(), checking)
}

/// [`verify_input_except`], every device image the scan finds handed to `visit` as well: a
/// rewrite reading back the file it wrote counts its images in the same pass over it. A
/// compressed CUDA payload `copied` takes (its bytes, within `input`) is counted sound
/// without being read: one that lies in a stretch of the input copied into the file as it
/// was stored.
pub(crate) fn verify_input_visiting(
    path: &Path,
    input: &Input,
    max_decompressed: u64,
    known: &(dyn Fn(&[u8]) -> bool + Sync),
    copied: &(dyn Fn(&[u8]) -> bool + Sync),
    visit: &mut dyn FnMut(&DeviceImage<'_>),
) -> Result<Verified> {
    let checking = Checking {
        known,
        copied,
        visit,
    };
    verify_input_checking(path, input, max_decompressed, &Budget::new(), checking)
}

/// What a check is told besides the file: the compressed streams it may take as sound by
/// their bytes, and who else sees each device image found.
struct Checking<'c> {
    known: &'c (dyn Fn(&[u8]) -> bool + Sync),
    /// The compressed CUDA payloads copied as they were stored, by their place.
    copied: &'c (dyn Fn(&[u8]) -> bool + Sync),
    visit: &'c mut dyn FnMut(&DeviceImage<'_>),
}

/// [`verify_input`] within `budget` ([`verify_file_within`]).
fn verify_input_within(
    path: &Path,
    input: &Input,
    max_decompressed: u64,
    budget: &Budget,
) -> Result<Verified> {
    let checking = Checking {
        known: &|_| false,
        copied: &|_| false,
        visit: &mut |_| {},
    };
    verify_input_checking(path, input, max_decompressed, budget, checking)
}

/// [`verify_input_within`], the compressed bundles `known` knows counted sound as they are.
fn verify_input_checking(
    path: &Path,
    input: &Input,
    max_decompressed: u64,
    budget: &Budget,
    checking: Checking<'_>,
) -> Result<Verified> {
    let Checking {
        known,
        copied,
        visit,
    } = checking;
    if input.starts_with(&kpack_format::MAGIC) {
        let checked = kpack::verify_archive(path, input, max_decompressed)?;
        input.intact()?;
        return Ok(Verified {
            streams: 0,
            bad: Vec::new(),
            binaries: 0,
            binaries_bad: Vec::new(),
            problems: Vec::new(),
            stored: 0,
            inflated: 0,
            cuda: 0,
            cuda_bad: Vec::new(),
            kpack: Some(checked),
        });
    }
    let Found {
        streams: found,
        whole,
        mut problems,
    } = find_streams(path, input, max_decompressed, visit)?;
    let known_streams = std::sync::atomic::AtomicUsize::new(0);
    let kpack = match crate::host::kpack::split_binary(path, input) {
        Ok(split) => split.map(|split| kpack::verify_split(path, &split, max_decompressed)),
        Err(e) => {
            problems.push(e);
            None
        }
    };
    let counted = |bytes: &[u8]| {
        let is_known = known(bytes);
        if is_known {
            known_streams.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
        }
        is_known
    };
    let checked: Vec<Result<u64>> = found
        .par_iter()
        .map(|stream| match &stream.cuda {
            Some(cuda) => {
                let bytes = stream.bytes(input);
                // Where it lies tells before its bytes are read: one copied as stored is
                // the input's own.
                if copied(bytes) || counted(bytes) {
                    // Read once: its pages need not stay.
                    input.release(bytes);
                    return Ok(cuda.inflated_size);
                }
                check_cuda(path, input, stream, cuda, max_decompressed, budget)
            }
            None => check(path, input, stream, max_decompressed, budget, &counted),
        })
        .collect();
    let mut verified = Verified {
        streams: 0,
        bad: Vec::new(),
        binaries: 0,
        binaries_bad: Vec::new(),
        problems,
        stored: 0,
        inflated: 0,
        cuda: 0,
        cuda_bad: Vec::new(),
        kpack,
    };
    for inflated in &whole {
        verified.count_whole(inflated);
    }
    for (stream, result) in found.iter().zip(checked) {
        verified.count(stream, result);
    }
    tracing::info!(
        streams = verified.streams,
        binaries = verified.binaries,
        known = known_streams.into_inner(),
        bad = verified.bad.len() + verified.binaries_bad.len(),
        cuda = verified.cuda,
        cuda_bad = verified.cuda_bad.len(),
        "verified"
    );
    input.intact()?;
    Ok(verified)
}

impl Verified {
    /// Counts a compressed container the scan inflated whole, sound (damage found then is
    /// among the problems).
    fn count_whole(&mut self, inflated: &InflatedWhole) {
        match inflated.container {
            Container::OffloadBinary => self.binaries += 1,
            _ => self.streams += 1,
        }
        self.stored += inflated.stored;
        self.inflated += inflated.size;
    }

    /// Counts `stream`, checked with `result`: the size it inflates to, or its damage.
    fn count(&mut self, stream: &Stream, result: Result<u64>) {
        match (result, &stream.cuda, stream.binary) {
            (Ok(_), Some(_), _) => self.cuda += 1,
            (Err(e), Some(_), _) => {
                self.cuda += 1;
                self.cuda_bad.push(e);
            }
            (Ok(size), None, binary) => {
                if binary {
                    self.binaries += 1;
                } else {
                    self.streams += 1;
                }
                self.stored += stream.len() as u64;
                self.inflated += size;
            }
            (Err(e), None, true) => {
                self.binaries += 1;
                self.binaries_bad.push(e);
            }
            (Err(e), None, false) => {
                self.streams += 1;
                self.bad.push(e);
            }
        }
    }
}

/// What a scan of a file found to check.
struct Found {
    /// The compressed streams: bundles, offload binaries and CUDA entries, in file order.
    streams: Vec<Stream>,
    /// The compressed containers the scan inflated whole (and so checked).
    whole: Vec<InflatedWhole>,
    /// The damage found on the way.
    problems: Vec<Error>,
}

/// The compressed bundles and compressed CUDA entries of the file, each once and in file
/// order, and the damage found while looking for them.
/// Every device image found is handed to `visit` too.
fn find_streams(
    path: &Path,
    input: &Input,
    max_decompressed: u64,
    visit: &mut dyn FnMut(&DeviceImage<'_>),
) -> Result<Found> {
    // Keyed by where the compressed bundle's bytes are: its entries all name it.
    // (The package member that holds it, by number, when the file is a package: the bytes of
    // members read one after another may lie at the same addresses.)
    let mut found: BTreeMap<(usize, usize), Stream> = BTreeMap::new();
    // Keyed by the number the scan gave each.
    let mut whole: BTreeMap<usize, InflatedWhole> = BTreeMap::new();
    let problems = scan_reading(
        path,
        input,
        Places::Everywhere,
        max_decompressed,
        Reading::Headers,
        &mut |image: &DeviceImage<'_>| {
            visit(image);
            if let (None, Some(inflated)) = (image.stream, image.inflated) {
                whole.insert(inflated.number, inflated);
            }
            let (bytes, offset, cuda) = match (image.stream, &image.origin) {
                (Some(stream), _) => (stream.container, stream.offset, None),
                (None, Origin::CudaEntry(entry)) if entry.is_compressed() => {
                    let offset = offset_within(input, entry.payload).map(|at| at as u64);
                    (entry.payload, offset, Some(entry.stored()))
                }
                (None, _) => return,
            };
            found
                .entry((
                    image.package.map_or(0, |p| p.number),
                    bytes.as_ptr() as usize,
                ))
                .or_insert_with(|| Stream {
                    bytes: match offset_within(input, bytes) {
                        Some(start) => Held::Input(start, bytes.len()),
                        None => Held::Owned(bytes.to_vec()),
                    },
                    offset,
                    place: place(image),
                    cuda,
                    binary: Container::at_start(bytes) == Some(Container::OffloadBinary),
                });
        },
    )?;
    // In file order: a package's member by member, each in the member's order.
    let mut streams: Vec<(usize, Stream)> = found.into_iter().map(|((n, _), s)| (n, s)).collect();
    streams.sort_by_key(|(member, s)| (*member, s.offset));
    let streams: Vec<Stream> = streams.into_iter().map(|(_, s)| s).collect();
    Ok(Found {
        streams,
        whole: whole.into_values().collect(),
        problems,
    })
}

/// Member and section of `image`, as a scan names them.
fn place(image: &DeviceImage<'_>) -> String {
    let package = image.package.map(|p| {
        let member = std::ffi::OsStr::from_bytes(&p.member);
        format!("package member '{}'", crate::io::shown(member))
    });
    let members = image.members.iter().map(|m| format!("member '{m}'"));
    let mut parts: Vec<String> = package.into_iter().chain(members).collect();
    if let Some(section) = image.section {
        parts.push(format!("section '{section}'"));
    }
    parts.join(", ")
}

/// The error `e` met in `stream`, naming the file, the place and the offset in the file.
fn stream_error(path: &Path, stream: &Stream, e: crate::format::Error) -> Error {
    let e = match stream.offset {
        Some(at) => e.rebased(at),
        None => e,
    };
    if stream.place.is_empty() {
        Error::format(path, e)
    } else {
        Error::format_in(path, &stream.place, e)
    }
}

/// Inflates the payload of one compressed CUDA entry, stored as `stored`, to its end a
/// window at a time, as extraction does; gives the size it inflates to.
fn check_cuda(
    path: &Path,
    input: &Input,
    stream: &Stream,
    stored: &Stored,
    max_decompressed: u64,
    budget: &Budget,
) -> Result<u64> {
    let bytes = match &stream.bytes {
        Held::Input(start, len) => &input[*start..*start + *len],
        Held::Owned(bytes) => bytes.as_slice(),
    };
    let checked = budget.run(memory_of_cuda(stored), |decoding| {
        stored.inflate_to(bytes, max_decompressed, decoding, &mut |_| Ok(()))
    });
    input.release(bytes);
    checked
        .map(|()| stored.inflated_size)
        .map_err(|e| stream_error(path, stream, e))
}

/// Inflates and hashes one compressed bundle; gives the size it inflates to.
fn check(
    path: &Path,
    input: &Input,
    stream: &Stream,
    max_decompressed: u64,
    budget: &Budget,
    known: &(dyn Fn(&[u8]) -> bool + Sync),
) -> Result<u64> {
    let bytes = match &stream.bytes {
        Held::Input(start, len) => &input[*start..*start + *len],
        Held::Owned(bytes) => bytes.as_slice(),
    };
    let fail = |e: crate::format::Error| stream_error(path, stream, e);
    let Some(compressed) = CompressedStream::parse(bytes).map_err(fail)? else {
        return Ok(0);
    };
    let size = compressed.inflated_size();
    if known(bytes) {
        return Ok(size);
    }
    let checked = budget.run(memory_of_whole_stream(&compressed), |decoding| {
        compressed.verify(max_decompressed, decoding)
    });
    input.release(bytes);
    checked.map(|_| size).map_err(fail)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The stored payloads of the compressed CUDA entries of the file `input` (named `path`).
    fn cuda_payloads(path: &Path, input: &Input) -> Vec<(usize, usize)> {
        let found = find_streams(path, input, u64::MAX, &mut |_| {}).unwrap();
        (found.streams.iter())
            .filter(|s| s.cuda.is_some())
            .filter_map(|s| match s.bytes {
                Held::Input(start, len) => Some((start, len)),
                Held::Owned(_) => None,
            })
            .collect()
    }

    #[test]
    fn copied_cuda_payloads_are_known_by_their_bytes_and_others_inflated() {
        let path = Path::new(env!("CARGO_MANIFEST_DIR")).join("samples/cuda/gencode-zstd.o");
        let input = Input::open(&path).unwrap();
        let payloads = cuda_payloads(&path, &input);
        assert_eq!(
            payloads.len(),
            3,
            "two cubins and PTX, stored zstd-compressed"
        );
        let hashes: std::collections::BTreeSet<u64> = (payloads.iter())
            .map(|&(start, len)| xxhash_rust::xxh3::xxh3_64(&input[start..start + len]))
            .collect();
        let known = |bytes: &[u8]| hashes.contains(&xxhash_rust::xxh3::xxh3_64(bytes));
        let sound = verify_input_except(&path, &input, u64::MAX, &known).unwrap();
        assert_eq!((sound.cuda, sound.cuda_bad.len()), (3, 0));

        // A payload written wrong is no longer the bytes copied: it is inflated, and fails.
        let dir = tempfile::tempdir().unwrap();
        let damaged = dir.path().join("damaged.o");
        let mut bytes = input.to_vec();
        let (start, _) = payloads[1];
        bytes[start] ^= 0xff;
        std::fs::write(&damaged, &bytes).unwrap();
        let written = Input::open(&damaged).unwrap();
        let checked = verify_input_except(&damaged, &written, u64::MAX, &known).unwrap();
        assert_eq!((checked.cuda, checked.cuda_bad.len()), (3, 1));
        let said = checked.cuda_bad[0].to_string();
        assert!(said.contains("damaged.o"), "{said}");
        // Known bytes are not inflated: damage in them is not what this check looks for.
        let all = verify_input_except(&damaged, &written, u64::MAX, &|_| true).unwrap();
        assert_eq!((all.cuda, all.cuda_bad.len()), (3, 0));
    }
}
