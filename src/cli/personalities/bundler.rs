//! `offload bundler`: clang-offload-bundler's command line, options, messages and exit
//! statuses, as LLVM 19 or LLVM 22 has them, over the library's bundler operations.

use crate::cli::personalities::llvm_cl::{self, Kind, Spec};
use crate::format::ccob::{CompressOptions, Method};
use crate::ops::bundler::{self, BundlerConfig};
use crate::target::processor::LlvmVersion;
use std::io::Write;
use std::path::PathBuf;

const SPECS: &[Spec] = &[
    Spec {
        name: "type",
        kind: Kind::Value,
    },
    Spec {
        name: "targets",
        kind: Kind::CommaList,
    },
    Spec {
        name: "input",
        kind: Kind::List,
    },
    Spec {
        name: "inputs",
        kind: Kind::CommaList,
    },
    Spec {
        name: "output",
        kind: Kind::List,
    },
    Spec {
        name: "outputs",
        kind: Kind::CommaList,
    },
    Spec {
        name: "unbundle",
        kind: Kind::Flag,
    },
    Spec {
        name: "list",
        kind: Kind::Flag,
    },
    Spec {
        name: "allow-missing-bundles",
        kind: Kind::Flag,
    },
    Spec {
        name: "bundle-align",
        kind: Kind::Value,
    },
    Spec {
        name: "check-input-archive",
        kind: Kind::Flag,
    },
    Spec {
        name: "hip-openmp-compatible",
        kind: Kind::Flag,
    },
    Spec {
        name: "compress",
        kind: Kind::Flag,
    },
    Spec {
        name: "compression-level",
        kind: Kind::Value,
    },
    Spec {
        name: "compressed-bundle-version",
        kind: Kind::Value,
    },
    Spec {
        name: "compression-method",
        kind: Kind::Value,
    },
    Spec {
        name: "max-decompressed-size",
        kind: Kind::Value,
    },
    Spec {
        name: "verbose",
        kind: Kind::Flag,
    },
    Spec {
        name: "###",
        kind: Kind::Flag,
    },
    Spec {
        name: "help",
        kind: Kind::Flag,
    },
    Spec {
        name: "h",
        kind: Kind::Flag,
    },
    Spec {
        name: "help-hidden",
        kind: Kind::Flag,
    },
    Spec {
        name: "help-list",
        kind: Kind::Flag,
    },
    Spec {
        name: "help-list-hidden",
        kind: Kind::Flag,
    },
    Spec {
        name: "version",
        kind: Kind::Flag,
    },
];

const HELP: &str = "OVERVIEW: A tool to bundle several input files of the specified type <type>\x20
referring to the same source file but different targets into a single\x20
one. The resulting file can also be unbundled into different files by\x20
this tool if -unbundle is provided.

USAGE: PROG [options]

OPTIONS:

Generic Options:

  --help                  - Display available options (--help-hidden for more)
  --help-list             - Display list of available options (--help-list-hidden for more)
  --version               - Display the version of this program

clang-offload-bundler options:

  --###                   - Print any external commands that are to be executed instead of actually executing them - for testing purposes.
  --allow-missing-bundles - Create empty files if bundles are missing when unbundling.
  --bundle-align=<uint>   - Alignment of bundle for binary files
  --check-input-archive   - Check if input heterogeneous archive is valid in terms of TargetID rules.
  --compress              - Compress output file when bundling.
  --compression-level=<n> - Specify the compression level (integer)
  --hip-openmp-compatible - Treat hip and hipv4 offload kinds as compatible with openmp kind, and vice versa.
  --input=<string>        - Input file. Can be specified multiple times for multiple input files.
  --inputs=<string>       - [<input file>,...] (deprecated)
  --list                  - List bundle IDs in the bundled file.
  --output=<string>       - Output file. Can be specified multiple times for multiple output files.
  --outputs=<string>      - [<output file>,...] (deprecated)
  --targets=<string>      - [<offload kind>-<target triple>,...]
  --type=<string>         - Type of the files to be bundled/unbundled.
                            Current supported types are:
                              i    - cpp-output
                              ii   - c++-cpp-output
                              cui  - cuda-cpp-output
                              hipi - hip-cpp-output
                              d    - dependency
                              ll   - llvm
                              bc   - llvm-bc
                              s    - assembler
                              o    - object
                              a    - archive of objects
                              gch  - precompiled-header
                              ast  - clang AST file
  --unbundle              - Unbundle bundled file into several output files.
  --verbose               - Print debug information.

Extensions (not in LLVM 19):

  --compressed-bundle-version=<2|3> - Compressed bundle format to write (default DEFAULT_CCOB,
                                      or COMPRESSED_BUNDLE_FORMAT_VERSION from LLVM 22)
  --compression-method=<zstd|zlib>  - Compression method to write (default zstd)
  --max-decompressed-size=<bytes>   - Refuse compressed bundles larger than this when
                                      decompressed (default 16 GiB)
";

/// The command line this tool parses, for its manual page and the shell completions.
pub(crate) fn command() -> clap::Command {
    llvm_cl::command("clang-offload-bundler", SPECS, HELP, None)
}

/// Runs the bundler with `args` (without the program name), printing as `prog`. Returns the
/// exit status.
pub fn run(prog: &str, args: &[String], version: LlvmVersion) -> i32 {
    let env = |k: &str| std::env::var(k).ok();
    let stdout = std::io::stdout();
    let stderr = std::io::stderr();
    run_with(
        prog,
        args,
        version,
        env,
        &mut stdout.lock(),
        &mut stderr.lock(),
    )
}

fn run_with(
    prog: &str,
    args: &[String],
    version: LlvmVersion,
    env: impl Fn(&str) -> Option<String>,
    out: &mut dyn Write,
    err: &mut dyn Write,
) -> i32 {
    // Command-line parser messages start with the program's file name, as LLVM's do; the
    // others with the program as it was started.
    let base = llvm_cl::base_name(prog);
    let parsed = match llvm_cl::parse(args, SPECS) {
        Ok(p) => p,
        Err(errors) => {
            llvm_cl::print_errors(err, &base, prog, &errors, SPECS);
            // As LLVM's parser, which checks the required option after the others failed.
            if !args.iter().any(|a| names_type(a)) {
                let _ = writeln!(
                    err,
                    "{base}: for the --type option: must be specified at least once!"
                );
            }
            return 1;
        }
    };
    let help = HELP.replace(
        "DEFAULT_CCOB",
        &CompressOptions::default_version(version).to_string(),
    );
    let about = llvm_cl::About {
        help: &help,
        compatible_with: Some(match version {
            LlvmVersion::V19 => "LLVM 19.1.7",
            LlvmVersion::V22 => "LLVM 22.1.8",
            LlvmVersion::V23 => "LLVM 23.1.4",
        }),
        ..ABOUT
    };
    if let Some(code) = llvm_cl::help_or_version(prog, &parsed, &about, out, err) {
        return code;
    }
    let names = Names { prog, base: &base };
    match config(names, &parsed, version, &env, err) {
        Ok(config) => dispatch(names, &parsed, &config, out, err),
        Err(code) => code,
    }
}

/// Whether the argument `arg` is a `-type` option (`-type=o`, `--type o`).
fn names_type(arg: &str) -> bool {
    let body = arg.strip_prefix("--").or_else(|| arg.strip_prefix('-'));
    body.is_some_and(|b| b == "type" || b.starts_with("type="))
}

/// How messages name the program: `base` (its file name) starts the command-line parser's
/// messages, as in LLVM, and `prog` (as it was started) the others.
#[derive(Clone, Copy)]
struct Names<'a> {
    prog: &'a str,
    base: &'a str,
}

impl Names<'_> {
    /// Prints `PROG: error: message` and gives the exit status of a failure.
    fn fail(&self, err: &mut dyn Write, message: &str) -> i32 {
        let _ = writeln!(err, "{}: error: {message}", self.prog);
        1
    }
}

/// What `--help` and `--version` print (the release it stands in for is filled in by [`run`]).
const ABOUT: llvm_cl::About<'static> = llvm_cl::About {
    tool: "clang-offload-bundler",
    help: HELP,
    help_flags: llvm_cl::HELP_FLAGS,
    compatible_with: None,
};

/// The bundler's settings from the command line and the environment, checked in LLVM's order;
/// on a mistake, the message is printed and the exit status returned.
fn config(
    names: Names,
    parsed: &llvm_cl::Parsed,
    version: LlvmVersion,
    env: &impl Fn(&str) -> Option<String>,
    err: &mut dyn Write,
) -> Result<BundlerConfig, i32> {
    let prog = names.prog;
    if let Some(arg) = parsed.positional.first() {
        let _ = writeln!(
            err,
            "{prog}: Unknown command line argument '{arg}'.  Try: '{prog} --help'"
        );
        return Err(1);
    }
    let Some(file_type) = parsed.value("type") else {
        let _ = writeln!(
            err,
            "{prog}: for the --type option: must be specified at least once!"
        );
        return Err(1);
    };
    let env_settings = settings_from_env(env, version);
    for warning in &env_settings.warnings {
        let _ = writeln!(err, "{warning}");
    }
    let options = compress_options(names, parsed, env, env_settings.options, err)?;
    let bundle_align = bundle_align(names, parsed, err)?;
    let max_decompressed = max_decompressed(names, parsed, err)?;
    let compress = parsed.flag("compress").or(env_settings.compress);
    let verbose = parsed.flag("verbose").or(env_settings.verbose);
    let inputs = paths(names, parsed, "input", err)?;
    let outputs = paths(names, parsed, "output", err)?;
    Ok(BundlerConfig {
        file_type: file_type.to_string(),
        targets: parsed.list("targets"),
        inputs,
        outputs,
        bundle_align,
        allow_missing_bundles: parsed.flag("allow-missing-bundles").unwrap_or(false),
        hip_openmp_compatible: parsed.flag("hip-openmp-compatible").unwrap_or(false),
        compress: compress.unwrap_or(false).then_some(options),
        verbose: verbose.unwrap_or(false),
        check_input_archive: parsed.flag("check-input-archive").unwrap_or(false),
        max_decompressed,
        dry_run: parsed.flag("###").unwrap_or(false),
        llvm: version,
    })
}

/// The compression options: the environment's, overridden by `-compression-level`,
/// `-compression-method` (which brings its own default level unless a level was given) and
/// `-compressed-bundle-version`.
fn compress_options(
    names: Names,
    parsed: &llvm_cl::Parsed,
    env: &impl Fn(&str) -> Option<String>,
    mut options: CompressOptions,
    err: &mut dyn Write,
) -> Result<CompressOptions, i32> {
    if let Some(level) = parsed.value("compression-level") {
        match llvm_cl::parse_int(level) {
            Some(l) => options.level = l,
            None => {
                let _ = writeln!(
                    err,
                    "{}: for the --compression-level option: '{level}' value invalid for integer argument!",
                    names.base
                );
                return Err(1);
            }
        }
    }
    if let Some(method) = parsed.value("compression-method") {
        let explicit_level =
            parsed.given("compression-level") || env("OFFLOAD_BUNDLER_COMPRESSION_LEVEL").is_some();
        options.method = match method {
            "zstd" => Method::Zstd,
            "zlib" => Method::Zlib,
            other => {
                let message = format!("'{other}': unknown compression method (use zstd or zlib)");
                return Err(names.fail(err, &message));
            }
        };
        if !explicit_level {
            options.level = options.method.default_level();
        }
    }
    if let Some(version) = parsed.value("compressed-bundle-version") {
        options.version = match version {
            "2" => 2,
            "3" => 3,
            other => {
                let message = format!("'{other}': compressed bundle version must be 2 or 3");
                return Err(names.fail(err, &message));
            }
        };
    }
    Ok(options)
}

/// `-bundle-align`: an LLVM `uint`, 1 when not given.
fn bundle_align(names: Names, parsed: &llvm_cl::Parsed, err: &mut dyn Write) -> Result<u64, i32> {
    let Some(text) = parsed.value("bundle-align") else {
        return Ok(1);
    };
    llvm_cl::parse_uint(text).map(u64::from).ok_or_else(|| {
        let _ = writeln!(
            err,
            "{}: for the --bundle-align option: '{text}' value invalid for uint argument!",
            names.base
        );
        1
    })
}

/// `-max-decompressed-size`: a number of bytes, the library's limit when not given.
fn max_decompressed(
    names: Names,
    parsed: &llvm_cl::Parsed,
    err: &mut dyn Write,
) -> Result<u64, i32> {
    let Some(text) = parsed.value("max-decompressed-size") else {
        return Ok(crate::format::ccob::DEFAULT_MAX_DECOMPRESSED);
    };
    text.parse::<u64>().map_err(|_| {
        let message = format!("'{text}': --max-decompressed-size takes a number of bytes");
        names.fail(err, &message)
    })
}

/// The files of `-input` (or `-output`, as `option` says) and of its deprecated comma-list
/// form `-inputs` (`-outputs`), which LLVM accepts with a warning but not together with the
/// singular one.
fn paths(
    names: Names,
    parsed: &llvm_cl::Parsed,
    option: &str,
    err: &mut dyn Write,
) -> Result<Vec<PathBuf>, i32> {
    let plural = format!("{option}s");
    let mut paths: Vec<PathBuf> = parsed.list(option).into_iter().map(PathBuf::from).collect();
    if parsed.given(&plural) {
        if !paths.is_empty() {
            let message = format!(
                "-{plural} and -{option} cannot be used together, use only -{option} instead"
            );
            return Err(names.fail(err, &message));
        }
        let _ = writeln!(
            err,
            "{}: warning: -{plural} is deprecated, use -{option} instead",
            names.prog
        );
        paths.extend(parsed.list(&plural).into_iter().map(PathBuf::from));
    }
    Ok(paths)
}

/// Runs what the command line asks for: `-list` (after its own checks), `-unbundle`, or
/// bundling.
fn dispatch(
    names: Names,
    parsed: &llvm_cl::Parsed,
    config: &BundlerConfig,
    out: &mut dyn Write,
    err: &mut dyn Write,
) -> i32 {
    let fail = |err: &mut dyn Write, message: &str| names.fail(err, message);
    let unbundle = parsed.flag("unbundle").unwrap_or(false);
    if parsed.flag("list") == Some(true) {
        if unbundle {
            return fail(err, "-unbundle and -list cannot be used together");
        }
        if config.inputs.len() != 1 {
            return fail(err, "only one input file supported for -list");
        }
        if !config.outputs.is_empty() {
            return fail(err, "-outputs option is invalid for -list");
        }
        if parsed.given("targets") {
            return fail(err, "-targets option is invalid for -list");
        }
        return list(names.prog, config, out, err);
    }
    let result = if unbundle {
        bundler::unbundle(config, err)
    } else {
        bundler::bundle(config, err)
    };
    match result {
        Ok(()) => 0,
        Err(e) => fail(err, &e.to_string()),
    }
}

/// Runs `-list`: the entry IDs go to `out` once they are all known, and a failure to write
/// them is an error like any other.
fn list(prog: &str, config: &BundlerConfig, out: &mut dyn Write, err: &mut dyn Write) -> i32 {
    let mut listing = Vec::new();
    match bundler::list(config, &mut listing, err) {
        Ok(()) => crate::cli::write_out(prog, out, err, &listing).map_or_else(|code| code, |()| 0),
        Err(e) => {
            let _ = writeln!(err, "{prog}: error: {e}");
            1
        }
    }
}

/// Reads the bundler's environment variables as LLVM `version` does: `OFFLOAD_BUNDLER_VERBOSE`
/// and `OFFLOAD_BUNDLER_COMPRESS` ("1" turns on, anything else off),
/// `OFFLOAD_BUNDLER_COMPRESSION_LEVEL` (an integer), and from LLVM 22
/// `COMPRESSED_BUNDLE_FORMAT_VERSION` (2 or 3; LLVM 19 ignores it), all ignored when
/// `OFFLOAD_BUNDLER_IGNORE_ENV_VAR=1`. Returns the verbose setting, the compression setting,
/// the compression options and any warnings to print.
pub fn settings_from_env(
    env: impl Fn(&str) -> Option<String>,
    version: LlvmVersion,
) -> EnvSettings {
    let mut settings = EnvSettings {
        verbose: None,
        compress: None,
        options: CompressOptions {
            method: Method::Zstd,
            level: Method::Zstd.default_level(),
            version: CompressOptions::default_version(version),
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
    if version == LlvmVersion::V19 {
        return settings;
    }
    if let Some(text) = env("COMPRESSED_BUNDLE_FORMAT_VERSION") {
        let default = settings.options.version;
        // LLVM reads a 16-bit unsigned decimal number, then checks it.
        match llvm_cl::parse_decimal_u16(&text) {
            Some(v @ (2 | 3)) => settings.options.version = v,
            Some(_) => settings.warnings.push(format!(
                "Warning: Invalid value for COMPRESSED_BUNDLE_FORMAT_VERSION: {text}. Valid values are 2 or 3. Using default version {default}."
            )),
            None => settings.warnings.push(format!(
                "Warning: Invalid value for COMPRESSED_BUNDLE_FORMAT_VERSION: {text}. Using default version {default}."
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

    fn run_args(args: &str) -> (i32, String, String) {
        run_args_as(LlvmVersion::V19, args)
    }

    fn run_args_as(version: LlvmVersion, args: &str) -> (i32, String, String) {
        let args: Vec<String> = args.split_whitespace().map(str::to_string).collect();
        let (mut out, mut err) = (Vec::new(), Vec::new());
        let code = run_with("B", &args, version, |_| None, &mut out, &mut err);
        (
            code,
            String::from_utf8(out).unwrap(),
            String::from_utf8(err).unwrap(),
        )
    }

    #[test]
    fn command_line_errors_read_as_llvm() {
        assert_eq!(
            run_args("-targets=a"),
            (
                1,
                String::new(),
                "B: for the --type option: must be specified at least once!\n".into()
            )
        );
        let (code, _, err) = run_args("-type=bc -unbundel");
        assert_eq!(code, 1);
        assert_eq!(err, "B: Unknown command line argument '-unbundel'.  Try: 'B --help'\nB: Did you mean '--unbundle'?\n");
        // Without -type, LLVM's parser adds the missing required option.
        let (_, _, err) = run_args("-unbundel");
        assert!(
            err.ends_with(
                "'--unbundle'?\nB: for the --type option: must be specified at least once!\n"
            ),
            "{err}"
        );
        assert_eq!(
            run_args("-type=bc -bundle-align=-1 -targets=x").2,
            "B: for the --bundle-align option: '-1' value invalid for uint argument!\n"
        );
        assert_eq!(
            run_args("-type=bc -list -input=a -targets=x").2,
            "B: error: -targets option is invalid for -list\n"
        );
        assert_eq!(
            run_args("-type=bc -input=a -inputs=b -targets=x -output=o").2,
            "B: error: -inputs and -input cannot be used together, use only -input instead\n"
        );
        assert_eq!(
            run_args("-type=bc -targets=x").2,
            "B: error: no output file specified!\n"
        );
        assert_eq!(
            run_args("-type=bc -output=x").2,
            "B: error: for the --targets option: must be specified at least once!\n"
        );
    }

    #[test]
    fn plural_file_options_are_deprecated_and_exclusive() {
        assert_eq!(
            run_args("-type=bc -input=a -output=o -outputs=p -targets=x").2,
            "B: error: -outputs and -output cannot be used together, use only -output instead\n"
        );
        let (code, _, err) = run_args("-type=bc -input=a -outputs=p,q -list");
        assert_eq!(code, 1);
        assert_eq!(
            err,
            "B: warning: -outputs is deprecated, use -output instead\n\
             B: error: -outputs option is invalid for -list\n"
        );
        assert_eq!(
            run_args("-type=bc -compression-method=lz4 -targets=x").2,
            "B: error: 'lz4': unknown compression method (use zstd or zlib)\n"
        );
    }

    #[test]
    fn help_and_version_exit_zero() {
        let (code, out, _) = run_args("--help");
        assert_eq!(code, 0);
        assert!(out.contains("USAGE: B [options]"));
        let (code, out, _) = run_args("-version");
        assert_eq!(code, 0);
        assert!(out.contains("(compatible with LLVM 19.1.7)"));
        let (_, out, _) = run_args_as(LlvmVersion::V22, "-version");
        assert!(out.contains("(compatible with LLVM 22.1.8)"));
        let (_, out, _) = run_args_as(LlvmVersion::V22, "--help");
        assert!(out.contains("(default 3,"));
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
        let s = settings_from_env(
            env(&[
                ("OFFLOAD_BUNDLER_COMPRESS", "yes"),
                ("OFFLOAD_BUNDLER_VERBOSE", "1"),
            ]),
            LlvmVersion::V19,
        );
        assert_eq!(s.compress, Some(false));
        assert_eq!(s.verbose, Some(true));
        let s = settings_from_env(
            env(&[
                ("OFFLOAD_BUNDLER_COMPRESS", "1"),
                ("OFFLOAD_BUNDLER_IGNORE_ENV_VAR", "1"),
            ]),
            LlvmVersion::V19,
        );
        assert_eq!(s.compress, None);
        let both = env(&[
            ("OFFLOAD_BUNDLER_COMPRESSION_LEVEL", "abc"),
            ("COMPRESSED_BUNDLE_FORMAT_VERSION", "2"),
        ]);
        // LLVM 19 writes version 2 and ignores COMPRESSED_BUNDLE_FORMAT_VERSION.
        let s = settings_from_env(both, LlvmVersion::V19);
        assert_eq!(s.options.level, 3);
        assert_eq!(s.options.version, 2);
        assert_eq!(
            s.warnings,
            ["Warning: Invalid value for OFFLOAD_BUNDLER_COMPRESSION_LEVEL: abc. Ignoring it."]
        );
        assert_eq!(settings_from_env(both, LlvmVersion::V22).options.version, 2);
        assert_eq!(
            settings_from_env(|_| None, LlvmVersion::V22)
                .options
                .version,
            3
        );
    }

    #[test]
    fn llvm_22_reads_the_compressed_bundle_version_from_the_environment() {
        let warnings = |value: &'static str| {
            let s = settings_from_env(
                move |k: &str| (k == "COMPRESSED_BUNDLE_FORMAT_VERSION").then(|| value.into()),
                LlvmVersion::V22,
            );
            (s.options.version, s.warnings.join("\n"))
        };
        assert_eq!(warnings("03"), (3, String::new()));
        assert_eq!(
            warnings("65535"),
            (3, "Warning: Invalid value for COMPRESSED_BUNDLE_FORMAT_VERSION: 65535. Valid values are 2 or 3. Using default version 3.".into())
        );
        for text in ["65536", "", " 3", "+3", "0x3", "x"] {
            assert_eq!(
                warnings(text),
                (3, format!("Warning: Invalid value for COMPRESSED_BUNDLE_FORMAT_VERSION: {text}. Using default version 3."))
            );
        }
    }
}
