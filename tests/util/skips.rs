//! How a test skips when something outside the repository is missing (a reference tool, a
//! Python module, a library, a variable naming a file, root): with a visible `SKIP: <why>` line
//! on stderr, counted, and summed up when the test program ends; or, under
//! `OFFLOAD_REQUIRE_REFERENCE=1` (as in CI), with a failure instead.
//!
//! The summary (`external requirements: N checked, M skipped (in K tests)`, then one line per
//! test and reason; under `OFFLOAD_REQUIRE_REFERENCE=1` also how many were missing, each a
//! failure) is printed by a handler registered with `atexit` at the first check: libtest ends
//! its program by returning from `main` or by `exit`, and both run the handler once every test
//! is done. Statics are never dropped in Rust, so a destructor could not do it, and a test
//! named to run last runs last only on one thread. The handler writes to stderr directly,
//! which the harness does not capture.
//!
//! The integration tests use this file as `util::skips`; the library's unit tests include the
//! same file (see `src/ops/support/tool_path.rs`), and so do the linker plugin's tests, so all
//! skip, fail and count alike. It uses nothing but `std` (and C's `atexit`) for that reason.

use std::io::Write;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Mutex, Once};

/// The skips so far: (whether required, so a failure; test; why), in order.
static SKIPS: Mutex<Vec<(bool, String, String)>> = Mutex::new(Vec::new());

/// How many requirements were checked, found or not.
static CHECKS: AtomicUsize = AtomicUsize::new(0);

/// Registers the summary once.
static SUMMARY: Once = Once::new();

/// Whether a missing requirement fails the test (`OFFLOAD_REQUIRE_REFERENCE=1`).
pub fn required() -> bool {
    std::env::var("OFFLOAD_REQUIRE_REFERENCE").as_deref() == Ok("1")
}

/// `found`, a requirement looked for: when it is `None`, the test skips for the reason `why`
/// (see [`skip`]).
pub fn reference<T>(found: Option<T>, why: &str) -> Option<T> {
    checked();
    if found.is_none() {
        skipped(why);
    }
    found
}

/// Skips (the test returns after this) for the reason `why`: prints `SKIP: why` and counts
/// it; or, under `OFFLOAD_REQUIRE_REFERENCE=1`, panics.
pub fn skip(why: &str) {
    checked();
    skipped(why);
}

/// Counts a check, and at the first one has the summary printed at the end.
fn checked() {
    CHECKS.fetch_add(1, Ordering::Relaxed);
    SUMMARY.call_once(|| {
        // SAFETY: `atexit` only keeps the pointer. `print_summary` does not unwind into C (it
        // takes over poisoned locks and ignores failed writes) and does not call `exit`.
        unsafe {
            atexit(print_summary);
        }
    });
}

/// Prints and counts a skip, or fails when requirements are required (counted too, as
/// missing).
fn skipped(why: &str) {
    let required = required();
    let test = std::thread::current()
        .name()
        .unwrap_or("(unnamed thread)")
        .to_string();
    SKIPS
        .lock()
        .unwrap_or_else(|e| e.into_inner())
        .push((required, test, why.to_string()));
    assert!(
        !required,
        "{why}, and OFFLOAD_REQUIRE_REFERENCE=1 requires it (.ci/references installs what the tests need)"
    );
    let _ = writeln!(std::io::stderr().lock(), "SKIP: {why}");
}

extern "C" {
    /// C's own: runs `handler` when the program ends by `exit` or by returning from `main`.
    fn atexit(handler: extern "C" fn()) -> std::ffi::c_int;
}

/// Prints how many requirements were checked, skipped and (when required) missing, and which
/// test lacked what.
extern "C" fn print_summary() {
    let skips = SKIPS.lock().unwrap_or_else(|e| e.into_inner());
    let mut lines: Vec<&(bool, String, String)> = skips.iter().collect();
    lines.sort();
    lines.dedup();
    let missing = skips.iter().filter(|(required, ..)| *required).count();
    let mut err = std::io::stderr().lock();
    let mut tests: Vec<&String> = skips
        .iter()
        .filter(|(required, ..)| !required)
        .map(|(_, test, _)| test)
        .collect();
    tests.sort();
    tests.dedup();
    let _ = write!(
        err,
        "external requirements: {} checked, {} skipped",
        CHECKS.load(Ordering::Relaxed),
        skips.len() - missing
    );
    if !tests.is_empty() {
        let _ = write!(err, " (in {} tests)", tests.len());
    }
    let _ = match missing {
        0 => writeln!(err),
        n => writeln!(err, ", {n} missing (failed: OFFLOAD_REQUIRE_REFERENCE=1)"),
    };
    for (required, test, why) in lines {
        let what = if *required { "missing" } else { "skipped" };
        let _ = writeln!(err, "  {what} in {test}: {why}");
    }
}
