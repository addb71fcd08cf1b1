//! What users ask for, built from the format codecs and the I/O layer.

pub mod bundler;
pub mod check;
pub mod columns;
pub mod du;
pub mod extract;
pub mod gpus;
pub mod inflating;
pub mod inputs;
pub mod kpack;
pub mod ls;
pub mod packager;
pub mod progress;
pub mod readobj;
pub mod rewrite;
pub mod tool_path;
pub mod verify;
pub mod wrapper;
