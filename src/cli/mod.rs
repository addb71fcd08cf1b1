//! Command-line front ends.
