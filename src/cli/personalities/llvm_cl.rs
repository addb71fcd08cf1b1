//! LLVM `cl`-style command lines, as LLVM's tools accept them: options spelled with one or two
//! dashes, values after `=` or in the next argument, booleans that take an optional
//! `=true|false|1|0`, lists that accumulate over repetitions and (for some) split on commas,
//! and the last occurrence of a single-valued option winning. Errors read as LLVM's do.

use std::collections::BTreeMap;

/// What an option takes.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Kind {
    /// A boolean: `-x`, or `-x=true|false|1|0`.
    Flag,
    /// One value; the last occurrence wins.
    Value,
    /// Values accumulating over occurrences.
    List,
    /// Values accumulating over occurrences, each split on commas.
    CommaList,
}

/// One option of a tool.
#[derive(Debug, Clone, Copy)]
pub struct Spec {
    /// Its name without dashes.
    pub name: &'static str,
    /// What it takes.
    pub kind: Kind,
}

/// The options seen on a command line.
#[derive(Debug, Default, Clone)]
pub struct Parsed {
    values: BTreeMap<&'static str, Vec<String>>,
    flags: BTreeMap<&'static str, bool>,
    /// Arguments that were not options (after `--`, or a lone `-`).
    pub positional: Vec<String>,
}

impl Parsed {
    /// All values of a list option, in order.
    pub fn list(&self, name: &str) -> Vec<String> {
        self.values.get(name).cloned().unwrap_or_default()
    }

    /// The last value of a single-valued option.
    pub fn value(&self, name: &str) -> Option<&str> {
        self.values
            .get(name)
            .and_then(|v| v.last())
            .map(String::as_str)
    }

    /// Whether an option was given at all.
    pub fn given(&self, name: &str) -> bool {
        self.values.contains_key(name) || self.flags.contains_key(name)
    }

    /// A flag's value if it was given.
    pub fn flag(&self, name: &str) -> Option<bool> {
        self.flags.get(name).copied()
    }
}

/// The file name of `prog`, which starts the parser's messages as LLVM's do (the other
/// messages start with `prog` as it was started).
pub fn base_name(prog: &str) -> String {
    std::path::Path::new(prog)
        .file_name()
        .map_or_else(|| prog.to_string(), |n| n.to_string_lossy().into_owned())
}

/// Runs a personality's `run_with(prog, args, stdout, stderr)` on the process's standard
/// streams.
pub fn run_on_standard_streams(
    prog: &str,
    args: &[String],
    run_with: fn(&str, &[String], &mut dyn std::io::Write, &mut dyn std::io::Write) -> i32,
) -> i32 {
    let stdout = std::io::stdout();
    let stderr = std::io::stderr();
    run_with(prog, args, &mut stdout.lock(), &mut stderr.lock())
}

/// How deep response files may name response files, as LLVM's limit on their expansion.
const RESPONSE_FILE_DEPTH: usize = 20;

/// The arguments with each `@FILE` whose file can be read replaced by the arguments written in
/// it (split as a GNU shell would: blanks between them, quotes and backslashes kept out), as
/// LLVM's tools do; an `@FILE` that cannot be read stays as it is.
pub fn expand_response_files(args: Vec<String>) -> Vec<String> {
    expand_at_depth(args, 0)
}

fn expand_at_depth(args: Vec<String>, depth: usize) -> Vec<String> {
    let mut expanded = Vec::with_capacity(args.len());
    for arg in args {
        let read = arg
            .strip_prefix('@')
            .filter(|_| depth < RESPONSE_FILE_DEPTH)
            .and_then(|path| std::fs::read_to_string(path).ok());
        match read {
            Some(text) => expanded.extend(expand_at_depth(gnu_words(&text), depth + 1)),
            None => expanded.push(arg),
        }
    }
    expanded
}

/// `text` split into words the GNU way: blanks separate, quotes group, a backslash keeps the
/// next character.
fn gnu_words(text: &str) -> Vec<String> {
    let mut words = Vec::new();
    let mut word: Option<String> = None;
    let mut quote = None;
    let mut chars = text.chars();
    while let Some(c) = chars.next() {
        match (quote, c) {
            (_, '\\') if quote != Some('\'') => {
                if let Some(next) = chars.next() {
                    word.get_or_insert_with(String::new).push(next);
                }
            }
            (Some(q), c) if c == q => quote = None,
            (Some(_), c) => word.get_or_insert_with(String::new).push(c),
            (None, '"' | '\'') => {
                quote = Some(c);
                word.get_or_insert_with(String::new);
            }
            (None, c) if c.is_whitespace() => words.extend(word.take()),
            (None, c) => word.get_or_insert_with(String::new).push(c),
        }
    }
    words.extend(word);
    words
}

/// Spells an option the way LLVM's messages do: one dash for one-letter names, two otherwise.
pub fn spelled(name: &str) -> String {
    if name.chars().count() == 1 {
        format!("-{name}")
    } else {
        format!("--{name}")
    }
}

/// Parses `args` (without the program name) against `specs`. Errors are LLVM's messages without
/// the program prefix; the caller prints `<prog>: <message>`.
pub fn parse(args: &[String], specs: &[Spec]) -> Result<Parsed, Vec<String>> {
    let mut parsed = Parsed::default();
    let mut errors = Vec::new();
    let mut i = 0;
    let mut only_positional = false;
    while i < args.len() {
        let arg = &args[i];
        i += 1;
        if only_positional || arg == "-" || !arg.starts_with('-') {
            parsed.positional.push(arg.clone());
            continue;
        }
        if arg == "--" {
            only_positional = true;
            continue;
        }
        let body = arg.strip_prefix("--").unwrap_or(&arg[1..]);
        let (name, inline) = match body.split_once('=') {
            Some((n, v)) => (n, Some(v)),
            None => (body, None),
        };
        let Some(spec) = specs.iter().find(|s| s.name == name) else {
            errors.push(format!("Unknown command line argument '{arg}'."));
            continue;
        };
        match spec.kind {
            Kind::Flag => {
                let value = match inline {
                    None => Some(true),
                    Some("true" | "TRUE" | "True" | "1") => Some(true),
                    Some("false" | "FALSE" | "False" | "0") => Some(false),
                    Some(other) => {
                        errors.push(format!(
                            "for the {} option: '{other}' is invalid value for boolean argument! Try 0 or 1",
                            spelled(spec.name)
                        ));
                        None
                    }
                };
                if let Some(v) = value {
                    parsed.flags.insert(spec.name, v);
                }
            }
            Kind::Value | Kind::List | Kind::CommaList => {
                let value = match inline {
                    Some(v) => v.to_string(),
                    None if i < args.len() => {
                        i += 1;
                        args[i - 1].clone()
                    }
                    None => {
                        errors.push(format!(
                            "for the {} option: requires a value!",
                            spelled(spec.name)
                        ));
                        continue;
                    }
                };
                let slot = parsed.values.entry(spec.name).or_default();
                if spec.kind == Kind::CommaList {
                    slot.extend(value.split(',').map(str::to_string));
                } else {
                    slot.push(value);
                }
            }
        }
    }
    if errors.is_empty() {
        Ok(parsed)
    } else {
        Err(errors)
    }
}

/// Prints the errors of [`parse`] as LLVM's tools print them: `BASE: <error>`, and for an
/// unknown option `  Try: 'PROG --help'` and a "Did you mean" line naming the nearest option.
/// `base` is the program's file name, `prog` the program as started.
pub fn print_errors(
    err: &mut dyn std::io::Write,
    base: &str,
    prog: &str,
    errors: &[String],
    specs: &[Spec],
) {
    for e in errors {
        if e.starts_with("Unknown command line argument") {
            let _ = writeln!(err, "{base}: {e}  Try: '{prog} --help'");
            let arg = e.split('\'').nth(1).unwrap_or("");
            if let Some(suggestion) = suggestion(arg, specs) {
                let _ = writeln!(err, "{base}: Did you mean '{}'?", spelled(&suggestion));
            }
        } else {
            let _ = writeln!(err, "{base}: {e}");
        }
    }
}

/// LLVM's "Did you mean" suggestion for the unknown option `arg`: the option nearest by edit
/// distance (the first of equals), with the value `arg` gave after `=` when the option takes
/// one. An option that takes no value (`--help`, `--version`) is compared with the whole
/// argument, value included. LLVM suggests something for any unknown option.
pub fn suggestion(arg: &str, specs: &[Spec]) -> Option<String> {
    let body = arg.strip_prefix("--").or_else(|| arg.strip_prefix('-'))?;
    if body.is_empty() {
        return None;
    }
    let (name, value) = body.split_once('=').unwrap_or((body, ""));
    let takes_value = |spec: &Spec| !(HELP_FLAGS.contains(&spec.name) || spec.name == "version");
    let (_, best) = specs
        .iter()
        .filter(|spec| spec.name != "h")
        .map(|spec| {
            let compared = if takes_value(spec) { name } else { body };
            (edit_distance(compared, spec.name), spec)
        })
        .min_by_key(|(distance, _)| *distance)?;
    Some(if value.is_empty() || !takes_value(best) {
        best.name.to_string()
    } else {
        format!("{}={value}", best.name)
    })
}

fn edit_distance(a: &str, b: &str) -> usize {
    let b: Vec<char> = b.chars().collect();
    let mut row: Vec<usize> = (0..=b.len()).collect();
    for (i, ca) in a.chars().enumerate() {
        let mut prev = row[0];
        row[0] = i + 1;
        for (j, cb) in b.iter().enumerate() {
            let cur = row[j + 1];
            row[j + 1] = (prev + usize::from(ca != *cb)).min(row[j] + 1).min(cur + 1);
            prev = cur;
        }
    }
    row[b.len()]
}

/// Parses an unsigned 32-bit value as LLVM's `cl::opt<unsigned>` does: decimal, `0x` hex or
/// leading-zero octal.
pub fn parse_uint(text: &str) -> Option<u32> {
    let (digits, radix) =
        if let Some(hex) = text.strip_prefix("0x").or_else(|| text.strip_prefix("0X")) {
            (hex, 16)
        } else if text.len() > 1 && text.starts_with('0') {
            (&text[1..], 8)
        } else {
            (text, 10)
        };
    if digits.is_empty() || !digits.chars().all(|c| c.is_digit(radix)) {
        return None;
    }
    u32::from_str_radix(digits, radix).ok()
}

/// Parses a signed 32-bit value as LLVM's `cl::opt<int>` does.
pub fn parse_int(text: &str) -> Option<i32> {
    match text.strip_prefix('-') {
        Some(rest) => parse_uint(rest)
            .and_then(|v| 0i64.checked_sub(i64::from(v)))
            .and_then(|v| i32::try_from(v).ok()),
        None => parse_uint(text).and_then(|v| i32::try_from(v).ok()),
    }
}

/// Parses a 16-bit unsigned decimal number as LLVM's `StringRef::getAsInteger(10, ...)`
/// does: digits only (no sign, no spaces), leading zeros allowed, in range.
pub fn parse_decimal_u16(text: &str) -> Option<u16> {
    if text.is_empty() || !text.bytes().all(|b| b.is_ascii_digit()) {
        return None;
    }
    text.parse().ok()
}

/// The help flags LLVM's command-line library gives every tool.
pub const HELP_FLAGS: &[&str] = &["help", "h", "help-hidden", "help-list", "help-list-hidden"];

/// What an LLVM-compatible tool prints for `--help` and `--version`.
#[derive(Clone, Copy)]
pub struct About<'a> {
    /// The tool's LLVM name (`clang-offload-bundler`).
    pub tool: &'static str,
    /// Its help text, `PROG` standing for the program's file name.
    pub help: &'a str,
    /// The flags that ask for the help.
    pub help_flags: &'static [&'static str],
    /// The LLVM release whose behaviour it reproduces, if it says so in its version line.
    pub compatible_with: Option<&'static str>,
}

/// Prints the help (`PROG` replaced by the file name of `prog`) when one of the help flags was
/// given, or the version line when `--version` was: the exit status, or `None` to carry on.
pub fn help_or_version(
    prog: &str,
    parsed: &Parsed,
    about: &About<'_>,
    out: &mut dyn std::io::Write,
    err: &mut dyn std::io::Write,
) -> Option<i32> {
    let (help, help_flags) = (about.help, about.help_flags);
    let text = if help_flags.iter().any(|h| parsed.flag(h) == Some(true)) {
        // LLVM's usage line names the program by its file name, however it was started.
        let name = std::path::Path::new(prog)
            .file_name()
            .map_or(prog.into(), |n| n.to_string_lossy());
        help.replace("PROG", &name)
    } else if parsed.flag("version") == Some(true) {
        let compatible = about
            .compatible_with
            .map(|llvm| format!(" (compatible with {llvm})"))
            .unwrap_or_default();
        format!(
            "offload-tools {} version {}{compatible}\n",
            about.tool,
            env!("CARGO_PKG_VERSION")
        )
    } else {
        return None;
    };
    Some(crate::cli::write_out(prog, out, err, text.as_bytes()).map_or_else(|code| code, |()| 0))
}

/// An LLVM-compatible tool's options as a clap command, for its manual page and the shell
/// completions: each option of `specs` (the table the tool parses with) with the description
/// its `--help` text `help` gives it, and the operands `operands` (name and description) when
/// the tool takes files without an option. The tool still parses with [`parse`], which takes
/// every option with one dash or two.
pub fn command(
    tool: &'static str,
    specs: &[Spec],
    help: &str,
    operands: Option<(&'static str, &'static str)>,
) -> clap::Command {
    let described = descriptions(help);
    let overview = help
        .lines()
        .take_while(|line| !line.starts_with("USAGE:"))
        .map(|line| line.strip_prefix("OVERVIEW: ").unwrap_or(line).trim_end())
        .collect::<Vec<_>>()
        .join("\n");
    let overview = overview.trim().to_string();
    let about = overview.lines().next().unwrap_or_default().to_string();
    let mut command = clap::Command::new(tool)
        .about(about)
        .long_about(overview)
        .disable_help_flag(true)
        .disable_version_flag(true);
    for spec in specs {
        let (value_name, text) = described
            .iter()
            .find(|(name, ..)| name == spec.name)
            .map(|(_, value, text)| (value.clone(), text.clone()))
            .unwrap_or_default();
        let mut arg = clap::Arg::new(spec.name).help(text);
        arg = if spec.name.chars().count() == 1 {
            arg.short(spec.name.chars().next().unwrap_or('?'))
        } else {
            arg.long(spec.name)
        };
        arg = match spec.kind {
            Kind::Flag => arg.action(clap::ArgAction::SetTrue),
            Kind::Value => arg.action(clap::ArgAction::Set),
            Kind::List | Kind::CommaList => arg.action(clap::ArgAction::Append),
        };
        if spec.kind != Kind::Flag {
            arg = arg.value_name(value_name.unwrap_or_else(|| "value".into()));
            if spec.name == "o" || spec.name.contains("put") {
                arg = arg.value_hint(clap::ValueHint::FilePath);
            }
        }
        command = command.arg(arg);
    }
    if let Some((name, text)) = operands {
        command = command.arg(
            clap::Arg::new(name)
                .help(text)
                .num_args(0..)
                .value_hint(clap::ValueHint::FilePath),
        );
    }
    command
}

/// The options a `--help` text describes: each one's name, the name of its value (`uint` of
/// `--bundle-align=<uint>`, `file` of `-o <file>`) and its description, the lines that continue
/// it joined to it.
fn descriptions(help: &str) -> Vec<(String, Option<String>, String)> {
    let mut found: Vec<(String, Option<String>, String)> = Vec::new();
    let mut continuing = false;
    for line in help.lines() {
        let trimmed = line.trim();
        if trimmed.starts_with('-') && line.starts_with(' ') {
            if let Some((option, text)) = trimmed.split_once(" - ") {
                let option = option.trim();
                let (name, value) = match option.split_once(['=', ' ']) {
                    Some((name, value)) => (name, Some(value)),
                    None => (option, None),
                };
                let value = value.map(|v| {
                    let v = v.trim();
                    let v = v.strip_prefix('<').unwrap_or(v);
                    v.strip_suffix('>').unwrap_or(v).to_string()
                });
                found.push((
                    name.trim_start_matches('-').to_string(),
                    value,
                    text.trim().to_string(),
                ));
                continuing = true;
                continue;
            }
        }
        match found.last_mut() {
            Some((.., text)) if continuing && line.starts_with(' ') && !trimmed.is_empty() => {
                let piece = trimmed.split_whitespace().collect::<Vec<_>>().join(" ");
                let piece = piece.replacen(" - ", ": ", 1);
                text.push(' ');
                text.push_str(&piece);
            }
            _ => continuing = false,
        }
    }
    found
}

#[cfg(test)]
mod tests {
    #[test]
    fn response_files_expand_as_llvm_s() {
        assert_eq!(
            super::gnu_words("-o out  'a b' \"c\\\"d\" e\\ f\n"),
            ["-o", "out", "a b", "c\"d", "e f"]
        );
        let dir = tempfile::tempdir().unwrap();
        let outer = dir.path().join("outer.rsp");
        let inner = dir.path().join("inner.rsp");
        std::fs::write(&inner, "--kind=hip").unwrap();
        std::fs::write(&outer, format!("-o x.bc @{}", inner.display())).unwrap();
        let args = vec![format!("@{}", outer.display()), "@missing".to_string()];
        assert_eq!(
            super::expand_response_files(args),
            ["-o", "x.bc", "--kind=hip", "@missing"]
        );
    }

    use super::*;

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
            name: "unbundle",
            kind: Kind::Flag,
        },
        Spec {
            name: "###",
            kind: Kind::Flag,
        },
    ];

    fn args(s: &str) -> Vec<String> {
        s.split_whitespace().map(str::to_string).collect()
    }

    #[test]
    fn every_spelling_llvm_accepts() {
        let p = parse(&args("-type=o --type bc -targets=a,b --targets c -input x,y --input=z -unbundle=false --unbundle -###"), SPECS).unwrap();
        assert_eq!(p.value("type"), Some("bc"));
        assert_eq!(p.list("targets"), ["a", "b", "c"]);
        assert_eq!(p.list("input"), ["x,y", "z"]);
        assert_eq!(p.flag("unbundle"), Some(true));
        assert_eq!(p.flag("###"), Some(true));
        let p = parse(&args("-targets=,A"), SPECS).unwrap();
        assert_eq!(p.list("targets"), ["", "A"]);
    }

    #[test]
    fn errors_read_as_llvm() {
        assert_eq!(
            parse(&args("-x"), SPECS).unwrap_err(),
            ["Unknown command line argument '-x'."]
        );
        assert_eq!(
            parse(&args("-type"), SPECS).unwrap_err(),
            ["for the --type option: requires a value!"]
        );
        assert_eq!(
            parse(&args("-unbundle=yes"), SPECS).unwrap_err(),
            ["for the --unbundle option: 'yes' is invalid value for boolean argument! Try 0 or 1"]
        );
        assert_eq!(parse(&args("stray"), SPECS).unwrap().positional, ["stray"]);
        let suggest = |arg: &str| suggestion(arg, SPECS).unwrap();
        // Checked against clang-offload-bundler-19 and -22.
        assert_eq!(suggest("-unbundel"), "unbundle");
        assert_eq!(suggest("-unbundel=1"), "unbundle=1");
        assert_eq!(suggest("-typ=o"), "type=o");
        assert_eq!(suggest("--typ=o"), "type=o");
        assert_eq!(suggest("-typ"), "type");
        assert_eq!(suggest("-foo"), "###");
    }

    #[test]
    fn integers_as_llvm_reads_them() {
        assert_eq!(parse_uint("4096"), Some(4096));
        assert_eq!(parse_uint("0x10"), Some(16));
        assert_eq!(parse_uint("010"), Some(8));
        assert_eq!(parse_uint("-1"), None);
        assert_eq!(parse_uint("4294967296"), None);
        assert_eq!(parse_int("-5"), Some(-5));
        assert_eq!(parse_int("abc"), None);
    }
}
