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
pub mod support;
pub mod verify;
pub mod wrapper;
