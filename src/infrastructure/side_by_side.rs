//! Blocking calls that each wait on the disk (fsyncs, unlinks that discard
//! blocks), issued side by side on scoped threads so the waits overlap.

/// `f` over every item of `items`, split into at most `threads` parts that
/// run side by side; the results in the items' order. A part whose thread
/// cannot be started (a thread limit reached) runs on the calling thread,
/// so a caller past its commit point never fails for want of a thread.
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
    std::thread::scope(|scope| {
        let parts: Vec<_> = items
            .chunks(part_len)
            .map(|part| {
                std::thread::Builder::new()
                    .spawn_scoped(scope, move || part.iter().map(f).collect::<Vec<R>>())
                    .map_err(|_| part)
            })
            .collect();
        parts
            .into_iter()
            .flat_map(|part| match part {
                Ok(thread) => thread
                    .join()
                    .unwrap_or_else(|panic| std::panic::resume_unwind(panic)),
                Err(part) => part.iter().map(f).collect(),
            })
            .collect()
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
}
