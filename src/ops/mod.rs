//! Operations.
