//! Mapped inputs that another process truncates while we read them. Touching a page past the
//! new end of a mapped file raises SIGBUS, which would kill the process. A handler put in
//! place with the first guarded map turns such a fault into a mark on the map: it maps zero
//! pages over the rest of the region, so the read goes on, and the operation reports the
//! damage before it writes anything (see [`Guarded::shrank`]). Faults outside guarded maps
//! go to whatever handler was there before.

use std::mem::MaybeUninit;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::Once;

/// How many maps can be guarded at once; more are still mapped, without the guard.
const SLOTS: usize = 256;

struct Slot {
    start: AtomicUsize,
    end: AtomicUsize,
    faulted: AtomicBool,
    taken: AtomicBool,
}

#[allow(clippy::declare_interior_mutable_const)]
const FREE: Slot = Slot {
    start: AtomicUsize::new(0),
    end: AtomicUsize::new(0),
    faulted: AtomicBool::new(false),
    taken: AtomicBool::new(false),
};

static REGIONS: [Slot; SLOTS] = [FREE; SLOTS];
static PAGE_SIZE: AtomicUsize = AtomicUsize::new(4096);
static INSTALL: Once = Once::new();
static mut PREVIOUS: MaybeUninit<libc::sigaction> = MaybeUninit::uninit();

/// A guarded region; dropping it ends the guard (before the map is unmapped).
pub struct Guarded {
    slot: Option<usize>,
}

impl Guarded {
    /// Guards `len` bytes at `start`, the whole of a read-only file map.
    pub fn new(start: *const u8, len: usize) -> Guarded {
        INSTALL.call_once(install);
        let slot = REGIONS.iter().position(|slot| {
            slot.taken
                .compare_exchange(false, true, Ordering::AcqRel, Ordering::Acquire)
                .is_ok()
        });
        if let Some(index) = slot {
            let slot = &REGIONS[index];
            slot.faulted.store(false, Ordering::Release);
            slot.end.store(start as usize + len, Ordering::Release);
            slot.start.store(start as usize, Ordering::Release);
        }
        Guarded { slot }
    }

    /// The slot that holds the guard, for [`slot_shrank`]; `None` when every slot was taken.
    pub fn slot(&self) -> Option<usize> {
        self.slot
    }

    /// Whether a page of the region was gone when it was read: the file shrank under the map,
    /// and what was read from there was zeros instead of the file's bytes.
    pub fn shrank(&self) -> bool {
        self.slot.is_some_and(slot_shrank)
    }
}

/// Whether the region guarded in `slot` lost a page to a file that shrank.
pub fn slot_shrank(slot: usize) -> bool {
    REGIONS
        .get(slot)
        .is_some_and(|s| s.faulted.load(Ordering::Acquire))
}

impl Drop for Guarded {
    fn drop(&mut self) {
        if let Some(index) = self.slot {
            let slot = &REGIONS[index];
            slot.start.store(0, Ordering::Release);
            slot.end.store(0, Ordering::Release);
            slot.taken.store(false, Ordering::Release);
        }
    }
}

fn install() {
    // SAFETY: sysconf and sigaction are called with valid arguments; the previous action is
    // written once, here, before the handler that reads it can run.
    unsafe {
        let page = libc::sysconf(libc::_SC_PAGESIZE);
        if page > 0 {
            PAGE_SIZE.store(page as usize, Ordering::Release);
        }
        let mut action: libc::sigaction = std::mem::zeroed();
        action.sa_sigaction = on_sigbus as *const () as usize;
        action.sa_flags = libc::SA_SIGINFO | libc::SA_NODEFER;
        libc::sigemptyset(&mut action.sa_mask);
        libc::sigaction(
            libc::SIGBUS,
            &action,
            (&raw mut PREVIOUS).cast::<libc::sigaction>(),
        );
    }
}

/// The SIGBUS handler: only atomics and mmap/sigaction system calls.
extern "C" fn on_sigbus(_: libc::c_int, info: *mut libc::siginfo_t, _: *mut libc::c_void) {
    // SAFETY: the kernel passes a valid siginfo for SA_SIGINFO handlers.
    let address = unsafe { (*info).si_addr() } as usize;
    let page = PAGE_SIZE.load(Ordering::Acquire);
    for slot in &REGIONS {
        let start = slot.start.load(Ordering::Acquire);
        let end = slot.end.load(Ordering::Acquire);
        if start == 0 || address < start || address >= end {
            continue;
        }
        let from = address & !(page - 1);
        // SAFETY: the range lies inside a private read-only map this process owns; replacing
        // its pages with zero pages changes only what later reads of the map see.
        let mapped = unsafe {
            libc::mmap(
                from as *mut libc::c_void,
                end - from,
                libc::PROT_READ,
                libc::MAP_PRIVATE | libc::MAP_ANONYMOUS | libc::MAP_FIXED,
                -1,
                0,
            )
        };
        if mapped != libc::MAP_FAILED {
            slot.faulted.store(true, Ordering::Release);
            return;
        }
    }
    // Not a guarded map: the fault repeats under the handler that was there before.
    // SAFETY: PREVIOUS was written by `install` before this handler was put in place.
    unsafe {
        libc::sigaction(
            libc::SIGBUS,
            (&raw const PREVIOUS).cast::<libc::sigaction>(),
            std::ptr::null_mut(),
        );
    }
}
