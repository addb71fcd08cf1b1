//! Packages (wheels, .deb, conda, tar) as containers of files, and their manifests.

pub mod manifest;
