//! The search for the next magic through one place of a file (a program's data, where a
//! container may lie anywhere), a window at a time, several windows at once on every core.

use std::collections::VecDeque;

use crate::format::container;

/// How many bytes one search of a window reads: large enough that giving its pages back costs
/// nothing beside the search, small enough that a search holds little of the file.
pub(super) const SEARCH_WINDOW: usize = 256 << 10;

/// The most windows searched at once (2 MiB).
const MAX_WINDOWS_AT_ONCE: usize = 8;

/// The search for magics through one place, from one position to the next, as the scan
/// walks it. After a first window without a find, windows are searched several at once
/// (twice as many each time, up to [`MAX_WINDOWS_AT_ONCE`]), so that a search through a large
/// section takes every core. What each window searched holds is remembered until the walk
/// passes it: a magic that starts no container (bytes of code or data that happen to match,
/// or a PTX string) does not make the search start over, and the windows searched ahead of it
/// are not searched again. The pages of each window passed are given back to the system when
/// they are a mapped file's (see [`crate::io::release_mapped`]), a batch at a time: they are
/// not read again, and a search through a section of hundreds of megabytes holds a few
/// windows of it and a batch.
pub(super) struct MagicSearch<'d> {
    data: &'d [u8],
    /// The windows searched and not passed yet, one after another: where each starts, and
    /// the first magic that starts in it at or after the last position asked for (or just
    /// after it, in the bytes a magic across its end takes).
    ahead: VecDeque<(usize, Option<usize>)>,
    /// How many windows the next search takes at once.
    at_once: usize,
    /// The bytes searched so far, for the log (and the tests).
    searched: u64,
    /// The pages of the windows passed, given back a batch at a time.
    released: crate::io::ReleasedInBatches,
}

impl<'d> MagicSearch<'d> {
    /// A search through `data`, none of it searched yet.
    pub(super) fn new(data: &'d [u8]) -> Self {
        MagicSearch {
            data,
            ahead: VecDeque::new(),
            at_once: 1,
            searched: 0,
            released: crate::io::ReleasedInBatches::default(),
        }
    }

    /// The position of the first magic at or after `from`, of a container a scan finds by
    /// its magic or of a bare image. Positions asked for one after another are expected not
    /// to go back; one that does is searched afresh.
    pub(super) fn next(&mut self, mut from: usize) -> Option<usize> {
        loop {
            let Some(&(start, found)) = self.ahead.front() else {
                if from >= self.data.len() {
                    return None;
                }
                self.search_ahead(from);
                continue;
            };
            let end = start.saturating_add(SEARCH_WINDOW);
            if from < start {
                // Asked for a position behind the windows: search from it again.
                self.ahead.clear();
            } else if from >= end {
                self.pass_front();
            } else {
                match found {
                    Some(at) if at >= from => return Some(at),
                    // Its first magic lies before `from`: the rest of the window is searched.
                    Some(_) => match self.search(from, end) {
                        Some(at) => {
                            if let Some(front) = self.ahead.front_mut() {
                                front.1 = Some(at);
                            }
                            return Some(at);
                        }
                        None => {
                            from = end;
                            self.pass_front();
                        }
                    },
                    // No magic from `from` to its end.
                    None => {
                        from = end;
                        self.pass_front();
                    }
                }
            }
        }
    }

    /// The bytes searched so far (those of a window searched again in part count again).
    pub(super) fn searched(&self) -> u64 {
        self.searched
    }

    /// Searches the windows that start at `from`, [`MagicSearch::at_once`] of them (in
    /// parallel when more than one), and keeps what each holds; the next search takes twice as
    /// many when none holds a magic.
    fn search_ahead(&mut self, from: usize) {
        use rayon::prelude::*;
        let starts: Vec<usize> = (0..self.at_once)
            .map(|k| from.saturating_add(k.saturating_mul(SEARCH_WINDOW)))
            .take_while(|&start| start < self.data.len())
            .collect();
        let this = &*self;
        let found: Vec<Option<usize>> = if starts.len() == 1 {
            starts
                .iter()
                .map(|&start| this.find(start, start.saturating_add(SEARCH_WINDOW)))
                .collect()
        } else {
            starts
                .par_iter()
                .map(|&start| this.find(start, start.saturating_add(SEARCH_WINDOW)))
                .collect()
        };
        if found.iter().all(Option::is_none) {
            self.at_once = (self.at_once * 2).min(MAX_WINDOWS_AT_ONCE);
        }
        for &start in &starts {
            self.searched += self
                .bytes_of(start, start.saturating_add(SEARCH_WINDOW))
                .len() as u64;
        }
        self.ahead.extend(starts.into_iter().zip(found));
    }

    /// [`MagicSearch::find`], counted.
    fn search(&mut self, from: usize, end: usize) -> Option<usize> {
        self.searched += self.bytes_of(from, end).len() as u64;
        self.find(from, end)
    }

    /// The first magic that starts from `from` to `end` (or in the few bytes after `end` that
    /// a magic across it takes, when it is the first).
    fn find(&self, from: usize, end: usize) -> Option<usize> {
        container::next_magic(self.bytes_of(from, end)).map(|found| from + found)
    }

    /// The bytes from `from` to `end`, and those a magic that starts before `end` takes.
    fn bytes_of(&self, from: usize, end: usize) -> &'d [u8] {
        let overlap = container::longest_magic().saturating_sub(1);
        let end = end.saturating_add(overlap).min(self.data.len());
        self.data.get(from..end).unwrap_or_default()
    }

    /// Forgets the first window kept, passed, and gives its pages back.
    fn pass_front(&mut self) {
        if let Some((start, _)) = self.ahead.pop_front() {
            let end = start.saturating_add(SEARCH_WINDOW).min(self.data.len());
            self.released
                .release(self.data.get(start..end).unwrap_or_default());
        }
    }
}

#[cfg(test)]
#[allow(clippy::indexing_slicing)]
mod tests {
    use super::*;

    /// `len` bytes of filler that holds no magic, with the bundle magic planted at `at`.
    fn planted(len: usize, at: &[usize]) -> Vec<u8> {
        let mut data: Vec<u8> = (0..len).map(|i| b"abcdefgh"[i % 8]).collect();
        for &p in at {
            data[p..p + crate::format::bundle::MAGIC.len()]
                .copy_from_slice(crate::format::bundle::MAGIC);
        }
        data
    }

    #[test]
    fn the_first_magic_is_found_whichever_window_and_however_many_are_searched_at_once() {
        let len = 40 * SEARCH_WINDOW + 123;
        // Across a window's end, in a window searched alone, in a batch, late in a batch.
        for first in [
            5,
            SEARCH_WINDOW - 3,
            2 * SEARCH_WINDOW + 17,
            9 * SEARCH_WINDOW - 10,
            30 * SEARCH_WINDOW + 1,
            len - crate::format::bundle::MAGIC.len(),
        ] {
            let later = Some(first + 3 * SEARCH_WINDOW).filter(|p| p + 24 <= len);
            let places: Vec<usize> = [Some(first), later].into_iter().flatten().collect();
            let data = planted(len, &places);
            let mut search = MagicSearch::new(&data);
            assert_eq!(search.next(0), Some(first), "magic at {first}");
            assert_eq!(search.next(first + 1), later);
            // Asked again from the start, or from a magic: found again.
            assert_eq!(MagicSearch::new(&data).next(first), Some(first));
            assert_eq!(search.next(0), Some(first));
        }
        assert_eq!(MagicSearch::new(&planted(len, &[])).next(0), None);
    }

    #[test]
    fn magics_that_start_nothing_are_passed_without_searching_the_windows_ahead_again() {
        // Magics here and there (none over another), several in one window, one across a
        // window's end, one at the last byte it can start: each found in turn by asking from
        // just after the last.
        let len = 48 * SEARCH_WINDOW + 77;
        let magic = crate::format::bundle::MAGIC.len();
        let mut places = vec![
            3,
            100,
            SEARCH_WINDOW - 5,
            // Right after it, in the next window.
            SEARCH_WINDOW + 19,
            7 * SEARCH_WINDOW + 9,
            7 * SEARCH_WINDOW + 4000,
            20 * SEARCH_WINDOW - 1,
            33 * SEARCH_WINDOW + 12,
            len - magic,
        ];
        places.extend((0..40).map(|k| 40 * SEARCH_WINDOW + k * 1000));
        places.sort_unstable();
        let data = planted(len, &places);
        let mut search = MagicSearch::new(&data);
        let mut found = Vec::new();
        let mut from = 0;
        while let Some(at) = search.next(from) {
            found.push(at);
            from = at + 1;
        }
        assert_eq!(found, places);
        // Each window is searched once, and the rest of a window again after each magic in
        // it: less than the data and a window for each magic.
        let bound = (len + places.len() * SEARCH_WINDOW) as u64;
        assert!(search.searched() < bound, "{} of {len}", search.searched());
        assert!(search.searched() >= len as u64);
    }

    #[test]
    fn a_walk_that_jumps_over_a_container_finds_the_first_magic_after_it() {
        // The walk skips what a container's header says it holds: the windows it jumps over
        // are forgotten, and a magic inside them is not reported.
        let len = 30 * SEARCH_WINDOW;
        let data = planted(
            len,
            &[
                10,
                2 * SEARCH_WINDOW,
                6 * SEARCH_WINDOW + 3,
                25 * SEARCH_WINDOW,
            ],
        );
        let mut search = MagicSearch::new(&data);
        assert_eq!(search.next(0), Some(10));
        assert_eq!(search.next(5 * SEARCH_WINDOW), Some(6 * SEARCH_WINDOW + 3));
        assert_eq!(search.next(6 * SEARCH_WINDOW + 4), Some(25 * SEARCH_WINDOW));
        assert_eq!(search.next(25 * SEARCH_WINDOW + 1), None);
        assert_eq!(search.next(len + 5), None);
    }
}
