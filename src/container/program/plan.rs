//! The half of rewriting a linked program that knows no file format: which containers a
//! section holds, their new bytes (made in parallel), where each lands once they are packed
//! on their boundaries, what every pointer into the section must become, and how the new file
//! is put together from the old one when some of its bytes go.
//!
//! A format's reader finds the section and the places that point into it; its writer decides
//! how many bytes the file may lose and where the format's own tables go. Both meet here.

use std::borrow::Cow;
use std::collections::BTreeMap;

use rayon::prelude::*;

use crate::container::error::{Error, ErrorKind, Result};
use crate::container::objcopy::{Piece, Rewritten};

/// Rewrites the container at the start of the bytes it is given (found at the given offset in
/// the section): its new bytes, `None` to keep it. Called from several threads at once.
pub type RewriteContainer<'r> =
    dyn Fn(&[u8], usize) -> std::result::Result<Option<Vec<u8>>, crate::format::Error> + Sync + 'r;

/// The size of the container at the start of the bytes it is given, read from its header.
pub type ContainerSize<'r> = dyn Fn(&[u8]) -> std::result::Result<usize, crate::format::Error> + 'r;

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
#[derive(Debug, Clone)]
pub struct Packing {
    /// The new bytes of the section, as long as they need to be.
    pub bytes: Vec<u8>,
    /// The offset of each container in [`Packing::bytes`], by its old address.
    moves: BTreeMap<u64, u64>,
}

/// Finds the containers of `section` by their sizes alone (zeros between them are padding),
/// rewrites them in parallel and packs them. `None` when nothing changes.
pub fn pack(
    section: &Section<'_>,
    size_of: &ContainerSize<'_>,
    rewrite: &RewriteContainer<'_>,
) -> Result<Option<Packing>> {
    let data = section.data;
    let found = find(section, size_of)?;
    let rewritten: Vec<Option<Vec<u8>>> = found
        .par_iter()
        .map(|&(start, _)| {
            rewrite(&data[start..], start)
                .map_err(|e| Error::in_contents(e, section.offset + start as u64))
        })
        .collect::<Result<_>>()?;
    let mut moves = BTreeMap::new();
    let mut bytes: Vec<u8> = Vec::with_capacity(data.len());
    let mut changed = false;
    for (&(start, size), new) in found.iter().zip(rewritten) {
        let boundary = 1usize << start.trailing_zeros().min(12);
        bytes.resize(bytes.len().next_multiple_of(boundary), 0);
        moves.insert(section.address + start as u64, bytes.len() as u64);
        changed |= new.is_some() || bytes.len() != start;
        match new {
            Some(new) => bytes.extend_from_slice(&new),
            None => bytes.extend_from_slice(&data[start..start + size]),
        }
    }
    if !changed {
        return Ok(None);
    }
    Ok(Some(Packing { bytes, moves }))
}

/// The containers of the section: (offset in the section, size).
fn find(section: &Section<'_>, size_of: &ContainerSize<'_>) -> Result<Vec<(usize, usize)>> {
    let data = section.data;
    let mut found = Vec::new();
    let mut pos = 0usize;
    while pos < data.len() {
        let Some(skip) = data[pos..].iter().position(|&b| b != 0) else {
            break;
        };
        let start = pos + skip;
        let size = size_of(&data[start..])
            .map_err(|e| Error::in_contents(e, section.offset + start as u64))?;
        found.push((start, size));
        pos = start + size.max(1);
    }
    Ok(found)
}

/// The error for packed containers of `size` bytes that no longer fit `section`.
fn outgrown(section: &Section<'_>, size: usize) -> Error {
    Error::new(
        section.offset,
        ErrorKind::SectionOutgrown {
            section: section.name.to_string(),
            size: size as u64,
            room: section.data.len() as u64,
        },
    )
}

impl Packing {
    /// Whether the packed containers fit the section they came from.
    pub fn fits(&self, section: &Section<'_>) -> bool {
        self.bytes.len() <= section.data.len()
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

/// The new file when nothing moves: the packed containers over the section, zeros after them,
/// and the patches (pointers) laid over the rest.
pub fn in_place<'a>(
    file: &'a [u8],
    section: &Section<'_>,
    packed: &[u8],
    patches: &[Patch],
) -> Result<Rewritten<'a>> {
    let mut bytes = file.to_vec();
    let outside = || {
        Error::new(
            section.offset,
            ErrorKind::OutsideFile {
                what: section.name.to_string(),
            },
        )
    };
    let start = usize::try_from(section.offset).map_err(|_| outside())?;
    let room = start
        .checked_add(section.data.len())
        .and_then(|end| bytes.get_mut(start..end))
        .ok_or_else(outside)?;
    if packed.len() > room.len() {
        return Err(outgrown(section, packed.len()));
    }
    let (head, tail) = room.split_at_mut(packed.len());
    head.copy_from_slice(packed);
    tail.fill(0);
    for patch in patches {
        let outside = || {
            Error::new(
                patch.at,
                ErrorKind::OutsideFile {
                    what: "a pointer".into(),
                },
            )
        };
        let at = usize::try_from(patch.at).map_err(|_| outside())?;
        bytes
            .get_mut(at..at.saturating_add(patch.bytes.len()))
            .ok_or_else(outside)?
            .copy_from_slice(&patch.bytes);
    }
    let size = bytes.len() as u64;
    Ok(Rewritten {
        pieces: vec![Piece {
            offset: 0,
            data: Cow::Owned(bytes),
        }],
        size,
    })
}

/// The new file when `cut` bytes go: what comes before the section, the packed containers in
/// its place, the rest of the file moved back; the patches (at their new offsets) laid over
/// them. Large stretches stay borrowed from `file`.
pub fn with_cut<'a>(
    file: &'a [u8],
    section: &Section<'_>,
    packed: Vec<u8>,
    cut: Cut,
    patches: Vec<Patch>,
) -> Result<Rewritten<'a>> {
    let (start, end, len) = (section.offset as usize, cut.end as usize, cut.len as usize);
    let mut owned = vec![Patch {
        at: section.offset,
        bytes: packed,
    }];
    owned.extend(patches);
    owned.sort_by_key(|p| p.at);
    let mut pieces: Vec<Piece<'a>> = Vec::new();
    for (base, bytes) in [(0, &file[..start]), (end - len, &file[end..])] {
        borrow_between(&mut pieces, base, bytes, &owned);
    }
    pieces.extend(owned.into_iter().map(|p| Piece {
        offset: p.at,
        data: Cow::Owned(p.bytes),
    }));
    pieces.sort_by_key(|p| p.offset);
    if let Some(w) = pieces
        .windows(2)
        .find(|w| w[0].offset + w[0].data.len() as u64 > w[1].offset)
    {
        return Err(Error::new(w[1].offset, ErrorKind::OverlappingPieces));
    }
    Ok(Rewritten {
        pieces,
        size: (file.len() - len) as u64,
    })
}

/// Pushes the stretches of `bytes` (which go at `base` in the new file) that no owned patch
/// covers, as pieces borrowed from the input.
fn borrow_between<'a>(pieces: &mut Vec<Piece<'a>>, base: usize, bytes: &'a [u8], owned: &[Patch]) {
    let mut at = base;
    let end = base + bytes.len();
    for p in owned {
        let (o, o_end) = (p.at as usize, p.at as usize + p.bytes.len());
        if o >= end || o_end <= base {
            continue;
        }
        if o > at {
            pieces.push(Piece {
                offset: at as u64,
                data: Cow::Borrowed(&bytes[at - base..o - base]),
            });
        }
        at = at.max(o_end);
    }
    if at < end {
        pieces.push(Piece {
            offset: at as u64,
            data: Cow::Borrowed(&bytes[at - base..]),
        });
    }
}

#[cfg(test)]
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

    #[test]
    fn dropped_containers_pack_the_rest_on_their_boundaries() {
        let mut data = vec![0u8; 64];
        data[0] = 4;
        data[16] = 8;
        let section = section(&data);
        let drop_first = |here: &[u8], start: usize| Ok((start == 0).then(|| here[..0].to_vec()));
        let packing = pack(&section, &size_of, &drop_first).unwrap().unwrap();
        // The second container kept its 16-byte boundary: it moves to the start.
        assert_eq!(packing.bytes, data[16..24]);
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
        let grow = |here: &[u8], _: usize| Ok(Some([&here[..4], &[0xee; 20]].concat()));
        let packing = pack(&section, &size_of, &grow).unwrap().unwrap();
        assert!(!packing.fits(&section));
        // The second container keeps its 16-byte boundary after the first, grown to 24 bytes.
        assert_eq!(packing.bytes.len(), 32 + 24);
        let pointers = [Pointer {
            at: 8,
            target: 0x5010,
        }];
        let moved = packing.retarget(&section, &pointers, 0x9000).unwrap();
        assert_eq!(moved[0].target, 0x9020);
    }

    #[test]
    fn nothing_changes_when_every_container_stays() {
        let mut data = vec![0u8; 32];
        data[0] = 4;
        data[16] = 4;
        let keep = |_: &[u8], _: usize| Ok(None);
        assert!(pack(&section(&data), &size_of, &keep).unwrap().is_none());
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
        let out = with_cut(&file, &section, vec![1, 2], cut, patches).unwrap();
        let bytes = out.to_vec();
        assert_eq!(bytes.len(), 56);
        assert_eq!(&bytes[..16], &file[..16]);
        assert_eq!(&bytes[16..18], &[1, 2]);
        assert_eq!(&bytes[18..24], &[0; 6]);
        assert_eq!(&bytes[24..30], &file[32..38]);
        assert_eq!(&bytes[30..32], &[0xaa, 0xbb]);
        assert_eq!(&bytes[32..], &file[40..]);
    }
}
