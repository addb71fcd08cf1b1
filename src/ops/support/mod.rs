//! What several operations share: the walker of files and folders (`inputs`) and the list of
//! the files it found, held out of memory (`found`), sets and maps of hashes held out of
//! memory once they are many (`keys`), the memory
//! budget of inflation (`inflating`), jobs of uneven sizes run largest first
//! (`largest_first`), progress (`progress`), this machine's GPUs (`gpus`),
//! finding external tools (`tool_path`), table columns (`columns`), names carried in JSON
//! without loss (`names`) and the typed record of a device image that `ls`, `extract` and
//! `du` share (`image`).

pub mod columns;
pub mod found;
#[cfg(any(feature = "cli", feature = "internals", test))]
pub mod gpus;
pub mod image;
pub mod inflating;
pub mod inputs;
pub mod keys;
pub mod largest_first;
pub mod names;
pub mod progress;
pub mod tool_path;
