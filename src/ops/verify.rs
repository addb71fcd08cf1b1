//! Checking every compressed bundle of a file whole: each stream inflated to its end and
//! hashed, as listing and extraction (which inflate only what they need) do not; and every
//! compressed entry of a CUDA fat binary, inflated to its end and counted. Streams are
//! checked in parallel, a window at a time, within the memory budget of
//! [`crate::ops::support::inflating`].
//! `.kpack` archives, and the archive sets of binaries split by kpack, are checked too
//! (the `kpack` module).

use std::collections::BTreeMap;
use std::path::Path;

use rayon::prelude::*;

use crate::error::{Error, Result};
use crate::format::container::Origin;
use crate::format::cuda_fatbin::Stored;
use crate::format::kpack as kpack_format;
use crate::format::stream::CompressedStream;
use crate::host::scan::{scan_reading, DeviceImage, Places, Reading};
use crate::io::slice::offset_within;
use crate::io::Input;
use crate::ops::support::inflating::{memory_of_cuda, memory_of_stream, Budget};

mod kpack;

/// What checking one file found.
#[derive(Debug)]
pub struct Verified {
    /// The compressed bundles checked.
    pub streams: usize,
    /// Each compressed bundle that is damaged (its stream fails to inflate, inflates to more
    /// or less than its header says, or to bytes whose hash is not the stored one), in file
    /// order, naming the file, the section and the offset.
    pub bad: Vec<Error>,
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
}

enum Held {
    Input(usize, usize),
    Owned(Vec<u8>),
}

impl Stream {
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
pub fn verify_file_within(path: &Path, max_decompressed: u64, budget: &Budget) -> Result<Verified> {
    let input = Input::open(path)?;
    verify_input_within(path, &input, max_decompressed, budget)
}

/// [`verify_file`] of a file already open as `input` (named `path` in errors).
pub fn verify_input(path: &Path, input: &Input, max_decompressed: u64) -> Result<Verified> {
    verify_input_within(path, input, max_decompressed, &Budget::new())
}

/// [`verify_input`], but a compressed bundle whose bytes `known` knows is counted sound without
/// being inflated: a rewrite reading back the file it wrote knows the streams it compressed.
pub(crate) fn verify_input_except(
    path: &Path,
    input: &Input,
    max_decompressed: u64,
    known: &(dyn Fn(&[u8]) -> bool + Sync),
) -> Result<Verified> {
    verify_input_checking(path, input, max_decompressed, &Budget::new(), known)
}

/// [`verify_input`] within `budget` ([`verify_file_within`]).
fn verify_input_within(
    path: &Path,
    input: &Input,
    max_decompressed: u64,
    budget: &Budget,
) -> Result<Verified> {
    verify_input_checking(path, input, max_decompressed, budget, &|_| false)
}

/// [`verify_input_within`], the compressed bundles `known` knows counted sound as they are.
fn verify_input_checking(
    path: &Path,
    input: &Input,
    max_decompressed: u64,
    budget: &Budget,
    known: &(dyn Fn(&[u8]) -> bool + Sync),
) -> Result<Verified> {
    if input.starts_with(&kpack_format::MAGIC) {
        let checked = kpack::verify_archive(path, input, max_decompressed)?;
        input.intact()?;
        return Ok(Verified {
            streams: 0,
            bad: Vec::new(),
            problems: Vec::new(),
            stored: 0,
            inflated: 0,
            cuda: 0,
            cuda_bad: Vec::new(),
            kpack: Some(checked),
        });
    }
    let (found, mut problems) = find_streams(path, input, max_decompressed)?;
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
            Some(cuda) => check_cuda(path, input, stream, cuda, max_decompressed, budget),
            None => check(path, input, stream, max_decompressed, budget, &counted),
        })
        .collect();
    let (mut stored, mut inflated) = (0, 0);
    let (mut streams, mut cuda) = (0, 0);
    let (mut bad, mut cuda_bad) = (Vec::new(), Vec::new());
    for (stream, result) in found.iter().zip(checked) {
        match (result, stream.cuda.is_some()) {
            (Ok(_), true) => cuda += 1,
            (Ok(size), false) => {
                streams += 1;
                stored += stream.len() as u64;
                inflated += size;
            }
            (Err(e), true) => {
                cuda += 1;
                cuda_bad.push(e);
            }
            (Err(e), false) => {
                streams += 1;
                bad.push(e);
            }
        }
    }
    tracing::info!(
        streams,
        known = known_streams.into_inner(),
        bad = bad.len(),
        cuda,
        cuda_bad = cuda_bad.len(),
        "verified"
    );
    input.intact()?;
    Ok(Verified {
        streams,
        bad,
        problems,
        stored,
        inflated,
        cuda,
        cuda_bad,
        kpack,
    })
}

/// The compressed bundles and compressed CUDA entries of the file, each once and in file
/// order, and the damage found while looking for them.
fn find_streams(
    path: &Path,
    input: &Input,
    max_decompressed: u64,
) -> Result<(Vec<Stream>, Vec<Error>)> {
    // Keyed by where the compressed bundle's bytes are: its entries all name it.
    let mut found: BTreeMap<usize, Stream> = BTreeMap::new();
    let problems = scan_reading(
        path,
        input,
        Places::Everywhere,
        max_decompressed,
        Reading::Headers,
        &mut |image: &DeviceImage<'_>| {
            let (bytes, offset, cuda) = match (image.stream, &image.origin) {
                (Some(stream), _) => (stream.container, stream.offset, None),
                (None, Origin::CudaEntry(entry)) if entry.is_compressed() => {
                    let offset = offset_within(input, entry.payload).map(|at| at as u64);
                    (entry.payload, offset, Some(entry.stored()))
                }
                (None, _) => return,
            };
            found
                .entry(bytes.as_ptr() as usize)
                .or_insert_with(|| Stream {
                    bytes: match offset_within(input, bytes) {
                        Some(start) => Held::Input(start, bytes.len()),
                        None => Held::Owned(bytes.to_vec()),
                    },
                    offset,
                    place: place(image),
                    cuda,
                });
        },
    )?;
    let mut streams: Vec<Stream> = found.into_values().collect();
    streams.sort_by_key(|s| s.offset);
    Ok((streams, problems))
}

/// Member and section of `image`, as a scan names them.
fn place(image: &DeviceImage<'_>) -> String {
    let mut parts: Vec<String> = image
        .members
        .iter()
        .map(|m| format!("member '{m}'"))
        .collect();
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
    let checked = budget.run(memory_of_stream(&compressed), |decoding| {
        compressed.verify(max_decompressed, decoding)
    });
    input.release(bytes);
    checked.map(|_| size).map_err(fail)
}
