//! Checking every compressed bundle of a file whole: each stream inflated to its end and
//! hashed, as listing and extraction (which inflate only what they need) do not. Streams are
//! checked in parallel across bundles, within the memory budget of [`crate::ops::inflating`].
//! `.kpack` archives, and the archive sets of binaries split by kpack, are checked too
//! (the `kpack` module).

use std::collections::BTreeMap;
use std::path::Path;

use rayon::prelude::*;

use crate::container::scan::{scan_reading, DeviceImage, Places, Reading};
use crate::error::{Error, Result};
use crate::format::ccob::CompressedBundle;
use crate::format::kpack as kpack_format;
use crate::format::slice::offset_within;
use crate::io::Input;
use crate::ops::inflating::{memory_of, Budget};

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
    /// For a `.kpack` archive, or a binary split by kpack: what its archives hold.
    pub kpack: Option<kpack::KpackVerified>,
}

/// One compressed bundle to check: where it is, and where it lies, for errors.
struct Stream {
    /// Its bytes: a range of the input, or held when it is not stored as such.
    bytes: Held,
    /// Its offset in the file.
    offset: Option<u64>,
    /// Member and section, as a scan names them.
    place: String,
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

/// [`verify_input`] within `budget` ([`verify_file_within`]).
fn verify_input_within(
    path: &Path,
    input: &Input,
    max_decompressed: u64,
    budget: &Budget,
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
            kpack: Some(checked),
        });
    }
    let (streams, mut problems) = find_streams(path, input, max_decompressed)?;
    let kpack = match crate::container::kpack::split_binary(path, input) {
        Ok(split) => split.map(|split| kpack::verify_split(path, &split, max_decompressed)),
        Err(e) => {
            problems.push(e);
            None
        }
    };
    let checked: Vec<Result<u64>> = streams
        .par_iter()
        .map(|stream| check(path, input, stream, max_decompressed, budget))
        .collect();
    let (mut stored, mut inflated) = (0, 0);
    let mut bad = Vec::new();
    for (stream, result) in streams.iter().zip(checked) {
        match result {
            Ok(size) => {
                stored += stream.len() as u64;
                inflated += size;
            }
            Err(e) => bad.push(e),
        }
    }
    tracing::info!(streams = streams.len(), bad = bad.len(), "verified");
    input.intact()?;
    Ok(Verified {
        streams: streams.len(),
        bad,
        problems,
        stored,
        inflated,
        kpack,
    })
}

/// The compressed bundles of the file, each once and in file order, and the damage found
/// while looking for them.
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
            let Some(stream) = image.stream else {
                return;
            };
            let key = stream.bundle.as_ptr() as usize;
            found.entry(key).or_insert_with(|| Stream {
                bytes: match offset_within(input, stream.bundle) {
                    Some(start) => Held::Input(start, stream.bundle.len()),
                    None => Held::Owned(stream.bundle.to_vec()),
                },
                offset: stream.offset,
                place: place(image),
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

/// Inflates and hashes one compressed bundle; gives the size it inflates to.
fn check(
    path: &Path,
    input: &Input,
    stream: &Stream,
    max_decompressed: u64,
    budget: &Budget,
) -> Result<u64> {
    let bytes = match &stream.bytes {
        Held::Input(start, len) => &input[*start..*start + *len],
        Held::Owned(bytes) => bytes.as_slice(),
    };
    let fail = |e: crate::format::Error| {
        let e = match stream.offset {
            Some(at) => e.rebased(at),
            None => e,
        };
        if stream.place.is_empty() {
            Error::format(path, e)
        } else {
            Error::format_in(path, &stream.place, e)
        }
    };
    let Some(compressed) = CompressedBundle::parse(bytes).map_err(fail)? else {
        return Ok(0);
    };
    let size = compressed.uncompressed_size;
    let checked = budget.run(memory_of(&compressed), |decoding| {
        compressed.verify(max_decompressed, decoding)
    });
    input.release(bytes);
    checked.map(|_| size).map_err(fail)
}
