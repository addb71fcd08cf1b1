//! The case harness of the golden and differential tests of `offload bundler` and
//! `offload packager`: parse a case, run it with a tool, compare with LLVM's results.
//!
//! The cases live in `tests/cases/bundler.txt` (its header describes the syntax), the golden
//! files in `tests/golden/<NAME>/` (made by `tests/golden/make.sh` with
//! clang-offload-bundler-19), the input files in `samples/`.
//!
//! Environment variables understood by the tests:
//! - `OFFLOAD_CASES=a,b`: run only the cases whose name contains one of the comma-separated
//!   strings.
//! - `OFFLOAD_REQUIRE_REFERENCE=1`: fail instead of skipping when an LLVM tool is missing.
//! - `OFFLOAD_TEST_TIMEOUT=<seconds>`: time limit of one tool run (default 60).

use std::collections::{BTreeMap, BTreeSet};
use std::fmt::Write as _;
use std::fs;
use std::io::Read;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Mutex;
use std::time::{Duration, Instant};

use super::{first_difference, root, samples_dir, visible, OFFLOAD};

/// Environment variables that change what the bundler does; removed before every run so that
/// only a case's `[env:K=V]` flags set them.
pub const BUNDLER_ENV_VARS: &[&str] = &[
    "OFFLOAD_BUNDLER_COMPRESS",
    "OFFLOAD_BUNDLER_VERBOSE",
    "OFFLOAD_BUNDLER_COMPRESSION_LEVEL",
    "OFFLOAD_BUNDLER_IGNORE_ENV_VAR",
    "COMPRESSED_BUNDLE_FORMAT_VERSION",
];

/// The name of the LLVM tool the bundler cases are checked against.
pub const LLVM_BUNDLER: &str = "clang-offload-bundler-19";

/// The folder of golden folders.
pub fn golden_dir() -> PathBuf {
    root().join("tests").join("golden")
}

/// The bundler case file.
pub fn cases_file() -> PathBuf {
    root().join("tests").join("cases").join("bundler.txt")
}

// ---- cases ---------------------------------------------------------------------------------

/// One line of the case file.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Case {
    /// Unique name; also the golden folder's name.
    pub name: String,
    /// Line number in the case file, from 1.
    pub line: usize,
    /// The arguments, with `{S}` and `{O}` not yet replaced.
    pub args: Vec<String>,
    /// `[compressed]`: output bytes may differ from LLVM's but must unbundle the same.
    pub compressed: bool,
    /// `[llvm-crashes]`: LLVM is not run; we expect a clean failure.
    pub llvm_crashes: bool,
    /// `[llvm-wrong]`: LLVM 19 accepts damaged input or writes a damaged output here; LLVM is
    /// not run and we expect a clean failure, as for `[llvm-crashes]`.
    pub llvm_wrong: bool,
    /// `[llvm-rejects]`: LLVM 19 fails on input we read correctly; LLVM is not run, and we
    /// expect exit status 0 with every `# expect:` text in our stdout.
    pub llvm_rejects: bool,
    /// `[unsupported]`: not supported yet; LLVM's results are kept in the golden folder, and
    /// we expect exit status 1, "not supported yet" on stderr and no output files.
    pub unsupported: bool,
    /// `[llvm-crashes-ours-as:CASE]`: LLVM 19 crashes here, and we do what the command means,
    /// which is what LLVM does for CASE: our exit status, stdout and outputs must equal CASE's
    /// golden ones.
    pub ours_as: Option<String>,
    /// `[env:K=V]` flags, in order.
    pub env: Vec<(String, String)>,
    /// `[stdin:PATH]`, with `{S}` not yet replaced.
    pub stdin: Option<String>,
    /// The ` # expect: TEXT` parts: texts our stderr must contain.
    pub expect: Vec<String>,
}

const EXPECT_SEPARATOR: &str = " # expect: ";

/// Parses the case file's text.
pub fn parse_cases(text: &str) -> Result<Vec<Case>, String> {
    let mut cases: Vec<Case> = Vec::new();
    let mut names = BTreeSet::new();
    for (index, raw) in text.lines().enumerate() {
        let line = index + 1;
        let trimmed = raw.trim_start();
        if trimmed.is_empty() || trimmed.starts_with('#') {
            continue;
        }
        let case = parse_case_line(raw, line).map_err(|e| format!("bundler.txt:{line}: {e}"))?;
        if !names.insert(case.name.clone()) {
            return Err(format!(
                "bundler.txt:{line}: duplicate case name {}",
                case.name
            ));
        }
        cases.push(case);
    }
    Ok(cases)
}

fn parse_case_line(raw: &str, line: usize) -> Result<Case, String> {
    let mut pieces = raw.split(EXPECT_SEPARATOR);
    let main = pieces.next().unwrap_or_default();
    let expect: Vec<String> = pieces.map(str::to_string).collect();

    let name_end = main
        .find(|c: char| !(c.is_ascii_alphanumeric() || matches!(c, '.' | '_' | '-')))
        .ok_or("no ':' after the case name")?;
    let name = &main[..name_end];
    if name.is_empty() {
        return Err("a case line must start with its name".into());
    }
    let mut rest = &main[name_end..];
    let mut case = Case {
        name: name.to_string(),
        line,
        args: Vec::new(),
        compressed: false,
        llvm_crashes: false,
        llvm_wrong: false,
        llvm_rejects: false,
        unsupported: false,
        ours_as: None,
        env: Vec::new(),
        stdin: None,
        expect,
    };
    loop {
        rest = rest.trim_start_matches(' ');
        if let Some(after) = rest.strip_prefix('[') {
            let close = after.find(']').ok_or("unclosed '['")?;
            let flag = &after[..close];
            rest = &after[close + 1..];
            if flag == "compressed" {
                case.compressed = true;
            } else if flag == "llvm-crashes" {
                case.llvm_crashes = true;
            } else if flag == "llvm-wrong" {
                case.llvm_wrong = true;
            } else if flag == "llvm-rejects" {
                case.llvm_rejects = true;
            } else if flag == "unsupported" {
                case.unsupported = true;
            } else if let Some(other) = flag.strip_prefix("llvm-crashes-ours-as:") {
                case.ours_as = Some(other.to_string());
            } else if let Some(kv) = flag.strip_prefix("env:") {
                let (k, v) = kv.split_once('=').ok_or("[env:K=V] needs '='")?;
                case.env.push((k.to_string(), v.to_string()));
            } else if let Some(path) = flag.strip_prefix("stdin:") {
                case.stdin = Some(path.to_string());
            } else {
                return Err(format!("unknown flag [{flag}]"));
            }
        } else if let Some(after) = rest.strip_prefix(':') {
            case.args = after.split_whitespace().map(str::to_string).collect();
            break;
        } else {
            return Err(format!(
                "expected '[' or ':' after the case name, found {rest:?}"
            ));
        }
    }
    if (case.llvm_crashes || case.llvm_wrong || case.llvm_rejects) && case.expect.is_empty() {
        return Err(
            "an [llvm-crashes], [llvm-wrong] or [llvm-rejects] case needs a ' # expect: ' text"
                .into(),
        );
    }
    Ok(case)
}

/// The cases of the case file, filtered by `OFFLOAD_CASES` when it is set.
pub fn load_cases() -> Vec<Case> {
    let path = cases_file();
    let text =
        fs::read_to_string(&path).unwrap_or_else(|e| panic!("cannot read {}: {e}", path.display()));
    let cases = parse_cases(&text).unwrap_or_else(|e| panic!("{e}"));
    match std::env::var("OFFLOAD_CASES") {
        Ok(filter) if !filter.is_empty() => {
            let wanted: Vec<&str> = filter.split(',').filter(|s| !s.is_empty()).collect();
            cases
                .into_iter()
                .filter(|c| wanted.iter().any(|w| c.name.contains(w)))
                .collect()
        }
        _ => cases,
    }
}

/// The values given to option `name` in `args`, in order, for the spellings `-name=v`,
/// `--name=v`, `-name v` and `--name v`.
pub fn option_values(args: &[String], name: &str) -> Vec<String> {
    let mut values = Vec::new();
    let mut i = 0;
    while i < args.len() {
        let arg = &args[i];
        let body = arg
            .strip_prefix("--")
            .or_else(|| arg.strip_prefix('-'))
            .unwrap_or("");
        if let Some(value) = body.strip_prefix(name).and_then(|r| r.strip_prefix('=')) {
            values.push(value.to_string());
        } else if body == name && i + 1 < args.len() {
            values.push(args[i + 1].clone());
            i += 1;
        }
        i += 1;
    }
    values
}

// ---- running a tool ------------------------------------------------------------------------------

/// A program plus fixed leading arguments, e.g. our binary with `bundler`, or
/// clang-offload-bundler-19 with none.
#[derive(Debug, Clone)]
pub struct Tool {
    /// The program to run.
    pub program: PathBuf,
    /// Arguments put before the case's.
    pub leading: Vec<String>,
    /// Environment variables set for it (after the bundler's are removed).
    pub env: Vec<(String, String)>,
}

impl Tool {
    /// A tool from a program and leading arguments.
    pub fn new(program: impl Into<PathBuf>, leading: &[&str]) -> Tool {
        Tool {
            program: program.into(),
            leading: leading.iter().map(|s| s.to_string()).collect(),
            env: Vec::new(),
        }
    }

    /// The tool under test: `offload bundler` standing in for clang-offload-bundler-19, which
    /// made the golden files.
    pub fn ours() -> Tool {
        Tool::ours_as("19")
    }

    /// `offload bundler` standing in for LLVM `release`'s clang-offload-bundler.
    pub fn ours_as(release: &str) -> Tool {
        let mut tool = Tool::new(OFFLOAD, &["bundler"]);
        tool.env
            .push(("OFFLOAD_LLVM_VERSION".to_string(), release.to_string()));
        tool
    }
}

/// How a run ended.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Status {
    /// Exited with this code.
    Exited(i32),
    /// Killed by this signal.
    Signal(i32),
    /// Killed by us after the time limit.
    TimedOut,
}

impl std::fmt::Display for Status {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Status::Exited(101) => write!(f, "exit 101 (a Rust panic)"),
            Status::Exited(code) => write!(f, "exit {code}"),
            Status::Signal(sig) => write!(f, "killed by signal {sig}"),
            Status::TimedOut => write!(f, "timed out"),
        }
    }
}

/// What a run produced.
#[derive(Debug, Clone)]
pub struct Outcome {
    /// How it ended.
    pub status: Status,
    /// Standard output, as is.
    pub stdout: Vec<u8>,
    /// Standard error, normalised: the program path (and its file name at the start of a
    /// line) is `PROG`, the samples folder `{S}`, the output folder `{O}`.
    pub stderr: String,
    /// Every file left in the output folder, by path relative to it (with `/`), sorted.
    pub outputs: BTreeMap<String, Vec<u8>>,
}

/// The time limit of one run.
fn time_limit() -> Duration {
    let secs = std::env::var("OFFLOAD_TEST_TIMEOUT")
        .ok()
        .and_then(|s| s.parse().ok())
        .unwrap_or(60);
    Duration::from_secs(secs)
}

/// Runs `case` with `tool` in a fresh empty output folder, which is also the working
/// directory.
pub fn run_case(tool: &Tool, case: &Case) -> Outcome {
    let stdin = case
        .stdin
        .as_ref()
        .map(|s| PathBuf::from(substitute(s, None)));
    run_tool(tool, &case.args, &case.env, stdin.as_deref())
}

/// Runs `tool` with `args` (`{S}` and `{O}` replaced), the environment cleaned of the
/// bundler's variables plus `env`, and `stdin` (or nothing) on standard input, in a fresh
/// empty output folder that is also the working directory.
pub fn run_tool(
    tool: &Tool,
    args: &[String],
    env: &[(String, String)],
    stdin: Option<&Path>,
) -> Outcome {
    let temp = tempfile::Builder::new()
        .prefix("offload-case-")
        .tempdir()
        .expect("cannot create a temporary folder");
    let out_dir = temp.path().join("o");
    fs::create_dir(&out_dir).expect("cannot create the output folder");
    let out_dir = out_dir.canonicalize().unwrap_or(out_dir);

    let mut command = Command::new(&tool.program);
    command.args(&tool.leading);
    command.args(args.iter().map(|a| substitute(a, Some(&out_dir))));
    command.current_dir(&out_dir);
    for var in BUNDLER_ENV_VARS {
        command.env_remove(var);
    }
    for (k, v) in &tool.env {
        command.env(k, v);
    }
    for (k, v) in env {
        command.env(k, v);
    }
    command.stdin(match stdin {
        Some(path) => Stdio::from(
            fs::File::open(path).unwrap_or_else(|e| panic!("cannot open {}: {e}", path.display())),
        ),
        None => Stdio::null(),
    });
    command.stdout(Stdio::piped());
    command.stderr(Stdio::piped());

    let mut child = command
        .spawn()
        .unwrap_or_else(|e| panic!("cannot run {}: {e}", tool.program.display()));
    let mut out_pipe = child.stdout.take().expect("stdout pipe");
    let mut err_pipe = child.stderr.take().expect("stderr pipe");
    let out_reader = std::thread::spawn(move || {
        let mut buf = Vec::new();
        let _ = out_pipe.read_to_end(&mut buf);
        buf
    });
    let err_reader = std::thread::spawn(move || {
        let mut buf = Vec::new();
        let _ = err_pipe.read_to_end(&mut buf);
        buf
    });

    let deadline = Instant::now() + time_limit();
    let status = loop {
        match child.try_wait().expect("cannot wait for the child") {
            Some(status) => break exit_status(status),
            None if Instant::now() >= deadline => {
                let _ = child.kill();
                let _ = child.wait();
                break Status::TimedOut;
            }
            None => std::thread::sleep(Duration::from_millis(2)),
        }
    };
    let stdout = out_reader.join().unwrap_or_default();
    let stderr = err_reader.join().unwrap_or_default();
    let stderr = normalize_stderr(&String::from_utf8_lossy(&stderr), &tool.program, &out_dir);
    let outputs = read_tree(&out_dir);
    Outcome {
        status,
        stdout,
        stderr,
        outputs,
    }
}

#[cfg(unix)]
fn exit_status(status: std::process::ExitStatus) -> Status {
    use std::os::unix::process::ExitStatusExt;
    match (status.code(), status.signal()) {
        (Some(code), _) => Status::Exited(code),
        (None, Some(sig)) => Status::Signal(sig),
        (None, None) => Status::Exited(-1),
    }
}

#[cfg(not(unix))]
fn exit_status(status: std::process::ExitStatus) -> Status {
    Status::Exited(status.code().unwrap_or(-1))
}

/// Replaces `{S}` by the samples folder and `{O}` by `out_dir`.
pub fn substitute(text: &str, out_dir: Option<&Path>) -> String {
    let mut text = text.replace("{S}", &samples_dir().to_string_lossy());
    if let Some(out) = out_dir {
        text = text.replace("{O}", &out.to_string_lossy());
    }
    text
}

/// Puts `PROG`, `{S}` and `{O}` back in place of the program path (and its file name at the
/// start of a line), the samples folder and the output folder.
pub fn normalize_stderr(stderr: &str, program: &Path, out_dir: &Path) -> String {
    let mut text = stderr.to_string();
    let mut replace = |from: &Path, to: &str| {
        let from = from.to_string_lossy();
        if !from.is_empty() {
            text = text.replace(from.as_ref(), to);
        }
    };
    replace(out_dir, "{O}");
    let samples = samples_dir();
    if let Ok(real) = samples.canonicalize() {
        replace(&real, "{S}");
    }
    replace(&samples, "{S}");
    replace(program, "PROG");
    // LLVM's command-line parser starts its messages with the program's file name only.
    if let Some(base) = program
        .file_name()
        .map(|b| format!("{}: ", b.to_string_lossy()))
    {
        text = text
            .split_inclusive('\n')
            .map(|line| match line.strip_prefix(base.as_str()) {
                Some(rest) => format!("PROG: {rest}"),
                None => line.to_string(),
            })
            .collect();
    }
    text
}

/// Whether cargo refuses to package a file whose name holds `c` (Windows cannot name it):
/// `:<>"|?*\\` and control characters.
pub fn cargo_refuses(c: char) -> bool {
    matches!(c, ':' | '<' | '>' | '"' | '|' | '?' | '*' | '\\') || c.is_control()
}

/// The name under which a golden output file named `logical` is stored: `%` and every
/// character cargo refuses to package written as `%XX` (the hex of its UTF-8 bytes), so that
/// `gfx90a:xnack+.bc` is stored as `gfx90a%3Axnack+.bc`.
pub fn golden_file_name(logical: &str) -> String {
    let mut stored = String::with_capacity(logical.len());
    for c in logical.chars() {
        if c == '%' || cargo_refuses(c) {
            let mut bytes = [0; 4];
            for b in c.encode_utf8(&mut bytes).bytes() {
                let _ = write!(stored, "%{b:02X}");
            }
        } else {
            stored.push(c);
        }
    }
    stored
}

/// The logical name of a golden output file stored as `stored`: the inverse of
/// [`golden_file_name`].
pub fn golden_logical_name(stored: &str) -> String {
    let bytes = stored.as_bytes();
    let mut logical = Vec::with_capacity(bytes.len());
    let mut i = 0;
    while i < bytes.len() {
        let hex = bytes
            .get(i + 1..i + 3)
            .and_then(|h| std::str::from_utf8(h).ok());
        match (bytes[i], hex.and_then(|h| u8::from_str_radix(h, 16).ok())) {
            (b'%', Some(b)) => {
                logical.push(b);
                i += 3;
            }
            (b, _) => {
                logical.push(b);
                i += 1;
            }
        }
    }
    String::from_utf8_lossy(&logical).into_owned()
}

/// Every file under `dir`, by relative path with `/` separators.
pub fn read_tree(dir: &Path) -> BTreeMap<String, Vec<u8>> {
    fn walk(base: &Path, dir: &Path, into: &mut BTreeMap<String, Vec<u8>>) {
        let Ok(entries) = fs::read_dir(dir) else {
            return;
        };
        for entry in entries.flatten() {
            let path = entry.path();
            if path.is_dir() {
                walk(base, &path, into);
            } else {
                let name = path
                    .strip_prefix(base)
                    .unwrap_or(&path)
                    .components()
                    .map(|c| c.as_os_str().to_string_lossy().into_owned())
                    .collect::<Vec<_>>()
                    .join("/");
                into.insert(name, fs::read(&path).unwrap_or_default());
            }
        }
    }
    let mut files = BTreeMap::new();
    walk(dir, dir, &mut files);
    files
}

// ---- expectations -----------------------------------------------------------------------------------

/// What a case must produce: from its golden folder or from a run of LLVM.
#[derive(Debug, Clone)]
pub struct Expected {
    /// Exit code.
    pub exit: i32,
    /// Standard output.
    pub stdout: Vec<u8>,
    /// LLVM's normalised standard error.
    pub stderr: String,
    /// Output files; `None` when not known (golden [compressed] cases).
    pub outputs: Option<BTreeMap<String, Vec<u8>>>,
}

impl Expected {
    /// The expectation a run of LLVM sets, or an error when LLVM did not exit normally.
    pub fn from_llvm(outcome: &Outcome) -> Result<Expected, String> {
        match outcome.status {
            Status::Exited(code) if code < 124 => Ok(Expected {
                exit: code,
                stdout: outcome.stdout.clone(),
                stderr: outcome.stderr.clone(),
                outputs: Some(outcome.outputs.clone()),
            }),
            status => Err(format!(
                "LLVM did not exit normally ({status}); mark the case [llvm-crashes]"
            )),
        }
    }
}

/// The golden folder of `case`, or an error saying what is missing.
pub fn load_golden(case: &Case) -> Result<Expected, String> {
    load_golden_from(&golden_dir(), case)
}

/// The golden folder of `case` under `root`, or an error saying what is missing.
pub fn load_golden_from(root: &Path, case: &Case) -> Result<Expected, String> {
    let dir = root.join(&case.name);
    let read = |file: &str| {
        fs::read(dir.join(file)).map_err(|e| {
            format!(
                "no golden file {}/{file} ({e}); run tests/golden/make.sh (bundler cases) or OFFLOAD_WRITE_GOLDEN=1 cargo test --test main packager::",
                case.name
            )
        })
    };
    let exit_text = String::from_utf8_lossy(&read("exit")?).trim().to_string();
    let exit = exit_text.parse().map_err(|_| {
        format!(
            "golden {}/exit holds {exit_text:?}, not a number",
            case.name
        )
    })?;
    let stdout = read("stdout")?;
    let stderr = String::from_utf8_lossy(&read("stderr")?).into_owned();
    let outputs = if case.compressed {
        None
    } else {
        let stored = read_tree(&dir.join("out"));
        Some(
            stored
                .into_iter()
                .map(|(name, bytes)| (golden_logical_name(&name), bytes))
                .collect(),
        )
    };
    Ok(Expected {
        exit,
        stdout,
        stderr,
        outputs,
    })
}

/// The texts our stderr must contain, read from LLVM's normalised stderr: the text after
/// `PROG: error: ` and `PROG: warning: ` on each such line, and each raw `Warning: ` line.
/// When LLVM failed without an `error:` line (its command-line parser's messages), the text
/// after `PROG: ` on its first such line, up to a `  Try:` hint.
pub fn llvm_messages(stderr: &str, failed: bool) -> Vec<String> {
    let mut messages = Vec::new();
    for line in stderr.lines() {
        if let Some(m) = line
            .strip_prefix("PROG: error: ")
            .or_else(|| line.strip_prefix("PROG: warning: "))
        {
            messages.push(m.to_string());
        } else if line.starts_with("Warning: ") {
            messages.push(line.to_string());
        }
    }
    if failed && messages.is_empty() {
        if let Some(line) = stderr.lines().find_map(|l| l.strip_prefix("PROG: ")) {
            let text = line.split("  Try:").next().unwrap_or(line).trim_end();
            if !text.is_empty() {
                messages.push(text.to_string());
            }
        }
    }
    messages
}

/// A short printable form of bytes for a report.
pub fn show(bytes: &[u8]) -> String {
    const LIMIT: usize = 300;
    let text = String::from_utf8_lossy(&bytes[..bytes.len().min(LIMIT)]);
    let more = if bytes.len() > LIMIT { "..." } else { "" };
    format!("{:?}{more}", text)
}

/// Compares our run of `case` with what is expected; returns the differences, empty when
/// they agree. Output files are compared only when `expected.outputs` is known, LLVM
/// succeeded and the case is not `[compressed]`; when LLVM failed, we must leave no output
/// files at all.
pub fn compare(case: &Case, expected: &Expected, ours: &Outcome) -> Vec<String> {
    let mut problems = Vec::new();
    match ours.status {
        Status::Exited(code) if code == expected.exit => {}
        status => problems.push(format!(
            "status: expected exit {}, got {status}; our stderr: {}",
            expected.exit,
            show(ours.stderr.as_bytes())
        )),
    }
    if ours.stdout != expected.stdout {
        problems.push(format!(
            "stdout differs: {}\n      expected: {}\n      got:      {}",
            first_difference(&expected.stdout, &ours.stdout),
            show(&expected.stdout),
            show(&ours.stdout)
        ));
    }
    if expected.exit == 0 {
        if let (Some(outputs), false) = (&expected.outputs, case.compressed) {
            problems.extend(compare_outputs(outputs, &ours.outputs));
        }
    } else if !ours.outputs.is_empty() {
        problems.push(format!(
            "failed but left output files behind: {}",
            names(&ours.outputs)
        ));
    }
    for message in llvm_messages(&expected.stderr, expected.exit != 0) {
        if !ours.stderr.contains(&message) {
            problems.push(format!(
                "stderr lacks LLVM's message {message:?}; our stderr: {}",
                show(ours.stderr.as_bytes())
            ));
        }
    }
    problems.extend(check_expect(case, ours));
    problems
}

/// Checks the ` # expect: ` texts of `case` against our stderr.
pub fn check_expect(case: &Case, ours: &Outcome) -> Vec<String> {
    case.expect
        .iter()
        .filter(|text| !ours.stderr.contains(text.as_str()))
        .map(|text| {
            format!(
                "stderr lacks the expected text {text:?}; our stderr: {}",
                show(ours.stderr.as_bytes())
            )
        })
        .collect()
}

/// Checks our run of an `[llvm-crashes]` case: exit 1 (no panic, no signal), the expected
/// texts on stderr, no output files.
pub fn check_crash_case(case: &Case, ours: &Outcome) -> Vec<String> {
    let mut problems = Vec::new();
    if ours.status != Status::Exited(1) {
        problems.push(format!(
            "status: expected exit 1 (LLVM 19 crashes here; we must fail cleanly), got {}; our stderr: {}",
            ours.status,
            show(ours.stderr.as_bytes())
        ));
    }
    problems.extend(check_expect(case, ours));
    if !ours.outputs.is_empty() {
        problems.push(format!(
            "failed but left output files behind: {}",
            names(&ours.outputs)
        ));
    }
    problems
}

/// Whether `case` is checked against its own expectations rather than LLVM's results.
pub fn checked_on_its_own(case: &Case) -> bool {
    case.llvm_crashes
        || case.llvm_wrong
        || case.llvm_rejects
        || case.unsupported
        || case.ours_as.is_some()
}

/// Checks our run of a case that is not compared with LLVM: `[llvm-crashes]` and
/// `[llvm-wrong]` must fail cleanly, `[llvm-rejects]` must succeed with the expected texts on
/// stdout, `[unsupported]` must say it is not supported yet and leave nothing behind.
pub fn check_own(case: &Case, ours: &Outcome) -> Vec<String> {
    if let Some(other) = &case.ours_as {
        let mut like = case.clone();
        like.name = other.clone();
        return match load_golden(&like) {
            Ok(expected) => compare(&like, &expected, ours),
            Err(e) => vec![format!("[llvm-crashes-ours-as:{other}]: {e}")],
        };
    }
    if case.llvm_rejects {
        let mut problems = Vec::new();
        if ours.status != Status::Exited(0) {
            problems.push(format!(
                "status: expected exit 0 (LLVM 19 fails here; we read the input), got {}; our stderr: {}",
                ours.status,
                show(ours.stderr.as_bytes())
            ));
        }
        let stdout = String::from_utf8_lossy(&ours.stdout);
        for text in &case.expect {
            let text = text.replace("\\n", "\n");
            if !stdout.contains(&text) {
                problems.push(format!(
                    "stdout lacks the expected text {text:?}; our stdout: {stdout:?}"
                ));
            }
        }
        return problems;
    }
    let mut problems = check_crash_case(case, ours);
    if case.unsupported && !ours.stderr.contains("not supported yet") {
        problems.push(format!(
            "stderr lacks \"not supported yet\"; our stderr: {}",
            show(ours.stderr.as_bytes())
        ));
    }
    problems
}

/// Compares two sets of output files by name and bytes.
pub fn compare_outputs(
    expected: &BTreeMap<String, Vec<u8>>,
    ours: &BTreeMap<String, Vec<u8>>,
) -> Vec<String> {
    let mut problems = Vec::new();
    let missing: Vec<&String> = expected.keys().filter(|k| !ours.contains_key(*k)).collect();
    let extra: Vec<&String> = ours.keys().filter(|k| !expected.contains_key(*k)).collect();
    if !missing.is_empty() {
        problems.push(format!("output files missing: {missing:?}"));
    }
    if !extra.is_empty() {
        problems.push(format!("unexpected output files: {extra:?}"));
    }
    for (name, want) in expected {
        if let Some(got) = ours.get(name) {
            if got != want {
                problems.push(format!(
                    "output {name} differs: {}",
                    first_difference(want, got)
                ));
            }
        }
    }
    problems
}

fn names(files: &BTreeMap<String, Vec<u8>>) -> String {
    files.keys().cloned().collect::<Vec<_>>().join(", ")
}

// ---- running many cases and reporting ------------------------------------------------------------

/// Runs `check` on every case, on several threads, and returns the problems of each case in
/// case order.
pub fn check_all<F>(cases: &[Case], check: F) -> Vec<(Case, Vec<String>)>
where
    F: Fn(&Case) -> Vec<String> + Sync,
{
    let threads = std::thread::available_parallelism()
        .map(|n| n.get())
        .unwrap_or(4)
        .min(16);
    let next = AtomicUsize::new(0);
    let results: Mutex<Vec<Option<Vec<String>>>> = Mutex::new(vec![None; cases.len()]);
    std::thread::scope(|scope| {
        for _ in 0..threads {
            scope.spawn(|| loop {
                let i = next.fetch_add(1, Ordering::SeqCst);
                let Some(case) = cases.get(i) else { break };
                let problems =
                    match std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| check(case))) {
                        Ok(problems) => problems,
                        Err(payload) => vec![format!(
                            "the test harness panicked: {}",
                            payload
                                .downcast_ref::<String>()
                                .cloned()
                                .or_else(|| payload.downcast_ref::<&str>().map(|s| s.to_string()))
                                .unwrap_or_default()
                        )],
                    };
                results.lock().unwrap()[i] = Some(problems);
            });
        }
    });
    let results = results.into_inner().unwrap();
    cases
        .iter()
        .cloned()
        .zip(results.into_iter().map(Option::unwrap_or_default))
        .collect()
}

/// Prints a summary and panics listing every failing case, if any.
pub fn report(title: &str, results: &[(Case, Vec<String>)]) {
    let failed: Vec<&(Case, Vec<String>)> = results.iter().filter(|(_, p)| !p.is_empty()).collect();
    visible(&format!(
        "{title}: {} cases, {} passed, {} failed",
        results.len(),
        results.len() - failed.len(),
        failed.len()
    ));
    if failed.is_empty() {
        return;
    }
    let mut text = String::new();
    for (case, problems) in &failed {
        let _ = writeln!(
            text,
            "\n--- {} (tests/cases/bundler.txt:{})\n    args: {}",
            case.name,
            case.line,
            case.args.join(" ")
        );
        for problem in problems {
            let _ = writeln!(text, "  - {problem}");
        }
    }
    let failing: Vec<&str> = failed.iter().map(|(c, _)| c.name.as_str()).collect();
    panic!(
        "{title}: {} of {} cases failed:\n{text}\nfailing cases: {}\n(rerun some with OFFLOAD_CASES=name1,name2)",
        failed.len(),
        results.len(),
        failing.join(",")
    );
}
