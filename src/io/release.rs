//! The pages of mapped inputs given back once read: one part at a time, or a batch of parts
//! at a time.

use super::open_inputs;

/// Gives back the memory of the whole pages of `part`, when it is a slice of a mapped input
/// file that this process will not read again soon: the pages leave this process's resident
/// set (they stay in the page cache, and are read again from the file if touched). Anything
/// else (bytes in memory, another mapping) is left alone, since giving back its pages would
/// lose them. Work through a large file then holds only the pages in use.
pub fn release_mapped(part: &[u8]) {
    release_range(part.as_ptr() as usize, part.as_ptr() as usize + part.len());
}

/// [`release_mapped`] of the addresses from `from` to `to`.
fn release_range(from: usize, to: usize) {
    const PAGE: usize = 4096;
    let (first, last) = (from.next_multiple_of(PAGE), to / PAGE * PAGE);
    // No whole page: nothing to give back, and the list of inputs need not be locked.
    if first >= last {
        return;
    }
    if !open_inputs().maps(from, to) {
        return;
    }
    // SAFETY: the range lies inside a read-only private file mapping that stays mapped (its
    // input is open: it is listed); dropping its pages only makes the next read fetch them
    // again from the file, so every slice of it keeps its bytes.
    unsafe {
        libc::madvise(
            first as *mut libc::c_void,
            last - first,
            libc::MADV_DONTNEED,
        );
    }
}

/// Parts of mapped inputs given back ([`release_mapped`]) a batch at a time rather than one
/// by one: each call interrupts every other core the process runs on to forget the pages,
/// which, for a thousand containers of a few hundred KiB, cost more than reading them. Parts
/// handed in one after another are joined (with what lies between them, when that is less
/// than [`ReleasedInBatches::GAP`]) and given back once they span
/// [`ReleasedInBatches::BATCH`], when the next does not follow, and when dropped.
#[derive(Default)]
pub struct ReleasedInBatches {
    from: usize,
    to: usize,
}

impl ReleasedInBatches {
    /// What a batch spans before it is given back.
    pub const BATCH: usize = 8 << 20;
    /// The most that may lie between two parts joined in one batch.
    pub const GAP: usize = 1 << 20;

    /// Gives back `part`'s pages, with the parts before it, once the batch is full.
    pub fn release(&mut self, part: &[u8]) {
        let (from, to) = (part.as_ptr() as usize, part.as_ptr() as usize + part.len());
        let follows = self.from < self.to && from >= self.to && from - self.to <= Self::GAP;
        if !follows {
            self.flush();
            self.from = from;
        }
        self.to = to;
        if self.to - self.from >= Self::BATCH {
            self.flush();
        }
    }

    /// Gives back what is held now.
    pub fn flush(&mut self) {
        if self.from < self.to {
            release_range(self.from, self.to);
        }
        (self.from, self.to) = (0, 0);
    }
}

impl Drop for ReleasedInBatches {
    fn drop(&mut self) {
        self.flush();
    }
}

/// Runs `work` with a way to give back parts of mapped inputs ([`release_mapped`], in
/// batches as [`ReleasedInBatches`] joins them), `aside` on a thread of its own, which ends
/// with `work`: the calls that give pages back cost the thread that makes them as much as
/// reading them did, and a thread that packs a large section's containers one after another
/// has better to do (for a few parts, a thread costs more than the calls). Every part handed
/// over is given back before this returns (or unwinds).
pub fn releasing<'a, T>(aside: bool, work: impl FnOnce(&dyn Fn(&'a [u8])) -> T) -> T {
    if !aside {
        let released = std::cell::RefCell::new(ReleasedInBatches::default());
        return work(&|part| released.borrow_mut().release(part));
    }
    let (parts, handed) = std::sync::mpsc::channel::<&'a [u8]>();
    std::thread::scope(|scope| {
        scope.spawn(move || {
            let mut released = ReleasedInBatches::default();
            for part in handed {
                released.release(part);
            }
        });
        // Owned here: dropped as `work` returns or unwinds, which ends the thread's loop.
        let release = move |part: &'a [u8]| {
            // The thread outlives every sender: a send cannot fail.
            let _ = parts.send(part);
        };
        work(&release)
    })
}

#[cfg(test)]
#[allow(clippy::indexing_slicing, clippy::cast_possible_truncation)]
mod tests {
    use std::fs;

    use super::super::tests::serial;
    use super::super::Input;
    use super::*;

    /// A file of 24 MiB that does not repeat within a page, mapped: its folder, bytes and map.
    fn mapped() -> (tempfile::TempDir, Vec<u8>, Input) {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("mapped");
        let bytes: Vec<u8> = (0..(24u32 << 20)).map(|i| (i % 251) as u8).collect();
        fs::write(&path, &bytes).unwrap();
        let input = Input::open(&path).unwrap();
        (dir, bytes, input)
    }

    #[test]
    fn parts_given_back_are_joined_in_batches_and_read_the_same_after() {
        let _serial = serial();
        let (_dir, bytes, input) = mapped();
        let base = input.as_ptr() as usize;
        let mut released = ReleasedInBatches::default();
        // Parts that follow one another, with a little between them, are joined.
        released.release(&input[..1 << 20]);
        released.release(&input[(1 << 20) + 100..3 << 20]);
        assert_eq!((released.from, released.to), (base, base + (3 << 20)));
        // One far after: the batch before is given back, a new one starts.
        released.release(&input[(5 << 20)..(6 << 20)]);
        assert_eq!(
            (released.from, released.to),
            (base + (5 << 20), base + (6 << 20))
        );
        // One before the batch does not follow it either.
        released.release(&input[(4 << 20)..(4 << 20) + 10]);
        assert_eq!(released.from, base + (4 << 20));
        // A batch that reaches its size is given back at once.
        released.release(&input[(4 << 20) + 10..(4 << 20) + ReleasedInBatches::BATCH]);
        assert_eq!((released.from, released.to), (0, 0));
        released.release(&input[(20 << 20)..(21 << 20)]);
        drop(released);
        // Pages given back are read again from the file, with their bytes.
        assert!(input[..] == bytes[..]);
    }

    /// The kilobytes of the map at `base` resident in this process (its `Rss` in smaps).
    fn resident_kib(base: usize) -> u64 {
        let smaps = fs::read_to_string("/proc/self/smaps").unwrap();
        let mut lines = smaps.lines();
        while let Some(line) = lines.next() {
            let range = line.split(' ').next().unwrap_or_default();
            let Some((start, _)) = range.split_once('-') else {
                continue;
            };
            if usize::from_str_radix(start, 16) != Ok(base) {
                continue;
            }
            for line in lines.by_ref() {
                if let Some(rss) = line.strip_prefix("Rss:") {
                    return rss.trim().trim_end_matches(" kB").parse().unwrap();
                }
            }
        }
        panic!("no map at {base:#x}")
    }

    #[test]
    fn parts_handed_over_are_given_back_before_the_work_returns_or_unwinds() {
        let _serial = serial();
        let (_dir, bytes, input) = mapped();
        let base = input.as_ptr() as usize;
        assert!(input[..] == bytes[..]);
        assert!(
            resident_kib(base) >= 20 << 10,
            "read whole, the map is resident"
        );
        // Handed over a part at a time, as a packer does, then the work's own value.
        let sum = releasing(true, |release| {
            for part in input.chunks(300 << 10) {
                release(part);
            }
            7
        });
        assert_eq!(sum, 7);
        assert!(
            resident_kib(base) < 1 << 10,
            "given back: {} KiB",
            resident_kib(base)
        );
        assert!(input[..] == bytes[..]);
        // Work that panics still ends the thread, with what it handed over given back.
        let unwound = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
            releasing(true, |release| {
                release(&input[..]);
                panic!("a packer that fails");
            })
        }));
        assert!(unwound.is_err());
        assert!(resident_kib(base) < 1 << 10);
        // Not aside: given back on this thread, as they are joined.
        assert!(input[..] == bytes[..]);
        releasing(false, |release| input.chunks(300 << 10).for_each(release));
        assert!(resident_kib(base) < 1 << 10);
    }
}
