//! What users ask for, built from the format codecs and the I/O layer.

pub mod bundler;
pub mod check;
pub mod du;
pub mod extract;
pub mod kpack;
pub mod ls;
pub mod packager;
pub mod prune;
pub mod readobj;
pub mod rewrite;
pub use support::inputs::{Found, Links, SpecialFiles, Taken, Walk};

internal_modules! {
    /// What the commands share: the walker, the inflation budget, progress, tool paths.
    support;
}
pub mod verify;
pub mod wrapper;
