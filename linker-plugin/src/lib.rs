//! A GNU linker plugin (the `plugin-api.h` interface of ld.bfd and gold) that rewrites the
//! device code of the file being linked once the linker has written it:
//!
//! ```sh
//! cc -Wl,-plugin=PATH/liboffload_linker_plugin.so -Wl,-plugin-opt=keep=gfx90a main.o k.o -o app
//! ```
//!
//! Options (`-plugin-opt=`): `keep=TARGET-ID` (repeatable), `remove=TARGET-ID` (repeatable),
//! `compress`, `compression-level=N`, `prune`, `list`, `verbose`. With none, the output is left exactly
//! as the linker wrote it. The plugin claims no input file; its work runs in the cleanup hook,
//! which ld.bfd and gold call after the output is written and closed. A link that failed is
//! never touched. The rewrite is the library's job, as `offload strip --in-place` (with
//! `prune`, `offload strip --prune --in-place`) and `offload compress --in-place` run it: the
//! same rules for programs, libraries and files of bare device images.
//!
//! `OFFLOAD_LOG` (a `tracing` filter, as for the `offload` command: `OFFLOAD_LOG=offload=debug`)
//! shows the library's log of the rewrite on standard error; unset, the plugin says nothing
//! more than its options ask for. `OFFLOAD_SYNC` is honoured as by the `offload` command; the
//! output, rewritten in place, is synced to the disk before it replaces the linker's in any case.

use std::ffi::{c_char, c_int, c_void, CStr, CString};
use std::path::{Path, PathBuf};
use std::sync::Mutex;

use offload::format::ccob::{CompressOptions, Method, DEFAULT_MAX_DECOMPRESSED};
use offload::ops::prune::Fate;
use offload::ops::rewrite::job::{self, JobOptions, Outcome, Pruning};
use offload::ops::rewrite::{Change, Mode, RewriteConfig};
use offload::ops::Links;
use offload::target::target_id::TargetIdBuf;

/// `enum ld_plugin_status`.
const LDPS_OK: c_int = 0;
const LDPS_ERR: c_int = 3;

/// `enum ld_plugin_tag` values used here.
const LDPT_NULL: c_int = 0;
const LDPT_OPTION: c_int = 4;
const LDPT_REGISTER_CLAIM_FILE_HOOK: c_int = 5;
const LDPT_REGISTER_CLEANUP_HOOK: c_int = 7;
const LDPT_MESSAGE: c_int = 11;
const LDPT_OUTPUT_NAME: c_int = 15;

/// `enum ld_plugin_level`.
const LDPL_INFO: c_int = 0;
const LDPL_ERROR: c_int = 2;
const LDPL_FATAL: c_int = 3;

/// `struct ld_plugin_tv`: a tag and a word-sized value.
#[repr(C)]
pub struct Tv {
    tag: c_int,
    value: TvValue,
}

/// The value of a transfer vector entry.
#[repr(C)]
#[derive(Clone, Copy)]
pub union TvValue {
    int: c_int,
    string: *const c_char,
    pointer: *const c_void,
}

type Message = unsafe extern "C" fn(level: c_int, format: *const c_char, ...) -> c_int;
type CleanupHandler = extern "C" fn() -> c_int;
type RegisterCleanup = unsafe extern "C" fn(handler: CleanupHandler) -> c_int;
type ClaimFileHandler = extern "C" fn(file: *const c_void, claimed: *mut c_int) -> c_int;
type RegisterClaimFile = unsafe extern "C" fn(handler: ClaimFileHandler) -> c_int;

/// The target ID of `-plugin-opt=VALUE`, checked.
fn target_id(value: &str, id: &str) -> Result<TargetIdBuf, String> {
    id.parse().map_err(|e| format!("-plugin-opt={value}: {e}"))
}

/// What the plugin was asked to do.
#[derive(Debug, Default, Clone, PartialEq, Eq)]
pub struct Options {
    /// Target IDs to keep.
    pub keep: Vec<TargetIdBuf>,
    /// Target IDs to remove.
    pub remove: Vec<TargetIdBuf>,
    /// Compress every bundle.
    pub compress: bool,
    /// The compression level, when given.
    pub level: Option<i32>,
    /// Print what the output holds.
    pub list: bool,
    /// Say what is done.
    pub verbose: bool,
    /// Remove an output of bare device images only for other targets, as `offload strip
    /// --prune` removes such files.
    pub prune: bool,
}

impl Options {
    /// Reads the `-plugin-opt=` values, in order; an unknown or malformed one is an error
    /// naming it.
    pub fn parse<'s>(values: impl IntoIterator<Item = &'s str>) -> Result<Options, String> {
        let mut options = Options::default();
        for value in values {
            match value.split_once('=') {
                Some(("keep", id)) if !id.is_empty() => options.keep.push(target_id(value, id)?),
                Some(("remove", id)) if !id.is_empty() => {
                    options.remove.push(target_id(value, id)?)
                }
                Some(("compression-level", n)) => {
                    let level = n.parse().map_err(|_| {
                        format!("-plugin-opt={value}: the compression level must be a number")
                    })?;
                    options.level = Some(level);
                }
                None if value == "compress" => options.compress = true,
                None if value == "list" => options.list = true,
                None if value == "verbose" => options.verbose = true,
                None if value == "prune" => options.prune = true,
                _ => {
                    return Err(format!(
                        "unknown option -plugin-opt={value} (known: keep=ID, remove=ID, compress, compression-level=N, prune, list, verbose)"
                    ))
                }
            }
        }
        if !options.keep.is_empty() && !options.remove.is_empty() {
            return Err("-plugin-opt=keep= and -plugin-opt=remove= cannot be used together".into());
        }
        Ok(options)
    }

    /// The rewrites asked for, in the order they run.
    pub fn changes(&self) -> Vec<Change> {
        let mut changes = Vec::new();
        if !self.keep.is_empty() {
            changes.push(Change::Keep(self.keep.clone()));
        }
        if !self.remove.is_empty() {
            changes.push(Change::Remove(self.remove.clone()));
        }
        if self.compress {
            changes.push(Change::Compress(CompressOptions {
                method: Method::Zstd,
                level: self.level.unwrap_or(Method::Zstd.default_level()),
                version: 2,
            }));
        }
        changes
    }
}

struct State {
    options: Options,
    output: Option<PathBuf>,
}

static STATE: Mutex<Option<State>> = Mutex::new(None);

fn say(message: Option<Message>, level: c_int, text: &str) {
    let text = CString::new(format!("offload linker plugin: {text}")).unwrap_or_default();
    match message {
        // SAFETY: the linker's message function takes a printf format and its arguments;
        // "%s" with one NUL-terminated string is such a call.
        Some(m) => unsafe {
            m(level, c"%s".as_ptr(), text.as_ptr());
        },
        None => eprintln!("{}", text.to_string_lossy()),
    }
}

/// Installs a log on standard error filtered by `OFFLOAD_LOG`, when it is set and parses; the
/// linker's own output is otherwise left as it was.
fn install_log() {
    let Some(text) = std::env::var_os("OFFLOAD_LOG").filter(|v| !v.is_empty()) else {
        return;
    };
    match tracing_subscriber::EnvFilter::try_new(text.to_string_lossy()) {
        Ok(filter) => {
            // Failing means the process has a log already: it is the one to keep.
            let _ = tracing_subscriber::fmt()
                .with_env_filter(filter)
                .with_writer(std::io::stderr)
                .with_span_events(tracing_subscriber::fmt::format::FmtSpan::CLOSE)
                .with_timer(tracing_subscriber::fmt::time::uptime())
                .with_target(false)
                .try_init();
        }
        Err(e) => say(
            None,
            LDPL_INFO,
            &format!("OFFLOAD_LOG is not a log filter ({e}); not logging"),
        ),
    }
}

extern "C" fn claim_file(_file: *const c_void, claimed: *mut c_int) -> c_int {
    if !claimed.is_null() {
        // SAFETY: the linker passes a valid pointer to its flag.
        unsafe { *claimed = 0 };
    }
    LDPS_OK
}

/// Rewrites `output` with every change, in place, as the `offload` command's job does it
/// (`offload strip --in-place`, with `--prune` when asked, and `offload compress
/// --in-place`): a program or library rewritten, a file of bare device images kept whole or,
/// only for other targets, pruned. Lists it if asked; errors as text.
pub fn rewrite_output(output: &Path, options: &Options) -> Result<Vec<String>, String> {
    let mut report = Vec::new();
    for change in options.changes() {
        let strips = matches!(change, Change::Keep(_) | Change::Remove(_));
        let job = JobOptions {
            files: vec![output.to_path_buf()],
            recursive: false,
            links: Links::Skip,
            output: None,
            mode: Mode::Write,
            config: RewriteConfig {
                change,
                allow_empty: false,
                max_decompressed: DEFAULT_MAX_DECOMPRESSED,
                ptx: Default::default(),
            },
            pruning: strips.then(|| Pruning::of_flags(options.prune, false)),
            threads: 1,
        };
        let done = job::run(&job, &()).map_err(|stopped| stopped.refusal.to_string())?;
        if let Some(e) = done.walk.errors.into_iter().chain(done.refused).next() {
            return Err(e.to_string());
        }
        for file in done.files {
            let line = match file.outcome.map_err(|e| e.to_string())? {
                Outcome::Rewritten(summary, _) => format!(
                    "{}: {} device images to {}, {} bytes to {}",
                    output.display(),
                    summary.images_before,
                    summary.images_after,
                    summary.size_before,
                    summary.size_after
                ),
                Outcome::Bare(bare, fate, _, _) => format!(
                    "{}: only device code for other targets ({}), {} bytes: {}",
                    output.display(),
                    bare.targets.join(","),
                    bare.size,
                    match fate {
                        Fate::Removed | Fate::NotCopied => "pruned (removed)",
                        Fate::Left | Fate::Copied =>
                            "left as it is (use -plugin-opt=prune to remove it)",
                    }
                ),
                Outcome::NoDeviceCode(_) => continue,
            };
            if options.verbose {
                report.push(line);
            }
        }
    }
    if options.list && output.exists() {
        let (images, _) =
            offload::ops::ls::list_file(output, offload::format::ccob::DEFAULT_MAX_DECOMPRESSED)
                .map_err(|e| e.to_string())?;
        report.extend(offload::ops::ls::table(&images).lines().map(str::to_string));
    }
    Ok(report)
}

extern "C" {
    fn atexit(callback: extern "C" fn()) -> c_int;
    fn _exit(status: c_int) -> !;
}

/// The cleanup hook. ld.bfd calls it once the output is written and closed, after removing the
/// output of a failed link; gold calls it before removing that output. So the work is left to
/// the very end of the process, when the output of a failed link is gone in both.
extern "C" fn cleanup() -> c_int {
    let has_work = STATE
        .lock()
        .ok()
        .and_then(|s| {
            s.as_ref()
                .map(|s| !s.options.changes().is_empty() || s.options.list)
        })
        .unwrap_or(false);
    // SAFETY: registering a plain function to run at exit.
    if has_work && unsafe { atexit(at_exit) } != 0 {
        return finish();
    }
    LDPS_OK
}

extern "C" fn at_exit() {
    if finish() != LDPS_OK {
        // The link had succeeded; its output is not what was asked for, so it goes, and the
        // link fails.
        // SAFETY: ends the process at once, as the linker would have on an error.
        unsafe { _exit(1) };
    }
}

/// Rewrites the output if the link produced one.
fn finish() -> c_int {
    let Some(state) = STATE.lock().ok().and_then(|mut s| s.take()) else {
        return LDPS_OK;
    };
    let Some(output) = state.output else {
        return LDPS_OK;
    };
    // A failed link leaves no output, or one the linker did not finish: only a complete
    // object file is rewritten.
    let complete = std::fs::read(&output)
        .ok()
        .is_some_and(|data| object::File::parse(&*data).is_ok());
    if !complete {
        if state.options.verbose {
            say(
                None,
                LDPL_INFO,
                &format!("'{}' was not written: nothing to do", output.display()),
            );
        }
        return LDPS_OK;
    }
    match rewrite_output(&output, &state.options) {
        Ok(lines) => {
            for line in lines {
                say(None, LDPL_INFO, &line);
            }
            LDPS_OK
        }
        Err(e) => {
            say(None, LDPL_ERROR, &format!("error: {e}"));
            let _ = std::fs::remove_file(&output);
            LDPS_ERR
        }
    }
}

/// The plugin's entry point, called by the linker with its transfer vector.
///
/// # Safety
/// `tv` must point to a transfer vector as `plugin-api.h` defines it, ending with `LDPT_NULL`.
#[no_mangle]
pub unsafe extern "C" fn onload(tv: *const Tv) -> c_int {
    install_log();
    offload::set_syncing(offload::Syncing::from_env());
    let mut values: Vec<String> = Vec::new();
    let mut output = None;
    let mut message: Option<Message> = None;
    let mut register_cleanup: Option<RegisterCleanup> = None;
    let mut register_claim: Option<RegisterClaimFile> = None;
    let mut entry = tv;
    // SAFETY: the caller promises a vector ending with LDPT_NULL; each value is read as the
    // member its tag says.
    unsafe {
        while !entry.is_null() && (*entry).tag != LDPT_NULL {
            let value = (*entry).value;
            match (*entry).tag {
                LDPT_OPTION if !value.string.is_null() => {
                    values.push(CStr::from_ptr(value.string).to_string_lossy().into_owned());
                }
                LDPT_OUTPUT_NAME if !value.string.is_null() => {
                    output = Some(PathBuf::from(
                        CStr::from_ptr(value.string).to_string_lossy().into_owned(),
                    ));
                }
                LDPT_MESSAGE if !value.pointer.is_null() => {
                    message = Some(std::mem::transmute::<*const c_void, Message>(value.pointer));
                }
                LDPT_REGISTER_CLEANUP_HOOK if !value.pointer.is_null() => {
                    register_cleanup = Some(std::mem::transmute::<*const c_void, RegisterCleanup>(
                        value.pointer,
                    ));
                }
                LDPT_REGISTER_CLAIM_FILE_HOOK if !value.pointer.is_null() => {
                    register_claim = Some(std::mem::transmute::<*const c_void, RegisterClaimFile>(
                        value.pointer,
                    ));
                }
                _ => {}
            }
            entry = entry.add(1);
        }
    }
    let options = match Options::parse(values.iter().map(String::as_str)) {
        Ok(o) => o,
        Err(e) => {
            say(message, LDPL_FATAL, &e);
            return LDPS_ERR;
        }
    };
    let Some(register_cleanup) = register_cleanup else {
        say(message, LDPL_FATAL, "the linker offers no cleanup hook");
        return LDPS_ERR;
    };
    // SAFETY: the registration functions come from the linker's transfer vector.
    unsafe {
        if let Some(register_claim) = register_claim {
            register_claim(claim_file);
        }
        if register_cleanup(cleanup) != LDPS_OK {
            say(message, LDPL_FATAL, "the linker refused the cleanup hook");
            return LDPS_ERR;
        }
    }
    if let Ok(mut state) = STATE.lock() {
        *state = Some(State { options, output });
    }
    LDPS_OK
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn options_read_as_documented() {
        let o = Options::parse([
            "keep=gfx90a",
            "keep=gfx908:xnack-",
            "compress",
            "compression-level=9",
            "list",
            "verbose",
        ])
        .unwrap();
        let keep: Vec<&str> = o.keep.iter().map(TargetIdBuf::as_str).collect();
        assert_eq!(keep, ["gfx90a", "gfx908:xnack-"]);
        assert_eq!(
            Options::parse(["keep=gfx90a:xnack"]).unwrap_err(),
            "-plugin-opt=keep=gfx90a:xnack: invalid target ID 'gfx90a:xnack': expected PROCESSOR(:FEATURE+|:FEATURE-)*, each feature once, as in gfx90a:xnack+"
        );
        assert!(o.compress && o.list && o.verbose);
        assert_eq!(o.level, Some(9));
        assert_eq!(o.changes().len(), 2);
        assert_eq!(Options::parse([]).unwrap().changes().len(), 0);
        assert_eq!(
            Options::parse(["kep=gfx90a"]).unwrap_err(),
            "unknown option -plugin-opt=kep=gfx90a (known: keep=ID, remove=ID, compress, compression-level=N, prune, list, verbose)"
        );
        assert!(Options::parse(["keep="]).is_err());
        assert!(Options::parse(["compression-level=high"])
            .unwrap_err()
            .contains("must be a number"));
        assert!(Options::parse(["keep=gfx90a", "remove=gfx906"]).is_err());
    }

    /// A copy of the code object for gfx906 of the samples (a bare device image, in no
    /// container), as if a link had written it, and its bytes.
    fn bare_output(dir: &Path) -> (PathBuf, Vec<u8>) {
        let sample =
            Path::new(env!("CARGO_MANIFEST_DIR")).join("../samples/dev/kernel-gfx906.hsaco");
        let output = dir.join("k.hsaco");
        std::fs::copy(sample, &output).unwrap();
        let bytes = std::fs::read(&output).unwrap();
        (output, bytes)
    }

    #[test]
    fn an_output_of_bare_device_images_is_kept_or_pruned_whole_as_strip_does() {
        let dir = tempfile::tempdir().unwrap();
        let (output, bytes) = bare_output(dir.path());
        // Judged as strip judges a file of bare device images: only for other targets, left.
        let keep = Options::parse(["keep=gfx90a", "verbose"]).unwrap();
        assert_eq!(
            rewrite_output(&output, &keep).unwrap(),
            [format!(
                "{}: only device code for other targets (gfx906), {} bytes: left as it is (use -plugin-opt=prune to remove it)",
                output.display(),
                bytes.len()
            )]
        );
        assert_eq!(std::fs::read(&output).unwrap(), bytes);
        // As `offload strip --keep gfx90a --prune`: a strip that would keep no device image
        // of any file is refused, and nothing changes.
        let keep_pruning = Options::parse(["keep=gfx90a", "prune"]).unwrap();
        let refused = rewrite_output(&output, &keep_pruning).unwrap_err();
        assert!(
            refused.contains("keep none of the 1 device images found"),
            "{refused}"
        );
        assert_eq!(std::fs::read(&output).unwrap(), bytes);
        // As `offload strip --remove gfx906 --prune`: pruned whole.
        let remove_pruning = Options::parse(["remove=gfx906", "prune", "verbose"]).unwrap();
        let lines = rewrite_output(&output, &remove_pruning).unwrap();
        assert!(lines[0].ends_with(": pruned (removed)"), "{lines:?}");
        assert!(!output.exists());
    }
}
