//! Jobs of uneven sizes run on the thread pool largest first, their results given back in the
//! jobs' order.
//!
//! Split in halves the way a parallel iterator splits its input, a list of bundles in file
//! order ends on whatever bundle one thread happens to take last: when that is one of the
//! largest, the other threads wait for it. Taken one at a time from a list sorted by size,
//! the largest are started first and the last to start are the smallest, so that the threads
//! finish within about one small job of each other.

use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Mutex;

use rayon::prelude::*;

/// Runs `work` on every job of `jobs` (each with its size) on the current thread pool, the
/// largest first, and gives back the results in the order of `jobs`. Equal sizes keep their
/// order.
pub fn run<J: Sync, T: Send>(jobs: &[(J, u64)], work: impl Fn(&J) -> T + Sync) -> Vec<T> {
    let mut order: Vec<usize> = (0..jobs.len()).collect();
    order.sort_by_key(|&i| std::cmp::Reverse(jobs.get(i).map_or(0, |(_, size)| *size)));
    let done: Vec<Mutex<Option<T>>> = jobs.iter().map(|_| Mutex::new(None)).collect();
    let next = AtomicUsize::new(0);
    // Each taker takes the next job of the sorted list until none is left: as many takers
    // as threads, so that a thread busy elsewhere leaves its share to the others.
    let take = |_| {
        while let Some(&i) = order.get(next.fetch_add(1, Ordering::Relaxed)) {
            if let (Some((job, _)), Some(slot)) = (jobs.get(i), done.get(i)) {
                let result = work(job);
                *slot.lock().unwrap_or_else(|e| e.into_inner()) = Some(result);
            }
        }
    };
    let takers = rayon::current_num_threads().clamp(1, jobs.len().max(1));
    (0..takers).into_par_iter().for_each(take);
    jobs.iter()
        .zip(done)
        .map(|((job, _), slot)| {
            let result = slot.into_inner().unwrap_or_else(|e| e.into_inner());
            result.unwrap_or_else(|| work(job))
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn results_come_back_in_the_order_of_the_jobs() {
        let jobs: Vec<(u64, u64)> = (0..100).map(|i| (i, (i * 37) % 11)).collect();
        let pool = rayon::ThreadPoolBuilder::new()
            .num_threads(4)
            .build()
            .unwrap();
        let results = pool.install(|| run(&jobs, |&i| i * 2));
        assert_eq!(results, (0..100).map(|i| i * 2).collect::<Vec<_>>());
    }

    #[test]
    fn one_thread_starts_the_largest_first() {
        let jobs: Vec<(usize, u64)> = vec![(0, 1), (1, 5), (2, 3), (3, 5), (4, 0)];
        let started = std::sync::Mutex::new(Vec::new());
        let pool = rayon::ThreadPoolBuilder::new()
            .num_threads(1)
            .build()
            .unwrap();
        pool.install(|| run(&jobs, |&i| started.lock().unwrap().push(i)));
        assert_eq!(started.into_inner().unwrap(), vec![1, 3, 2, 0, 4]);
    }

    #[test]
    fn no_jobs_no_results() {
        let jobs: Vec<((), u64)> = Vec::new();
        assert!(run(&jobs, |_| 1).is_empty());
    }
}
