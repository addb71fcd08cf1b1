//! Temporary files that must not outlive the process: every temporary output is listed here
//! while it exists, so that SIGINT, SIGTERM and SIGHUP remove them all before the process
//! dies of the signal. Work that must not be cut in the middle (writing new bytes into an
//! existing file) holds the list for its duration, and the signal waits for it.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
#[cfg(any(feature = "cli", feature = "internals"))]
use std::sync::Once;
use std::sync::{Mutex, MutexGuard};

/// The temporary files, by the number each was listed under: taking one off the list costs
/// the same whether it holds ten or a hundred thousand (a command that extracts a tree keeps
/// every output's temporary file until all are put in place).
static TEMPORARIES: Mutex<List> = Mutex::new(List {
    next: 0,
    paths: BTreeMap::new(),
});
#[cfg(any(feature = "cli", feature = "internals"))]
static HANDLERS: Once = Once::new();

struct List {
    /// The number the next file listed gets.
    next: u64,
    paths: BTreeMap<u64, PathBuf>,
}

fn temporaries() -> MutexGuard<'static, List> {
    TEMPORARIES
        .lock()
        .unwrap_or_else(std::sync::PoisonError::into_inner)
}

/// A temporary file on the list; dropping it takes it off (the file itself is removed or
/// renamed by its owner).
pub struct Listed(u64);

impl Drop for Listed {
    fn drop(&mut self) {
        temporaries().paths.remove(&self.0);
    }
}

/// Makes a temporary file with `make` and lists it, with the list held throughout, so that no
/// signal falls between the file's creation and its listing.
pub fn listed<T>(
    make: impl FnOnce() -> std::io::Result<T>,
    path_of: impl Fn(&T) -> &Path,
) -> std::io::Result<(T, Listed)> {
    let mut list = temporaries();
    let made = make()?;
    let number = list.next;
    list.next += 1;
    list.paths.insert(number, path_of(&made).to_path_buf());
    Ok((made, Listed(number)))
}

/// Runs `work` with the signals' clean-up held off until it ends.
pub fn uninterrupted<T>(work: impl FnOnce() -> T) -> T {
    let _held = temporaries();
    work()
}

/// Removes the listed temporary files when the process receives SIGINT, SIGTERM or SIGHUP,
/// then dies of that signal as it would have without the handler. For programs, not for
/// libraries loaded into another program (the linker plugin does not call it).
#[cfg(any(feature = "cli", feature = "internals"))]
pub fn remove_temporaries_on_signals() {
    HANDLERS.call_once(|| {
        use signal_hook::consts::{SIGHUP, SIGINT, SIGTERM};
        let Ok(mut signals) = signal_hook::iterator::Signals::new([SIGINT, SIGTERM, SIGHUP]) else {
            return;
        };
        std::thread::spawn(move || {
            if let Some(signal) = signals.forever().next() {
                let list = temporaries();
                for path in list.paths.values() {
                    // A folder being filled goes with what it holds (a link is not followed).
                    if std::fs::remove_file(path).is_err() {
                        let _ = std::fs::remove_dir_all(path);
                    }
                }
                // The list stays held: no new temporary is made while the process ends.
                let _ = signal_hook::low_level::emulate_default_handler(signal);
                std::process::exit(128 + signal);
            }
        });
    });
}
