//! Writing the chosen images to their own files in an output folder, in parallel: an image
//! stored as it is is copied by the kernel; the images of one compressed bundle are written
//! together as its stream is inflated, each named by what its first bytes say. The inputs
//! come a group at a time; the outputs are put in place together, once all are written.
//!
//! Each output is created once, by its name, in a folder being built ([`FreshFolder`]): into
//! a folder that does not exist yet, a new folder beside it that takes its name when all are
//! written; into a folder that exists, a hidden staging folder inside it whose files are
//! moved into it then. Either way, each group's records are handed back as soon as it is
//! written, and nothing is held of them: what is kept to the end is a few bytes per input
//! file at most (the identities of the inputs, taken only when an output's name is already
//! taken in the folder that exists).

use std::collections::{BTreeMap, BTreeSet};
use std::os::unix::fs::MetadataExt;
use std::path::{Path, PathBuf};

use rayon::prelude::*;

use crate::error::{Error, Result};
use crate::format::cuda_fatbin::{Compression, Stored};
use crate::format::ErrorKind;
use crate::host::kpack::{ArchiveFiles, StoredCodeObject};
use crate::io::{FreshFolder, Input, Output};
use crate::ops::extract::chosen::{Bytes, Chosen, Extracted, Held};
use crate::ops::extract::inflate::{inflate_group, stream_groups};
use crate::ops::extract::kpack;
use crate::ops::extract::names::{extension, output_stems, with_extension, Taken};
use crate::ops::extract::options::{ExtractConfig, Inputs};
use crate::ops::support::inflating::{memory_of_cuda, Budget};
use crate::ops::support::progress::Progress;

/// The outputs of an extraction to a folder, written a group of input files at a time into
/// a folder being built, and put in place together at the end: nothing is held of each.
pub(super) struct Folder<'f> {
    /// The folder the outputs are made in: a new folder, or a staging folder inside the
    /// folder that exists. Dropped before `made`: what it holds goes first.
    fresh: FreshFolder,
    /// The folders made for the outputs.
    made: Made,
    /// Every input file of the run (of every group), when the output folder exists: no
    /// output is put over one of them.
    files: Option<Inputs<'f>>,
    /// The device and inode of each of `files`, sorted: taken the first time an output's
    /// name is already taken in the folder.
    identities: Option<Vec<(u64, u64)>>,
    progress: &'f dyn Progress,
    /// Whether the bar of bytes is started for the (one) group.
    bar: bool,
    /// The names given so far, so that the outputs of every group are kept apart.
    taken: Taken,
    budget: Budget,
    /// How many input files had images to write.
    with_images: usize,
    /// The first error of each input file whose images could not all be written, in the
    /// order of the files.
    failed: Vec<Error>,
    /// The first error of each input file an output of which would have been put over an
    /// input file of the run, in the order of the files: none of its outputs is kept.
    refused: Vec<Error>,
}

/// The error of the table of the names given in the output folder, when its temporary file
/// cannot be made.
fn names_failed(config: &ExtractConfig, e: &std::io::Error) -> Error {
    let e = crate::io::io_message(e);
    Error::file(&config.output, format!("the names of its files: {e}"))
}

impl<'f> Folder<'f> {
    /// Makes the folder `config.output` (and the folders it is in) if missing; `bar`: whether
    /// the bytes of the first group start `progress`.
    pub(super) fn new(
        config: &'f ExtractConfig,
        inputs: Inputs<'f>,
        progress: &'f dyn Progress,
        bar: bool,
    ) -> Result<Folder<'f>> {
        // Sized for an output a file, before anything is made: a table that cannot be made
        // is an error then.
        let taken = Taken::with_capacity(inputs.len()).map_err(|e| names_failed(config, &e))?;
        let folders: Vec<PathBuf> = config
            .output
            .ancestors()
            .take_while(|folder| !folder.as_os_str().is_empty() && !folder.exists())
            .map(Path::to_path_buf)
            .collect();
        // Made from here on: removed again, if empty, on an error.
        let made = Made {
            folders,
            placed: false,
        };
        let missing = std::fs::symlink_metadata(&config.output)
            .is_err_and(|e| e.kind() == std::io::ErrorKind::NotFound);
        let (fresh, files) = match config.output.parent() {
            Some(parent) if missing && config.output.file_name().is_some() => {
                std::fs::create_dir_all(parent).map_err(|e| Error::io(parent, e))?;
                (FreshFolder::new(&config.output)?, None)
            }
            _ => {
                std::fs::create_dir_all(&config.output)
                    .map_err(|e| Error::io(&config.output, e))?;
                let staging = FreshFolder::inside(&config.output);
                (staging?, Some(inputs))
            }
        };
        Ok(Folder {
            fresh,
            made,
            files,
            identities: None,
            progress,
            bar,
            taken,
            budget: Budget::new(),
            with_images: 0,
            failed: Vec::new(),
            refused: Vec::new(),
        })
    }

    /// Writes each image `chosen` from one group of inputs (`config` names their files) to
    /// a file of its own in the folder being built, in parallel (the images of one
    /// compressed bundle together, as its stream is inflated). An input file one of whose
    /// images cannot be written, or would be put over an input file of the run, has none of
    /// its images kept. Gives the records of the files written, in the order of the files.
    pub(super) fn write_group(
        &mut self,
        config: &ExtractConfig,
        inputs: &[Input],
        archives: &ArchiveFiles,
        chosen: Vec<Chosen>,
    ) -> Result<Vec<Extracted>> {
        let stems =
            output_stems(config, &chosen, &mut self.taken).map_err(|e| names_failed(config, &e))?;
        let writer = Writer {
            config,
            inputs,
            archives,
            chosen: &chosen,
            stems: &stems,
            budget: &self.budget,
            progress: self.progress,
            fresh: &self.fresh,
        };
        let (mut written, failed) = writer.write_all(std::mem::take(&mut self.bar));
        let with_images: BTreeSet<usize> = chosen.iter().map(|c| c.input).collect();
        self.with_images += with_images.len();
        written.sort_by_key(|w| w.index);
        let refused = self.refuse_inputs(&chosen, &written, &failed);
        let gone = |input: &usize| failed.contains_key(input) || refused.contains_key(input);
        let (written, dropped): (Vec<Written>, Vec<Written>) = written
            .into_iter()
            .partition(|w| !gone(&chosen[w.index].input));
        // The other images of an input that failed, or was refused, go again.
        for w in dropped {
            self.fresh.remove(w.path.file_name().unwrap_or_default())?;
        }
        let kept = chosen.into_iter().filter(|c| !gone(&c.input));
        let mut group = Vec::new();
        for (mut c, w) in kept.zip(written) {
            tracing::info!(from = %c.image.file, "writing {} to {}", c.label, w.path.display());
            c.image.size = w.size.unwrap_or(c.image.size);
            group.push(c.extracted(w.path));
        }
        self.failed.extend(failed.into_values());
        self.refused.extend(refused.into_values());
        Ok(group)
    }

    /// The input files of the group some of whose outputs `written` (in the order of the
    /// chosen) would be put over an input file of the run (any group's: the same device and
    /// inode, the name itself not followed), with the first such output's error. Only an
    /// output whose name is taken in the folder that exists is looked at.
    fn refuse_inputs(&mut self, chosen: &[Chosen], written: &[Written], failed: &Failed) -> Failed {
        let mut refused = Failed::new();
        let Some(files) = self.files else {
            return refused;
        };
        let there: Vec<Option<(u64, u64)>> = written
            .par_iter()
            .map(|w| {
                let meta = std::fs::symlink_metadata(&w.path).ok()?;
                (!meta.file_type().is_symlink()).then(|| (meta.dev(), meta.ino()))
            })
            .collect();
        for (w, there) in written.iter().zip(there) {
            let input = chosen[w.index].input;
            let Some(there) = there else {
                continue;
            };
            if failed.contains_key(&input) || refused.contains_key(&input) {
                continue;
            }
            let identities = self.identities.get_or_insert_with(|| identities_of(files));
            if identities.binary_search(&there).is_ok() {
                let error = Error::file(
                    &w.path,
                    "is an input file of this run; refusing to write over an input",
                );
                refused.insert(input, error);
            }
        }
        refused
    }

    /// Puts the files written in place (`progress` is done then), but for those of the input
    /// files that failed, whose errors go to `problems`; when every input file with images
    /// failed, the first one's error is the result.
    pub(super) fn finish(mut self, problems: &mut Vec<Error>) -> Result<()> {
        let mut failed = std::mem::take(&mut self.failed);
        failed.append(&mut self.refused);
        let mut failed = failed.into_iter();
        if failed.len() > 0 && failed.len() == self.with_images {
            if let Some(first) = failed.next() {
                problems.extend(failed);
                return Err(first);
            }
        }
        crate::io::inputs_intact()?;
        self.fresh.place()?;
        self.made.placed = true;
        self.progress.finish();
        problems.extend(failed);
        Ok(())
    }
}

/// The device and inode of each of `files` that can be read (a symbolic link followed, as
/// when it is opened), sorted.
fn identities_of(files: Inputs<'_>) -> Vec<(u64, u64)> {
    let mut identities: Vec<(u64, u64)> = Vec::new();
    for group in files.groups(256) {
        identities.par_extend(
            group
                .par_iter()
                .filter_map(|path| std::fs::metadata(path).ok())
                .map(|meta| (meta.dev(), meta.ino())),
        );
    }
    identities.sort_unstable();
    identities.dedup();
    identities
}

/// The folders made for the outputs (the output folder and those it is in): they go again,
/// if empty, when the outputs are not put in place, so that no trace of a failed run is
/// left.
struct Made {
    folders: Vec<PathBuf>,
    placed: bool,
}

impl Drop for Made {
    fn drop(&mut self) {
        if self.placed {
            return;
        }
        for folder in &self.folders {
            let _ = std::fs::remove_dir(folder);
        }
    }
}

/// The first error of each input file whose images could not all be written, by file.
type Failed = BTreeMap<usize, Error>;

/// One image written, not yet in place.
struct Written {
    /// Its index among the chosen.
    index: usize,
    path: PathBuf,
    /// The bytes written, when they differ from what the listing says (a CUDA entry's
    /// contents, cut from its padded payload).
    size: Option<u64>,
}

/// What writing one job (an image, or the images of one compressed bundle) needs.
struct Writer<'w> {
    config: &'w ExtractConfig,
    inputs: &'w [Input],
    archives: &'w ArchiveFiles,
    chosen: &'w [Chosen],
    stems: &'w [PathBuf],
    budget: &'w Budget,
    progress: &'w dyn Progress,
    /// The folder the outputs are made in.
    fresh: &'w FreshFolder,
}

impl Writer<'_> {
    /// Writes every chosen image, in parallel (`bar`: starting `progress` with their bytes):
    /// the files written, not yet in place, and the
    /// input files whose images could not all be written. An image that cannot be written
    /// (its compressed bundle or archive turns out damaged when inflated) takes every image
    /// of its input file with it.
    fn write_all(&self, bar: bool) -> (Vec<Written>, Failed) {
        let chosen = self.chosen;
        if bar {
            self.progress
                .start(chosen.iter().map(|c| c.image.size).sum());
        }
        let singles = (0..chosen.len()).filter(|&i| !matches!(chosen[i].bytes, Bytes::Stream(_)));
        let jobs: Vec<Vec<usize>> = singles
            .map(|i| vec![i])
            .chain(stream_groups(chosen))
            .collect();
        // Each output is closed once written: as many files are open as threads write, and
        // the images of the compressed bundles they inflate.
        let results: Vec<Result<Vec<Written>>> =
            jobs.par_iter().map(|job| self.write(job)).collect();
        let mut failed = Failed::new();
        let mut written: Vec<Written> = Vec::new();
        for (job, result) in jobs.iter().zip(results) {
            match result {
                Ok(images) => written.extend(images),
                Err(e) => {
                    failed.entry(chosen[job[0]].input).or_insert(e);
                }
            }
        }
        (written, failed)
    }

    /// Writes the images `job` (indices among the chosen): one stored as it is, or those of
    /// one compressed bundle, as its stream is inflated.
    fn write(&self, job: &[usize]) -> Result<Vec<Written>> {
        let mut pending: Vec<Pending> = job
            .iter()
            .map(|&index| Pending::new(index, self.fresh))
            .collect();
        let Some(&first) = job.first() else {
            return Ok(Vec::new());
        };
        let c = &self.chosen[first];
        let stem = &self.stems[first];
        match &c.bytes {
            Bytes::Archived(number, code) => {
                self.write_archived(c, *number, code, stem, &mut pending[0])?;
            }
            Bytes::Cuda(held, stored) => {
                let out = pending[0].create(with_extension(stem, c.ext))?;
                let size = self.write_cuda(c, held, stored, out)?;
                pending[0].size = Some(size);
            }
            Bytes::Input(..) | Bytes::Owned(_) => {
                let bytes = c.bytes(self.inputs);
                let out = pending[0].create(with_extension(stem, c.ext))?;
                out.write_part(&self.inputs[c.input], bytes)?;
                self.progress.advance(bytes.len() as u64);
            }
            Bytes::Stream(_) => self.write_streamed(job, &mut pending)?,
        }
        let finished: Vec<Result<Written>> = pending
            .into_iter()
            .map(|p| {
                let index = p.index;
                p.finish(&self.chosen[index], &self.stems[index])
            })
            .collect();
        if finished.iter().any(Result::is_err) {
            // The images of the job that were finished go with the one that was not.
            for w in finished.iter().flatten() {
                self.fresh.remove(w.path.file_name().unwrap_or_default())?;
            }
        }
        finished.into_iter().collect()
    }

    /// Writes the code object `code` of archive `number`, chosen as `c`, to `p`: copied
    /// from the archive by the kernel when stored as it is, else inflated.
    fn write_archived(
        &self,
        c: &Chosen,
        number: usize,
        code: &StoredCodeObject,
        stem: &Path,
        p: &mut Pending<'_>,
    ) -> Result<()> {
        if let Some((input, bytes)) = kpack::stored_plain(self.archives, number, code)? {
            let out = p.create(with_extension(stem, extension(&c.image, bytes)))?;
            out.write_part(input, bytes)?;
            input.release(bytes);
            self.progress.advance(bytes.len() as u64);
            return Ok(());
        }
        let limit = self.config.max_decompressed;
        kpack::code_object(
            self.archives,
            number,
            code,
            self.budget,
            limit,
            &mut |piece| {
                self.progress.advance(piece.len() as u64);
                p.take(piece, c, stem)
            },
        )
    }

    /// Writes the images `job` of one compressed bundle to `pending`, as its stream is
    /// inflated.
    fn write_streamed(&self, job: &[usize], pending: &mut [Pending<'_>]) -> Result<()> {
        let chosen = self.chosen;
        inflate_group(
            self.config,
            self.inputs,
            chosen,
            job,
            self.budget,
            |k, piece| {
                self.progress.advance(piece.len() as u64);
                let p = &mut pending[k];
                p.take(piece, &chosen[p.index], &self.stems[p.index])
            },
        )
    }

    /// Writes the contents of the CUDA entry `c`, whose payload is `held` and stored as
    /// `stored`, to `out`: copied from the input when stored plain, else inflated through a
    /// window within the budget, never held whole. Gives the bytes written.
    fn write_cuda(
        &self,
        c: &Chosen,
        held: &Held,
        stored: &Stored,
        out: &mut Output,
    ) -> Result<u64> {
        let input = &self.inputs[c.input];
        let payload = held.get(input);
        if stored.compression == Compression::None {
            let contents = c
                .cuda_contents(self.config, self.inputs)
                .unwrap_or_else(|| Ok(Default::default()))?;
            out.write_part(input, &contents)?;
            self.progress.advance(contents.len() as u64);
            return Ok(contents.len() as u64);
        }
        // An error writing stops the inflation; it is the error returned.
        let mut stopped = None;
        let limit = self.config.max_decompressed;
        let written = self.budget.run(memory_of_cuda(stored), |decoding| {
            stored.contents_to(payload, limit, decoding, &mut |piece| {
                self.progress.advance(piece.len() as u64);
                out.write_bytes(piece).map_err(|e| {
                    stopped = Some(e);
                    crate::format::Error::new(0, ErrorKind::Decompress("stopped".into()))
                })
            })
        });
        input.release(payload);
        match stopped {
            Some(e) => Err(e.into()),
            None => written.map_err(|e| c.cuda_error(self.config, e)),
        }
    }
}

/// An image being written as its stream is inflated: its first bytes are held until they
/// tell its extension (an ELF code object, bitcode, SPIR-V). Left unfinished (its input
/// failed), it is removed from the folder being built.
struct Pending<'w> {
    index: usize,
    head: Vec<u8>,
    out: Option<(PathBuf, Output)>,
    /// The bytes written, when known to differ from the listed size.
    size: Option<u64>,
    /// The folder the output is made in.
    fresh: &'w FreshFolder,
}

/// Bytes that tell an image's kind.
const MAGIC_LEN: usize = 4;

impl<'w> Pending<'w> {
    /// Nothing written yet of the chosen image `index`, to be made in `fresh`.
    fn new(index: usize, fresh: &'w FreshFolder) -> Pending<'w> {
        Pending {
            index,
            head: Vec::new(),
            out: None,
            size: None,
            fresh,
        }
    }

    /// Creates the output at `path` (in the new folder by its name, if there is one).
    fn create(&mut self, path: PathBuf) -> Result<&mut Output> {
        let out = self
            .fresh
            .create(path.file_name().unwrap_or_default(), &path)?;
        let (_, out) = self.out.insert((path, out));
        Ok(out)
    }

    /// Writes the next bytes of the image.
    fn take(&mut self, piece: &[u8], c: &Chosen, stem: &Path) -> Result<()> {
        if let Some((_, out)) = &mut self.out {
            return Ok(out.write_bytes(piece)?);
        }
        self.head.extend_from_slice(piece);
        if self.head.len() >= MAGIC_LEN {
            self.open(c, stem)?;
        }
        Ok(())
    }

    /// Creates the output, named by what the first bytes say, and writes them.
    fn open(&mut self, c: &Chosen, stem: &Path) -> Result<()> {
        let head = std::mem::take(&mut self.head);
        let out = self.create(with_extension(stem, extension(&c.image, &head)))?;
        Ok(out.write_bytes(&head)?)
    }

    /// Closes the output, once every byte is written.
    fn finish(mut self, c: &Chosen, stem: &Path) -> Result<Written> {
        let (path, out) = match self.out.take() {
            Some(open) => open,
            None => {
                self.open(c, stem)?;
                match self.out.take() {
                    Some(open) => open,
                    None => return Err(Error::msg("an output was not opened")),
                }
            }
        };
        if let Err(e) = out.close() {
            // Taken out, as an unfinished output is when dropped.
            let _ = self.fresh.remove(path.file_name().unwrap_or_default());
            return Err(e.into());
        }
        Ok(Written {
            index: self.index,
            path,
            size: self.size,
        })
    }
}

impl Drop for Pending<'_> {
    fn drop(&mut self) {
        // Not finished: its input failed, and none of that input's images stay.
        if let Some((path, _)) = self.out.take() {
            let _ = self.fresh.remove(path.file_name().unwrap_or_default());
        }
    }
}
