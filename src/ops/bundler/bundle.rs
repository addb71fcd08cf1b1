//! Bundling: many inputs, one per target, into one binary, text or compressed bundle, or into a
//! host object as sections, byte for byte as clang-offload-bundler 19 writes them.

use crate::error::{Error, Result};
use crate::format::bundle;
use crate::format::ccob::{self, CompressOptions};
use crate::format::text_bundle;
use crate::host::objcopy::{self, AddedSection};
use crate::io::{Input, Output};
use crate::ops::bundler::report;
use crate::ops::bundler::{BundleKind, BundlerConfig, CheckedTargets, Mode};
use std::io::Write;
use std::time::Instant;

/// Bundles the inputs into the one output: binary or text by `-type`, optionally compressed.
/// Payloads are copied from the mapped inputs straight to the output when not compressing.
#[tracing::instrument(skip_all, fields(files = ?config.inputs, targets = ?config.targets))]
pub fn bundle(config: &BundlerConfig, log: &mut dyn Write) -> Result<()> {
    let targets = config.check(Mode::Bundle)?;
    if let Some(options) = &config.compress {
        check_compressed_size(config, &targets, options)?;
    }
    let inputs = config
        .inputs
        .iter()
        .map(|p| Ok(Input::open(p)?))
        .collect::<Result<Vec<_>>>()?;
    let kind = match (
        BundleKind::of(&config.file_type, &inputs[targets.reference_input()])?,
        targets.host_index,
    ) {
        (BundleKind::Object, Some(host_index)) => {
            return bundle_object(config, &targets, &inputs, host_index, log);
        }
        // Without a host there is no object to add sections to (LLVM 19 crashes here): the
        // device code is bundled as it is when the first input is not an object.
        (BundleKind::Object, None) => BundleKind::Binary,
        (kind, _) => kind,
    };
    if config.bundle_align == 0 && kind == BundleKind::Binary {
        return Err(Error::msg("-bundle-align must be at least 1"));
    }
    let mut output = Output::create(&config.outputs[0])?;
    match config.compress {
        None => stream_bundle(
            &mut output,
            kind,
            &inputs,
            &targets.names,
            config.bundle_align,
        )?,
        Some(options) => {
            let compressed = compress_bundle(config, &targets, kind, &inputs, &options, log)?;
            output.write_bytes(&compressed)?;
        }
    }
    Ok(output.commit()?)
}

/// The bundle built in memory and compressed, with the statistics printed when verbose.
fn compress_bundle(
    config: &BundlerConfig,
    targets: &CheckedTargets,
    kind: BundleKind,
    inputs: &[Input],
    options: &CompressOptions,
    log: &mut dyn Write,
) -> Result<Vec<u8>> {
    let output_path = &config.outputs[0];
    let entries: Vec<(&str, &[u8])> = targets
        .names
        .iter()
        .map(String::as_str)
        .zip(inputs.iter().map(|i| &i[..]))
        .collect();
    let mut plain = Vec::new();
    match kind {
        BundleKind::Text(comment) => text_bundle::write(&mut plain, comment, &entries),
        _ => bundle::write(&mut plain, &entries, config.bundle_align),
    }
    .map_err(|e| Error::io(output_path, e))?;
    let start = Instant::now();
    let (compressed, stats) =
        ccob::compress(&plain, options).map_err(|e| Error::format(output_path, e))?;
    if config.verbose {
        report::compression(log, options, &stats, start.elapsed().as_secs_f64());
    }
    Ok(compressed)
}

/// Bundles into a host object: one `__CLANG_OFFLOAD_BUNDLE__<ID>` section per target, in
/// `-targets` order, the host's holding one zero byte; written as llvm-objcopy writes them.
fn bundle_object(
    config: &BundlerConfig,
    targets: &CheckedTargets,
    inputs: &[Input],
    host_index: usize,
    log: &mut dyn Write,
) -> Result<()> {
    let output_path = &config.outputs[0];
    let names: Vec<String> = targets
        .names
        .iter()
        .map(|n| format!("{}{n}", crate::host::BUNDLE_SECTION_PREFIX))
        .collect();
    if config.dry_run {
        report::add_sections_command(log, &names, &config.inputs, host_index, output_path);
        // LLVM leaves the output as its in-memory bundle, which is empty for objects.
        return Ok(Output::create(output_path)?.commit()?);
    }
    let added: Vec<AddedSection> = names
        .iter()
        .enumerate()
        .map(|(k, name)| AddedSection {
            name,
            data: if k == host_index {
                &[0]
            } else {
                &inputs[k][..]
            },
        })
        .collect();
    let host_path = &config.inputs[host_index];
    let object = objcopy::add_sections(&inputs[host_index], &added)
        .map_err(|e| Error::container(host_path, e))?;
    let mut output = Output::create(output_path)?;
    let sources: Vec<&Input> = inputs.iter().collect();
    object.write_to(&mut output, &sources)?;
    Ok(output.commit()?)
}

/// Refuses, before any input is read, a bundle too large for the compressed bundle version
/// asked for (version 2 holds sizes in 32 bits), with the error compressing it would give. The
/// size comes from the input files' sizes; inputs that are not plain files (standard input)
/// are left to the check made when compressing.
fn check_compressed_size(
    config: &BundlerConfig,
    targets: &CheckedTargets,
    options: &CompressOptions,
) -> Result<()> {
    let sizes: Option<Vec<(&str, u64)>> = targets
        .names
        .iter()
        .zip(&config.inputs)
        .map(|(name, path)| {
            let meta = std::fs::metadata(path).ok().filter(|m| m.is_file())?;
            Some((name.as_str(), meta.len()))
        })
        .collect();
    let Some(sizes) = sizes else {
        return Ok(());
    };
    let size = match text_bundle::comment_for_type(&config.file_type) {
        Some(comment) => text_bundle::size(comment, &sizes),
        // A layout that cannot be made is reported where the bundle is written.
        None => bundle::layout(&sizes, config.bundle_align).map_or(0, |layout| layout.size),
    };
    let Err(e) = options.check_size(size) else {
        return Ok(());
    };
    // A host object gets the device code as sections, uncompressed: no size to check.
    if matches!(config.file_type.as_str(), "o" | "a") && targets.host_index.is_some() {
        let host = Input::open(&config.inputs[targets.reference_input()])?;
        if BundleKind::of(&config.file_type, &host)? == BundleKind::Object {
            return Ok(());
        }
    }
    Err(Error::format(&config.outputs[0], e))
}

/// Writes the bundle straight from the inputs: headers and markers from memory, payloads
/// copied from the input files.
fn stream_bundle(
    out: &mut Output,
    kind: BundleKind,
    inputs: &[Input],
    names: &[String],
    align: u64,
) -> Result<()> {
    let path = out.path().to_path_buf();
    match kind {
        BundleKind::Text(comment) => {
            for (name, input) in names.iter().zip(inputs) {
                text_bundle::write_start(out, comment, name).map_err(|e| Error::io(&path, e))?;
                out.write_part(input, input)?;
                text_bundle::write_end(out, comment, name).map_err(|e| Error::io(&path, e))?;
            }
        }
        _ => {
            let sizes: Vec<(&str, u64)> = names
                .iter()
                .map(String::as_str)
                .zip(inputs.iter().map(|i| i.len() as u64))
                .collect();
            let plan = bundle::layout(&sizes, align).map_err(|e| Error::format(&path, e))?;
            out.write_bytes(&plan.header)?;
            let mut cursor = plan.header.len() as u64;
            for (input, offset) in inputs.iter().zip(&plan.offsets) {
                bundle::write_zeros(out, offset - cursor).map_err(|e| Error::io(&path, e))?;
                out.write_part(input, input)?;
                cursor = offset + input.len() as u64;
            }
        }
    }
    Ok(())
}
