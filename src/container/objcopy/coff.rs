//! COFF relocatable objects, rewritten as llvm-objcopy 19's COFF writer writes them.

use super::{AddedSection, Rewritten};
use crate::format::Error;

/// Removes the sections `remove` selects and appends `added`.
pub(super) fn rewrite<'a>(
    host: &'a [u8],
    added: &[AddedSection<'a>],
    remove: &dyn Fn(&[u8]) -> bool,
) -> Result<Rewritten<'a>, Error> {
    let _ = (added, remove);
    Err(super::bad(
        0,
        format!("COFF objects ({} bytes) are not supported yet", host.len()),
    ))
}
