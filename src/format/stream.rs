//! A compressed container read as one stream: a compressed bundle, whose stream inflates to a
//! bundle (and what follows it), or a compressed offload binary, whose payload inflates to the
//! rest of the binary. Positions are in what the stream inflates to: the bundle from its
//! first byte, the inflated binary from its header (as inflating restores it).
//!
//! # Example
//!
//! A compressed bundle, read as a stream: what it inflates to, and its check.
//!
//! ```
//! use offload::format::{bundle, ccob};
//! use offload::format::stream::CompressedStream;
//!
//! let plain = bundle::to_vec(&[("hip-amdgcn-amd-amdhsa--gfx90a", b"code")], 8);
//! let (packed, _) = ccob::compress(&plain, &ccob::CompressOptions::default()).unwrap();
//! let stream = CompressedStream::parse(&packed).unwrap().expect("a compressed stream");
//! assert!(stream.is_zstd());
//! assert_eq!(stream.inflated_size(), plain.len() as u64);
//! // Plain bytes are no compressed stream.
//! assert!(CompressedStream::parse(&plain).unwrap().is_none());
//! ```

use crate::format::ccob::{self, CompressedBundle, Decoding};
use crate::format::error::Result;
use crate::format::offload_binary::{self, CompressedPayload, OffloadBinary};

/// A compressed bundle or a compressed offload binary, borrowing its stored bytes.
#[derive(Debug, Clone, Copy)]
pub enum CompressedStream<'a> {
    /// A compressed bundle (`CCOB`).
    Bundle(CompressedBundle<'a>),
    /// A version 3 offload binary whose payload is compressed.
    OffloadBinary(CompressedPayload<'a>),
}

impl<'a> CompressedStream<'a> {
    /// The compressed container at the start of `data`, told by its magic; `None` when it is
    /// neither (or an offload binary stored plain, or a compressed bundle magic with no header).
    pub fn parse(data: &'a [u8]) -> Result<Option<CompressedStream<'a>>> {
        if data.starts_with(&offload_binary::MAGIC) {
            let binary = OffloadBinary::parse(data)?;
            return Ok(binary
                .compressed()
                .copied()
                .map(CompressedStream::OffloadBinary));
        }
        Ok(CompressedBundle::parse(data)?.map(CompressedStream::Bundle))
    }

    /// What the stream declares it inflates to.
    pub fn inflated_size(&self) -> u64 {
        match self {
            CompressedStream::Bundle(bundle) => bundle.uncompressed_size,
            CompressedStream::OffloadBinary(payload) => payload.inflated_size,
        }
    }

    /// Whether the stream is a zstd frame (else a zlib stream).
    pub fn is_zstd(&self) -> bool {
        match self {
            CompressedStream::Bundle(bundle) => bundle.method == ccob::Method::Zstd,
            CompressedStream::OffloadBinary(payload) => {
                payload.compression == offload_binary::Compression::Zstd
            }
        }
    }

    /// Inflates the stream up to `end` and hands `sink` each piece with its position, never
    /// holding more than a window of it; when `end` reaches the declared size the stream is
    /// read to its end and checked (size, and a compressed bundle's hash).
    pub fn inflate_prefix(
        &self,
        limit: u64,
        end: u64,
        decoding: Decoding<'_>,
        sink: impl FnMut(u64, &[u8]) -> Result<()>,
    ) -> Result<()> {
        match self {
            CompressedStream::Bundle(bundle) => bundle.inflate_prefix(limit, end, decoding, sink),
            CompressedStream::OffloadBinary(payload) => {
                payload.inflate_prefix(limit, end, decoding, sink)
            }
        }
    }

    /// Inflates the whole stream and checks it (size, and a compressed bundle's hash).
    pub fn verify(&self, limit: u64, decoding: Decoding<'_>) -> Result<()> {
        match self {
            CompressedStream::Bundle(bundle) => bundle.verify(limit, decoding),
            CompressedStream::OffloadBinary(payload) => payload.verify(limit, decoding),
        }
    }
}
