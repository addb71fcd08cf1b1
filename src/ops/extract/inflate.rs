//! Inflating what `extract` chose: the images of one compressed bundle together, its
//! stream inflated once and only as far as they need, within the memory budget
//! ([`crate::ops::support::inflating`]); and, for a device archive, every chosen image held.

use std::borrow::Cow;
use std::collections::BTreeMap;

use rayon::prelude::*;

use crate::error::{Error, Result};
use crate::format::stream::CompressedStream;
use crate::format::ErrorKind;
use crate::host::kpack::ArchiveFiles;
use crate::io::Input;
use crate::ops::extract::chosen::{Bytes, Chosen, Held, Streamed};
use crate::ops::extract::kpack;
use crate::ops::extract::options::ExtractConfig;
use crate::ops::support::inflating::{each_range, memory_of_stream, Budget};

/// The chosen images inside compressed bundles, by compressed bundle: the indices in
/// `chosen` of the images of each, so that each stream is inflated once for all of them.
pub(super) fn stream_groups(chosen: &[Chosen]) -> Vec<Vec<usize>> {
    let mut groups: BTreeMap<(usize, usize, usize), Vec<usize>> = BTreeMap::new();
    for (i, c) in chosen.iter().enumerate() {
        if let Bytes::Stream(streamed) = &c.bytes {
            // A compressed bundle held apart (not in the file) is inflated for each image.
            let key = match streamed.container {
                Held::Input(start, _) => (c.input, start, 0),
                Held::Owned(_) => (c.input, i, 1),
            };
            groups.entry(key).or_default().push(i);
        }
    }
    groups.into_values().collect()
}

/// Inflates the compressed bundle that holds the images `group` (indices in `chosen`, all
/// of one compressed bundle) once, only up to the last byte any of them needs and within
/// `budget`, and hands `each` every image's bytes in order with the image's position in
/// `group`. An error names the file, the section and the offset.
pub(super) fn inflate_group(
    config: &ExtractConfig,
    inputs: &[Input],
    chosen: &[Chosen],
    group: &[usize],
    budget: &Budget,
    mut each: impl FnMut(usize, &[u8]) -> Result<()>,
) -> Result<()> {
    let streams: Vec<&Streamed> = group
        .iter()
        .filter_map(|&i| match &chosen[i].bytes {
            Bytes::Stream(streamed) => Some(streamed),
            Bytes::Input(..) | Bytes::Owned(_) | Bytes::Archived(..) | Bytes::Cuda(..) => None,
        })
        .collect();
    let (Some(&first), Some(streamed)) = (group.first(), streams.first()) else {
        return Ok(());
    };
    let c = &chosen[first];
    let path = &config.files[c.input];
    let fail = |e: crate::format::Error| {
        let e = match streamed.at {
            Some(at) => e.rebased(at),
            None => e,
        };
        match c.place() {
            place if place.is_empty() => Error::format(path, e),
            place => Error::format_in(path, place, e),
        }
    };
    let bytes = streamed.container.get(&inputs[c.input]);
    let compressed = CompressedStream::parse(bytes)
        .map_err(fail)?
        .ok_or_else(|| fail(crate::format::Error::new(0, ErrorKind::NotAContainer)))?;
    let ranges: Vec<(u64, u64)> = streams.iter().map(|s| (s.start, s.end)).collect();
    let _span = tracing::debug_span!("inflating", offset = streamed.at).entered();
    // An error writing stops the inflation; it is the error returned.
    let mut stopped = None;
    let inflated = budget.run(memory_of_stream(&compressed), |decoding| {
        each_range(
            &compressed,
            config.max_decompressed,
            &ranges,
            decoding,
            |k, piece| {
                each(k, piece).map_err(|e| {
                    stopped = Some(e);
                    crate::format::Error::new(0, ErrorKind::Decompress("stopped".into()))
                })
            },
        )
    });
    inputs[c.input].release(bytes);
    match stopped {
        Some(e) => Err(e),
        None => inflated.map_err(fail),
    }
}

/// Inflates the chosen images that are inside compressed bundles, in parallel across
/// bundles, and holds them: only those images, never a whole stream. Holds those of `.kpack`
/// archives too, inflated if stored compressed, and the contents of CUDA entries.
pub(super) fn inflate_chosen(
    config: &ExtractConfig,
    inputs: &[Input],
    archives: &ArchiveFiles,
    chosen: &mut [Chosen],
) -> Result<()> {
    hold_cuda(config, inputs, chosen)?;
    let budget = Budget::new();
    hold_archived(config, archives, chosen, &budget)?;
    hold_streamed(config, inputs, chosen, &budget)
}

/// Holds the contents of the chosen CUDA entries, inflated and cut.
fn hold_cuda(config: &ExtractConfig, inputs: &[Input], chosen: &mut [Chosen]) -> Result<()> {
    let cuda: Vec<Option<Vec<u8>>> = chosen
        .par_iter()
        .map(|c| {
            c.cuda_contents(config, inputs)
                .map(|contents| contents.map(Cow::into_owned))
                .transpose()
        })
        .collect::<Result<_>>()?;
    for (c, held) in chosen.iter_mut().zip(cuda) {
        if let Some(held) = held {
            c.bytes = Bytes::Owned(held);
        }
    }
    Ok(())
}

/// Holds the chosen code objects of `.kpack` archives, inflated within `budget` if stored
/// compressed.
fn hold_archived(
    config: &ExtractConfig,
    archives: &ArchiveFiles,
    chosen: &mut [Chosen],
    budget: &Budget,
) -> Result<()> {
    let archived: Vec<(usize, Vec<u8>)> = chosen
        .par_iter()
        .enumerate()
        .filter_map(|(i, c)| match &c.bytes {
            Bytes::Archived(number, code) => Some((i, *number, code)),
            _ => None,
        })
        .map(|(i, number, code)| {
            let mut held = Vec::new();
            let limit = config.max_decompressed;
            kpack::code_object(archives, number, code, budget, limit, &mut |piece| {
                held.extend_from_slice(piece);
                Ok(())
            })?;
            Ok((i, held))
        })
        .collect::<Result<_>>()?;
    for (i, bytes) in archived {
        chosen[i].bytes = Bytes::Owned(bytes);
    }
    Ok(())
}

/// Holds the chosen images inside compressed bundles, each stream inflated once, within
/// `budget`, in parallel across bundles.
fn hold_streamed(
    config: &ExtractConfig,
    inputs: &[Input],
    chosen: &mut [Chosen],
    budget: &Budget,
) -> Result<()> {
    let groups = stream_groups(chosen);
    let held: Vec<Vec<Vec<u8>>> = groups
        .par_iter()
        .map(|group| {
            let mut held = vec![Vec::new(); group.len()];
            inflate_group(config, inputs, chosen, group, budget, |k, piece| {
                held[k].extend_from_slice(piece);
                Ok(())
            })?;
            Ok(held)
        })
        .collect::<Result<_>>()?;
    for (group, held) in groups.iter().zip(held) {
        for (&i, bytes) in group.iter().zip(held) {
            chosen[i].bytes = Bytes::Owned(bytes);
        }
    }
    Ok(())
}
