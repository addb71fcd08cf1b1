//! Where a borrowed slice sits in the buffer it was cut from. Parsers hand out slices of their
//! input; writers that copy from a file, and messages that give file offsets, need to know
//! whether such a slice lies in a given buffer and where.

/// The offset of `inner` in `outer` when `inner` lies wholly inside `outer`'s bytes (it was
/// cut from them), else `None`. Compares addresses only: equal bytes elsewhere do not count.
pub fn offset_within(outer: &[u8], inner: &[u8]) -> Option<usize> {
    let offset = (inner.as_ptr() as usize).checked_sub(outer.as_ptr() as usize)?;
    (offset.checked_add(inner.len())? <= outer.len()).then_some(offset)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn finds_slices_cut_from_the_buffer_only() {
        let outer = [1u8, 2, 3, 4, 5];
        assert_eq!(offset_within(&outer, &outer[1..3]), Some(1));
        assert_eq!(offset_within(&outer, &outer[..]), Some(0));
        assert_eq!(offset_within(&outer, &outer[5..]), Some(5));
        assert_eq!(offset_within(&outer[1..], &outer[..2]), None);
        assert_eq!(offset_within(&outer[..2], &outer[1..3]), None);
        let copy = outer;
        assert_eq!(offset_within(&outer, &copy[1..3]), None);
    }
}
