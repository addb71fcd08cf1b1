//! `offload wrapper`: the host code that embeds device images and registers them with the
//! offload runtime at startup.
//!
//! Two personalities share it: clang-offload-wrapper's (OpenMP images with their target IDs,
//! as ROCm's LLVM 14 wraps them) and LLVM 22's `llvm-offload-wrapper` (one module for the
//! OpenMP, CUDA or HIP runtime). The wrapper is written as a native relocatable object (ELF
//! x86-64 and AArch64, COFF x86-64), as LLVM IR text, or as bitcode, all without LLVM; the
//! images are copied from their files into objects and bitcode, never held.
//!
//! - `ir`: clang-offload-wrapper's module, and what the modules share;
//! - `offload` and `sycl`: the modules of `llvm-offload-wrapper` 22 and 23, as LLVM builds
//!   them;
//! - `exact`: those modules as LLVM 22's and 23's bitcode, byte for byte, the images streamed
//!   into place (clang-offload-wrapper's bitcode is the compact writer's).
//!
//! # Example
//!
//! Wrap a bundle into a host object that registers it with the HIP runtime, as LLVM 22's
//! `llvm-offload-wrapper --kind=hip` does, and find its entries in the object.
//!
//! ```
//! use offload::format::{bundle, ccob::DEFAULT_MAX_DECOMPRESSED};
//! use offload::ops::ls;
//! use offload::ops::wrapper::{self, FileType, OffloadKind, OffloadWrapperConfig, Relocatable};
//! use offload::target::processor::LlvmVersion;
//!
//! # fn main() -> Result<(), Box<dyn std::error::Error>> {
//! let dir = tempfile::tempdir()?;
//! let fatbin = dir.path().join("kernels.hipfb");
//! let entries: [(&str, &[u8]); 2] = [
//!     ("host-x86_64-unknown-linux-gnu-", b""),
//!     ("hipv4-amdgcn-amd-amdhsa--gfx90a", b"code for gfx90a"),
//! ];
//! std::fs::write(&fatbin, bundle::to_vec(&entries, 4096))?;
//! let output = dir.path().join("wrapper.o");
//! wrapper::wrap_llvm22(&OffloadWrapperConfig {
//!     kind: OffloadKind::Hip,
//!     triple: "x86_64-unknown-linux-gnu".into(),
//!     output: output.clone(),
//!     file_type: FileType::of(&output),
//!     images: vec![fatbin],
//!     bundle: None,
//!     llvm: LlvmVersion::V22,
//!     relocatable: Relocatable::No,
//! })?;
//! assert!(std::fs::read(&output)?.starts_with(b"\x7fELF"));
//!
//! let (images, _) = ls::list_file(&output, DEFAULT_MAX_DECOMPRESSED)?;
//! let targets: Vec<&str> = images.iter().map(|image| image.target_id.as_str()).collect();
//! assert_eq!(targets, ["", "gfx90a"]);
//! # Ok(())
//! # }
//! ```

mod exact;
pub(crate) mod ir;
pub(crate) mod offload;
mod sycl;

pub use ir::{Made, Relocatable};

use crate::codegen::clang_offload_wrapper::native_object;
use crate::codegen::layout::{self, unsupported, Host, Image};
use crate::codegen::llvm_offload_wrapper::native_object22;
use crate::llvm::ir::bitcode;
use crate::llvm::ir::module::Module;

use std::path::{Path, PathBuf};

use crate::error::{Error, Result};
use crate::io::{Input, Output, Temporary};
use crate::llvm::bitcode::writer::Part;

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
        .and_then(|e| e.to_str().map(str::to_lowercase))
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
        let lens = image_lens(&images);
        for (i, (path, len)) in config.images.iter().zip(&lens).enumerate() {
            log(path, i, *len);
        }
        let object = native_object(host, &lens, &arches)?;
        return write_object(&object, &images, &config.output);
    }
    match extension.as_str() {
        "ll" => {
            let images = open_inputs(&config.images)?;
            let lens = input_lens(&images);
            for (i, (path, len)) in config.images.iter().zip(&lens).enumerate() {
                log(path, i, *len);
            }
            let module = ir::clang_offload_wrapper(&config.target, &lens, &arches);
            write_ir(&module, &images, &config.output)
        }
        "bc" => {
            let images = open_images(&config.images)?;
            let lens = image_lens(&images);
            for (i, (path, len)) in config.images.iter().zip(&lens).enumerate() {
                log(path, i, *len);
            }
            let module = ir::clang_offload_wrapper(&config.target, &lens, &arches);
            write_bitcode(&module, &images, &config.output)
        }
        _ => Err(Error::file(
            &config.output,
            "the output must end in .o or .obj (an object), .ll (LLVM IR) or .bc (bitcode)",
        )),
    }
}

fn open_images(paths: &[PathBuf]) -> Result<Vec<Image>> {
    paths.iter().map(|p| Image::open(p)).collect()
}

fn open_inputs(paths: &[PathBuf]) -> Result<Vec<Input>> {
    paths.iter().map(|p| Ok(Input::open(p)?)).collect()
}

fn image_lens(images: &[Image]) -> Vec<u64> {
    images.iter().map(Image::len).collect()
}

fn input_lens(images: &[Input]) -> Vec<u64> {
    images.iter().map(|i| i.len() as u64).collect()
}

/// Writes the laid-out `object` to `output`, its images copied in from `images`.
fn write_object(object: &layout::Laid, images: &[Image], output: &Path) -> Result<()> {
    let mut out = Output::create(output)?;
    object.write(&mut out, images)?;
    out.commit()?;
    tracing::info!(size = object.size(), "written");
    Ok(())
}

/// Writes `module`, whose images are `images`, as IR text to `output`.
fn write_ir(module: &Module, images: &[Input], output: &Path) -> Result<()> {
    let bytes: Vec<&[u8]> = images.iter().map(|i| &i[..]).collect();
    let text = module.to_ir(&bytes);
    let mut out = Output::create(output)?;
    out.write_bytes(text.as_bytes())?;
    out.commit()?;
    tracing::info!(size = text.len(), "written");
    Ok(())
}

/// Writes `module` as bitcode to `output`: the bitstream around the images, then each image
/// copied from its file into its place.
fn write_bitcode(module: &Module, images: &[Image], output: &Path) -> Result<()> {
    let stream = bitcode::write(module).map_err(|e| Error::file(output, e.to_string()))?;
    let mut out = Output::create(output)?;
    for part in &stream.parts {
        match part {
            Part::Bytes(bytes) => out.write_bytes(bytes)?,
            Part::Hole { id, .. } => images[*id].write_to(&mut out)?,
            Part::Elements(_) => unreachable!("the compact writer leaves blobs"),
        }
    }
    out.commit()?;
    tracing::info!(size = stream.len(), "written");
    Ok(())
}

pub use crate::codegen::llvm_offload_wrapper::OffloadKind;

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
    /// The images (one for CUDA and HIP, unless HIP code objects are bundled).
    pub images: Vec<PathBuf>,
    /// For HIP: bundle AMDGPU code objects into one fat binary before wrapping it, as clang
    /// does (`None`: wrap the images as they are, as LLVM's tool does).
    pub bundle: Option<HipBundling>,
    /// The release whose module is written (22 or 23).
    pub llvm: crate::target::processor::LlvmVersion,
    /// `--relocatable` (LLVM 23, OpenMP).
    pub relocatable: Relocatable,
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
            .and_then(|e| e.to_str().map(str::to_lowercase))
            .unwrap_or_default();
        match extension.as_str() {
            "o" | "obj" => FileType::Object,
            "ll" => FileType::IrText,
            _ => FileType::Bitcode,
        }
    }
}

/// How HIP code objects are bundled into the fat binary a HIP wrapper registers.
#[derive(Debug, Clone, Default)]
pub struct HipBundling {
    /// The target ID of each image, in order; an empty or missing one is read from the code
    /// object's ELF header.
    pub arches: Vec<String>,
    /// Compress the bundle (a CCOB of the LLVM 22 bundler's format).
    pub compress: Option<crate::format::ccob::CompressOptions>,
}

/// Writes the module of LLVM 22's offload wrapper that `config` asks for, as a native object
/// (the images copied into place, never held), bitcode or IR text.
#[tracing::instrument(skip_all, fields(output = %config.output.display(), kind = ?config.kind))]
pub fn wrap_llvm22(config: &OffloadWrapperConfig) -> Result<()> {
    let bundled = match (&config.bundle, config.kind) {
        (Some(bundling), OffloadKind::Hip) => Some(hip_fat_binary(config, bundling)?),
        _ => None,
    };
    let paths = match &bundled {
        Some(file) => vec![file.path().to_path_buf()],
        None => config.images.clone(),
    };
    let check = |count: usize| {
        let single = matches!(config.kind, OffloadKind::Cuda | OffloadKind::Hip);
        if single && count != 1 {
            return Err(Error::msg(
                "CUDA / HIP offloading uses a single fatbinary or offload bundle",
            ));
        }
        Ok(())
    };
    let made = Made {
        kind: config.kind,
        llvm: config.llvm,
        relocatable: config.relocatable,
    };
    let native = made.kind == OffloadKind::Sycl || made.relocatable == Relocatable::Yes;
    if config.file_type == FileType::Object && native {
        return Err(Error::msg(
            "--kind=sycl and --relocatable are written as bitcode or IR text (--filetype=bc or ll), not as a native object",
        ));
    }
    if config.file_type == FileType::Object {
        let host = Host::of(&config.triple).ok_or_else(|| unsupported(&config.triple))?;
        let images = open_images(&paths)?;
        check(images.len())?;
        let lens = image_lens(&images);
        for (path, len) in paths.iter().zip(&lens) {
            tracing::info!(size = len, "wrapping {}", path.display());
        }
        let object = native_object22(config.kind, host, &lens)?;
        return write_object(&object, &images, &config.output);
    }
    if config.file_type == FileType::IrText {
        let images = open_inputs(&paths)?;
        check(images.len())?;
        let inner: Vec<_> = images
            .iter()
            .map(|input| {
                offload::inner_image(&mut |at, buffer: &mut [u8]| {
                    let at = usize::try_from(at).unwrap_or(usize::MAX);
                    let bytes = at
                        .checked_add(buffer.len())
                        .and_then(|end| input.get(at..end));
                    bytes.map(|b| buffer.copy_from_slice(b)).is_some()
                })
            })
            .collect();
        let module = wrapper_module(&made, &config.triple, &input_lens(&images), &inner);
        return write_ir(&module, &images, &config.output);
    }
    let images = open_images(&paths)?;
    check(images.len())?;
    let inner: Vec<_> = images.iter().map(exact::inner_image).collect();
    let mut module = wrapper_module(&made, &config.triple, &image_lens(&images), &inner);
    let release = match made.llvm {
        crate::target::processor::LlvmVersion::V23 => &crate::llvm::ir::exact::LLVM_23,
        _ => &crate::llvm::ir::exact::LLVM_22,
    };
    exact::write_bitcode_as(&mut module, &images, &config.output, release)
}

/// The module of `llvm-offload-wrapper` that `made` describes, of images of lengths `lens`
/// (for OpenMP, the part `inner[i]` of image `i` registered, when it is an offload binary).
fn wrapper_module(made: &Made, triple: &str, lens: &[u64], inner: &[Option<(u64, u64)>]) -> Module {
    match made.kind {
        OffloadKind::Sycl => sycl::module(triple, lens.first().copied().unwrap_or(0)),
        _ => offload::llvm_offload_wrapper_of(made, triple, lens, inner),
    }
}

/// The HIP fat binary of `config`'s code objects, as clang makes it: a bundle with an empty
/// host entry and one `hipv4-amdgcn-amd-amdhsa--ID` entry per code object, sorted by target
/// ID, 4096-byte aligned, optionally compressed; written to a temporary file beside the
/// output.
fn hip_fat_binary(config: &OffloadWrapperConfig, bundling: &HipBundling) -> Result<Temporary> {
    use crate::ops::bundler::{self, BundlerConfig};
    use crate::target::processor::code_object_target_id;
    let mut entries = Vec::with_capacity(config.images.len());
    for (i, path) in config.images.iter().enumerate() {
        // The bundler reads each input itself, and standard input can be read only once.
        if path.as_os_str() == "-" {
            return Err(Error::msg(
                "standard input cannot be bundled: name each code object's file",
            ));
        }
        let given = bundling.arches.get(i).filter(|a| !a.is_empty());
        let id = match given {
            Some(id) => id.clone(),
            None => {
                let input = Input::open(path)?;
                code_object_target_id(&input).ok_or_else(|| {
                    Error::file(path, "not an AMDGPU code object whose processor is known; name its target ID with --offload-arch")
                })?
            }
        };
        entries.push((id, path.clone()));
    }
    entries.sort();
    if let Some(pair) = entries.windows(2).find(|pair| pair[0].0 == pair[1].0) {
        return Err(Error::msg(format!(
            "'{}' and '{}' are both for {}: a fat binary holds one code object per target ID",
            pair[0].1.display(),
            pair[1].1.display(),
            pair[0].0
        )));
    }
    let host = config.triple.as_str();
    let mut targets = vec![format!("host-{host}")];
    let mut inputs = vec![PathBuf::from("/dev/null")];
    for (id, path) in entries {
        targets.push(format!("hipv4-amdgcn-amd-amdhsa--{id}"));
        inputs.push(path);
    }
    let dir = match config.output.parent() {
        Some(dir) if !dir.as_os_str().is_empty() => dir.to_path_buf(),
        _ => PathBuf::from("."),
    };
    let file = Temporary::new_in(&dir, ".hipfb")?;
    let bundler_config = BundlerConfig {
        file_type: "o".to_string(),
        targets,
        inputs,
        outputs: vec![file.path().to_path_buf()],
        bundle_align: 4096,
        compress: bundling.compress,
        llvm: config.llvm,
        ..BundlerConfig::default()
    };
    bundler::bundle(&bundler_config, &mut std::io::sink())?;
    Ok(file)
}
