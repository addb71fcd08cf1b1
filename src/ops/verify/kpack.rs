//! Checking `.kpack` archives: that every code object reads (a compressed one inflates to
//! exactly its declared size), and, for a binary split by kpack, that every archive of its
//! set holds every code object the binary asks for, for every processor the archive claims.

use std::path::Path;

use rayon::prelude::*;

use crate::error::{Error, Result};
use crate::format::kpack::{split_toc_key, toc_key, Archive, KernelEntry, Scheme};
use crate::host::kpack::{find_archives, SplitBinary};
use crate::io::Input;
use crate::loads::kpack_search::{every_target_name, Environment};
use crate::ops::support::inflating::{memory_of_zstd, Budget};

/// What the archives of a file hold.
#[derive(Debug, Default)]
pub struct KpackVerified {
    /// Whether the file is an archive itself (else a split binary).
    pub is_archive: bool,
    /// The archives read.
    pub archives: usize,
    /// The code objects read whole and found sound.
    pub sound: usize,
    /// What is wrong, each naming the archive and the key: a code object that does not read,
    /// one the binary asks for that an archive lacks, an archive that cannot be read, or no
    /// archive at all.
    pub bad: Vec<Error>,
    /// Each archive read: the file it is (device and inode; `None` when it is no file, such
    /// as standard input), and the code objects of it found sound, by their place in its
    /// table. Totals over many files count an archive, and each of its code objects, once
    /// however many split binaries use it.
    pub read: Vec<ArchiveRead>,
}

/// An archive read: the file it is (device and inode), and the places in its table of the
/// code objects found sound.
pub type ArchiveRead = (Option<(u64, u64)>, Vec<usize>);

/// Reads every code object of the archive `data` (at `path`), refusing one stored compressed
/// that declares more than `limit` bytes; the `Err` is for an archive whose header or table
/// does not read.
pub(crate) fn verify_archive(path: &Path, data: &Input, limit: u64) -> Result<KpackVerified> {
    let archive = Archive::parse(data).map_err(|e| Error::format(path, e))?;
    let (sound, bad) = read_all(path, &archive, limit, &|_| true);
    Ok(KpackVerified {
        is_archive: true,
        archives: 1,
        sound: sound.len(),
        bad,
        read: vec![(data.identity(), sound)],
    })
}

/// Reads the code objects of `archive` (at `path`) that `keep` accepts, in parallel within
/// the inflation budget and `limit`: those sound (by their place in its table), and the
/// error of each that is not.
fn read_all(
    path: &Path,
    archive: &Archive<'_>,
    limit: u64,
    keep: &(dyn Fn(&KernelEntry<'_>) -> bool + Sync),
) -> (Vec<usize>, Vec<Error>) {
    let budget = Budget::new();
    let results: Vec<(usize, Result<()>)> = archive
        .entries
        .par_iter()
        .enumerate()
        .filter(|(_, e)| keep(e))
        .map(|(place, entry)| {
            let memory = match archive.scheme {
                Scheme::None => 0,
                Scheme::ZstdPerKernel => memory_of_zstd(entry.original_size),
            };
            let read = budget
                .run(memory, |decoding| {
                    archive.read_code_object(entry, limit, decoding, |_| Ok(()))
                })
                .map_err(|e| Error::format(path, e));
            (place, read)
        })
        .collect();
    let mut sound = Vec::new();
    let mut bad = Vec::new();
    for (place, read) in results {
        match read {
            Ok(()) => sound.push(place),
            Err(e) => bad.push(e),
        }
    }
    (sound, bad)
}

/// Checks the archive set of the split binary `split` at `path`: the archives its search
/// paths (or the kpack loader's environment variables, as set) name, every processor each
/// claims, every code-object index the binary asks for, and every code object of the binary
/// each holds (one stored compressed may declare at most `limit` bytes).
pub fn verify_split(path: &Path, split: &SplitBinary<'_>, limit: u64) -> KpackVerified {
    let env = Environment::from_vars(|name| std::env::var(name).ok());
    let mut set = find_archives(path, &split.reference, &env, &every_target_name());
    let mut verified = KpackVerified::default();
    verified.bad.append(&mut set.problems);
    if set.archives.is_empty() {
        verified.bad.push(set.none_found(path, "", &env));
        return verified;
    }
    let name = split.reference.kernel_name;
    let indices = split.distinct_indices();
    for (archive_path, input) in &set.archives {
        let archive = match Archive::parse(input) {
            Ok(archive) => archive,
            Err(e) => {
                verified.bad.push(Error::format(archive_path, e));
                continue;
            }
        };
        verified.archives += 1;
        for arch in &archive.gfx_arches {
            for index in &indices {
                let key = toc_key(name, *index);
                if archive.find(&key, arch).is_none() {
                    verified.bad.push(Error::file(
                        archive_path,
                        format!(
                            "no code object {} for {}, which the archive is for \
                         (its gfx_arches), though '{}' asks for code object {index}",
                            crate::io::shown(&key),
                            crate::io::shown(arch),
                            crate::io::shown(path)
                        ),
                    ));
                }
            }
        }
        let ours = |e: &KernelEntry<'_>| split_toc_key(e.key).is_some_and(|(b, _)| b == name);
        let (sound, bad) = read_all(archive_path, &archive, limit, &ours);
        verified.sound += sound.len();
        verified.read.push((input.identity(), sound));
        verified.bad.extend(bad);
        if let Err(e) = input.intact() {
            verified.bad.push(e.into());
        }
    }
    verified
}
