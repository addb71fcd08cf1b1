//! The error of reading and writing files: what failed, on which file, in the system's words,
//! or a message. The crate's own error ([`crate::Error`]) takes it whole, so every layer
//! above can pass it on with `?`.

use std::io;
use std::path::{Path, PathBuf};

/// An error reading or writing a file, naming it.
#[derive(Debug, thiserror::Error)]
pub enum FileError {
    /// Reading or writing a file failed.
    #[error("'{}': {}", crate::io::shown(path), io_message(source))]
    Io {
        /// The file.
        path: PathBuf,
        /// What the system said.
        source: io::Error,
    },
    /// The file cannot be used as asked; the message says why.
    #[error("'{}': {message}", crate::io::shown(path))]
    File {
        /// The file.
        path: PathBuf,
        /// Why it cannot be used, after its name.
        message: String,
    },
    /// The file cannot be used as asked; the message says why, naming it.
    #[error("{0}")]
    Message(String),
}

impl FileError {
    /// An I/O error on `path`.
    pub fn io(path: impl AsRef<Path>, source: io::Error) -> Self {
        FileError::Io {
            path: path.as_ref().to_path_buf(),
            source,
        }
    }

    /// An error about `path`: it cannot be used as `message` says.
    pub fn file(path: impl AsRef<Path>, message: impl Into<String>) -> Self {
        FileError::File {
            path: path.as_ref().to_path_buf(),
            message: message.into(),
        }
    }

    /// An error with a message.
    pub fn msg(message: impl Into<String>) -> Self {
        FileError::Message(message.into())
    }
}

/// The result of reading or writing files.
pub type Result<T> = std::result::Result<T, FileError>;

/// The system's message for `e` without Rust's " (os error N)" suffix, as C tools print it.
pub fn io_message(e: &io::Error) -> String {
    let text = e.to_string();
    match text.rfind(" (os error ") {
        Some(cut) if text.ends_with(')') => text[..cut].to_string(),
        _ => text,
    }
}
