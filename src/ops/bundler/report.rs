//! What the bundler prints beside its work, worded as clang-offload-bundler 19 prints it: the
//! compression statistics of `-verbose`, and for `-###` the `llvm-objcopy` commands it would run.

use crate::format::ccob::{self, CompressOptions, CompressStats, CompressedBundle};
use std::io::Write;
use std::path::{Path, PathBuf};

/// Prints the statistics of a compression, as LLVM's `-verbose` does.
pub(super) fn compression(
    log: &mut dyn Write,
    options: &CompressOptions,
    stats: &CompressStats,
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

/// Prints the statistics of a decompression that succeeded: the stream's size and hash are the
/// header's, checked.
pub(super) fn decompression(log: &mut dyn Write, bundle: &CompressedBundle<'_>, seconds: f64) {
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

/// Prints, for `-###`, the command that would add the bundle sections `names` to the host
/// input: each target's input file as its section, the host's a temporary file.
pub(super) fn add_sections_command(
    log: &mut dyn Write,
    names: &[String],
    inputs: &[PathBuf],
    host_index: usize,
    output: &Path,
) {
    let marker = temporary_name();
    let mut args = vec![objcopy()];
    for (k, name) in names.iter().enumerate() {
        let file = if k == host_index {
            marker.clone()
        } else {
            inputs[k].display().to_string()
        };
        args.push(format!("--add-section={name}={file}"));
        args.push(format!("--set-section-flags={name}=readonly,exclude"));
    }
    args.push("--".into());
    args.push(inputs[host_index].display().to_string());
    args.push(output.display().to_string());
    print_command(log, &args);
}

/// Prints, for `-###`, the command that would copy the host object `input` without its bundle
/// sections.
pub(super) fn remove_sections_command(log: &mut dyn Write, input: &Path) {
    print_command(
        log,
        &[
            objcopy(),
            "--regex".into(),
            format!("--remove-section={}.*", crate::host::BUNDLE_SECTION_PREFIX),
            "--".into(),
            input.display().to_string(),
            temporary_name(),
        ],
    );
}

/// The `llvm-objcopy` clang-offload-bundler would run: the one beside the program, else the
/// first on `PATH`. Only printed.
fn objcopy() -> String {
    let beside = std::env::current_exe()
        .ok()
        .and_then(|exe| exe.parent().map(|dir| dir.join("llvm-objcopy")));
    beside
        .filter(|p| p.is_file())
        .or_else(|| crate::ops::support::tool_path::on_path("llvm-objcopy"))
        .map(|p| p.display().to_string())
        .unwrap_or_else(|| "llvm-objcopy".to_string())
}

/// Prints a command as LLVM's `-###` does: every argument double-quoted, separated by spaces.
fn print_command(log: &mut dyn Write, args: &[String]) {
    let quoted: Vec<String> = args.iter().map(|a| format!("\"{a}\"")).collect();
    let _ = writeln!(log, "{}", quoted.join(" "));
}

/// A temporary file name in the form clang-offload-bundler uses.
fn temporary_name() -> String {
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

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn thousands_separators() {
        assert_eq!(thousands(0), "0");
        assert_eq!(thousands(999), "999");
        assert_eq!(thousands(1234), "1,234");
        assert_eq!(thousands(1234567), "1,234,567");
    }
}
