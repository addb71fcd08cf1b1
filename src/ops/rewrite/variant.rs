//! `offload strip --keep sm_90 --variant`: a wheel or conda package stripped to the code some
//! CUDA devices load, written under the variant's name into a folder (the naming rules are
//! `host::package::variant`'s). A wheel's `.dist-info` and `.data` folders are renamed member
//! by member (copied as they are stored, under new headers), its `METADATA` gets the new
//! version and its `RECORD` the new paths and `METADATA`'s hash; a `.conda`'s tarballs are
//! renamed after the new file name; a conda package's `info/index.json` gets the new build
//! string and the `__cuda_arch` dependency.

use std::path::Path;
use std::sync::atomic::{AtomicBool, Ordering};

use crate::error::{Error, Result};
use crate::host::package::member_error;
use crate::host::package::variant::{Variant, WheelFolders};
use crate::host::package::zip::{self, Layout};

/// The most a wheel's `METADATA` may take: it is read whole.
const METADATA_MOST: u64 = 64 << 20;

/// A variant being written: its devices, and the name of the package made.
#[derive(Debug, Clone)]
pub(super) struct Naming {
    /// The devices.
    pub variant: Variant,
    /// The file name of the package made.
    pub file_name: Vec<u8>,
    /// Whether it is a conda package (by its name), else a wheel.
    pub conda: bool,
}

/// What a variant changes in a zip: the members' new names (by index; `None`: its own), and
/// for a wheel its folders and its `METADATA` (index, new contents).
pub(super) struct Renames {
    pub names: Vec<Option<Vec<u8>>>,
    pub folders: Option<WheelFolders>,
    pub metadata: Option<(usize, Vec<u8>)>,
}

impl Renames {
    /// The renames of the zip `layout` (`data`, at `input`): a `.conda`'s tarballs when
    /// `conda`, else a wheel's folders.
    pub(super) fn of_zip(
        input: &Path,
        data: &[u8],
        layout: &Layout<'_>,
        naming: &Naming,
        conda: bool,
    ) -> Result<Renames> {
        if conda != naming.conda {
            let what = if conda { "a .conda" } else { "not a .conda" };
            return Err(Error::file(
                input,
                format!("{what}, as its name says it is not: --variant names the package it makes after its kind"),
            ));
        }
        if conda {
            let stem = naming.file_name.strip_suffix(b".conda").unwrap_or_default();
            let names = layout
                .members
                .iter()
                .map(|m| {
                    let prefix = [b"info-".as_slice(), b"pkg-"]
                        .into_iter()
                        .find(|p| m.name.starts_with(p) && m.name.ends_with(b".tar.zst"))?;
                    (!m.name.contains(&b'/')).then(|| [prefix, stem, b".tar.zst"].concat())
                })
                .collect();
            return Ok(Renames {
                names,
                folders: None,
                metadata: None,
            });
        }
        let folders = layout
            .members
            .iter()
            .find_map(|m| WheelFolders::of_record(m.name, &naming.variant))
            .ok_or_else(|| {
                Error::file(
                    input,
                    "not a wheel: no NAME-VERSION.dist-info/RECORD at its top, which --variant renames",
                )
            })?;
        let at = layout
            .members
            .iter()
            .position(|m| folders.is_metadata(m.name))
            .ok_or_else(|| Error::file(input, "a wheel without its .dist-info/METADATA"))?;
        let stored = layout
            .members
            .get(at)
            .ok_or_else(|| Error::file(input, "a wheel without its .dist-info/METADATA"))?;
        let text = zip::whole_member(input, data, stored, METADATA_MOST)?;
        let metadata = naming
            .variant
            .metadata(&text)
            .map_err(|why| member_error(input, stored.name, why))?;
        Ok(Renames {
            names: layout
                .members
                .iter()
                .map(|m| folders.renamed(m.name))
                .collect(),
            folders: Some(folders),
            metadata: Some((at, metadata)),
        })
    }
}

/// A conda package's `info/index.json` for `variant` (`None`: not a variant, or another
/// member); `seen` notes that there was one.
pub(super) fn index_json(
    variant: Option<&Variant>,
    shown: &Path,
    name: &[u8],
    bytes: &[u8],
    seen: &AtomicBool,
) -> Result<Option<Vec<u8>>> {
    let Some(variant) = variant.filter(|_| name == b"info/index.json") else {
        return Ok(None);
    };
    seen.store(true, Ordering::Relaxed);
    let new = variant
        .index_json(bytes)
        .map_err(|why| member_error(shown, name, why))?;
    Ok(Some(new))
}

/// The error of a conda package made a variant without `info/index.json`.
pub(super) fn no_index(input: &Path) -> Error {
    Error::file(
        input,
        "no info/index.json: not a conda package, whose index --variant gives the __cuda_arch dependency",
    )
}
