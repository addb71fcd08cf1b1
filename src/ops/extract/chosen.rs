//! What `extract` chose: each image to write with where its bytes are ([`Chosen`]), what
//! the target IDs and devices asked for found ([`Found`]), and, once written, the typed
//! record of each file written ([`Extracted`]).

use std::borrow::Cow;
use std::path::PathBuf;
use std::sync::Arc;

use crate::error::{Error, Result};
use crate::format::cuda_fatbin::Stored;
use crate::host::kpack::StoredCodeObject;
use crate::io::Input;
use crate::loads::hip::Via;
use crate::ops::extract::options::ExtractConfig;
use crate::ops::support::image::ImageRecord;

/// One image to write.
#[derive(Clone)]
pub(super) struct Chosen {
    pub(super) image: ImageRecord,
    /// Index of the input file.
    pub(super) input: usize,
    /// Where its bytes are.
    pub(super) bytes: Bytes,
    /// The entry ID or metadata the name is built from.
    pub(super) label: String,
    /// The innermost archive member, for device archive names.
    pub(super) member: Option<String>,
    pub(super) ext: &'static str,
    /// How the device asked for loads it.
    pub(super) via: Via,
    /// The target ID asked for that chose it.
    pub(super) asked: String,
    /// For the runtime's pick, the bundle's number in its file.
    pub(super) bundle: Option<usize>,
    /// Whether a device picked it.
    pub(super) device_pick: bool,
    /// The whole file name to write it under, when it has one of its own (a CUDA entry:
    /// cuobjdump's name).
    pub(super) name: Option<std::ffi::OsString>,
}

/// Where the bytes of a chosen image are.
#[derive(Clone)]
pub(super) enum Bytes {
    /// In the input, at this offset, this long.
    Input(usize, usize),
    /// Held (read from a thin archive's member).
    Owned(Vec<u8>),
    /// In a compressed container's stream, not inflated yet.
    Stream(Streamed),
    /// In a `.kpack` archive (its number among those mapped), stored plain or compressed.
    Archived(usize, StoredCodeObject),
    /// The payload of a CUDA fat binary's entry as stored: read (inflated, cut to its
    /// contents) when written.
    Cuda(Held, Stored),
}

/// An image inside a compressed bundle or offload binary, found from its head.
#[derive(Clone)]
pub(super) struct Streamed {
    /// The compressed container: its range in the input, or its bytes when it is not stored
    /// as such (inside another compressed container).
    pub(super) container: Held,
    /// The compressed container's offset in the file, for errors.
    pub(super) at: Option<u64>,
    /// The image's range in the inflated stream.
    pub(super) start: u64,
    pub(super) end: u64,
}

/// Bytes of the input, or held.
#[derive(Clone)]
pub(super) enum Held {
    Input(usize, usize),
    Owned(Arc<[u8]>),
}

impl Held {
    pub(super) fn get<'a>(&'a self, input: &'a Input) -> &'a [u8] {
        match self {
            Held::Input(start, len) => &input[*start..*start + *len],
            Held::Owned(bytes) => bytes,
        }
    }
}

impl Chosen {
    /// The image's bytes when they are in its input or held: empty for an image inside a
    /// compressed bundle, a `.kpack` archive or a CUDA entry, which is inflated where it is
    /// written.
    pub(super) fn bytes<'a>(&'a self, inputs: &'a [Input]) -> &'a [u8] {
        match &self.bytes {
            Bytes::Owned(bytes) => bytes,
            Bytes::Input(start, len) => &inputs[self.input][*start..*start + *len],
            Bytes::Stream(_) | Bytes::Archived(..) | Bytes::Cuda(..) => &[],
        }
    }

    /// The contents of a CUDA entry's payload ([`Bytes::Cuda`]), inflated and cut as
    /// NVIDIA's tools extract them; `None` for other images. An error names the file, the
    /// place and the payload's offset.
    pub(super) fn cuda_contents<'a>(
        &'a self,
        config: &ExtractConfig,
        inputs: &'a [Input],
    ) -> Option<Result<Cow<'a, [u8]>>> {
        let Bytes::Cuda(held, stored) = &self.bytes else {
            return None;
        };
        let payload = held.get(&inputs[self.input]);
        Some(
            stored
                .contents(payload, config.max_decompressed)
                .map_err(|e| self.cuda_error(config, e)),
        )
    }

    /// The error `e` met in the payload of this CUDA entry ([`Bytes::Cuda`]), naming the
    /// file, the place and the offset in the file.
    pub(super) fn cuda_error(&self, config: &ExtractConfig, e: crate::format::Error) -> Error {
        let e = match &self.bytes {
            Bytes::Cuda(Held::Input(start, _), _) => e.rebased(*start as u64),
            _ => e,
        };
        let path = &config.files[self.input];
        match self.place() {
            place if place.is_empty() => Error::format(path, e),
            place => Error::format_in(path, place, e),
        }
    }

    /// Where the image lies, for errors: member and section, as a scan names them.
    pub(super) fn place(&self) -> String {
        let mut parts = Vec::new();
        if let Some(member) = &self.image.member {
            parts.push(format!("member '{member}'"));
        }
        if let Some(section) = &self.image.section {
            parts.push(format!("section '{section}'"));
        }
        parts.join(", ")
    }

    /// What was written of it to `path`.
    pub(super) fn extracted(self, path: PathBuf) -> Extracted {
        Extracted {
            path,
            image: self.image,
            via: self.via,
            asked: self.asked,
            bundle: self.bundle,
            device_pick: self.device_pick,
        }
    }
}

/// One written file and the image it holds.
#[derive(Debug, Clone)]
pub struct Extracted {
    /// The file written.
    pub path: PathBuf,
    /// The image.
    pub image: ImageRecord,
    /// How a device asked for loads it: natively, or, its translation unit having no native
    /// code for it, as a generic target's code or as SPIR-V.
    pub via: Via,
    /// The target ID asked for that chose it.
    pub asked: String,
    /// For a device's pick (`--device`), the number of the bundle (fat binary, bare code
    /// object) it came from, counting those of its input file from 1 in file order.
    pub bundle: Option<usize>,
    /// Whether it is a device's pick (`--device`) rather than code a target ID asked for
    /// (`--arch`) loads.
    pub device_pick: bool,
}

/// What the target IDs and devices asked for found, over all the files.
pub(super) struct Found {
    /// Whether each `--arch` found an image.
    pub(super) arches: Vec<bool>,
    /// Whether each `--device` loads something from some bundle.
    pub(super) devices: Vec<bool>,
    /// Each bundle or code object a device (its index) loads nothing from, whether to say so
    /// even when the device found nothing anywhere (it is not merely code for others), and
    /// the line that says so.
    pub(super) missing: Vec<(usize, bool, String)>,
}

impl Found {
    /// Nothing found yet for what `config` asks for.
    pub(super) fn new(config: &ExtractConfig) -> Found {
        Found {
            arches: vec![false; config.arches.len()],
            devices: vec![false; config.devices.len()],
            missing: Vec::new(),
        }
    }

    /// Adds what another file's scan found, `other`, after what is here.
    pub(super) fn add(&mut self, other: Found) {
        for (hit, theirs) in self.arches.iter_mut().zip(other.arches) {
            *hit |= theirs;
        }
        for (hit, theirs) in self.devices.iter_mut().zip(other.devices) {
            *hit |= theirs;
        }
        self.missing.extend(other.missing);
    }
}
