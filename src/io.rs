//! Inputs mapped into memory; outputs written to a temporary file beside their destination and
//! renamed into place only when complete, so that a failure leaves no partial output.

use crate::error::{Error, Result};
use memmap2::Mmap;
use std::fs::{self, File, OpenOptions, Permissions};
use std::io::{self, Read, Seek, SeekFrom, Write};
use std::ops::Deref;
use std::os::unix::fs::PermissionsExt;
use std::path::{Path, PathBuf};
use tempfile::NamedTempFile;

/// The bytes of an input file: a memory map for regular files, a buffer otherwise (standard
/// input, devices, pipes, empty files). A regular file keeps its handle so that ranges of it
/// can be copied to an output by the kernel, without passing through this process's memory.
pub struct Input {
    data: Data,
    file: Option<File>,
}

enum Data {
    Mapped(Mmap),
    Owned(Vec<u8>),
}

impl Deref for Input {
    type Target = [u8];

    fn deref(&self) -> &[u8] {
        match &self.data {
            Data::Mapped(map) => map,
            Data::Owned(bytes) => bytes,
        }
    }
}

impl Input {
    /// Opens `path` (`-` for standard input) and maps or reads it.
    pub fn open(path: &Path) -> Result<Input> {
        if path.as_os_str() == "-" {
            let mut bytes = Vec::new();
            io::stdin()
                .lock()
                .read_to_end(&mut bytes)
                .map_err(|e| Error::io(path, e))?;
            return Ok(Input::from_bytes(bytes));
        }
        let mut file = File::open(path).map_err(|e| Error::io(path, e))?;
        let meta = file.metadata().map_err(|e| Error::io(path, e))?;
        if meta.is_dir() {
            return Err(Error::io(path, io::Error::from_raw_os_error(21)));
        }
        if meta.is_file() && meta.len() > 0 {
            // SAFETY: the map is read-only and private to this process. Another process
            // truncating the file while we read it would fault, as it would for any mmap
            // user; the inputs of a build step are not rewritten during it.
            let map = unsafe { Mmap::map(&file) }.map_err(|e| Error::io(path, e))?;
            return Ok(Input {
                data: Data::Mapped(map),
                file: Some(file),
            });
        }
        let mut bytes = Vec::new();
        file.read_to_end(&mut bytes)
            .map_err(|e| Error::io(path, e))?;
        Ok(Input::from_bytes(bytes))
    }

    /// An input held in memory.
    pub fn from_bytes(bytes: Vec<u8>) -> Input {
        Input {
            data: Data::Owned(bytes),
            file: None,
        }
    }

    /// Whether `part` is a slice of this input's bytes.
    pub fn holds(&self, part: &[u8]) -> bool {
        let base = self.as_ptr() as usize;
        let start = part.as_ptr() as usize;
        start >= base && start + part.len() <= base + self.len()
    }

    /// Where `part` (a slice of this input) starts in the file, if this input is a mapped
    /// file and `part` lies inside it.
    fn file_range(&self, part: &[u8]) -> Option<(&File, u64)> {
        let file = self.file.as_ref()?;
        let base = self.as_ptr() as usize;
        let start = (part.as_ptr() as usize).checked_sub(base)?;
        (start + part.len() <= self.len()).then_some((file, start as u64))
    }
}

/// The system's error for a temporary file that could not be made in `dir`, without the
/// temporary name that `tempfile` adds: messages name the destination instead.
fn plain_os_error(e: io::Error, dir: &Path) -> io::Error {
    if let Err(dir_error) = fs::metadata(dir) {
        return dir_error;
    }
    let code = match e.kind() {
        io::ErrorKind::NotFound => 2,
        io::ErrorKind::PermissionDenied => 13,
        io::ErrorKind::StorageFull => 28,
        io::ErrorKind::ReadOnlyFilesystem => 30,
        _ => return e,
    };
    io::Error::from_raw_os_error(code)
}

enum Sink {
    Temp(NamedTempFile, Option<Permissions>),
    Direct(File),
    Stdout(io::Stdout),
}

/// An output being written: to a temporary file in the destination's folder that
/// [`Output::commit`] renames into place, or straight to standard output (`-`) or to an
/// existing non-regular file such as `/dev/null`. Dropping an uncommitted output deletes the
/// temporary file.
pub struct Output {
    path: PathBuf,
    sink: io::BufWriter<SinkWriter>,
}

struct SinkWriter(Sink);

impl Write for SinkWriter {
    fn write(&mut self, buf: &[u8]) -> io::Result<usize> {
        match &mut self.0 {
            Sink::Temp(file, _) => file.write(buf),
            Sink::Direct(file) => file.write(buf),
            Sink::Stdout(out) => out.write(buf),
        }
    }

    fn flush(&mut self) -> io::Result<()> {
        match &mut self.0 {
            Sink::Temp(file, _) => file.flush(),
            Sink::Direct(file) => file.flush(),
            Sink::Stdout(out) => out.flush(),
        }
    }
}

impl Output {
    /// Starts writing `path` (`-` for standard output).
    pub fn create(path: &Path) -> Result<Output> {
        let sink = if path.as_os_str() == "-" {
            Sink::Stdout(io::stdout())
        } else {
            // A device or pipe named directly (`/dev/null`) is written to; anything else,
            // a symbolic link included, is replaced by a new file, never written through.
            match fs::symlink_metadata(path) {
                Ok(meta) if !meta.is_file() && !meta.is_dir() && !meta.file_type().is_symlink() => {
                    Sink::Direct(
                        OpenOptions::new()
                            .write(true)
                            .open(path)
                            .map_err(|e| Error::io(path, e))?,
                    )
                }
                _ => {
                    // The permissions of the file it replaces (through a link, its target's).
                    let keep = fs::metadata(path)
                        .ok()
                        .filter(|m| m.is_file())
                        .map(|m| m.permissions());
                    let dir = match path.parent() {
                        Some(p) if !p.as_os_str().is_empty() => p,
                        _ => Path::new("."),
                    };
                    let name = path
                        .file_name()
                        .map(|n| n.to_string_lossy().into_owned())
                        .unwrap_or_default();
                    let temp = tempfile::Builder::new()
                        .prefix(&format!(".{name}."))
                        .suffix(".tmp")
                        .permissions(Permissions::from_mode(0o666))
                        .tempfile_in(dir)
                        .map_err(|e| Error::io(path, plain_os_error(e, dir)))?;
                    Sink::Temp(temp, keep)
                }
            }
        };
        Ok(Output {
            path: path.to_path_buf(),
            sink: io::BufWriter::with_capacity(1 << 20, SinkWriter(sink)),
        })
    }

    /// The destination path.
    pub fn path(&self) -> &Path {
        &self.path
    }

    /// Writes all of `data`, naming the output on failure.
    pub fn write_bytes(&mut self, data: &[u8]) -> Result<()> {
        self.sink
            .write_all(data)
            .map_err(|e| Error::io(&self.path, e))
    }

    /// Writes `part`, a slice of `input`. When both are files the kernel copies the bytes
    /// (`copy_file_range`), so large payloads never pass through this process's memory.
    pub fn write_part(&mut self, input: &Input, part: &[u8]) -> Result<()> {
        let Some((file, offset)) = input.file_range(part) else {
            return self.write_bytes(part);
        };
        if part.len() < (64 << 10) || matches!(self.sink.get_ref().0, Sink::Stdout(_)) {
            return self.write_bytes(part);
        }
        self.sink.flush().map_err(|e| Error::io(&self.path, e))?;
        let target = match &mut self.sink.get_mut().0 {
            Sink::Temp(temp, _) => temp.as_file_mut(),
            Sink::Direct(file) => file,
            Sink::Stdout(_) => unreachable!("standard output is written above"),
        };
        let mut source = file;
        source
            .seek(SeekFrom::Start(offset))
            .map_err(|e| Error::io(&self.path, e))?;
        let copied = io::copy(&mut source.take(part.len() as u64), target)
            .map_err(|e| Error::io(&self.path, e))?;
        if copied != part.len() as u64 {
            return Err(Error::io(
                &self.path,
                io::Error::new(
                    io::ErrorKind::UnexpectedEof,
                    "input file shrank while being read",
                ),
            ));
        }
        Ok(())
    }

    /// Flushes what was written and returns the temporary file that holds it, to read it back
    /// before committing; `None` when the output is not a temporary file.
    pub fn written_so_far(&mut self) -> Result<Option<PathBuf>> {
        self.sink.flush().map_err(|e| Error::io(&self.path, e))?;
        Ok(match &self.sink.get_ref().0 {
            Sink::Temp(temp, _) => Some(temp.path().to_path_buf()),
            _ => None,
        })
    }

    /// Finishes the output: flushes it and renames the temporary file into place.
    pub fn commit(self) -> Result<()> {
        self.finish(false)
    }

    /// As [`Output::commit`], but the file's data reach the disk (fsync) before the rename,
    /// so that a crash leaves either the old file or the whole new one: for rewriting a file
    /// in place.
    pub fn commit_durably(self) -> Result<()> {
        self.finish(true)
    }

    fn finish(self, durable: bool) -> Result<()> {
        let path = self.path;
        let writer = self
            .sink
            .into_inner()
            .map_err(|e| Error::io(&path, e.into_error()))?;
        match writer.0 {
            Sink::Temp(temp, keep) => {
                if let Some(perms) = keep {
                    fs::set_permissions(temp.path(), perms).map_err(|e| Error::io(&path, e))?;
                }
                if durable {
                    temp.as_file().sync_all().map_err(|e| Error::io(&path, e))?;
                }
                temp.persist(&path).map_err(|e| Error::io(&path, e.error))?;
            }
            Sink::Direct(mut file) => file.flush().map_err(|e| Error::io(&path, e))?,
            Sink::Stdout(mut out) => out.flush().map_err(|e| Error::io(&path, e))?,
        }
        Ok(())
    }
}

impl Write for Output {
    fn write(&mut self, buf: &[u8]) -> io::Result<usize> {
        self.sink.write(buf)
    }

    fn flush(&mut self) -> io::Result<()> {
        self.sink.flush()
    }
}

/// Commits every output, in order, or none if one cannot be started.
pub fn commit_all(outputs: Vec<Output>) -> Result<()> {
    for output in outputs {
        output.commit()?;
    }
    Ok(())
}
