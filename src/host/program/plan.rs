//! The half of rewriting a linked program that knows no file format: which containers a
//! section holds, their new bytes (made in parallel), where each lands once they are packed
//! on their boundaries, what every pointer into the section must become, and how the new file
//! is put together from the old one when some of its bytes go.
//!
//! A format's reader finds the section and the places that point into it; its writer decides
//! how many bytes the file may lose and where the format's own tables go. Both meet here.

use std::borrow::Cow;
use std::collections::BTreeMap;

use crate::format::container::{InflateFailed, NewBytes};
use crate::host::error::{Error, ErrorKind, Result};
use crate::host::objcopy::{Piece, Rewritten};
use crate::io::spill::{Hole, Spill, Spilled, WriteHole};
use crate::io::ReleasedInBatches;

/// Rewrites the container at the start of the bytes it is given (found at the given offset in
/// the section): its new bytes, `None` to keep it; an error says its offset in the section.
/// Called from several threads at once.
pub type RewriteContainer<'r> =
    dyn Fn(&[u8], usize) -> std::result::Result<Option<NewBytes>, crate::format::Error> + Sync + 'r;

/// The size of the container at the start of the bytes it is given, read from its header.
pub type ContainerSize<'r> = dyn Fn(&[u8]) -> std::result::Result<usize, crate::format::Error> + 'r;

/// Hands the sink the first bytes (as many as given) of what the compressed bundle at the
/// start of the bytes it is given holds, as it inflates them ([`NewBytes::Inflated`]). Called
/// from several threads at once.
pub type InflateContainer<'r> = dyn Fn(
        &[u8],
        u64,
        &mut dyn FnMut(&[u8]) -> std::io::Result<()>,
    ) -> std::result::Result<(), InflateFailed>
    + Sync
    + 'r;

/// The boundary the container at the start of the bytes it is given is packed on when its
/// format fixes one (CUDA fat binaries lie back to back on 8-byte boundaries); `None`: on a
/// boundary as large as the one it had, up to a page.
pub type ContainerBoundary<'r> = dyn Fn(&[u8]) -> Option<usize> + Sync + 'r;

/// How the containers of a section are found and rewritten.
#[derive(Clone, Copy)]
pub struct Rewriting<'r> {
    /// Their sizes.
    pub size_of: &'r ContainerSize<'r>,
    /// The boundaries they are packed on.
    pub boundary: &'r ContainerBoundary<'r>,
    /// Their new bytes.
    pub rewrite: &'r RewriteContainer<'r>,
    /// The bytes of those decompressed.
    pub inflate: &'r InflateContainer<'r>,
    /// Work on all of them at once (each container's bytes, in order), run on a thread of
    /// its own while they are rewritten: the hashes of those compressed, taken ahead.
    pub beside: Option<&'r AllContainers<'r>>,
    /// The file the new program is written to, when it may be written at offsets already:
    /// a large section's containers are packed straight into it at the section's offset.
    pub destination: Option<&'r Destination<'r>>,
}

/// Opens the file a new program is written to, for packed containers made in it from the
/// offset it is given on: see [`Rewriting::destination`] (`None`: it cannot be written at
/// offsets).
pub type Destination<'r> = dyn Fn(u64) -> Option<std::fs::File> + Sync + 'r;

/// Work on all the containers of a section at once: see [`Rewriting::beside`].
pub type AllContainers<'r> = dyn Fn(&[&[u8]]) + Sync + 'r;

/// The section that holds the containers, as a format's reader found it.
#[derive(Debug, Clone, Copy)]
pub struct Section<'a> {
    /// Its name, for messages.
    pub name: &'a str,
    /// Its bytes.
    pub data: &'a [u8],
    /// Its offset in the file.
    pub offset: u64,
    /// Its address once loaded.
    pub address: u64,
}

impl Section<'_> {
    /// The file offset just past the section.
    pub fn end(&self) -> u64 {
        self.offset + self.data.len() as u64
    }

    /// Whether `address` lies inside the loaded section.
    pub fn holds(&self, address: u64) -> bool {
        address >= self.address && address < self.address + self.data.len() as u64
    }
}

/// A place in the file that holds the address of a container: `at` is its file offset.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Pointer {
    /// File offset of the place.
    pub at: u64,
    /// The address it holds.
    pub target: u64,
}

/// The containers of a section, rewritten and packed in their order, each on a boundary as
/// large as the one it had (up to a page). They may have outgrown the section
/// ([`Packing::fits`]): the format's writer then places them elsewhere.
#[derive(Debug)]
pub struct Packing {
    /// The packed bytes: in memory when few, else in an unnamed temporary file, which goes
    /// when it is closed, whatever happens.
    pub packed: Spilled,
    /// The offset of each container in the packed bytes, by its old address.
    moves: BTreeMap<u64, u64>,
    /// The places left in the packed bytes for what is written as the file is: the
    /// compressed bundles decompressed, inflated, and large stretches of the section kept as
    /// they were, copied from the file by the kernel.
    pub holes: Vec<Hole<Fill>>,
}

/// What a place left in packed containers is to hold.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Fill {
    /// The bytes the writer's own filler makes, told this number: for a rewrite, what the
    /// compressed bundle at this offset of the file rewritten holds, inflated.
    Written(u64),
    /// The bytes of the file rewritten from this offset, as many as the place holds: copied
    /// as they are, by the kernel where it can, never held.
    Copied(u64),
    /// The bytes of the file rewritten from this offset, as [`Fill::Copied`], already copied
    /// into the packed bytes when they were packed toward the new file (see
    /// [`Rewriting::destination`]): a writer leaves them as they are, and the read-back knows
    /// them as the file's own. Filled again, the place gets the same bytes.
    Kept(u64),
}

/// Stretches of the section at least this long that stay as they were are left as holes
/// ([`Fill::Copied`]) and copied from the file into the new one; shorter ones are written
/// with the bytes around them.
pub const COPIED_FROM: usize = 64 << 10;

/// Hands `sink` the bytes of `hole`: those of `file` (the file rewritten) it copies, or what
/// `inflate` makes for it (given the hole with its number: for a rewrite, the offset of the
/// compressed bundle it inflates); `failed` says what a sink that refuses the bytes, or a stretch outside `file`
/// (never met: stretches are found in it), is.
pub fn fill_hole<E>(
    file: &[u8],
    hole: &Hole<Fill>,
    sink: &mut dyn FnMut(&[u8]) -> std::io::Result<()>,
    inflate: &WriteHole<'_, u64, E>,
    failed: &dyn Fn(std::io::Error) -> E,
) -> std::result::Result<(), E> {
    match hole.what {
        Fill::Written(what) => inflate(
            &Hole {
                at: hole.at,
                size: hole.size,
                what,
            },
            sink,
        ),
        Fill::Copied(from) | Fill::Kept(from) => {
            let bytes = (usize::try_from(from).ok())
                .zip(usize::try_from(hole.size).ok())
                .and_then(|(from, size)| file.get(from..from.checked_add(size)?))
                .ok_or_else(|| failed(std::io::ErrorKind::UnexpectedEof.into()))?;
            sink(bytes).map_err(failed)
        }
    }
}

/// The error for the temporary file of packed containers.
fn spill_error(error: std::io::Error) -> Error {
    Error::new(
        0,
        ErrorKind::Spill {
            error: error.to_string(),
        },
    )
}

/// When the compressed bundles a rewrite decompresses are inflated.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Inflating {
    /// Into the packed bytes, before they are placed: for a writer that reads them.
    Now,
    /// As the new file is written, straight into their places in it ([`NewProgram::holes`]).
    Later,
}

/// Finds the containers of `section` by their sizes alone (zeros between them are padding),
/// rewrites them in parallel and packs them. `None` when nothing changes.
///
/// The containers are rewritten in parallel, at most a few ahead (twice as many as there are
/// threads) of the one packed next, and packed in order as they are done; the section's pages
/// of each are given back once it is rewritten. Those decompressed are only given room then, and are
/// inflated into it at the end, in parallel, or, `Later`, as the file is written. So the
/// memory needed is that of a few containers, not of the section.
pub fn pack(
    section: &Section<'_>,
    how: &Rewriting<'_>,
    inflating: Inflating,
) -> Result<Option<Packing>> {
    let data = section.data;
    let found = find(section, how.size_of)?;
    let mut moves = BTreeMap::new();
    // A large section's containers are packed at its offset in the new file, where they stay
    // unless the section moves: so they are not copied there afterwards. The new file is
    // asked for once something changes: a rewrite that changes nothing makes none.
    let large = data.len() as u64 > crate::io::spill::IN_MEMORY;
    let toward = || {
        how.destination
            .filter(|_| large)
            .and_then(|open| open(section.offset))
    };
    let mut packer = Packer {
        packed: Spill::new(),
        holes: Vec::new(),
        now: false,
    };
    let mut changed = false;
    // The end of the containers that stay as and where they are, while nothing changed.
    let mut same_until = 0usize;
    let in_flight = rayon::current_num_threads().max(1) * 2;
    let rewrite = |&(start, size): &(usize, usize)| -> Result<Option<NewBytes>> {
        let new = (how.rewrite)(from(data, start), start)
            .map_err(|e| Error::in_contents(e, section.offset))?;
        if size >= ReleasedInBatches::BATCH
            && matches!(new, Some(NewBytes::Made(_) | NewBytes::Placed(_)))
        {
            // Read for the last time: its new bytes are all that is needed now. A smaller
            // one is given back with the others as it is packed.
            crate::io::release_mapped(piece(data, start, size));
        }
        Ok(new)
    };
    // The pages of the containers packed are given back a batch at a time, on a thread of
    // their own for a large section: the calls cost the packing thread as much as its copies.
    crate::io::releasing(large, |release| {
        // Handed over in the section's order: the first damage is the first in that order,
        // whichever thread met it first.
        let mut place = |index: usize, new: Result<Option<NewBytes>>| -> Result<()> {
            let new = new?;
            let Some(&(start, size)) = found.get(index) else {
                return Ok(());
            };
            let boundary = (how.boundary)(from(data, start))
                .unwrap_or(1usize << start.trailing_zeros().min(12));
            let address = section.address + start as u64;
            if !changed {
                // Until something changes, the packed bytes are the section's own: they are
                // written only once something does, and never when nothing does.
                if new.is_none() && same_until.next_multiple_of(boundary) == start {
                    moves.insert(address, start as u64);
                    same_until = start + size;
                    return Ok(());
                }
                if let Some(file) = toward() {
                    packer.packed = Spill::toward(file, section.offset, data.len() as u64);
                    packer.now = true;
                }
                packer.copy(section, 0, same_until).map_err(spill_error)?;
                changed = true;
            }
            packer.packed.pad_to(boundary as u64).map_err(spill_error)?;
            moves.insert(address, packer.packed.len());
            (packer.append_new(section, (start, size), new)).map_err(spill_error)?;
            release(piece(data, start, size));
            Ok(())
        };
        std::thread::scope(|scope| {
            if let Some(beside) = how.beside {
                let pieces: Vec<&[u8]> = (found.iter())
                    .map(|&(start, size)| piece(data, start, size))
                    .collect();
                scope.spawn(move || beside(&pieces));
            }
            super::in_order::in_order(&found, in_flight, &rewrite, &mut place)
        })
    })?;
    if !changed {
        return Ok(None);
    }
    if inflating == Inflating::Now {
        packer.fill_now(section, how)?;
    }
    let packed = packer.packed.finish().map_err(spill_error)?;
    Ok(Some(Packing {
        packed,
        moves,
        holes: packer.holes,
    }))
}

/// The containers being packed, and the holes left in them.
struct Packer {
    packed: Spill,
    holes: Vec<Hole<Fill>>,
    /// Whether they are packed toward the new file: the stretches kept are then copied into
    /// their places at once, while the next containers are rewritten, rather than by the
    /// writer afterwards.
    now: bool,
}

impl Packer {
    /// Fills every hole left in the packed bytes of `section` now ([`Inflating::Now`]): the
    /// compressed bundles inflated, the stretches kept copied.
    fn fill_now(&mut self, section: &Section<'_>, how: &Rewriting<'_>) -> Result<()> {
        let data = section.data;
        let inflate = |hole: &Hole<u64>, sink: &mut dyn FnMut(&[u8]) -> std::io::Result<()>| {
            let start = usize::try_from(hole.what - section.offset).unwrap_or(usize::MAX);
            (how.inflate)(from(data, start), hole.size, sink).map_err(|failed| match failed {
                InflateFailed::Format(e) => Error::in_contents(e, hole.what),
                InflateFailed::Sink(e) => spill_error(e),
            })
        };
        // The stretches copied are counted from the section's start here.
        let fill = |hole: &Hole<Fill>, sink: &mut dyn FnMut(&[u8]) -> std::io::Result<()>| {
            let within = match hole.what {
                Fill::Copied(from) | Fill::Kept(from) => Hole {
                    what: Fill::Copied(from - section.offset),
                    ..*hole
                },
                Fill::Written(_) => *hole,
            };
            fill_hole(data, &within, sink, &inflate, &spill_error)
        };
        (self.packed).fill(&to_write(&self.holes), &fill, &|_, e| spill_error(e))?;
        self.holes.clear();
        Ok(())
    }

    /// Appends a container's new bytes (`None`: its bytes as they are), `at` its start and
    /// size in `section`.
    fn append_new(
        &mut self,
        section: &Section<'_>,
        (start, size): (usize, usize),
        new: Option<NewBytes>,
    ) -> std::io::Result<()> {
        match new {
            Some(NewBytes::Made(new)) => self.packed.append(&new),
            Some(NewBytes::Placed(room)) => match room.file() {
                Some(file) => self.packed.append_file(file, room.bytes()),
                None => self.packed.append(room.bytes()),
            },
            Some(NewBytes::Inflated(size)) => self.packed.reserve(size).map(|at| {
                self.holes.push(Hole {
                    at,
                    size,
                    what: Fill::Written(section.offset + start as u64),
                });
            }),
            Some(NewBytes::Copied(copied)) => self.packed.append(&copied.head).and_then(|()| {
                (copied.stretches.iter())
                    .try_for_each(|&(at, len)| self.copy(section, start + at, len))
            }),
            None => self.copy(section, start, size),
        }
    }

    /// Appends the `len` bytes of `section` at `start` (in it), as they are: when they are many
    /// ([`COPIED_FROM`]), a hole the writer copies them into, or, packed toward the new file,
    /// copied there now ([`Fill::Kept`]); else the bytes.
    fn copy(&mut self, section: &Section<'_>, start: usize, len: usize) -> std::io::Result<()> {
        let part = piece(section.data, start, len);
        if len < COPIED_FROM {
            return self.packed.append(part);
        }
        let size = len as u64;
        let from = section.offset + start as u64;
        if self.now {
            let at = self.packed.len();
            self.packed.append_mapped(part)?;
            self.holes.push(Hole {
                at,
                size,
                what: Fill::Kept(from),
            });
            return Ok(());
        }
        let at = self.packed.reserve_sparse(size)?;
        self.holes.push(Hole {
            at,
            size,
            what: Fill::Copied(from),
        });
        Ok(())
    }
}

/// The holes of `holes` a writer fills: all but those already filled when they were packed
/// ([`Fill::Kept`]).
fn to_write(holes: &[Hole<Fill>]) -> Vec<Hole<Fill>> {
    (holes.iter())
        .filter(|hole| !matches!(hole.what, Fill::Kept(_)))
        .copied()
        .collect()
}

/// The bytes of `data` from `start`, a place found in it.
fn from(data: &[u8], start: usize) -> &[u8] {
    data.get(start..).expect("a place found in the section")
}

/// The `size` bytes of `data` at `start`, a container found in it.
fn piece(data: &[u8], start: usize, size: usize) -> &[u8] {
    start
        .checked_add(size)
        .and_then(|end| data.get(start..end))
        .expect("a container found in the section")
}

/// The containers of the section: (offset in the section, size).
fn find(section: &Section<'_>, size_of: &ContainerSize<'_>) -> Result<Vec<(usize, usize)>> {
    let data = section.data;
    let mut found = Vec::new();
    let mut pos = 0usize;
    while pos < data.len() {
        let Some(skip) = from(data, pos).iter().position(|&b| b != 0) else {
            break;
        };
        let start = pos + skip;
        let size = size_of(from(data, start))
            .map_err(|e| Error::in_contents(e, section.offset + start as u64))?;
        found.push((start, size));
        pos = start + size.max(1);
    }
    Ok(found)
}

impl Packing {
    /// Whether the packed containers fit the section they came from.
    pub fn fits(&self, section: &Section<'_>) -> bool {
        self.packed.len() <= section.data.len() as u64
    }

    /// Whether compressed bundles are left to inflate as the file is written (stretches left
    /// to copy aside).
    pub fn inflates(&self) -> bool {
        (self.holes.iter()).any(|hole| matches!(hole.what, Fill::Written(_)))
    }

    /// What every pointer must hold once the containers moved to `base` (the address the
    /// packed bytes load at): (its file offset, the new address). A pointer to anything but a
    /// container's start is an error, since what it points at may no longer be there.
    pub fn retarget(
        &self,
        section: &Section<'_>,
        pointers: &[Pointer],
        base: u64,
    ) -> Result<Vec<Pointer>> {
        pointers
            .iter()
            .map(|p| match self.moves.get(&p.target) {
                Some(&offset) => Ok(Pointer {
                    at: p.at,
                    target: base + offset,
                }),
                None => Err(Error::new(
                    p.at,
                    ErrorKind::PointerIntoBundle {
                        section: section.name.to_string(),
                        address: p.target,
                    },
                )),
            })
            .collect()
    }

    /// The pointers among `pointers` that hold a container's start (or the section's end),
    /// moved as [`Packing::retarget`] moves them; the others are left out. For places only
    /// tools read, such as symbol values, where a stale address misleads but breaks nothing.
    pub fn retarget_known(&self, pointers: &[Pointer], base: u64) -> Vec<Pointer> {
        pointers
            .iter()
            .filter_map(|p| {
                let offset = self.moves.get(&p.target)?;
                Some(Pointer {
                    at: p.at,
                    target: base + offset,
                })
            })
            .collect()
    }
}

/// Bytes removed from the file: the `len` bytes that end where `end` is; what follows moves
/// back by `len`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Cut {
    /// The old file offset just past the bytes that go.
    pub end: u64,
    /// How many bytes go.
    pub len: u64,
}

impl Cut {
    /// The largest cut of whole multiples of `align` that fits between `kept_end` (the first
    /// byte that may go) and `end`, so that whatever follows keeps its offset congruent to its
    /// address modulo `align`.
    pub fn between(kept_end: u64, end: u64, align: u64) -> Cut {
        Cut {
            end,
            len: (end.saturating_sub(kept_end) / align) * align,
        }
    }

    /// Where the byte at old offset `offset` lies in the new file.
    pub fn moved(&self, offset: u64) -> u64 {
        if offset >= self.end {
            offset - self.len
        } else {
            offset
        }
    }
}

/// Bytes to lay over the new file at `at`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Patch {
    /// Offset in the new file.
    pub at: u64,
    /// The bytes.
    pub bytes: Vec<u8>,
}

/// The new file when `cut` bytes go (none: nothing moves): what comes before the section, the
/// rest of the file moved back; the patches (at their new offsets) laid over them; zeros where
/// the section was, for the packed containers to be written over. Large stretches stay
/// borrowed from `file`.
pub fn with_cut<'a>(
    file: &'a [u8],
    section: &Section<'_>,
    cut: Cut,
    patches: Vec<Patch>,
) -> Result<Rewritten<'a>> {
    let index = |at: u64| usize::try_from(at).unwrap_or(usize::MAX);
    let (start, end, len) = (index(section.offset), index(cut.end), index(cut.len));
    let mut owned = patches;
    owned.sort_by_key(|p| p.at);
    let mut pieces: Vec<Piece<'a>> = Vec::new();
    let outside = || Error::new(cut.end, ErrorKind::OverlappingPieces);
    let before = file.get(..start).ok_or_else(outside)?;
    let after = file.get(end..).ok_or_else(outside)?;
    let moved_to = end.checked_sub(len).ok_or_else(outside)?;
    for (base, bytes) in [(0, before), (moved_to, after)] {
        borrow_between(&mut pieces, base, bytes, &owned);
    }
    pieces.extend(owned.into_iter().map(|p| Piece {
        offset: p.at,
        data: Cow::Owned(p.bytes),
    }));
    pieces.sort_by_key(|p| p.offset);
    let overlap = pieces
        .iter()
        .zip(pieces.iter().skip(1))
        .find(|(a, b)| a.offset + a.data.len() as u64 > b.offset);
    if let Some((_, b)) = overlap {
        return Err(Error::new(b.offset, ErrorKind::OverlappingPieces));
    }
    Ok(Rewritten {
        pieces,
        size: file.len().saturating_sub(len) as u64,
    })
}

/// Leaves out of `rest` what it holds from `start` to `end` (where packed containers go):
/// pieces borrowed from the input are cut short around the range; a patch inside it is an
/// error.
pub fn leave_out(rest: &mut Rewritten<'_>, start: u64, end: u64) -> Result<()> {
    let mut pieces = Vec::with_capacity(rest.pieces.len() + 1);
    for piece in rest.pieces.drain(..) {
        let piece_end = piece.offset + piece.data.len() as u64;
        if piece_end <= start || piece.offset >= end {
            pieces.push(piece);
            continue;
        }
        let Cow::Borrowed(bytes) = piece.data else {
            return Err(Error::new(piece.offset, ErrorKind::OverlappingPieces));
        };
        // Both within the piece, where they are used.
        let local = |at: u64| usize::try_from(at - piece.offset).unwrap_or(usize::MAX);
        if piece.offset < start {
            pieces.push(Piece {
                offset: piece.offset,
                data: Cow::Borrowed(bytes.get(..local(start)).unwrap_or(bytes)),
            });
        }
        if piece_end > end {
            pieces.push(Piece {
                offset: end,
                data: Cow::Borrowed(bytes.get(local(end)..).unwrap_or_default()),
            });
        }
    }
    rest.pieces = pieces;
    Ok(())
}

/// Pushes the stretches of `bytes` (which go at `base` in the new file) that no owned patch
/// covers, as pieces borrowed from the input.
pub(crate) fn borrow_between<'a>(
    pieces: &mut Vec<Piece<'a>>,
    base: usize,
    bytes: &'a [u8],
    owned: &[Patch],
) {
    let mut at = base;
    let end = base + bytes.len();
    for p in owned {
        let o = usize::try_from(p.at).unwrap_or(usize::MAX);
        let o_end = o.saturating_add(p.bytes.len());
        if o >= end || o_end <= base {
            continue;
        }
        if o > at {
            // Both within `bytes`: base <= at < o < end.
            let stretch = bytes.get(at - base..o - base).unwrap_or_default();
            pieces.push(Piece {
                offset: at as u64,
                data: Cow::Borrowed(stretch),
            });
        }
        at = at.max(o_end);
    }
    if at < end {
        pieces.push(Piece {
            offset: at as u64,
            data: Cow::Borrowed(bytes.get(at - base..).unwrap_or_default()),
        });
    }
}

/// A rewritten program: the new file, and the packed containers to be written into it.
#[derive(Debug)]
pub struct NewProgram<'a> {
    /// The new file, with zeros where the packed containers go.
    pub rest: Rewritten<'a>,
    /// The packed containers.
    pub packed: Spilled,
    /// Their offset in the new file.
    pub packed_at: u64,
    /// The places in the packed containers still to be written: the compressed bundles
    /// decompressed, inflated as the file is written, and stretches copied from the file
    /// rewritten (each knows its offset there).
    pub holes: Vec<Hole<Fill>>,
    /// The packed containers of another section, rewritten in its place (a program with both
    /// `.hip_fatbin` and `.nv_fatbin`); empty for the others.
    pub also: Vec<Placed>,
}

/// Packed containers written over their own section, which keeps its place and size (zeros
/// after them).
#[derive(Debug)]
pub struct Placed {
    /// Their offset in the new file.
    pub at: u64,
    /// The packed containers.
    pub packed: Spilled,
    /// The places in them still to be written, as [`NewProgram::holes`].
    pub holes: Vec<Hole<Fill>>,
}

impl<'a> NewProgram<'a> {
    /// The size of the new file.
    pub fn size(&self) -> u64 {
        self.rest.size
    }

    /// The packed containers of the new file, in file order: each with its offset and the
    /// holes left in it.
    fn placed(&self) -> Vec<(u64, &Spilled, &[Hole<Fill>])> {
        let mut placed = vec![(self.packed_at, &self.packed, &self.holes[..])];
        placed.extend(self.also.iter().map(|p| (p.at, &p.packed, &p.holes[..])));
        placed.sort_by_key(|(at, _, _)| *at);
        placed
    }

    /// The new file around the packed containers: what comes before the first, between them,
    /// and after the last (each stretch's offsets counted from its start).
    pub fn around(&self) -> Result<Vec<Rewritten<'a>>> {
        let placed = self.placed();
        let mut stretches = Vec::with_capacity(placed.len() + 1);
        let mut start = 0u64;
        for (at, packed, _) in &placed {
            stretches.push(self.stretch(start, *at)?);
            start = at + packed.len();
        }
        stretches.push(self.stretch(start, self.rest.size.max(start))?);
        Ok(stretches)
    }

    /// The pieces of the new file from `start` to `end`, their offsets counted from `start`;
    /// a piece that crosses either end overlaps packed containers.
    fn stretch(&self, start: u64, end: u64) -> Result<Rewritten<'a>> {
        let mut stretch = Rewritten {
            pieces: Vec::new(),
            size: end.saturating_sub(start),
        };
        for piece in &self.rest.pieces {
            let piece_end = piece.offset + piece.data.len() as u64;
            if piece.data.is_empty() || piece_end <= start || piece.offset >= end {
                continue;
            }
            if piece.offset < start || piece_end > end {
                return Err(Error::new(piece.offset, ErrorKind::OverlappingPieces));
            }
            stretch.pieces.push(Piece {
                offset: piece.offset - start,
                data: piece.data.clone(),
            });
        }
        Ok(stretch)
    }

    /// Writes the new file, which leaves no hole, to `out`: the stretches of `input` (the file
    /// rewritten) and of the packed containers' temporary file copied by the kernel. `path`
    /// names the input in errors.
    pub fn write_to(
        &self,
        path: &std::path::Path,
        out: &mut crate::io::Output,
        input: &crate::io::Input,
    ) -> crate::error::Result<()> {
        let none = |hole: &Hole<u64>, _: &mut dyn FnMut(&[u8]) -> std::io::Result<()>| {
            Err(crate::error::Error::file(
                path,
                format!(
                    "no bytes were made for the {} bytes at {:#x} of the rewritten file",
                    hole.size, hole.at
                ),
            ))
        };
        self.write_filled(path, out, input, &none)
    }

    /// Writes the new file to `out`: the stretches of `input` (the file rewritten) and of the
    /// packed containers' temporary file copied by the kernel, and the bytes of the holes
    /// left in them: stretches of `input` copied by the kernel, and what `fill` inflates
    /// (see [`crate::io::Output::write_spilled`]). `path` names the input in errors.
    pub fn write_filled(
        &self,
        path: &std::path::Path,
        out: &mut crate::io::Output,
        input: &crate::io::Input,
        fill: &WriteHole<'_, u64, crate::error::Error>,
    ) -> crate::error::Result<()> {
        let stretches = self
            .around()
            .map_err(|e| crate::error::Error::container(path, e))?;
        let failed = |e: std::io::Error| crate::error::Error::io(path, e);
        let both = |hole: &Hole<Fill>, sink: &mut dyn FnMut(&[u8]) -> std::io::Result<()>| {
            fill_hole(input, hole, sink, fill, &failed)
        };
        for (stretch, (_, packed, holes)) in stretches.iter().zip(self.placed()) {
            stretch.write_to(out, &[input])?;
            out.write_spilled(packed, &to_write(holes), &both)?;
        }
        match stretches.last() {
            Some(last) => last.write_to(out, &[input]),
            None => Ok(()),
        }
    }

    /// Moves the packed containers made in `out`'s file at another place than they go to a
    /// file of their own ([`crate::io::Output::settle`]), before the new file is written there.
    pub fn settle(&mut self, out: &crate::io::Output) -> crate::io::error::Result<()> {
        out.settle(&mut self.packed, self.packed_at)?;
        (self.also.iter_mut()).try_for_each(|placed| out.settle(&mut placed.packed, placed.at))
    }

    /// Takes the packed containers out (once the file is written), leaving none in their
    /// place.
    pub fn take_packed(&mut self) -> Vec<Spilled> {
        let mut taken = vec![self.packed.take()];
        taken.extend(self.also.iter_mut().map(|placed| placed.packed.take()));
        taken
    }

    /// The whole new file in memory, with zeros in the holes left for what is written as the
    /// file is (see [`NewProgram::holes_in_file`]).
    pub fn to_vec(&mut self) -> Result<Vec<u8>> {
        let stretches = self.around()?;
        let mut bytes = Vec::new();
        for (stretch, (_, packed, _)) in stretches.iter().zip(self.placed()) {
            bytes.extend_from_slice(&stretch.to_vec());
            bytes.extend_from_slice(packed.bytes());
        }
        if let Some(last) = stretches.last() {
            bytes.extend_from_slice(&last.to_vec());
        }
        Ok(bytes)
    }

    /// The holes left for what is written as the file is (see [`NewProgram::holes`]), at
    /// their offsets in the new file, in order.
    pub fn holes_in_file(&self) -> Vec<Hole<Fill>> {
        (self.placed().into_iter())
            .flat_map(|(at, _, holes)| {
                holes.iter().map(move |hole| Hole {
                    at: at + hole.at,
                    ..*hole
                })
            })
            .collect()
    }
}

#[cfg(test)]
#[allow(clippy::indexing_slicing, clippy::cast_possible_truncation)]
mod tests {
    use super::*;

    fn section(data: &[u8]) -> Section<'_> {
        Section {
            name: ".hip_fatbin",
            data,
            offset: 0x1000,
            address: 0x5000,
        }
    }

    /// Containers here: a length byte, then that many bytes.
    fn size_of(here: &[u8]) -> std::result::Result<usize, crate::format::Error> {
        Ok(usize::from(here[0]))
    }

    /// Packs the containers of `section` as `rewrite` says; none is decompressed.
    fn pack_by(section: &Section<'_>, rewrite: &RewriteContainer<'_>) -> Result<Option<Packing>> {
        let inflate = |_: &[u8], _: u64, _: &mut dyn FnMut(&[u8]) -> std::io::Result<()>| {
            unreachable!("nothing is decompressed here")
        };
        let how = Rewriting {
            size_of: &size_of,
            boundary: &|_| None,
            rewrite,
            inflate: &inflate,
            beside: None,
            destination: None,
        };
        pack(section, &how, Inflating::Later)
    }

    #[test]
    fn dropped_containers_pack_the_rest_on_their_boundaries() {
        let mut data = vec![0u8; 64];
        data[0] = 4;
        data[16] = 8;
        let section = section(&data);
        let drop_first =
            |_: &[u8], start: usize| Ok((start == 0).then(|| NewBytes::Made(Vec::new())));
        let packing = pack_by(&section, &drop_first).unwrap().unwrap();
        // The second container kept its 16-byte boundary: it moves to the start.
        assert_eq!(packing.packed.bytes(), &data[16..24]);
        let pointers = [Pointer {
            at: 8,
            target: 0x5010,
        }];
        let moved = packing.retarget(&section, &pointers, 0x5000).unwrap();
        assert_eq!(
            moved,
            [Pointer {
                at: 8,
                target: 0x5000
            }]
        );
        let bad = [Pointer {
            at: 9,
            target: 0x5011,
        }];
        let error = packing.retarget(&section, &bad, 0x5000).unwrap_err();
        assert_eq!(error.offset, 9);
        assert_eq!(
            error.kind.to_string(),
            "an address inside .hip_fatbin (0x5011) is not the start of a bundle"
        );
    }

    #[test]
    fn grown_containers_are_packed_and_move_to_a_new_base() {
        let mut data = vec![0u8; 32];
        data[0] = 4;
        data[16] = 4;
        let section = section(&data);
        let grow =
            |here: &[u8], _: usize| Ok(Some(NewBytes::Made([&here[..4], &[0xee; 20]].concat())));
        let packing = pack_by(&section, &grow).unwrap().unwrap();
        assert!(!packing.fits(&section));
        // The second container keeps its 16-byte boundary after the first, grown to 24 bytes.
        assert_eq!(packing.packed.len(), 32 + 24);
        let pointers = [Pointer {
            at: 8,
            target: 0x5010,
        }];
        let moved = packing.retarget(&section, &pointers, 0x9000).unwrap();
        assert_eq!(moved[0].target, 0x9020);
    }

    /// Containers here: a 4-byte length, then the rest of them.
    fn size_of_long(here: &[u8]) -> std::result::Result<usize, crate::format::Error> {
        Ok(u32::from_le_bytes(here[..4].try_into().unwrap()) as usize)
    }

    /// A rewrite that keeps the first container as it is, keeps `stretch` bytes of the
    /// second (at `second`, after its 8-byte head) under a new head, and drops the rest.
    fn first_kept_second_cut(
        second: usize,
        stretch: usize,
    ) -> impl Fn(&[u8], usize) -> std::result::Result<Option<NewBytes>, crate::format::Error> + Sync
    {
        move |_: &[u8], start: usize| {
            Ok(match start {
                0 => None,
                s if s == second => Some(NewBytes::Copied(crate::format::container::Copied {
                    head: vec![0xee; 8],
                    stretches: vec![(8, stretch)],
                })),
                _ => Some(NewBytes::Made(Vec::new())),
            })
        }
    }

    /// The holes left in `packing`: where each is, its size, and what fills it.
    fn holes_of(packing: &Packing) -> Vec<(u64, u64, Fill)> {
        (packing.holes.iter())
            .map(|h| (h.at, h.size, h.what))
            .collect()
    }

    /// The inflater of a section none of whose containers is decompressed.
    fn no_inflating(
        _: &[u8],
        _: u64,
        _: &mut dyn FnMut(&[u8]) -> std::io::Result<()>,
    ) -> std::result::Result<(), InflateFailed> {
        unreachable!("nothing is decompressed here")
    }

    #[test]
    fn large_stretches_kept_are_copied_into_holes_as_they_were() {
        // Sizes whose first byte is not zero: the walk skips zeros between containers.
        let (a, b, c) = ((100 << 10) + 8, (200 << 10) + 8, (1 << 10) + 8);
        let mut file = vec![0u8; 0x1000];
        for (size, fill) in [(a, 1u8), (b, 2), (c, 3)] {
            let start = file.len();
            file.extend((0..size).map(|k| fill.wrapping_add(k as u8)));
            file[start..start + 4].copy_from_slice(&(size as u32).to_le_bytes());
        }
        let data = &file[0x1000..];
        let section = section(data);
        let rewrite = first_kept_second_cut(a, 150 << 10);
        let inflate = no_inflating;
        let how = Rewriting {
            size_of: &size_of_long,
            boundary: &|_| Some(8),
            rewrite: &rewrite,
            inflate: &inflate,
            beside: None,
            destination: None,
        };
        let expected = [&data[..a], &[0xee; 8], &data[a + 8..a + 8 + (150 << 10)]].concat();
        let later = pack(&section, &how, Inflating::Later).unwrap().unwrap();
        assert_eq!(
            holes_of(&later),
            [
                (0, a as u64, Fill::Copied(0x1000)),
                (a as u64 + 8, 150 << 10, Fill::Copied(0x1000 + a as u64 + 8)),
            ]
        );
        let mut bytes = later.packed.bytes().to_vec();
        let none = |_: &Hole<u64>, _: &mut dyn FnMut(&[u8]) -> std::io::Result<()>| {
            unreachable!("nothing is inflated here")
        };
        let write = |hole: &Hole<Fill>, sink: &mut dyn FnMut(&[u8]) -> std::io::Result<()>| {
            fill_hole(&file, hole, sink, &none, &|e| e)
        };
        crate::io::spill::fill_in(&mut bytes, 0, &later.holes, &write, &|_, e| e).unwrap();
        assert_eq!(bytes, expected);
        let now = pack(&section, &how, Inflating::Now).unwrap().unwrap();
        assert!(now.holes.is_empty());
        assert_eq!(now.packed.bytes(), &expected[..]);
    }

    #[test]
    fn stretches_kept_of_a_large_section_are_copied_into_the_output_as_they_are_packed() {
        use std::os::unix::fs::FileExt;
        // A section larger than what is packed in memory, in a mapped file: containers of
        // 3 MiB, the first kept whole, the second a stretch under a new head, the rest gone.
        let size = (3 << 20) + 8;
        let count = (crate::io::spill::IN_MEMORY as usize / size) + 2;
        let mut file = vec![0u8; 0x1000];
        for n in 0..count {
            let start = file.len();
            file.extend((0..size).map(|k| (n as u8).wrapping_mul(31).wrapping_add(k as u8)));
            file[start..start + 4].copy_from_slice(&(size as u32).to_le_bytes());
        }
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("program");
        std::fs::write(&path, &file).unwrap();
        let input = crate::io::Input::open(&path).unwrap();
        let data = &input[0x1000..];
        let section = section(data);
        let rewrite = first_kept_second_cut(size, 1 << 20);
        let inflate = no_inflating;
        let output = tempfile::tempfile().unwrap();
        let opened = std::sync::atomic::AtomicUsize::new(0);
        let destination = |at: u64| {
            assert_eq!(at, 0x1000, "the section's offset");
            opened.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
            output.try_clone().ok()
        };
        let how = Rewriting {
            size_of: &size_of_long,
            boundary: &|_| Some(8),
            rewrite: &rewrite,
            inflate: &inflate,
            beside: None,
            destination: Some(&destination),
        };
        let packing = pack(&section, &how, Inflating::Later).unwrap().unwrap();
        assert_eq!(opened.into_inner(), 1);
        // Both stretches are in the output already, where the section starts, and known as
        // the file's own.
        assert_eq!(
            holes_of(&packing),
            [
                (0, size as u64, Fill::Kept(0x1000)),
                (
                    size as u64 + 8,
                    1 << 20,
                    Fill::Kept(0x1000 + size as u64 + 8)
                ),
            ]
        );
        assert!(to_write(&packing.holes).is_empty());
        let expected = [
            &data[..size],
            &[0xee; 8],
            &data[size + 8..size + 8 + (1 << 20)],
        ]
        .concat();
        let mut written = vec![0u8; expected.len()];
        output.read_exact_at(&mut written, 0x1000).unwrap();
        assert!(written == expected, "the output holds the packed bytes");
        assert!(packing.packed.bytes() == &expected[..]);
    }

    #[test]
    fn nothing_changes_when_every_container_stays() {
        let mut data = vec![0u8; 32];
        data[0] = 4;
        data[16] = 4;
        let keep = |_: &[u8], _: usize| Ok(None);
        assert!(pack_by(&section(&data), &keep).unwrap().is_none());
    }

    #[test]
    fn a_range_left_out_cuts_borrowed_pieces_short() {
        let file: Vec<u8> = (0..32).collect();
        let mut rest = Rewritten {
            pieces: vec![
                Piece {
                    offset: 0,
                    data: Cow::Borrowed(&file[..24]),
                },
                Piece {
                    offset: 24,
                    data: Cow::Owned(vec![0xaa; 4]),
                },
            ],
            size: 32,
        };
        leave_out(&mut rest, 8, 16).unwrap();
        let kept: Vec<(u64, Vec<u8>)> = rest
            .pieces
            .iter()
            .map(|p| (p.offset, p.data.to_vec()))
            .collect();
        assert_eq!(
            kept,
            [
                (0, file[..8].to_vec()),
                (16, file[16..24].to_vec()),
                (24, vec![0xaa; 4])
            ]
        );
        // A patch is never left out: the packed containers would overwrite it.
        let error = leave_out(&mut rest, 20, 26).unwrap_err();
        assert_eq!(error.offset, 24);
    }

    #[test]
    fn a_cut_keeps_offsets_congruent() {
        let cut = Cut::between(0x1234, 0x5000, 0x1000);
        assert_eq!(cut.len, 0x3000);
        assert_eq!(cut.moved(0x5008), 0x2008);
        assert_eq!(cut.moved(0x4fff), 0x4fff);
    }

    #[test]
    fn a_cut_file_borrows_around_its_patches() {
        let file: Vec<u8> = (0..64).collect();
        let data = &file[16..32];
        let section = Section {
            name: ".s",
            data,
            offset: 16,
            address: 16,
        };
        let cut = Cut { end: 32, len: 8 };
        let patches = vec![Patch {
            at: 30,
            bytes: vec![0xaa, 0xbb],
        }];
        let rest = with_cut(&file, &section, cut, patches).unwrap();
        let mut program = NewProgram {
            rest,
            packed: Spilled::Bytes(vec![1, 2]),
            packed_at: 16,
            holes: Vec::new(),
            also: Vec::new(),
        };
        let bytes = program.to_vec().unwrap();
        assert_eq!(bytes.len(), 56);
        assert_eq!(&bytes[..16], &file[..16]);
        assert_eq!(&bytes[16..18], &[1, 2]);
        assert_eq!(&bytes[18..24], &[0; 6]);
        assert_eq!(&bytes[24..30], &file[32..38]);
        assert_eq!(&bytes[30..32], &[0xaa, 0xbb]);
        assert_eq!(&bytes[32..], &file[40..]);
    }
}
