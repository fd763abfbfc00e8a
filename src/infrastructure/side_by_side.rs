//! Blocking calls that each wait on the disk (fsyncs, unlinks that discard
//! blocks), issued side by side on scoped threads so the waits overlap.

/// `f` over every item of `items`, split into at most `threads` parts that
/// run side by side; the results in the items' order. The first part runs
/// on the calling thread (it would only wait for the others otherwise: one
/// thread fewer to start per call), the others on scoped threads. A part
/// whose thread cannot be started (a thread limit reached) runs on the
/// calling thread too, so a caller past its commit point never fails for
/// want of a thread.
pub(crate) fn map_side_by_side<T, R, F>(items: &[T], threads: usize, f: F) -> Vec<R>
where
    T: Sync,
    R: Send,
    F: Fn(&T) -> R + Sync,
{
    if items.len() <= 1 || threads <= 1 {
        return items.iter().map(&f).collect();
    }
    let f = &f;
    let part_len = items.len().div_ceil(threads);
    let mut parts = items.chunks(part_len);
    let first = parts.next().unwrap_or_default();
    std::thread::scope(|scope| {
        let others: Vec<_> = parts
            .map(|part| {
                std::thread::Builder::new()
                    .spawn_scoped(scope, move || part.iter().map(f).collect::<Vec<R>>())
                    .map_err(|_| part)
            })
            .collect();
        let mut results: Vec<R> = first.iter().map(f).collect();
        for part in others {
            match part {
                Ok(thread) => results.extend(
                    thread
                        .join()
                        .unwrap_or_else(|panic| std::panic::resume_unwind(panic)),
                ),
                Err(part) => results.extend(part.iter().map(f)),
            }
        }
        results
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn results_keep_the_items_order_whatever_the_split() {
        let items: Vec<u32> = (0..37).collect();
        let want: Vec<u32> = items.iter().map(|i| i * 2).collect();
        for threads in [0, 1, 2, 8, 64] {
            assert_eq!(
                map_side_by_side(&items, threads, |i| i * 2),
                want,
                "{threads}"
            );
        }
        assert!(map_side_by_side(&[] as &[u32], 8, |i| *i).is_empty());
    }

    /// The first part runs on the calling thread, each other part on a
    /// thread of its own: `threads` parts start `threads - 1` threads.
    #[test]
    fn the_caller_runs_the_first_part() {
        let items: Vec<u32> = (0..8).collect();
        let ran_on = map_side_by_side(&items, 4, |_| std::thread::current().id());
        let caller = std::thread::current().id();
        assert_eq!(ran_on[..2], [caller, caller]);
        assert!(ran_on[2..].iter().all(|id| *id != caller), "{ran_on:?}");
        let distinct: std::collections::HashSet<_> = ran_on.iter().collect();
        assert_eq!(distinct.len(), 4, "{ran_on:?}");
    }
}
