//! What the HIP runtime loads from one bundle for each GPU of a machine: the runtime's own
//! choice, one entry per device (not every entry a device could run, which is
//! [`super::loads`]'s question).
//!
//! The runtime asks, for every device, for its full ISA name, the generic target its own map
//! gives, and SPIR-V; each entry, in bundle order, goes to the first request it is compatible
//! with, and a device takes its native entry, else its generic one, else SPIR-V.

use super::image_target::{ImageTarget, Producer};
use super::loads::{loaded_by, Via};
use super::target_id::{TargetId, TargetIdBuf, TargetIdError};

/// The triple the runtime prefixes a device's target ID with in its ISA names.
pub const AMDGCN_ISA_PREFIX: &str = "amdgcn-amd-amdhsa--";

/// Reads a device as a command line names it: a target ID (`gfx90a:sramecc+:xnack-`) or the
/// runtime's full ISA name (`amdgcn-amd-amdhsa--gfx90a:sramecc+:xnack-`).
pub fn parse_device(text: &str) -> Result<TargetIdBuf, TargetIdError> {
    text.strip_prefix(AMDGCN_ISA_PREFIX)
        .unwrap_or(text)
        .parse()
}

/// One entry of a bundle, as the runtime reads it from the bundle's header.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Entry<'a> {
    /// The entry ID as stored.
    pub id: &'a str,
    /// The size of its code.
    pub size: u64,
}

/// One bundle (one translation unit's code) as the runtime meets it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Bundle<'a> {
    /// Its entries, in bundle order.
    pub entries: Vec<Entry<'a>>,
    /// Whether it is stored compressed (the runtime unbundles those another way).
    pub compressed: bool,
    /// The size of its header: entry count, offsets, sizes and IDs.
    pub header_size: u64,
}

/// What one device loads from one bundle.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Load {
    /// The entry at this index, and how the device came to it.
    Entry(usize, Via),
    /// Nothing: the device has no code in this bundle.
    Nothing,
}

/// What each of `devices` (the machine's GPUs, in the runtime's order) loads from `bundle`.
///
/// For now the first entry of the best kind [`loaded_by`] finds, in bundle order.
pub fn loads(devices: &[TargetIdBuf], bundle: &Bundle<'_>) -> Vec<Load> {
    let targets: Vec<ImageTarget> = bundle
        .entries
        .iter()
        .map(|e| ImageTarget::of_bundle_entry(e.id))
        .collect();
    let ids: Vec<Option<TargetId<'_>>> = targets
        .iter()
        .map(|t| (t.producer == Producer::Hip).then(|| t.target_id()).flatten())
        .collect();
    devices
        .iter()
        .map(|device| {
            let mut best: Option<(usize, Via)> = None;
            for (index, via) in loaded_by(&device.target_id(), &ids).into_iter().enumerate() {
                if let Some(via) = via {
                    if best.is_none_or(|(_, b)| via < b) {
                        best = Some((index, via));
                    }
                }
            }
            best.map_or(Load::Nothing, |(index, via)| Load::Entry(index, via))
        })
        .collect()
}
