//! Inflating what `extract` chose: the images of one compressed bundle together, its
//! stream inflated once and only as far as they need, within the memory budget
//! ([`crate::ops::support::inflating`]); and, for a device archive, every chosen image put
//! in the archive's scratch file as it is inflated.

use std::collections::BTreeMap;

use rayon::prelude::*;

use crate::error::{Error, Result};
use crate::format::kpack::Scheme;
use crate::format::stream::CompressedStream;
use crate::format::ErrorKind;
use crate::host::kpack::ArchiveFiles;
use crate::io::spill::{Shelf, Shelved};
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

/// Puts the chosen images whose bytes are not in their input as they are onto `shelf` (the
/// scratch file of a device archive being written), in parallel: those inside compressed
/// bundles, each stream inflated once; the code objects of `.kpack` archives, inflated if
/// stored compressed; the contents of CUDA entries. Each goes straight into a part set aside
/// for it as it is inflated, so none is held in memory. Returns, for each image of `chosen`,
/// where its bytes are on the shelf (`None`: in its input).
pub(super) fn shelve_chosen(
    config: &ExtractConfig,
    inputs: &[Input],
    archives: &ArchiveFiles,
    chosen: &[Chosen],
    shelf: &Shelf,
) -> Result<Vec<Option<Shelved>>> {
    let budget = Budget::new();
    let mut places = vec![None; chosen.len()];
    let shelved = (shelve_cuda(config, inputs, chosen, shelf)?.into_iter())
        .chain(shelve_archived(config, archives, chosen, shelf, &budget)?)
        .chain(shelve_streamed(config, inputs, chosen, shelf, &budget)?);
    for (i, place) in shelved {
        if let Some(slot) = places.get_mut(i) {
            *slot = Some(place);
        }
    }
    Ok(places)
}

/// A part of a shelf being written in order, piece by piece.
struct Part<'s> {
    shelf: &'s Shelf,
    place: Shelved,
    written: u64,
}

impl<'s> Part<'s> {
    /// A part of `shelf` set aside for at most `most` bytes.
    fn new(shelf: &'s Shelf, most: u64, config: &ExtractConfig) -> Result<Part<'s>> {
        let place = shelf
            .reserve(most)
            .map_err(|e| Error::io(&config.output, e))?;
        Ok(Part {
            shelf,
            place,
            written: 0,
        })
    }

    /// Writes the next `piece`.
    fn write(&mut self, piece: &[u8], config: &ExtractConfig) -> Result<()> {
        (self.shelf)
            .put_at(self.place, self.written, piece)
            .map_err(|e| Error::io(&config.output, e))?;
        self.written += piece.len() as u64;
        Ok(())
    }

    /// Where the bytes written are.
    fn written(&self) -> Shelved {
        Shelved {
            at: self.place.at,
            len: self.written,
        }
    }
}

/// Shelves the contents of the chosen CUDA entries, inflated and cut.
fn shelve_cuda(
    config: &ExtractConfig,
    inputs: &[Input],
    chosen: &[Chosen],
    shelf: &Shelf,
) -> Result<Vec<(usize, Shelved)>> {
    chosen
        .par_iter()
        .enumerate()
        .filter_map(|(i, c)| Some((i, c.cuda_contents(config, inputs)?)))
        .map(|(i, contents)| {
            let place = shelf
                .put(&contents?)
                .map_err(|e| Error::io(&config.output, e))?;
            Ok((i, place))
        })
        .collect()
}

/// Shelves the chosen code objects of `.kpack` archives, inflated within `budget` if stored
/// compressed.
fn shelve_archived(
    config: &ExtractConfig,
    archives: &ArchiveFiles,
    chosen: &[Chosen],
    shelf: &Shelf,
    budget: &Budget,
) -> Result<Vec<(usize, Shelved)>> {
    chosen
        .par_iter()
        .enumerate()
        .filter_map(|(i, c)| match &c.bytes {
            Bytes::Archived(number, code) => Some((i, *number, code)),
            _ => None,
        })
        .map(|(i, number, code)| {
            let limit = config.max_decompressed;
            let most = match code.scheme {
                Scheme::None => code.stored_size,
                Scheme::ZstdPerKernel => code.size.min(limit),
            };
            let mut part = Part::new(shelf, most, config)?;
            kpack::code_object(archives, number, code, budget, limit, &mut |piece| {
                part.write(piece, config)
            })?;
            Ok((i, part.written()))
        })
        .collect()
}

/// Shelves the chosen images inside compressed bundles, each stream inflated once, within
/// `budget`, in parallel across bundles.
fn shelve_streamed(
    config: &ExtractConfig,
    inputs: &[Input],
    chosen: &[Chosen],
    shelf: &Shelf,
    budget: &Budget,
) -> Result<Vec<(usize, Shelved)>> {
    let groups = stream_groups(chosen);
    let shelved: Vec<Vec<(usize, Shelved)>> = groups
        .par_iter()
        .map(|group| {
            let mut parts = (group.iter())
                .map(|&i| {
                    let most = match &chosen[i].bytes {
                        Bytes::Stream(s) => s.end.saturating_sub(s.start),
                        _ => 0,
                    };
                    Part::new(shelf, most.min(config.max_decompressed), config)
                })
                .collect::<Result<Vec<_>>>()?;
            inflate_group(
                config,
                inputs,
                chosen,
                group,
                budget,
                |k, piece| match parts.get_mut(k) {
                    Some(part) => part.write(piece, config),
                    None => Ok(()),
                },
            )?;
            Ok(group
                .iter()
                .copied()
                .zip(parts.iter().map(Part::written))
                .collect())
        })
        .collect::<Result<_>>()?;
    Ok(shelved.into_iter().flatten().collect())
}
