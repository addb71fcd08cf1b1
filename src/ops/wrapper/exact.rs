//! The bitcode of LLVM 23's and 22's `llvm-offload-wrapper`, byte for byte: each image is
//! read from its file to tell how LLVM writes it (until that is settled: an object file's
//! first bytes settle it; and whether an earlier image has the same bytes, which LLVM then
//! keeps once), then again to write it into its place, shifted to the bit it starts at;
//! neither pass holds more than a chunk of it.

use crate::target::processor::LlvmVersion;
use std::path::Path;

use crate::codegen::layout::Image;
use crate::error::{Error, Result};
use crate::format::md5::Md5;
use crate::io::Output;
use crate::llvm::bitcode::writer::{ElementEncoder, ElementHole, Field, Part};
use crate::llvm::ir::exact::{self, ImageContent, ImageScan};
use crate::llvm::ir::module::{Const, Module};

/// The size of the pieces images are read in.
const CHUNK: usize = 1 << 20;

/// Reads the bytes of `image` at `offset` into `buffer`.
fn read_at(image: &Image, offset: u64, buffer: &mut [u8]) -> Result<()> {
    match image {
        Image::Bytes(input) => {
            let bytes = usize::try_from(offset)
                .ok()
                .and_then(|at| input.get(at..at + buffer.len()))
                .ok_or_else(|| Error::msg("an image ended early"))?;
            buffer.copy_from_slice(bytes);
            Ok(())
        }
        Image::File { file, .. } => {
            use std::os::unix::fs::FileExt;
            file.read_exact_at(buffer, offset)
                .map_err(|e| Error::msg(format!("reading an image: {e}")))
        }
    }
}

/// The part of `image` an OpenMP module registers, when it is an offload binary.
pub(super) fn inner_image(image: &Image) -> Option<(u64, u64)> {
    let len = image.len();
    super::offload::inner_image(&mut |at, buffer: &mut [u8]| {
        let fits = at
            .checked_add(buffer.len() as u64)
            .is_some_and(|end| end <= len);
        fits && read_at(image, at, buffer).is_ok()
    })
}

/// Calls `f` with the bytes of `image`, a chunk at a time.
fn each_chunk(image: &Image, mut f: impl FnMut(&[u8]) -> Result<()>) -> Result<()> {
    chunks_while(image, |chunk| f(chunk).map(|()| true))
}

/// Calls `f` with the bytes of `image`, a chunk at a time, as long as it returns `true`.
fn chunks_while(image: &Image, mut f: impl FnMut(&[u8]) -> Result<bool>) -> Result<()> {
    let len = image.len();
    let mut buffer = vec![0u8; CHUNK.min(len as usize)];
    let mut done = 0u64;
    while done < len {
        let n = buffer.len().min((len - done) as usize);
        let piece = &mut buffer[..n];
        read_at(image, done, piece)?;
        if !f(piece)? {
            break;
        }
        done += n as u64;
    }
    Ok(())
}

/// The content of `image`: read until its form is settled, which an object file's first
/// bytes settle, so that a large image is read whole once, when it is written.
fn scan(image: &Image) -> Result<ImageContent> {
    let mut scan = ImageScan::default();
    chunks_while(image, |chunk| {
        scan.push(chunk);
        Ok(!scan.settled())
    })?;
    Ok(scan.finish_settled(image.len()))
}

/// Whether `a` and `b` hold the same bytes.
fn same_bytes(a: &Image, b: &Image) -> Result<bool> {
    if a.len() != b.len() {
        return Ok(false);
    }
    let mut theirs = vec![0u8; CHUNK.min(b.len() as usize)];
    let mut at = 0u64;
    let mut equal = true;
    each_chunk(a, |chunk| {
        if equal {
            let theirs = &mut theirs[..chunk.len()];
            read_at(b, at, theirs)?;
            equal = theirs == chunk;
        }
        at += chunk.len() as u64;
        Ok(())
    })?;
    Ok(equal)
}

/// The GUID LLVM gives a global value's name: the low half of its MD5, little-endian.
fn guid(name: &[u8]) -> u64 {
    let digest = Md5::digest(name);
    let mut low = [0u8; 8];
    low.copy_from_slice(&digest[..8]);
    u64::from_le_bytes(low)
}

/// Makes every image constant of `module` whose bytes an earlier image has that image's,
/// as LLVM keeps one constant of each content.
fn share_images(module: &mut Module, images: &[Image], contents: &[ImageContent]) -> Result<()> {
    let mut canonical: Vec<usize> = (0..images.len()).collect();
    for i in 0..images.len() {
        for j in 0..i {
            if canonical[j] == j
                && contents[i] == contents[j]
                && same_bytes(&images[i], &images[j])?
            {
                canonical[i] = j;
                break;
            }
        }
    }
    for g in &mut module.globals {
        if let Some(Const::Image { index, .. }) = &mut g.init {
            *index = canonical[*index];
        }
    }
    Ok(())
}

/// Writes the elements of `hole` from `image` to `out`; the bits left for the next byte.
fn write_hole(out: &mut Output, hole: &ElementHole, image: &Image) -> Result<(u8, u32)> {
    if hole.element == Field::Fixed(8) && hole.lead.1 == 0 && hole.count == image.len() {
        image.write_to(out)?;
        return Ok((0, 0));
    }
    let mut encoder = ElementEncoder::new(hole);
    let mut left = hole.count;
    each_chunk(image, |chunk| {
        let take = (left as usize).min(chunk.len());
        encoder.push(&chunk[..take]);
        left -= take as u64;
        Ok(encoder.drain(|bytes| out.write_bytes(bytes))?)
    })?;
    Ok(encoder.finish())
}

/// Writes `module`, whose images are `images`, as `release` writes it, to `output`.
pub(super) fn write_bitcode_as(
    module: &mut Module,
    images: &[Image],
    output: &Path,
    release: &exact::Release,
) -> Result<()> {
    let contents = images.iter().map(scan).collect::<Result<Vec<_>>>()?;
    share_images(module, images, &contents)?;
    let stream = exact::write(module, &contents, &guid, release)
        .map_err(|e| Error::msg(format!("'{}': {e}", output.display())))?;
    let mut out = Output::create(output)?;
    // Darwin: a wrapper header before the bitcode, and zeros after it to a multiple of 16.
    // The header is the writer's, whatever the release's module.
    let darwin = super::ir::Format::of(&module.triple, LlvmVersion::V23).darwin_cpu;
    if let Some(cpu) = darwin {
        let size = u32::try_from(stream.len()).map_err(|_| {
            Error::msg(format!(
                "'{}': more than 4 GiB of bitcode",
                output.display()
            ))
        })?;
        let header: Vec<u8> = [0x0B17_C0DE, 0, 20, size, cpu]
            .iter()
            .flat_map(|w: &u32| w.to_le_bytes())
            .collect();
        out.write_bytes(&header)?;
    }
    let mut tail = (0u8, 0u32);
    for part in &stream.parts {
        match part {
            Part::Bytes(bytes) => {
                if let (Some(first), 1..) = (bytes.first(), tail.1) {
                    out.write_bytes(&[first | tail.0])?;
                    out.write_bytes(&bytes[1..])?;
                } else {
                    out.write_bytes(bytes)?;
                }
                tail = (0, 0);
            }
            Part::Hole { id, .. } => images[*id].write_to(&mut out)?,
            Part::Elements(hole) => tail = write_hole(&mut out, hole, &images[hole.id])?,
        }
    }
    if darwin.is_some() {
        let padding = (16 - (20 + stream.len()) % 16) % 16;
        out.write_bytes(&vec![0; padding as usize])?;
    }
    out.commit()?;
    tracing::info!(size = stream.len(), "written");
    Ok(())
}
