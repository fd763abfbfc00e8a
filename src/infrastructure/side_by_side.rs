//! Blocking calls that each wait on the disk (fsyncs, unlinks that discard
//! blocks), issued side by side on scoped threads (and the calling one) so
//! the waits overlap.

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
    let (first, rest) = items.split_at(part_len.min(items.len()));
    std::thread::scope(|scope| {
        let parts: Vec<_> = rest
            .chunks(part_len)
            .map(|part| {
                std::thread::Builder::new()
                    .spawn_scoped(scope, move || part.iter().map(f).collect::<Vec<R>>())
                    .map_err(|_| part)
            })
            .collect();
        let mut results: Vec<R> = first.iter().map(f).collect();
        results.extend(parts.into_iter().flat_map(|part| {
            match part {
                Ok(thread) => thread
                    .join()
                    .unwrap_or_else(|panic| std::panic::resume_unwind(panic)),
                Err(part) => part.iter().map(f).collect(),
            }
        }));
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

    #[test]
    fn the_first_part_runs_on_the_calling_thread_and_the_others_beside_it() {
        let caller = std::thread::current().id();
        // (items, threads, threads the items ran on)
        for (items, threads, ran_on) in [(2, 2, 2), (8, 2, 2), (5, 8, 5), (3, 1, 1)] {
            let items: Vec<u32> = (0..items).collect();
            let ids = map_side_by_side(&items, threads, |_| std::thread::current().id());
            assert_eq!(ids[0], caller, "{items:?} on {threads}");
            let distinct: std::collections::HashSet<_> = ids.iter().collect();
            assert_eq!(distinct.len(), ran_on, "{items:?} on {threads}");
        }
    }
}
