//! The library's error type: what failed, on which file. Its messages are for people: the
//! names and IDs in them, taken from files, are escaped (`crate::io::shown`).
//!
//! # Example
//!
//! Every error names its file; a format error also carries the byte offset of what is wrong.
//!
//! ```
//! use offload::format::{bundle, ccob::DEFAULT_MAX_DECOMPRESSED};
//! use offload::ops::verify;
//! use offload::Error;
//!
//! # fn main() -> Result<(), Box<dyn std::error::Error>> {
//! let dir = tempfile::tempdir()?;
//! let missing = dir.path().join("missing.hipfb");
//! let error = verify::verify_file(&missing, DEFAULT_MAX_DECOMPRESSED).unwrap_err();
//! assert!(matches!(error, Error::Io { .. }));
//! assert_eq!(error.path(), Some(missing.as_path()));
//!
//! let file = dir.path().join("cut.hipfb");
//! let whole = bundle::to_vec(&[("hipv4-amdgcn-amd-amdhsa--gfx90a", b"code")], 8);
//! std::fs::write(&file, &whole[..30])?;
//! let error = offload::ops::bundler::list(
//!     &offload::ops::bundler::BundlerConfig {
//!         file_type: "o".into(),
//!         inputs: vec![file.clone()],
//!         ..Default::default()
//!     },
//!     &mut Vec::new(),
//!     &mut Vec::new(),
//! )
//! .unwrap_err();
//! assert_eq!(error.path(), Some(file.as_path()));
//! assert!(error.to_string().contains("cut.hipfb"), "{error}");
//!
//! let message = Error::file(&file, "is not what was asked for");
//! assert_eq!(message.to_string(), format!("'{}': is not what was asked for", file.display()));
//! # Ok(())
//! # }
//! ```

use std::fmt;
use std::io;
use std::path::{Path, PathBuf};

/// An error from an operation, naming the file it concerns.
#[derive(Debug, thiserror::Error)]
pub enum Error {
    /// Reading or writing a file failed.
    #[error("'{}': {}", crate::io::shown(path), io_message(source))]
    Io {
        /// The file.
        path: PathBuf,
        /// What the system said.
        source: io::Error,
    },
    /// A file's contents are not in the expected format.
    #[error("'{}': {}{}", crate::io::shown(path), where_prefix(context), crate::io::shown(&source.to_string()))]
    Format {
        /// The file.
        path: PathBuf,
        /// Where in the file the parsed data lies, when it is not the file itself (for example
        /// the decompressed contents of a compressed bundle at some offset).
        context: Option<String>,
        /// The format error, with its offset in the parsed data.
        source: crate::format::Error,
    },
    /// A host container (object file, program, shared library) is damaged or cannot be
    /// edited as asked.
    #[error("'{}': {}{}", crate::io::shown(path), where_prefix(context), crate::io::shown(&source.to_string()))]
    Container {
        /// The file.
        path: PathBuf,
        /// Where in the file the container lies, when it is not the file itself (an archive
        /// member, say).
        context: Option<String>,
        /// The container error, with its offset in the container.
        source: crate::host::error::Error,
    },
    /// A file cannot be used as asked; the message says why, after the file's name.
    #[error("'{}': {message}", crate::io::shown(path))]
    File {
        /// The file.
        path: PathBuf,
        /// Why it cannot be used.
        message: String,
    },
    /// The request cannot be carried out; the message says why, in the words LLVM's tools use
    /// where there are such words. It names no file of its own (see [`Error::path`]).
    #[error("{0}")]
    Message(String),
}

/// Where in the file, escaped as names are ([`crate::io::shown`]): a context names archive
/// members and sections as the file spells them.
fn where_prefix(context: &Option<String>) -> String {
    context
        .as_ref()
        .map(|c| format!("{}: ", crate::io::shown(c)))
        .unwrap_or_default()
}

/// How many characters of text taken from a file a message quotes before it cuts.
const QUOTED_CHARS: usize = 120;

/// Text taken from a file (an entry ID, a key, a name), quoted for a message: in double
/// quotes, escaped as `crate::io::shown` escapes it, cut after 120 characters with `...`
/// and the full length, so no file can forge a line of output or flood a terminal.
pub fn quoted(text: &str) -> String {
    if text.chars().count() <= QUOTED_CHARS {
        return format!("\"{}\"", crate::io::shown(text));
    }
    let head: String = text.chars().take(QUOTED_CHARS).collect();
    format!("\"{}\"... ({} bytes)", crate::io::shown(&head), text.len())
}

pub use crate::host::error::{
    Error as ContainerError, ErrorKind as ContainerErrorKind, Name as ContainerName,
};
pub use crate::io::{io_message, FileError};

impl From<crate::io::FileError> for Error {
    fn from(e: crate::io::FileError) -> Error {
        match e {
            crate::io::FileError::Io { path, source } => Error::Io { path, source },
            crate::io::FileError::File { path, message } => Error::File { path, message },
            crate::io::FileError::Message(message) => Error::Message(message),
        }
    }
}

impl Error {
    /// An I/O error on `path`.
    pub fn io(path: impl AsRef<Path>, source: io::Error) -> Self {
        Error::Io {
            path: path.as_ref().to_path_buf(),
            source,
        }
    }

    /// A format error in `path`.
    pub fn format(path: impl AsRef<Path>, source: crate::format::Error) -> Self {
        Error::Format {
            path: path.as_ref().to_path_buf(),
            context: None,
            source,
        }
    }

    /// A format error in data found at `context` inside `path`.
    pub fn format_in(
        path: impl AsRef<Path>,
        context: impl fmt::Display,
        source: crate::format::Error,
    ) -> Self {
        Error::Format {
            path: path.as_ref().to_path_buf(),
            context: Some(context.to_string()),
            source,
        }
    }

    /// A container error in `path`.
    pub fn container(path: impl AsRef<Path>, source: crate::host::error::Error) -> Self {
        Error::Container {
            path: path.as_ref().to_path_buf(),
            context: None,
            source,
        }
    }

    /// An error about `path`: it cannot be used as `message` says.
    pub fn file(path: impl AsRef<Path>, message: impl Into<String>) -> Self {
        Error::File {
            path: path.as_ref().to_path_buf(),
            message: message.into(),
        }
    }

    /// An error with a message.
    pub fn msg(message: impl Into<String>) -> Self {
        Error::Message(message.into())
    }

    /// The file the error names, if it names one.
    pub fn path(&self) -> Option<&Path> {
        match self {
            Error::Io { path, .. }
            | Error::Format { path, .. }
            | Error::Container { path, .. }
            | Error::File { path, .. } => Some(path),
            Error::Message(_) => None,
        }
    }

    /// This error, said of `path` when it names no file of its own.
    pub fn about(self, path: &Path) -> Self {
        match self.path() {
            Some(_) => self,
            None => Error::file(path, self.to_string()),
        }
    }
}

/// Result of a library operation.
pub type Result<T> = std::result::Result<T, Error>;

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_error_names_the_file_it_is_about_once() {
        let input = Path::new("dir/k.o");
        let unnamed = Error::msg("this would remove every device image").about(input);
        assert_eq!(unnamed.path(), Some(input));
        assert_eq!(
            unnamed.to_string(),
            "'dir/k.o': this would remove every device image"
        );
        // An error naming a file of its own (an output, say) is left as it is.
        let named = Error::file("out/k.o", "is the input 'dir/k.o'").about(input);
        assert_eq!(named.path(), Some(Path::new("out/k.o")));
        assert_eq!(named.to_string(), "'out/k.o': is the input 'dir/k.o'");
        let from_io: Error = crate::io::FileError::file("out/k.o", "not a regular file").into();
        assert_eq!(from_io.path(), Some(Path::new("out/k.o")));
    }
}
