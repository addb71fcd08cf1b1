//! The compressed bundles a rewrite decompresses, inflated into the places left for them in
//! its output, in parallel within one budget of decoders.

use std::path::Path;

use crate::error::{Error, Result};
use crate::format::ccob::CompressedBundle;
use crate::format::container::{write_inflated, InflateFailed};
use crate::io::release_mapped;
use crate::io::spill::{Hole, Spill};
use crate::ops::support::inflating::{memory_of_whole, Budget};

/// Inflates the compressed bundles decompressed into the holes of `spill` left for them
/// (each hole knows the bundle's start in `data`), in parallel within one [`Budget`], giving
/// back each bundle's input pages once it is read.
pub(super) fn fill_inflated(
    spill: &mut Spill,
    holes: &[Hole<u64>],
    data: &[u8],
    limit: u64,
    path: &Path,
    fail: &(dyn Fn(crate::format::Error) -> Error + Sync),
) -> Result<()> {
    let inflater = Inflater::new(data, limit, path);
    let write = |hole: &Hole<u64>, sink: &mut dyn FnMut(&[u8]) -> std::io::Result<()>| {
        inflater.fill(hole, sink, fail)
    };
    spill.fill(holes, &write, &|_, e| spill_failed(path, e))
}

/// Inflates the compressed bundles of a file that a rewrite decompresses into the places left
/// for them, in parallel within one [`Budget`].
pub(super) struct Inflater<'d> {
    /// The file (or archive member) rewritten.
    pub(super) data: &'d [u8],
    /// The largest a bundle may inflate to.
    limit: u64,
    budget: Budget,
    /// The file's name, for errors.
    pub(super) path: &'d Path,
}

impl<'d> Inflater<'d> {
    pub(super) fn new(data: &'d [u8], limit: u64, path: &'d Path) -> Self {
        Inflater {
            data,
            limit,
            budget: Budget::new(),
            path,
        }
    }

    /// Hands `sink` the bytes of `hole`, which the compressed bundle at its offset (`what`) in
    /// the file holds; damage in it is said by `fail`, at its offset in the file.
    pub(super) fn fill(
        &self,
        hole: &Hole<u64>,
        sink: &mut dyn FnMut(&[u8]) -> std::io::Result<()>,
        fail: &(dyn Fn(crate::format::Error) -> Error + Sync),
    ) -> Result<()> {
        let here = usize::try_from(hole.what)
            .ok()
            .and_then(|at| self.data.get(at..))
            .ok_or_else(|| fail(not_a_container(0).rebased(hole.what)))?;
        match inflate_into(here, hole.size, self.limit, &self.budget, sink) {
            Ok(()) => Ok(()),
            Err(InflateFailed::Format(e)) => Err(fail(e.rebased(hole.what))),
            Err(InflateFailed::Sink(e)) => Err(spill_failed(self.path, e)),
        }
    }
}

/// Hands `sink` the first `size` bytes the compressed bundle at the start of `here` holds
/// ([`NewBytes::Inflated`]), inflating it within `budget` and up to `limit`, then gives back
/// its input pages.
pub(super) fn inflate_into(
    here: &[u8],
    size: u64,
    limit: u64,
    budget: &Budget,
    sink: &mut dyn FnMut(&[u8]) -> std::io::Result<()>,
) -> std::result::Result<(), InflateFailed> {
    let compressed = match CompressedBundle::parse(here) {
        Ok(Some(compressed)) => compressed,
        Ok(None) => return Err(InflateFailed::Format(not_a_container(0))),
        Err(e) => return Err(InflateFailed::Format(e)),
    };
    let written = budget.run(memory_of_whole(&compressed), |decoding| {
        write_inflated(here, size, limit, decoding, sink)
    });
    release_mapped(&here[..compressed.size() as usize]);
    written
}

/// The error for the temporary file that holds a rewritten region.
pub(super) fn spill_failed(path: &Path, e: std::io::Error) -> Error {
    Error::file(
        path,
        format!(
            "the rewritten device code cannot be held in a temporary file: {}",
            crate::error::io_message(&e)
        ),
    )
}

/// Bytes at `offset` where a container must be, that are none.
pub(super) fn not_a_container(offset: usize) -> crate::format::Error {
    crate::format::Error::new(offset as u64, crate::format::ErrorKind::NotAContainer)
}
