//! Named temporary files that one step of a command hands to the next: listed for removal on
//! a signal, removed when dropped.

use std::path::Path;

use crate::io::cleanup;
use crate::io::error::{FileError as Error, Result};

/// A named temporary file for one step of a command to hand to the next: made in `dir`,
/// listed so that SIGINT, SIGTERM and SIGHUP remove it, and removed when dropped.
pub struct Temporary {
    file: tempfile::NamedTempFile,
    _listed: cleanup::Listed,
}

impl Temporary {
    /// A new empty temporary file in `dir`, named `.offload-*SUFFIX.tmp` as every temporary
    /// file of this tool ends in `.tmp`.
    pub fn new_in(dir: &Path, suffix: &str) -> Result<Temporary> {
        let (file, listed) = cleanup::listed(
            || {
                tempfile::Builder::new()
                    .prefix(".offload-")
                    .suffix(&format!("{suffix}.tmp"))
                    .tempfile_in(dir)
            },
            |file| file.path(),
        )
        .map_err(|e| Error::io(dir, e))?;
        Ok(Temporary {
            file,
            _listed: listed,
        })
    }

    /// Its path.
    pub fn path(&self) -> &Path {
        self.file.path()
    }
}
