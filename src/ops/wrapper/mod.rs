//! `offload wrapper`: the host code that embeds device images and registers them with the
//! offload runtime at startup.
//!
//! Two personalities share it: clang-offload-wrapper's (OpenMP images with their target IDs,
//! as ROCm's LLVM 14 wraps them) and LLVM 22's `llvm-offload-wrapper` (one module for the
//! OpenMP, CUDA or HIP runtime). The wrapper is written as a native relocatable object
//! (ELF x86-64 and AArch64, COFF x86-64; no LLVM needed), as LLVM IR text, or as bitcode.
//!
//! - `native` and `native22`: the two personalities' objects, built on `layout` (what every
//!   object shares, and the streaming of the images into place);
//! - `x86` and `a64`: the assemblers their registration code is written with;
//! - `ir`: the IR text of both personalities.

mod a64;
mod ir;
mod labels;
mod layout;
mod native;
mod native22;
mod x86;

use ir::{assemble, bitcode};
pub use ir::{llvm22_ir, llvm_ir};
use layout::{unsupported, Host};
use native::native_object;
use native22::native_object22;

use std::fs::File;
use std::path::{Path, PathBuf};

use crate::error::{Error, Result};
use crate::io::{Input, Output};

/// What to wrap.
#[derive(Debug, Clone, Default)]
pub struct WrapperConfig {
    /// The host target triple.
    pub target: String,
    /// The output; its extension chooses the kind: `.o`/`.obj`, `.ll`, `.bc`.
    pub output: PathBuf,
    /// The device images.
    pub images: Vec<PathBuf>,
    /// The target ID of each image, in order (fewer than the images: the rest have none).
    pub arches: Vec<String>,
}

fn name(base: &str, index: usize) -> String {
    if index == 0 {
        base.to_string()
    } else {
        format!("{base}.{index}")
    }
}

/// Writes the wrapper `config` asks for.
#[tracing::instrument(skip_all, fields(output = %config.output.display(), target = %config.target))]
pub fn wrap(config: &WrapperConfig) -> Result<()> {
    if config.arches.len() > config.images.len() {
        return Err(Error::msg(format!(
            "{} --offload-arch options for {} images: each --offload-arch names the image after it",
            config.arches.len(),
            config.images.len()
        )));
    }
    let extension = config
        .output
        .extension()
        .map(|e| e.to_string_lossy().to_lowercase())
        .unwrap_or_default();
    let arch = |i: usize| config.arches.get(i).map_or("", String::as_str);
    let arches: Vec<&str> = (0..config.images.len()).map(arch).collect();
    let log = |path: &Path, i: usize, size: u64| {
        let arch = (!arch(i).is_empty()).then_some(arch(i));
        tracing::info!(arch, size, "wrapping {}", path.display());
    };
    if matches!(extension.as_str(), "o" | "obj") {
        let host = Host::of(&config.target).ok_or_else(|| unsupported(&config.target))?;
        let images = open_images(&config.images)?;
        for (i, (path, image)) in config.images.iter().zip(&images).enumerate() {
            log(path, i, image.len());
        }
        let lens: Vec<u64> = images.iter().map(Image::len).collect();
        let object = native_object(host, &lens, &arches)?;
        return write_object(&object, &images, &config.output);
    }
    let images: Vec<Input> = config
        .images
        .iter()
        .map(|p| Input::open(p))
        .collect::<Result<_>>()?;
    for (i, (path, image)) in config.images.iter().zip(&images).enumerate() {
        log(path, i, image.len() as u64);
    }
    let bytes = match extension.as_str() {
        "ll" => llvm_ir(&config.target, &images, &arches).into_bytes(),
        "bc" => bitcode(&config.target, &images, &arches, &config.output)?,
        _ => {
            return Err(Error::msg(format!(
            "'{}': the output must end in .o or .obj (an object), .ll (LLVM IR) or .bc (bitcode)",
            config.output.display()
        )))
        }
    };
    let mut out = Output::create(&config.output)?;
    out.write_bytes(&bytes)?;
    out.commit()?;
    tracing::info!(size = bytes.len(), "written");
    Ok(())
}

/// Opens each of `paths` as an [`Image`].
fn open_images(paths: &[PathBuf]) -> Result<Vec<Image>> {
    paths.iter().map(|p| Image::open(p)).collect()
}

/// Writes the laid-out `object` to `output`, its images copied in from `images`.
fn write_object(object: &layout::Laid, images: &[Image], output: &Path) -> Result<()> {
    let mut out = Output::create(output)?;
    object.write(&mut out, images)?;
    out.commit()?;
    tracing::info!(size = object.size(), "written");
    Ok(())
}

/// A device image to copy into a native object: a regular file, copied range by range and
/// never held, or the bytes of anything else (standard input, a pipe).
enum Image {
    File { file: File, len: u64 },
    Bytes(Input),
}

impl Image {
    /// Opens `path`: a regular file is only opened; anything else is read as [`Input`] reads it.
    fn open(path: &Path) -> Result<Image> {
        if path.as_os_str() != "-" {
            let file = File::open(path).map_err(|e| Error::io(path, e))?;
            let meta = file.metadata().map_err(|e| Error::io(path, e))?;
            if meta.is_file() {
                return Ok(Image::File {
                    file,
                    len: meta.len(),
                });
            }
        }
        Input::open(path).map(Image::Bytes)
    }

    fn len(&self) -> u64 {
        match self {
            Image::File { len, .. } => *len,
            Image::Bytes(input) => input.len() as u64,
        }
    }
}

/// The runtime an `llvm-offload-wrapper` module registers its image with.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum OffloadKind {
    /// libomptarget: a `__tgt_bin_desc` of the images, `__tgt_register_lib`.
    OpenMp,
    /// The CUDA runtime: one fat binary in `.nvFatBinSegment`, `__cudaRegisterFatBinary`.
    Cuda,
    /// The HIP runtime: one fat binary in `.hipFatBinSegment`, `__hipRegisterFatBinary`.
    Hip,
}

/// What `llvm-offload-wrapper` (LLVM 22) is asked to wrap.
#[derive(Debug, Clone)]
pub struct OffloadWrapperConfig {
    /// The runtime to register with.
    pub kind: OffloadKind,
    /// The host target triple of the module.
    pub triple: String,
    /// The output.
    pub output: PathBuf,
    /// What the output is.
    pub file_type: FileType,
    /// The images (one for CUDA and HIP).
    pub images: Vec<PathBuf>,
}

/// What file a wrapper module is written as.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum FileType {
    /// A native relocatable object (ELF or COFF, by the triple).
    Object,
    /// LLVM IR text.
    IrText,
    /// LLVM bitcode.
    Bitcode,
}

impl FileType {
    /// The file type an output's extension names: `.o` and `.obj` an object, `.ll` IR text,
    /// anything else bitcode.
    pub fn of(output: &Path) -> FileType {
        let extension = output
            .extension()
            .map(|e| e.to_string_lossy().to_lowercase())
            .unwrap_or_default();
        match extension.as_str() {
            "o" | "obj" => FileType::Object,
            "ll" => FileType::IrText,
            _ => FileType::Bitcode,
        }
    }
}

/// Writes the module of LLVM 22's offload wrapper that `config` asks for: a native object
/// (the images copied into place, never held), IR text, or bitcode (through `llvm-as`).
#[tracing::instrument(skip_all, fields(output = %config.output.display(), kind = ?config.kind))]
pub fn wrap_llvm22(config: &OffloadWrapperConfig) -> Result<()> {
    // As LLVM: the images are opened before their number is checked.
    let check_count = || {
        if config.kind != OffloadKind::OpenMp && config.images.len() != 1 {
            return Err(Error::msg(
                "CUDA / HIP offloading uses a single fatbinary or offload bundle",
            ));
        }
        Ok(())
    };
    if config.file_type == FileType::Object {
        let host = Host::of(&config.triple).ok_or_else(|| unsupported(&config.triple))?;
        let images = open_images(&config.images)?;
        check_count()?;
        for (path, image) in config.images.iter().zip(&images) {
            tracing::info!(size = image.len(), "wrapping {}", path.display());
        }
        let lens: Vec<u64> = images.iter().map(Image::len).collect();
        let object = native_object22(config.kind, host, &lens)?;
        return write_object(&object, &images, &config.output);
    }
    let images: Vec<Input> = config
        .images
        .iter()
        .map(|p| Input::open(p))
        .collect::<Result<_>>()?;
    check_count()?;
    let ir = llvm22_ir(config.kind, &config.triple, &images);
    let bytes = if config.file_type == FileType::IrText {
        ir.into_bytes()
    } else {
        assemble(ir, &config.output)?
    };
    let mut out = Output::create(&config.output)?;
    out.write_bytes(&bytes)?;
    out.commit()
}
