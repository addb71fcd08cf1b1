//! Jobs done in parallel and handed over one by one in their order, a few ahead at most.
//!
//! The containers of a section are packed in their order, and only a few of their new bytes
//! may wait at once. Done in groups, each group waits for its slowest container while the
//! other threads idle (a library's bundles range from a few kilobytes to 190 MB, and a group
//! with a large one holds up the rest). Here a thread that is done takes the next job as long
//! as no more than a few are waiting to be handed over, so that the threads stay busy past a
//! large job while the one doing it works on.

use std::sync::{Condvar, Mutex, MutexGuard};
use std::time::Duration;

/// What the threads share: the next job to take, how many are handed over, the results not
/// yet handed over, and the threads taking jobs.
struct State<T> {
    next: usize,
    handed: usize,
    takers: usize,
    stop: bool,
    done: Vec<Option<T>>,
}

/// Runs `work` on every job of `jobs` on the current thread pool, at most `ahead` jobs
/// beyond those handed over, and hands each result to `take` (on the calling thread) in the
/// jobs' order. The first error `take` returns stops the taking of jobs and is returned once
/// the jobs under way are done.
pub(crate) fn in_order<J: Sync, T: Send, E>(
    jobs: &[J],
    ahead: usize,
    work: &(dyn Fn(&J) -> T + Sync),
    take: &mut dyn FnMut(usize, T) -> Result<(), E>,
) -> Result<(), E> {
    let ahead = ahead.max(1);
    let state = Mutex::new(State {
        next: 0,
        handed: 0,
        takers: 0,
        stop: false,
        done: jobs.iter().map(|_| None).collect(),
    });
    let ready = Condvar::new();
    let lock = || state.lock().unwrap_or_else(|e| e.into_inner());
    // A taker takes jobs until none may be taken now; it never waits, so that the thread
    // that hands the results over may run it while it waits for one.
    let taker = || {
        let _leaving = Leaving(&state, &ready);
        loop {
            let index = {
                let mut s = lock();
                if s.stop || s.next >= jobs.len() || s.next >= s.handed + ahead {
                    return;
                }
                s.next += 1;
                s.next - 1
            };
            let Some(job) = jobs.get(index) else { continue };
            let result = work(job);
            if let Some(slot) = lock().done.get_mut(index) {
                *slot = Some(result);
            }
            ready.notify_all();
        }
    };
    let threads = rayon::current_num_threads().max(1);
    // In place: the results are handed over on this thread, whether or not it is one of the
    // pool's.
    rayon::in_place_scope(|scope| {
        for index in 0..jobs.len() {
            let result = loop {
                let mut s = lock();
                if let Some(result) = s.done.get_mut(index).and_then(Option::take) {
                    s.handed = index + 1;
                    break result;
                }
                if s.stop && s.takers == 0 {
                    // A job panicked: the scope passes the panic on.
                    return Ok(());
                }
                // As many takers as threads while jobs may be taken.
                while s.takers < threads && s.next < jobs.len() && s.next < s.handed + ahead {
                    s.takers += 1;
                    scope.spawn(|_| taker());
                }
                drop(s);
                wait(&ready, lock);
            };
            if let Err(e) = take(index, result) {
                lock().stop = true;
                return Err(e);
            }
        }
        Ok(())
    })
}

/// A taker leaving: one fewer, and should it leave by a panic, no more jobs taken.
struct Leaving<'a, T>(&'a Mutex<State<T>>, &'a Condvar);

impl<T> Drop for Leaving<'_, T> {
    fn drop(&mut self) {
        let mut s = self.0.lock().unwrap_or_else(|e| e.into_inner());
        s.takers -= 1;
        s.stop |= std::thread::panicking();
        drop(s);
        self.1.notify_all();
    }
}

/// Waits a little for a result: runs a job of the pool if one is waiting (a taker, perhaps,
/// when every other thread is busy), else sleeps until a result comes or a moment passes.
fn wait<'s, T: 's>(ready: &Condvar, lock: impl Fn() -> MutexGuard<'s, State<T>>) {
    if let Some(rayon::Yield::Executed) = rayon::yield_now() {
        return;
    }
    let guard = lock();
    let _ = ready.wait_timeout(guard, Duration::from_millis(2));
}

#[cfg(test)]
mod tests {
    use super::*;

    fn pool(threads: usize) -> rayon::ThreadPool {
        rayon::ThreadPoolBuilder::new()
            .num_threads(threads)
            .build()
            .unwrap()
    }

    #[test]
    fn results_are_handed_over_in_order_on_any_number_of_threads() {
        let jobs: Vec<u64> = (0..60).map(|i| (i * 37) % 11).collect();
        for threads in [1, 2, 8] {
            let mut seen = Vec::new();
            let work = |&n: &u64| {
                std::thread::sleep(Duration::from_micros(n * 100));
                n * 2
            };
            pool(threads)
                .install(|| {
                    in_order(&jobs, 4, &work, &mut |i, r| {
                        seen.push((i, r));
                        Ok::<(), ()>(())
                    })
                })
                .unwrap();
            let want: Vec<(usize, u64)> = jobs.iter().map(|&n| n * 2).enumerate().collect();
            assert_eq!(seen, want, "{threads} threads");
        }
    }

    #[test]
    fn no_more_than_a_few_are_taken_ahead() {
        let jobs: Vec<usize> = (0..40).collect();
        let taken = std::sync::atomic::AtomicUsize::new(0);
        let work = |&i: &usize| {
            taken.fetch_max(i, std::sync::atomic::Ordering::SeqCst);
            i
        };
        pool(4)
            .install(|| {
                in_order(&jobs, 3, &work, &mut |i, _| {
                    // Job `i` handed over: at most `i + 3` taken.
                    let most = taken.load(std::sync::atomic::Ordering::SeqCst);
                    assert!(most <= i + 3, "{most} taken when {i} is handed over");
                    Ok::<(), ()>(())
                })
            })
            .unwrap();
    }

    #[test]
    fn the_first_error_stops_the_taking() {
        let jobs: Vec<usize> = (0..100).collect();
        let count = std::sync::atomic::AtomicUsize::new(0);
        let work = |_: &usize| count.fetch_add(1, std::sync::atomic::Ordering::SeqCst);
        let result = pool(2).install(|| {
            in_order(&jobs, 4, &work, &mut |i, _| {
                if i == 10 {
                    Err(i)
                } else {
                    Ok(())
                }
            })
        });
        assert_eq!(result, Err(10));
        assert!(count.load(std::sync::atomic::Ordering::SeqCst) < 20);
    }
}
