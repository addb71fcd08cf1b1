//! clang-offload-bundler's operations: bundle, unbundle and list, with LLVM 19's checks, orders
//! and messages, on binary, text and compressed bundles.

use crate::container::objcopy::{self, AddedSection, Rewritten};
use crate::error::{Error, Result};
use crate::format::bundle::{self, Bundle};
use crate::format::ccob::{self, CompressOptions, CompressedBundle, Method};
use crate::format::entry_id::EntryId;
use crate::format::string_map::StringMap;
use crate::format::target_id::conflicting_pair;
use crate::format::text_bundle;
use crate::io::{Closed, Input, Output};
use std::collections::{BTreeMap, BTreeSet};
use std::io::Write;
use std::path::{Path, PathBuf};
use std::time::Instant;

/// Everything a bundler run needs, as clang-offload-bundler's options give it.
#[derive(Debug, Clone)]
pub struct BundlerConfig {
    /// The `-type` value.
    pub file_type: String,
    /// The `-targets` values, as given.
    pub targets: Vec<String>,
    /// Input files.
    pub inputs: Vec<PathBuf>,
    /// Output files.
    pub outputs: Vec<PathBuf>,
    /// Alignment of entry payloads in binary bundles.
    pub bundle_align: u64,
    /// Write empty outputs instead of failing when targets are missing.
    pub allow_missing_bundles: bool,
    /// Treat `hip*` and `openmp` entries as compatible.
    pub hip_openmp_compatible: bool,
    /// Compress bundled output with these settings.
    pub compress: Option<CompressOptions>,
    /// Print compression statistics.
    pub verbose: bool,
    /// `-check-input-archive`.
    pub check_input_archive: bool,
    /// The largest decompressed bundle accepted.
    pub max_decompressed: u64,
    /// `-###`: for host objects, print the `llvm-objcopy` command clang-offload-bundler would
    /// run instead of writing the object (the output is left empty, as LLVM leaves it).
    pub dry_run: bool,
}

impl Default for BundlerConfig {
    fn default() -> Self {
        BundlerConfig {
            file_type: String::new(),
            targets: Vec::new(),
            inputs: Vec::new(),
            outputs: Vec::new(),
            bundle_align: 1,
            allow_missing_bundles: false,
            hip_openmp_compatible: false,
            compress: None,
            verbose: false,
            check_input_archive: false,
            max_decompressed: ccob::DEFAULT_MAX_DECOMPRESSED,
            dry_run: false,
        }
    }
}

/// How the bundler reads and writes a file type.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Handler {
    /// Text entries between comment lines with this comment marker.
    Text(&'static str),
    /// A binary bundle header followed by payloads.
    Binary,
    /// Entries as sections of a host object file.
    Object,
}

/// Chooses the handler for `file_type` given the reference buffer (the host input when
/// bundling, the input when unbundling): `o` and `a` use the object handler only when the
/// buffer is an object file, as LLVM does, and the binary handler otherwise.
pub fn handler_for(file_type: &str, reference: &[u8]) -> Result<Handler> {
    if let Some(comment) = text_bundle::comment_for_type(file_type) {
        return Ok(Handler::Text(comment));
    }
    match file_type {
        "bc" | "gch" | "ast" => Ok(Handler::Binary),
        "o" | "a" if crate::container::is_object_file(reference) => Ok(Handler::Object),
        "o" | "a" => Ok(Handler::Binary),
        other => Err(Error::msg(format!(
            "'{other}': invalid file type specified"
        ))),
    }
}

/// The `llvm-objcopy` clang-offload-bundler would run: the one beside the program, else the
/// first on `PATH`. Only printed, for `-###`.
fn objcopy_for_display() -> String {
    let beside = std::env::current_exe()
        .ok()
        .and_then(|exe| exe.parent().map(|dir| dir.join("llvm-objcopy")));
    let on_path = || {
        std::env::var_os("PATH").and_then(|paths| {
            std::env::split_paths(&paths)
                .map(|dir| dir.join("llvm-objcopy"))
                .find(|candidate| candidate.is_file())
        })
    };
    beside
        .filter(|p| p.is_file())
        .or_else(on_path)
        .map(|p| p.display().to_string())
        .unwrap_or_else(|| "llvm-objcopy".to_string())
}

/// Prints a command as LLVM's `-###` does: every argument double-quoted, separated by spaces.
fn print_command(log: &mut dyn Write, args: &[String]) {
    let quoted: Vec<String> = args.iter().map(|a| format!("\"{a}\"")).collect();
    let _ = writeln!(log, "{}", quoted.join(" "));
}

/// A temporary file name in the form clang-offload-bundler uses, for `-###` listings.
fn temporary_name_for_display() -> String {
    let nanos = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| d.subsec_nanos());
    let dir = std::env::temp_dir();
    format!(
        "{}/clang-offload-bundler-{:06x}.tmp",
        dir.display().to_string().trim_end_matches('/'),
        (nanos ^ std::process::id()) & 0xff_ffff
    )
}

/// Writes a rewritten object, copying its large pieces from the input files that hold them.
pub(crate) fn write_object(out: &mut Output, inputs: &[&Input], object: &Rewritten) -> Result<()> {
    const ZEROS: [u8; 4096] = [0; 4096];
    let zeros = |out: &mut Output, mut n: u64| -> Result<()> {
        while n > 0 {
            let k = n.min(ZEROS.len() as u64) as usize;
            out.write_bytes(&ZEROS[..k])?;
            n -= k as u64;
        }
        Ok(())
    };
    let mut at = 0;
    for piece in &object.pieces {
        zeros(out, piece.offset - at)?;
        match inputs.iter().find(|input| input.holds(&piece.data)) {
            Some(input) => out.write_part(input, &piece.data)?,
            None => out.write_bytes(&piece.data)?,
        }
        at = piece.offset + piece.data.len() as u64;
    }
    zeros(out, object.size - at)
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
        .map(|n| format!("{}{n}", crate::container::BUNDLE_SECTION_PREFIX))
        .collect();
    if config.dry_run {
        let marker = temporary_name_for_display();
        let mut args = vec![objcopy_for_display()];
        for (k, name) in names.iter().enumerate() {
            let file = if k == host_index {
                marker.clone()
            } else {
                config.inputs[k].display().to_string()
            };
            args.push(format!("--add-section={name}={file}"));
            args.push(format!("--set-section-flags={name}=readonly,exclude"));
        }
        args.push("--".into());
        args.push(config.inputs[host_index].display().to_string());
        args.push(output_path.display().to_string());
        print_command(log, &args);
        // LLVM leaves the output as its in-memory bundle, which is empty for objects.
        return Output::create(output_path)?.commit();
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
        .map_err(|e| Error::format(host_path, e))?;
    let mut output = Output::create(output_path)?;
    let sources: Vec<&Input> = inputs.iter().collect();
    write_object(&mut output, &sources, &object)?;
    output.commit()
}

/// The result of checking the targets: their parsed and standardised forms.
#[derive(Debug, Clone)]
pub struct CheckedTargets {
    /// Each target parsed, in `-targets` order.
    pub parsed: Vec<EntryId>,
    /// The standardised name of each target (what LLVM writes into bundles).
    pub names: Vec<String>,
    /// Index of the host target, if any.
    pub host_index: Option<usize>,
    /// Whether every target is `hip` or `hipv4`, which makes a host target optional.
    pub hip_only: bool,
}

impl BundlerConfig {
    /// The checks clang-offload-bundler 19 makes before it reads any input, in its order and
    /// with its messages: options that do not go together, counts of inputs, outputs and
    /// targets, duplicate and invalid targets, conflicting target IDs, the host target.
    pub fn check(&self, unbundle: bool) -> Result<CheckedTargets> {
        if self.check_input_archive {
            if !unbundle {
                return Err(Error::msg(
                    "-check-input-archive cannot be used while bundling",
                ));
            }
            if self.file_type != "a" {
                return Err(Error::msg(
                    "-check-input-archive can only be used for unbundling archives (-type=a)",
                ));
            }
        }
        if self.outputs.is_empty() {
            return Err(Error::msg("no output file specified!"));
        }
        if self.targets.is_empty() {
            return Err(Error::msg(
                "for the --targets option: must be specified at least once!",
            ));
        }
        if unbundle {
            if self.inputs.len() != 1 {
                return Err(Error::msg(
                    "only one input file supported in unbundling mode",
                ));
            }
            if self.outputs.len() != self.targets.len() {
                return Err(Error::msg(
                    "number of output files and targets should match in unbundling mode",
                ));
            }
        } else {
            if self.file_type == "a" {
                return Err(Error::msg(
                    "Archive files are only supported for unbundling",
                ));
            }
            if self.outputs.len() != 1 {
                return Err(Error::msg(
                    "only one output file supported in bundling mode",
                ));
            }
            if self.inputs.len() != self.targets.len() {
                return Err(Error::msg(
                    "number of input files and targets should match in bundling mode",
                ));
            }
        }
        let mut seen = BTreeSet::new();
        let mut groups: BTreeMap<String, BTreeSet<String>> = BTreeMap::new();
        let mut parsed = Vec::with_capacity(self.targets.len());
        let mut host_count = 0;
        let mut host_index = None;
        let mut hip_only = true;
        for (index, target) in self.targets.iter().enumerate() {
            if !seen.insert(target.as_str()) {
                return Err(Error::msg("Duplicate targets are not allowed"));
            }
            let id = EntryId::parse(target);
            let (kind_ok, triple_ok) = (id.is_kind_valid(), id.is_triple_valid());
            if !kind_ok || !triple_ok {
                let mut msg = format!("invalid target '{target}'");
                if !kind_ok {
                    msg += &format!(", unknown offloading kind '{}'", id.kind);
                }
                if !triple_ok {
                    msg += &format!(", unknown target triple '{}'", id.triple.as_str());
                }
                return Err(Error::msg(msg));
            }
            groups
                .entry(id.kind_and_triple())
                .or_default()
                .insert(id.target_id.clone());
            if id.is_host() {
                host_count += 1;
                host_index = Some(index);
            }
            hip_only &= id.kind == "hip" || id.kind == "hipv4";
            parsed.push(id);
        }
        for (group, ids) in &groups {
            if let Some((a, b)) = conflicting_pair(ids.iter().map(String::as_str)) {
                return Err(Error::msg(format!(
                    "Cannot bundle inputs with conflicting targets: '{group}-{a}' and '{group}-{b}'"
                )));
            }
        }
        if (!unbundle && host_count != 1 && !hip_only) || (unbundle && host_count > 1) {
            return Err(Error::msg(format!(
                "expecting exactly one host target but got {host_count}"
            )));
        }
        let names: Vec<String> = parsed.iter().map(ToString::to_string).collect();
        // Two spellings of one target (`...-gfx906` and `...--gfx906`) would be written under
        // one ID; LLVM 19 then writes a bundle whose records point at the wrong payloads.
        for (i, name) in names.iter().enumerate() {
            if let Some(j) = names[..i].iter().position(|n| n == name) {
                return Err(Error::msg(format!(
                    "Duplicate targets are not allowed: '{}' and '{}' are both written as '{name}'",
                    self.targets[j], self.targets[i]
                )));
            }
        }
        Ok(CheckedTargets {
            parsed,
            names,
            host_index,
            hip_only,
        })
    }
}

/// Groups digits in threes with commas, as LLVM's verbose statistics print sizes.
fn thousands(n: u64) -> String {
    let digits = n.to_string();
    let mut out = String::new();
    for (i, c) in digits.chars().enumerate() {
        if i > 0 && (digits.len() - i) % 3 == 0 {
            out.push(',');
        }
        out.push(c);
    }
    out
}

fn mb_per_s(bytes: u64, seconds: f64) -> f64 {
    if seconds > 0.0 {
        bytes as f64 / (1024.0 * 1024.0) / seconds
    } else {
        0.0
    }
}

/// Bundles the inputs into the one output: binary or text by `-type`, optionally compressed.
/// Payloads are copied from the mapped inputs straight to the output when not compressing.
#[tracing::instrument(skip_all, fields(files = ?config.inputs, targets = ?config.targets))]
pub fn bundle(config: &BundlerConfig, log: &mut dyn Write) -> Result<()> {
    let targets = config.check(false)?;
    let output_path = &config.outputs[0];
    if let Some(options) = &config.compress {
        check_compressed_size(config, &targets, options)?;
    }
    let inputs = config
        .inputs
        .iter()
        .map(|p| Input::open(p))
        .collect::<Result<Vec<_>>>()?;
    let reference = if targets.hip_only {
        0
    } else {
        targets.host_index.unwrap_or(0)
    };
    let handler = match (
        handler_for(&config.file_type, &inputs[reference])?,
        targets.host_index,
    ) {
        (Handler::Object, Some(host_index)) => {
            return bundle_object(config, &targets, &inputs, host_index, log);
        }
        // Without a host there is no object to add sections to (LLVM 19 crashes here): the
        // device code is bundled as it is when the first input is not an object.
        (Handler::Object, None) => Handler::Binary,
        (handler, _) => handler,
    };
    if config.bundle_align == 0 && handler == Handler::Binary {
        return Err(Error::msg("-bundle-align must be at least 1"));
    }
    let entries: Vec<(&str, &[u8])> = targets
        .names
        .iter()
        .map(String::as_str)
        .zip(inputs.iter().map(|i| &i[..]))
        .collect();
    let mut output = Output::create(output_path)?;
    match config.compress {
        None => stream_bundle(
            &mut output,
            handler,
            &inputs,
            &targets.names,
            config.bundle_align,
        )?,
        Some(options) => {
            let mut plain = Vec::new();
            write_bundle(&mut plain, handler, &entries, config.bundle_align)
                .map_err(|e| Error::io(output_path, e))?;
            let start = Instant::now();
            let (compressed, stats) =
                ccob::compress(&plain, &options).map_err(|e| Error::format(output_path, e))?;
            if config.verbose {
                report_compression(log, &options, &stats, start.elapsed().as_secs_f64());
            }
            output.write_bytes(&compressed)?;
        }
    }
    output.commit()
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
    let reference = if targets.hip_only {
        0
    } else {
        targets.host_index.unwrap_or(0)
    };
    if matches!(config.file_type.as_str(), "o" | "a") && targets.host_index.is_some() {
        let host = Input::open(&config.inputs[reference])?;
        if handler_for(&config.file_type, &host)? == Handler::Object {
            return Ok(());
        }
    }
    Err(Error::format(&config.outputs[0], e))
}

/// Writes the bundle straight from the inputs: headers and markers from memory, payloads
/// copied from the input files.
fn stream_bundle(
    out: &mut Output,
    handler: Handler,
    inputs: &[Input],
    names: &[String],
    align: u64,
) -> Result<()> {
    let path = out.path().to_path_buf();
    match handler {
        Handler::Text(comment) => {
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

fn write_bundle(
    out: &mut dyn Write,
    handler: Handler,
    entries: &[(&str, &[u8])],
    align: u64,
) -> std::io::Result<()> {
    match handler {
        Handler::Text(comment) => text_bundle::write(out, comment, entries),
        _ => bundle::write(out, entries, align),
    }
}

fn report_compression(
    log: &mut dyn Write,
    options: &CompressOptions,
    stats: &ccob::CompressStats,
    seconds: f64,
) {
    let header = ccob::header_size(options.version).unwrap_or(0);
    let after = stats.total - header;
    let rate = stats.uncompressed as f64 / after.max(1) as f64;
    let _ = writeln!(
        log,
        "Compressed bundle format version: {}\n\
         Total file size (including headers): {} bytes\n\
         Compression method used: {}\n\
         Compression level: {}\n\
         Binary size before compression: {} bytes\n\
         Binary size after compression: {} bytes\n\
         Compression rate: {:.2}\n\
         Compression ratio: {:.2}%\n\
         Compression speed: {:.2} MB/s\n\
         Truncated MD5 hash: {:#018x}",
        options.version,
        thousands(stats.total),
        options.method.name(),
        options.level,
        thousands(stats.uncompressed),
        thousands(after),
        rate,
        100.0 / rate,
        mb_per_s(stats.uncompressed, seconds),
        stats.hash
    );
}

/// The contents of a bundler input once decompressed: the file itself, or the decompressed
/// bundles of the compressed bundles it holds one after another.
pub enum Contents<'a> {
    /// The input was not compressed.
    Plain(&'a [u8]),
    /// Each compressed bundle decompressed, with its offset in the input.
    Decompressed(Vec<(u64, Vec<u8>)>),
}

impl Contents<'_> {
    /// Each buffer with a description of where it came from (for error messages).
    pub fn buffers(&self) -> Vec<(Option<String>, &[u8])> {
        match self {
            Contents::Plain(data) => vec![(None, *data)],
            Contents::Decompressed(parts) => parts
                .iter()
                .map(|(at, data)| {
                    (
                        Some(format!("compressed bundle at {at:#x}, decompressed")),
                        data.as_slice(),
                    )
                })
                .collect(),
        }
    }
}

/// Decompresses `data` (read from `path`) if it is compressed, checking each bundle's size
/// and hash. Compressed bundles placed one after another are all decompressed.
pub fn decompress_input<'a>(
    path: &Path,
    data: &'a [u8],
    config: &BundlerConfig,
    log: &mut dyn Write,
) -> Result<Contents<'a>> {
    if !ccob::is_compressed(data) {
        if config.verbose {
            let _ = writeln!(log, "Uncompressed bundle.");
        }
        return Ok(Contents::Plain(data));
    }
    let mut parts = Vec::new();
    // A damaged bundle inside is reported after every stream is checked, as it would be when
    // its entries are read.
    let mut damage = None;
    for part in ccob::split(data) {
        let (at, compressed) = part.map_err(|e| decompress_error(path, e))?;
        let start = Instant::now();
        let plain = compressed
            .inflate_bundle(config.max_decompressed)
            .map_err(|e| decompress_error(path, e.rebased(at)))?;
        if config.verbose {
            report_decompression(log, &compressed, start.elapsed().as_secs_f64());
        }
        match plain {
            Ok(plain) => parts.push((at, plain)),
            Err(e) => {
                damage.get_or_insert_with(|| {
                    Error::format_in(
                        path,
                        format!("compressed bundle at {at:#x}, decompressed"),
                        e,
                    )
                });
            }
        }
    }
    match damage {
        Some(e) => Err(e),
        None => Ok(Contents::Decompressed(parts)),
    }
}

/// A compressed input that cannot be decompressed, reported as LLVM words it, with the file and
/// the offset.
fn decompress_error(path: &Path, e: crate::format::Error) -> Error {
    Error::msg(format!(
        "Failed to decompress input: {} (in '{}' at offset {:#x})",
        e.kind,
        path.display(),
        e.offset
    ))
}

/// Reports a decompression that succeeded: the stream's size and hash are the header's, checked.
fn report_decompression(log: &mut dyn Write, bundle: &CompressedBundle<'_>, seconds: f64) {
    let _ = writeln!(log, "Compressed bundle format version: {}", bundle.version);
    if let Some(total) = bundle.total_size {
        let _ = writeln!(
            log,
            "Total file size (from header): {} bytes",
            thousands(total)
        );
    }
    let before = bundle.payload.len() as u64;
    let after = bundle.uncompressed_size;
    let rate = after as f64 / before.max(1) as f64;
    let computed = bundle.hash;
    let _ = writeln!(
        log,
        "Decompression method: {}\n\
         Size before decompression: {} bytes\n\
         Size after decompression: {} bytes\n\
         Compression rate: {:.2}\n\
         Compression ratio: {:.2}%\n\
         Decompression speed: {:.2} MB/s\n\
         Stored hash: {:#018x}\n\
         Recalculated hash: {:#018x}\n\
         Hashes match: {}",
        bundle.method.name(),
        thousands(before),
        thousands(after),
        rate,
        100.0 / rate,
        mb_per_s(after, seconds),
        bundle.hash,
        computed,
        if computed == bundle.hash { "Yes" } else { "No" }
    );
}

/// One entry read from a bundle, borrowing the (possibly decompressed) input.
#[derive(Debug, Clone, Copy)]
pub struct ReadEntry<'a> {
    /// The entry ID as stored.
    pub id: &'a str,
    /// The payload.
    pub data: &'a [u8],
}

/// Reads the entries of one buffer with `handler`, in the order LLVM 19 visits them: hash-map
/// order for binary bundles, file order for text bundles. A buffer that is not a bundle has no
/// entries.
pub fn read_entries<'a>(
    handler: Handler,
    data: &'a [u8],
) -> std::result::Result<Vec<ReadEntry<'a>>, crate::format::Error> {
    Ok(match handler {
        Handler::Text(comment) => text_bundle::parse(data, comment)?
            .into_iter()
            .map(|e| ReadEntry {
                id: e.id,
                data: e.data,
            })
            .collect(),
        Handler::Binary | Handler::Object => match Bundle::parse(data)? {
            None => Vec::new(),
            Some(b) => b
                .entries_in_llvm_order()
                .into_iter()
                .map(|e| ReadEntry {
                    id: e.id,
                    data: e.data,
                })
                .collect(),
        },
    })
}

fn entries_of<'a>(
    path: &Path,
    contents: &'a Contents<'_>,
    file_type: &str,
) -> Result<Vec<ReadEntry<'a>>> {
    let mut all = Vec::new();
    for (context, data) in contents.buffers() {
        let handler = handler_for(file_type, data)?;
        if handler == Handler::Object {
            let sections = crate::container::bundle_sections(data)
                .map_err(|e| Error::msg(format!("'{}': {e}", path.display())))?;
            all.extend(
                sections
                    .into_iter()
                    .map(|(id, data)| ReadEntry { id, data }),
            );
            continue;
        }
        let entries = read_entries(handler, data).map_err(|e| match &context {
            None => Error::format(path, e),
            Some(c) => Error::format_in(path, c, e),
        })?;
        all.extend(entries);
    }
    Ok(all)
}

/// Lists the entry IDs of the one input, one per line, in LLVM 19's order.
#[tracing::instrument(skip_all, fields(files = ?config.inputs))]
pub fn list(config: &BundlerConfig, out: &mut dyn Write, log: &mut dyn Write) -> Result<()> {
    let path = &config.inputs[0];
    let input = Input::open(path)?;
    let contents = decompress_input(path, &input, config, log)?;
    let entries = entries_of(path, &contents, &config.file_type)?;
    let mut text = String::new();
    for entry in entries {
        text.push_str(entry.id);
        text.push('\n');
    }
    out.write_all(text.as_bytes())
        .map_err(|e| Error::io("<stdout>", e))
}

/// Unbundles the one input into one output per target: each entry, visited in LLVM 19's order,
/// goes to the first remaining target (in hash-map order of the standardised names) it is
/// compatible with. Outputs appear only if the whole operation succeeds.
#[tracing::instrument(skip_all, fields(files = ?config.inputs, targets = ?config.targets))]
pub fn unbundle(config: &BundlerConfig, log: &mut dyn Write) -> Result<()> {
    let targets = config.check(true)?;
    if config.file_type == "a" {
        return crate::ops::archive::unbundle_archive(config, &targets.names);
    }
    let path = &config.inputs[0];
    let input = Input::open(path)?;
    let contents = decompress_input(path, &input, config, log)?;
    let entries = entries_of(path, &contents, &config.file_type)?;
    let is_object_input = contents
        .buffers()
        .iter()
        .any(|(_, data)| handler_for(&config.file_type, data).ok() == Some(Handler::Object));

    // LLVM compares entries with the standardised target names, parsed again: a host target
    // `host-x86_64-unknown-linux-gnu` is looked for as `host-x86_64-unknown-linux-gnu-`.
    let wanted: Vec<EntryId> = targets.names.iter().map(|n| EntryId::parse(n)).collect();
    let mut worklist: StringMap<usize> = StringMap::new();
    for (index, name) in targets.names.iter().enumerate() {
        worklist.insert(name.as_bytes(), index);
    }
    let mut found: Vec<Option<Found>> = vec![None; targets.names.len()];
    let mut found_host = false;
    for entry in &entries {
        if worklist.is_empty() {
            break;
        }
        let code = EntryId::parse(entry.id);
        let chosen = worklist.iter().find_map(|(name, index)| {
            let target = &wanted[*index];
            code.is_compatible_with(target, config.hip_openmp_compatible)
                .then(|| (name.to_vec(), *index))
        });
        let Some((name, index)) = chosen else {
            continue;
        };
        // In an object, an entry of one zero byte stands for the object itself (LLVM treats
        // any such entry so, host or not).
        let object = (entry.data == [0] && is_object_input)
            .then(|| {
                contents
                    .buffers()
                    .into_iter()
                    .map(|(_, data)| data)
                    .find(|data| holds(data, entry.data))
            })
            .flatten();
        found[index] = Some(match object {
            Some(object) => Found::Object(object),
            None => Found::Data(entry.data),
        });
        worklist.remove(&name);
        found_host |= code.is_host();
    }

    if !config.allow_missing_bundles && !worklist.is_empty() {
        let missing: BTreeSet<&[u8]> = worklist.iter().map(|(k, _)| k).collect();
        let names: Vec<String> = missing
            .into_iter()
            .map(|k| String::from_utf8_lossy(k).into_owned())
            .collect();
        return Err(Error::msg(format!(
            "Can't find bundles for{}",
            join_llvm_list(&names)
        )));
    }

    let nothing_matched = worklist.len() == targets.names.len();
    if !nothing_matched
        && !found_host
        && targets.host_index.is_some()
        && !config.allow_missing_bundles
    {
        return Err(Error::msg("Can't find bundle for the host target"));
    }
    let mut outputs: Vec<Closed> = Vec::with_capacity(config.outputs.len());
    for (index, out_path) in config.outputs.iter().enumerate() {
        let mut output = Output::create(out_path)?;
        if nothing_matched {
            // No entry matched any target: the input passes through as the host's code.
            if targets.parsed[index].is_host() {
                for (_, data) in contents.buffers() {
                    output.write_part(&input, data)?;
                }
            }
        } else if let Some(Found::Data(data)) = found[index] {
            output.write_part(&input, data)?;
        } else if let Some(Found::Object(object)) = found[index] {
            if config.dry_run {
                print_command(
                    log,
                    &[
                        objcopy_for_display(),
                        "--regex".into(),
                        format!(
                            "--remove-section={}.*",
                            crate::container::BUNDLE_SECTION_PREFIX
                        ),
                        "--".into(),
                        path.display().to_string(),
                        temporary_name_for_display(),
                    ],
                );
            } else {
                let prefix = crate::container::BUNDLE_SECTION_PREFIX.as_bytes();
                let host = objcopy::remove_sections(object, &|name| name.starts_with(prefix))
                    .map_err(|e| Error::format(path, e))?;
                write_object(&mut output, &[&input], &host)?;
            }
        }
        outputs.push(output.close()?);
    }
    crate::io::place_all(outputs)
}

/// What an unbundled target receives.
#[derive(Clone, Copy)]
enum Found<'a> {
    /// An entry's bytes.
    Data(&'a [u8]),
    /// The host object that holds the bundle, to be written without its bundle sections.
    Object(&'a [u8]),
}

/// Whether `part` lies inside `whole`.
fn holds(whole: &[u8], part: &[u8]) -> bool {
    let (base, start) = (whole.as_ptr() as usize, part.as_ptr() as usize);
    start >= base && start + part.len() <= base + whole.len()
}

/// Formats names as LLVM's "Can't find bundles for" message does: ` A`, ` A and B`,
/// ` A, B, and C`.
fn join_llvm_list(names: &[String]) -> String {
    let mut out = String::new();
    let last = names.len().saturating_sub(1);
    for (i, name) in names.iter().enumerate() {
        if i > 0 && names.len() > 2 {
            out.push(',');
        }
        out.push(' ');
        if i > 0 && i == last {
            out.push_str("and ");
        }
        out.push_str(name);
    }
    out
}

/// Reads the bundler's environment variables as LLVM 19 does: `OFFLOAD_BUNDLER_VERBOSE` and
/// `OFFLOAD_BUNDLER_COMPRESS` ("1" turns on, anything else off), `OFFLOAD_BUNDLER_COMPRESSION_LEVEL`
/// (an integer), all ignored when `OFFLOAD_BUNDLER_IGNORE_ENV_VAR=1`; and
/// `COMPRESSED_BUNDLE_FORMAT_VERSION` (2 or 3), which newer LLVM honours. Returns the verbose
/// setting, the compression setting, the compression options and any warnings to print.
pub fn settings_from_env(env: impl Fn(&str) -> Option<String>) -> EnvSettings {
    let mut settings = EnvSettings {
        verbose: None,
        compress: None,
        options: CompressOptions {
            method: Method::Zstd,
            level: Method::Zstd.default_level(),
            version: 2,
        },
        warnings: Vec::new(),
    };
    if env("OFFLOAD_BUNDLER_IGNORE_ENV_VAR").as_deref() == Some("1") {
        return settings;
    }
    settings.verbose = env("OFFLOAD_BUNDLER_VERBOSE").map(|v| v == "1");
    settings.compress = env("OFFLOAD_BUNDLER_COMPRESS").map(|v| v == "1");
    if let Some(level) = env("OFFLOAD_BUNDLER_COMPRESSION_LEVEL") {
        match level.parse::<i32>() {
            Ok(l) => settings.options.level = l,
            Err(_) => settings.warnings.push(format!(
                "Warning: Invalid value for OFFLOAD_BUNDLER_COMPRESSION_LEVEL: {level}. Ignoring it."
            )),
        }
    }
    if let Some(version) = env("COMPRESSED_BUNDLE_FORMAT_VERSION") {
        match version.as_str() {
            "2" => settings.options.version = 2,
            "3" => settings.options.version = 3,
            other => settings.warnings.push(format!(
                "Warning: Invalid value for COMPRESSED_BUNDLE_FORMAT_VERSION: {other}. Valid values are 2 or 3. Using default version 2."
            )),
        }
    }
    settings
}

/// Settings the environment gives the bundler.
#[derive(Debug, Clone)]
pub struct EnvSettings {
    /// Verbose, if the environment says.
    pub verbose: Option<bool>,
    /// Compress, if the environment says.
    pub compress: Option<bool>,
    /// Compression options (level and version from the environment, defaults otherwise).
    pub options: CompressOptions,
    /// Warnings to print about values that were ignored.
    pub warnings: Vec<String>,
}

#[cfg(test)]
mod tests {
    use super::*;

    fn config(targets: &[&str], inputs: usize) -> BundlerConfig {
        BundlerConfig {
            file_type: "bc".into(),
            targets: targets.iter().map(|s| s.to_string()).collect(),
            inputs: (0..inputs)
                .map(|i| PathBuf::from(format!("in{i}")))
                .collect(),
            outputs: vec![PathBuf::from("out")],
            ..Default::default()
        }
    }

    fn check_err(c: &BundlerConfig, unbundle: bool) -> String {
        c.check(unbundle).unwrap_err().to_string()
    }

    #[test]
    fn checks_give_llvm_messages() {
        let c = config(
            &[
                "host-x86_64-unknown-linux-gnu",
                "host-x86_64-unknown-linux-gnu",
            ],
            2,
        );
        assert_eq!(check_err(&c, false), "Duplicate targets are not allowed");
        let c = config(&["foo"], 1);
        assert_eq!(
            check_err(&c, false),
            "invalid target 'foo', unknown offloading kind 'foo', unknown target triple '---'"
        );
        let c = config(
            &[
                "host-x86_64-unknown-linux-gnu",
                "hipv4-amdgcn-amd-amdhsa--gfx90a",
                "hipv4-amdgcn-amd-amdhsa--gfx90a:xnack+",
            ],
            3,
        );
        assert_eq!(
            check_err(&c, false),
            "Cannot bundle inputs with conflicting targets: 'hipv4-amdgcn-amd-amdhsa--gfx90a' and 'hipv4-amdgcn-amd-amdhsa--gfx90a:xnack+'"
        );
        let c = config(&["openmp-amdgcn-amd-amdhsa--gfx906"], 1);
        assert_eq!(
            check_err(&c, false),
            "expecting exactly one host target but got 0"
        );
        assert!(c.check(true).is_ok());
        let c = config(
            &[
                "hipv4-amdgcn-amd-amdhsa--gfx906",
                "hip-amdgcn-amd-amdhsa--gfx90a",
            ],
            2,
        );
        let checked = c.check(false).unwrap();
        assert!(checked.hip_only);
        assert_eq!(
            checked.names,
            [
                "hipv4-amdgcn-amd-amdhsa--gfx906",
                "hip-amdgcn-amd-amdhsa--gfx90a"
            ]
        );
        let c = config(&["host-x86_64-unknown-linux-gnu"], 2);
        assert_eq!(
            check_err(&c, false),
            "number of input files and targets should match in bundling mode"
        );
    }

    #[test]
    fn missing_lists_read_as_llvm_writes_them() {
        let n = |v: &[&str]| join_llvm_list(&v.iter().map(|s| s.to_string()).collect::<Vec<_>>());
        assert_eq!(n(&["a"]), " a");
        assert_eq!(n(&["a", "b"]), " a and b");
        assert_eq!(n(&["a", "b", "c"]), " a, b, and c");
    }

    #[test]
    fn thousands_separators() {
        assert_eq!(thousands(0), "0");
        assert_eq!(thousands(999), "999");
        assert_eq!(thousands(1234), "1,234");
        assert_eq!(thousands(1234567), "1,234,567");
    }

    #[test]
    fn environment_follows_llvm_19() {
        let env = |pairs: &'static [(&'static str, &'static str)]| {
            move |k: &str| {
                pairs
                    .iter()
                    .find(|(n, _)| *n == k)
                    .map(|(_, v)| v.to_string())
            }
        };
        let s = settings_from_env(env(&[
            ("OFFLOAD_BUNDLER_COMPRESS", "yes"),
            ("OFFLOAD_BUNDLER_VERBOSE", "1"),
        ]));
        assert_eq!(s.compress, Some(false));
        assert_eq!(s.verbose, Some(true));
        let s = settings_from_env(env(&[
            ("OFFLOAD_BUNDLER_COMPRESS", "1"),
            ("OFFLOAD_BUNDLER_IGNORE_ENV_VAR", "1"),
        ]));
        assert_eq!(s.compress, None);
        let s = settings_from_env(env(&[
            ("OFFLOAD_BUNDLER_COMPRESSION_LEVEL", "abc"),
            ("COMPRESSED_BUNDLE_FORMAT_VERSION", "3"),
        ]));
        assert_eq!(s.options.level, 3);
        assert_eq!(s.options.version, 3);
        assert_eq!(
            s.warnings,
            ["Warning: Invalid value for OFFLOAD_BUNDLER_COMPRESSION_LEVEL: abc. Ignoring it."]
        );
    }
}
