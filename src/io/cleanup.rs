//! Temporary files that must not outlive the process: every temporary output is listed here
//! while it exists, so that SIGINT, SIGTERM and SIGHUP remove them all before the process
//! dies of the signal. Work that must not be cut in the middle (writing new bytes into an
//! existing file) holds the list for its duration, and the signal waits for it.

use std::path::{Path, PathBuf};
use std::sync::{Mutex, MutexGuard, Once};

static TEMPORARIES: Mutex<Vec<PathBuf>> = Mutex::new(Vec::new());
static HANDLERS: Once = Once::new();

fn temporaries() -> MutexGuard<'static, Vec<PathBuf>> {
    TEMPORARIES
        .lock()
        .unwrap_or_else(std::sync::PoisonError::into_inner)
}

/// A temporary file on the list; dropping it takes it off (the file itself is removed or
/// renamed by its owner).
pub struct Listed(PathBuf);

impl Drop for Listed {
    fn drop(&mut self) {
        let mut list = temporaries();
        if let Some(i) = list.iter().rposition(|p| *p == self.0) {
            list.swap_remove(i);
        }
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
    let path = path_of(&made).to_path_buf();
    list.push(path.clone());
    Ok((made, Listed(path)))
}

/// Runs `work` with the signals' clean-up held off until it ends.
pub fn uninterrupted<T>(work: impl FnOnce() -> T) -> T {
    let _held = temporaries();
    work()
}

/// Removes the listed temporary files when the process receives SIGINT, SIGTERM or SIGHUP,
/// then dies of that signal as it would have without the handler. For programs, not for
/// libraries loaded into another program (the linker plugin does not call it).
pub fn remove_temporaries_on_signals() {
    HANDLERS.call_once(|| {
        use signal_hook::consts::{SIGHUP, SIGINT, SIGTERM};
        let Ok(mut signals) = signal_hook::iterator::Signals::new([SIGINT, SIGTERM, SIGHUP]) else {
            return;
        };
        std::thread::spawn(move || {
            if let Some(signal) = signals.forever().next() {
                let list = temporaries();
                for path in list.iter() {
                    let _ = std::fs::remove_file(path);
                }
                // The list stays held: no new temporary is made while the process ends.
                let _ = signal_hook::low_level::emulate_default_handler(signal);
                std::process::exit(128 + signal);
            }
        });
    });
}
