//! The check that the images of a version 2 or 3 offload binary do not partly overlap.

use super::{field_at, OffloadEntry, ENTRY_SIZE};
use crate::format::error::{Error, ErrorKind, Result};

/// Checks that the images of a version 2 or 3 binary do not partly overlap (LLVM writes them
/// back to back). Entries may name the very same image (same offset and size: read once, see
/// `tests/hostile_costs.rs`), and empty images take no bytes; an image that starts inside
/// another is an error, at its entry's image offset field.
pub(super) fn check_images_apart(entries: &[OffloadEntry<'_>], entries_offset: u64) -> Result<()> {
    let mut spans: Vec<(u64, u64, usize)> = entries
        .iter()
        .filter(|e| e.image_size != 0)
        .map(|e| {
            (
                e.image_offset,
                e.image_offset.saturating_add(e.image_size),
                e.index,
            )
        })
        .collect();
    spans.sort_unstable();
    for pair in spans.windows(2) {
        let [(start, end, first), (offset, second_end, second)] = *pair else {
            continue;
        };
        if offset < end && (start, end) != (offset, second_end) {
            let at = entries_offset
                .saturating_add((second as u64).saturating_mul(ENTRY_SIZE))
                .saturating_add(field_at::IMAGE_OFFSET);
            return Err(Error::new(
                at,
                ErrorKind::OverlappingImages {
                    first,
                    second,
                    offset,
                    end,
                },
            ));
        }
    }
    Ok(())
}
