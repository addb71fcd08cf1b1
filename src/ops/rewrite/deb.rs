//! A Debian package named to `strip`, `compress` or `decompress`: its ar archive written
//! again member by member. `debian-binary` and any other member are copied; `data.tar.*` is
//! rewritten as any tarball is (a symbolic link to an absolute name allowed: the files are
//! unpacked at the root); `control.tar.*` then gets the new MD5 of each file rewritten in
//! `md5sums` (the lines of files pruned removed) and the `Installed-Size` of `control`
//! counted again as `dpkg-gencontrol` counts it. Each ar member header is kept but for its
//! size field.

use std::path::Path;

use super::package::{refuse_empty, PruneMembers};
use super::tarball::{rewrite_tar, write_spilled, Edits, TarOptions};
use crate::error::{Error, Result};
use crate::host::package::manifest::{debian, Edit};
use crate::host::package::tar::{compression_of, Compression};
use crate::host::package::tar_edit::levels;
use crate::host::package::{member_error, member_path};
use crate::io::spill::Spilled;
use crate::io::{Input, Output};
use crate::ops::rewrite::{start_output, verify, Mode, Placement, RewriteConfig, Summary};

/// The size of an ar member header.
const HEADER: usize = 60;

/// One member of the ar archive.
struct ArMember<'d> {
    /// Its header.
    header: &'d [u8],
    /// Its name, spaces and a trailing `/` aside.
    name: &'d [u8],
    /// Its data.
    data: &'d [u8],
}

/// The members of the ar archive `data`, each checked to lie inside it.
fn members<'d>(input: &Path, data: &'d [u8]) -> Result<Vec<ArMember<'d>>> {
    let mut at = 8usize;
    let mut found = Vec::new();
    while at < data.len() {
        let bad = |what: String| Error::file(input, format!("ar member at offset {at:#x}: {what}"));
        let header = data
            .get(at..at + HEADER)
            .ok_or_else(|| bad("its header runs past the end of the file: truncated".into()))?;
        if header.get(58..60) != Some(b"`\n") {
            return Err(bad("not an ar member header".into()));
        }
        let raw_name = header.get(..16).unwrap_or_default();
        let name = raw_name.trim_ascii_end();
        let name = name.strip_suffix(b"/").unwrap_or(name);
        let size = std::str::from_utf8(header.get(48..58).unwrap_or_default())
            .ok()
            .and_then(|s| s.trim().parse::<usize>().ok())
            .ok_or_else(|| bad("an unreadable size".into()))?;
        let start = at + HEADER;
        let member = start
            .checked_add(size)
            .and_then(|end| data.get(start..end))
            .ok_or_else(|| {
                member_error(
                    input,
                    name,
                    format!("ar member at offset {at:#x} declares {size} bytes, past the end of the file: truncated"),
                )
            })?;
        found.push(ArMember {
            header,
            name,
            data: member,
        });
        at = start + size + size % 2;
    }
    Ok(found)
}

/// What is written for each member: its bytes as they were, or new ones.
enum Written {
    Same,
    New(Spilled),
}

/// Rewrites the Debian package `input` (read as `data`) to where `placement` says.
pub(super) fn rewrite_deb(
    input: &Path,
    data: &Input,
    placement: &Placement,
    config: &RewriteConfig,
    mode: Mode,
    prune: PruneMembers,
) -> Result<Summary> {
    let members = members(input, data)?;
    let mut written: Vec<Written> = members.iter().map(|_| Written::Same).collect();
    let mut summary = Summary {
        size_before: data.len() as u64,
        size_after: data.len() as u64,
        ..Summary::default()
    };
    let tarball = |m: &ArMember<'_>, prefix: &[u8]| {
        m.name
            .starts_with(prefix)
            .then(|| compression_of(m.data))
            .flatten()
    };
    let mut edits = Edits::new();
    let none = |_: &Path, _: &[u8], _: &[u8], _: &Edits| Ok(None);
    for (member, slot) in members.iter().zip(written.iter_mut()) {
        let Some(compression) = tarball(member, b"data.tar") else {
            continue;
        };
        let options = TarOptions {
            absolute_links: true,
            zstd_level: levels::ZSTD,
            manifest: &none,
        };
        let shown = member_path(input, member.name);
        let rewritten = rewrite_tar(&shown, member.data, compression, config, prune, &options)?;
        summary
            .members
            .extend(rewritten.summary.members.iter().cloned());
        add_counts(&mut summary, &rewritten.summary);
        edits.extend(rewritten.edits);
        if let Some(bytes) = rewritten.bytes {
            *slot = Written::New(bytes);
        }
    }
    refuse_empty(input, &summary, config)?;
    if edits.is_empty() {
        return unchanged(input, data, placement, mode, summary);
    }
    for (member, slot) in members.iter().zip(written.iter_mut()) {
        let Some(compression) = tarball(member, b"control.tar") else {
            continue;
        };
        *slot = control(input, member, compression, config, &edits)?;
    }
    summary.size_after = written_size(&members, &written);
    if mode == Mode::DryRun {
        return Ok(summary);
    }
    let mut out = start_output(input, data, placement)?;
    write(data, &members, &written, &mut out)?;
    verify(input, &mut out, &summary, config.max_decompressed, &[])?;
    out.commit()?;
    Ok(summary)
}

/// Adds the counts of the data tarball's summary to the package's.
fn add_counts(summary: &mut Summary, data: &Summary) {
    summary.images_before += data.images_before;
    summary.images_after += data.images_after;
    summary.rewritten += data.rewritten;
    summary.already_compressed += data.already_compressed;
    summary.embedded += data.embedded;
    summary.made.extend(&data.made);
}

/// Nothing of the package changes: it stays, or is copied to a new file.
fn unchanged(
    input: &Path,
    data: &Input,
    placement: &Placement,
    mode: Mode,
    summary: Summary,
) -> Result<Summary> {
    if placement.in_place() || mode == Mode::DryRun {
        return Ok(summary);
    }
    let mut out = start_output(input, data, placement)?;
    out.write_part(data, data)?;
    out.commit()?;
    Ok(summary)
}

/// The control tarball `member` with `md5sums` and `control`'s `Installed-Size` kept right
/// after the data tarball's `edits`.
fn control(
    input: &Path,
    member: &ArMember<'_>,
    compression: Compression,
    config: &RewriteConfig,
    edits: &Edits,
) -> Result<Written> {
    let manifest =
        |shown: &Path, name: &[u8], bytes: &[u8], _: &Edits| -> Result<Option<Vec<u8>>> {
            let fail = |e: crate::host::package::manifest::ManifestError| {
                Error::file(member_path(shown, name), e.to_string())
            };
            match name {
                b"md5sums" => {
                    let (new, counts) = debian::update_md5sums(bytes, |path| {
                        edits.get(path).map(|edit| match edit.after {
                            Some(after) => Edit::Rewritten {
                                digest: after.md5,
                                size: after.size,
                            },
                            None => Edit::Removed,
                        })
                    })
                    .map_err(fail)?;
                    Ok((!counts.is_empty()).then_some(new))
                }
                b"control" => {
                    let Some(total) = debian::installed_size_of(bytes).map_err(fail)? else {
                        return Ok(None);
                    };
                    let changes: Vec<(u64, Option<u64>)> = edits
                        .values()
                        .filter(|edit| !edit.hard_link)
                        .map(|edit| (edit.before, edit.after.map(|a| a.size)))
                        .collect();
                    let kib = debian::installed_size(total, &changes);
                    Ok((kib != total)
                        .then(|| debian::with_installed_size(bytes, kib))
                        .flatten())
                }
                _ => Ok(None),
            }
        };
    let options = TarOptions {
        absolute_links: true,
        zstd_level: levels::ZSTD,
        manifest: &manifest,
    };
    let shown = member_path(input, member.name);
    let rewritten = rewrite_tar(
        &shown,
        member.data,
        compression,
        config,
        PruneMembers::default(),
        &options,
    )?;
    Ok(match rewritten.bytes {
        Some(bytes) => Written::New(bytes),
        None => Written::Same,
    })
}

/// The size of the package written.
fn written_size(members: &[ArMember<'_>], written: &[Written]) -> u64 {
    let data: u64 = members
        .iter()
        .zip(written)
        .map(|(m, w)| {
            let len = match w {
                Written::Same => m.data.len() as u64,
                Written::New(bytes) => bytes.len(),
            };
            HEADER as u64 + len + len % 2
        })
        .sum();
    8 + data
}

/// Writes the ar archive: each member's header (its size field set to the new size), its
/// data, and the newline that pads it to an even size.
fn write(
    data: &Input,
    members: &[ArMember<'_>],
    written: &[Written],
    out: &mut Output,
) -> Result<()> {
    out.write_bytes(b"!<arch>\n")?;
    for (member, w) in members.iter().zip(written) {
        let len = match w {
            Written::Same => member.data.len() as u64,
            Written::New(bytes) => bytes.len(),
        };
        let mut header = member.header.to_vec();
        let size = format!("{len:<10}");
        if size.len() != 10 {
            return Err(member_error(
                out.path(),
                member.name,
                "too large for an ar member",
            ));
        }
        if let Some(field) = header.get_mut(48..58) {
            field.copy_from_slice(size.as_bytes());
        }
        out.write_bytes(&header)?;
        match w {
            Written::Same => out.write_part(data, member.data)?,
            Written::New(bytes) => write_spilled(out, bytes)?,
        }
        if len % 2 == 1 {
            out.write_bytes(b"\n")?;
        }
    }
    Ok(())
}
