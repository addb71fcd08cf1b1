//! Listing the device images of files: where each lies and what it is.

use std::path::Path;

use serde::Serialize;

use crate::container::offloading::{for_each_offload_binary, Found};
use crate::error::Result;
use crate::format::ccob::DEFAULT_MAX_DECOMPRESSED;
use crate::format::offload_binary::ImageKind;
use crate::io::Input;

/// One device image, as `offload ls` reports it. The field names are a public interface
/// (`offload ls --json`).
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Image {
    /// The file, as named on the command line.
    pub file: String,
    /// The archive member that holds the image (the innermost, for archives in archives).
    pub member: Option<String>,
    /// The section that holds the image.
    pub section: Option<String>,
    /// Byte offset of the image in the file; `None` inside a compressed container.
    pub offset: Option<u64>,
    /// Size of the image in bytes.
    pub size: u64,
    /// What produced it: `openmp`, `cuda`, `hip`, `sycl`, `none`, or `host`.
    pub offload_kind: String,
    /// The target triple.
    pub triple: String,
    /// The target ID: processor and features (`gfx90a:xnack+`).
    pub arch: String,
    /// For an offload binary image, what it holds: `o`, `bc`, `cubin`, `fatbin`, `s`, `spv`,
    /// `none`, or `unknown-N`. `None` for bundle entries.
    pub image_kind: Option<String>,
    /// For a bundle entry, its entry ID. `None` for offload binary images.
    pub entry_id: Option<String>,
    /// Whether the image is stored compressed.
    pub compressed: bool,
}

fn image_kind_name(kind: ImageKind) -> String {
    match kind {
        ImageKind::None => "none".into(),
        ImageKind::Unknown(raw) => format!("unknown-{raw}"),
        other => other.name().into(),
    }
}

fn text(bytes: &[u8]) -> String {
    String::from_utf8_lossy(bytes).into_owned()
}

/// The images of one file, in file order.
pub fn list_file(path: &Path) -> Result<Vec<Image>> {
    let input = Input::open(path)?;
    let name = path.to_string_lossy().into_owned();
    let mut images = Vec::new();
    let mut visit = |found: &Found<'_>| {
        for entry in found.binary.entries() {
            images.push(Image {
                file: name.clone(),
                member: found.members.last().cloned(),
                section: found.section.map(str::to_string),
                offset: found.offset.map(|at| at + entry.image_offset),
                size: entry.image.len() as u64,
                offload_kind: entry.offload_kind.name().to_string(),
                triple: text(entry.triple()),
                arch: text(entry.arch()),
                image_kind: Some(image_kind_name(entry.image_kind)),
                entry_id: None,
                compressed: found.compressed,
            });
        }
        Ok(())
    };
    for_each_offload_binary(path, &name, &input, DEFAULT_MAX_DECOMPRESSED, &mut visit)?;
    Ok(images)
}

/// The table `offload ls` prints for people.
pub fn table(images: &[Image]) -> String {
    let rows: Vec<[String; 7]> = images
        .iter()
        .enumerate()
        .map(|(i, image)| {
            let mut place = image.file.clone();
            if let Some(member) = &image.member {
                place.push_str(&format!("({member})"));
            }
            if let Some(section) = &image.section {
                place.push_str(&format!(" {section}"));
            }
            match image.offset {
                Some(at) => place.push_str(&format!(" @{at:#x}")),
                None => place.push_str(" (compressed)"),
            }
            [
                i.to_string(),
                image
                    .image_kind
                    .clone()
                    .unwrap_or_else(|| "bundle".to_string()),
                if image.arch.is_empty() {
                    "-".into()
                } else {
                    image.arch.clone()
                },
                image.triple.clone(),
                image.offload_kind.clone(),
                image.size.to_string(),
                place,
            ]
        })
        .collect();
    let header = ["#", "KIND", "ARCH", "TRIPLE", "PRODUCER", "SIZE", "WHERE"];
    let mut widths: Vec<usize> = header.iter().map(|h| h.len()).collect();
    for row in &rows {
        for (w, cell) in widths.iter_mut().zip(row) {
            *w = (*w).max(cell.chars().count());
        }
    }
    let mut out = String::new();
    let mut line = |cells: &[&str]| {
        let mut text = String::new();
        for (k, (cell, w)) in cells.iter().zip(&widths).enumerate() {
            if k + 1 == cells.len() {
                text.push_str(cell);
            } else if k == 0 || k == 5 {
                text.push_str(&format!("{cell:>w$}  "));
            } else {
                text.push_str(&format!("{cell:<w$}  "));
            }
        }
        out.push_str(text.trim_end());
        out.push('\n');
    };
    line(&header);
    for row in &rows {
        let cells: Vec<&str> = row.iter().map(String::as_str).collect();
        line(&cells);
    }
    out
}
