//! Work handed from one thread to another in chunks, carried on in order by
//! whichever of the two gets to it.
//!
//! A drain claims files on its own thread and judges them on a second one
//! (see [`TurnSettledIngestor::drain`](super::TurnSettledIngestor::drain)).
//! At the end of a batch, waiting for the second thread to wake up, judge
//! the last chunk and stop cost more than judging that chunk: on two busy
//! cores a woken thread may wait most of a millisecond for one. So the
//! claiming thread, once it claims no more, takes over ([`Handover::take_over`]):
//! it closes the handover, takes the chunks the other thread has not taken
//! and the state, and works the rest itself. It waits only for a chunk the
//! other thread is working at that moment, never for that thread to wake.
//!
//! Order: chunks are worked in the order they were handed over, with one
//! state carried from each to the next. A thread takes the state before it
//! lets go of the queue it took a chunk from, and the take-over takes the
//! state only under the queue's lock, so no chunk is worked before an
//! earlier one.
//!
//! The worker stops once the handover is closed and nothing is left for
//! it: a take-over closes it, and so does dropping the [`Closing`] guard,
//! also while the claiming thread unwinds, so that a scope joining the
//! worker never waits for ever.

use std::collections::VecDeque;
use std::sync::{Condvar, Mutex, MutexGuard};

/// Chunks of `T` handed over, and the state `S` their work carries.
#[derive(Debug)]
pub(super) struct Handover<T, S> {
    queue: Mutex<Queue<T>>,
    /// Signalled when a chunk is handed over or the handover closes.
    handed: Condvar,
    /// `None` once taken over.
    state: Mutex<Option<S>>,
}

/// The chunks not taken yet, and whether more may come.
#[derive(Debug)]
struct Queue<T> {
    chunks: VecDeque<Vec<T>>,
    closed: bool,
}

impl<T, S> Handover<T, S> {
    /// An open handover whose work starts from `state`.
    pub(super) fn new(state: S) -> Self {
        Self {
            queue: Mutex::new(Queue {
                chunks: VecDeque::new(),
                closed: false,
            }),
            handed: Condvar::new(),
            state: Mutex::new(Some(state)),
        }
    }

    /// Hands `chunk` over, to be worked after every chunk handed before it
    /// (dropped, once the handover is closed).
    pub(super) fn hand(&self, chunk: Vec<T>) {
        let mut queue = self.lock_queue();
        if queue.closed {
            return;
        }
        queue.chunks.push_back(chunk);
        drop(queue);
        self.handed.notify_one();
    }

    /// The worker's loop: works each item of each chunk handed over with
    /// `work`, in order, until the handover is closed and nothing is left
    /// for it (or the state is gone: see [`Handover::take_over`]).
    pub(super) fn work_handed(&self, mut work: impl FnMut(&mut S, T)) {
        let mut queue = self.lock_queue();
        loop {
            if let Some(chunk) = queue.chunks.pop_front() {
                // The state first, the queue let go after: see the module docs.
                let Ok(mut guard) = self.state.lock() else {
                    return;
                };
                drop(queue);
                let Some(state) = guard.as_mut() else {
                    return;
                };
                for item in chunk {
                    work(state, item);
                }
                // The state let go before the queue is taken again: a
                // take-over holds the queue while it waits for the state.
                drop(guard);
                queue = self.lock_queue();
            } else if queue.closed {
                return;
            } else {
                queue = self
                    .handed
                    .wait(queue)
                    .unwrap_or_else(|poisoned| poisoned.into_inner());
            }
        }
    }

    /// Closes the handover and works here what is left: every chunk the
    /// worker has not taken, then `last`, once a chunk the worker is on is
    /// done. Returns the state; `None` when the worker panicked while
    /// working (what it left is unknown: the caller passes its panic on)
    /// or the state was taken over already.
    pub(super) fn take_over(&self, last: Vec<T>, mut work: impl FnMut(&mut S, T)) -> Option<S> {
        let mut queue = self.lock_queue();
        queue.closed = true;
        let left = std::mem::take(&mut queue.chunks);
        let taken = self.state.lock().ok().and_then(|mut state| state.take());
        drop(queue);
        // Nothing is left for the worker: it may stop.
        self.handed.notify_all();
        let mut state = taken?;
        for item in left.into_iter().flatten().chain(last) {
            work(&mut state, item);
        }
        Some(state)
    }

    /// A guard that closes the handover when dropped: the chunks not taken
    /// are dropped unworked, and the worker stops once it is done with a
    /// chunk it is on.
    pub(super) fn closing(&self) -> Closing<'_, T, S> {
        Closing(self)
    }

    fn close(&self) {
        let mut queue = self.lock_queue();
        queue.closed = true;
        queue.chunks.clear();
        drop(queue);
        self.handed.notify_all();
    }

    /// The queue, whatever a panic left: it holds whole chunks only.
    fn lock_queue(&self) -> MutexGuard<'_, Queue<T>> {
        self.queue
            .lock()
            .unwrap_or_else(|poisoned| poisoned.into_inner())
    }
}

/// Closes its handover when dropped (see [`Handover::closing`]).
pub(super) struct Closing<'a, T, S>(&'a Handover<T, S>);

impl<T, S> Drop for Closing<'_, T, S> {
    fn drop(&mut self) {
        self.0.close();
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::atomic::{AtomicBool, Ordering};
    use std::time::Duration;

    /// The state of the tests' work: the items in the order worked.
    type Worked = Vec<u32>;

    fn record(worked: &mut Worked, item: u32) {
        worked.push(item);
    }

    #[test]
    fn items_are_worked_in_handover_order_whichever_thread_works_them() {
        // (chunks handed over, pause between handovers in µs)
        let cases: [(u32, u64); 4] = [(0, 0), (1, 0), (40, 0), (40, 200)];
        for (chunks, pause_us) in cases {
            let handover = Handover::new(Worked::new());
            let worked = std::thread::scope(|scope| {
                scope.spawn(|| handover.work_handed(record));
                let _closing = handover.closing();
                for chunk in 0..chunks {
                    handover.hand((chunk * 3..chunk * 3 + 3).collect());
                    std::thread::sleep(Duration::from_micros(pause_us));
                }
                handover
                    .take_over(vec![1000, 1001], record)
                    .expect("the state")
            });
            let expected: Worked = (0..chunks * 3).chain([1000, 1001]).collect();
            assert_eq!(worked, expected, "{chunks} chunks, {pause_us} µs apart");
        }
    }

    #[test]
    fn the_worker_works_what_it_is_handed_and_the_take_over_the_rest() {
        type ByThread = Vec<(u32, std::thread::ThreadId)>;
        let by_this_thread = |worked: &mut ByThread, item| {
            worked.push((item, std::thread::current().id()));
        };
        let handover = Handover::new(ByThread::new());
        let (worker_id, worked) = std::thread::scope(|scope| {
            let worker = scope.spawn(|| handover.work_handed(by_this_thread));
            let _closing = handover.closing();
            handover.hand(vec![0, 1]);
            // Until the worker has worked that chunk (bounded: a worker that
            // never works fails here, not by hanging).
            let waited = std::time::Instant::now();
            while handover.state.lock().unwrap().as_ref().unwrap().len() < 2 {
                assert!(
                    waited.elapsed() < Duration::from_secs(10),
                    "the worker never worked"
                );
                std::thread::yield_now();
            }
            let worked = handover.take_over(vec![2], by_this_thread);
            (worker.thread().id(), worked.expect("the state"))
        });
        let here = std::thread::current().id();
        assert_eq!(worked, vec![(0, worker_id), (1, worker_id), (2, here)]);
    }

    #[test]
    fn a_worker_that_panicked_leaves_no_state_to_take_over() {
        let handover = Handover::new(Worked::new());
        std::thread::scope(|scope| {
            let worker =
                scope.spawn(|| handover.work_handed(|_: &mut Worked, _| panic!("judging failed")));
            handover.hand(vec![1]);
            assert!(worker.join().is_err(), "the worker panicked");
        });
        assert_eq!(handover.take_over(vec![2], record), None);
    }

    #[test]
    fn without_a_worker_the_take_over_works_everything() {
        let handover = Handover::new(Worked::new());
        handover.hand(vec![1, 2]);
        handover.hand(vec![3]);
        assert_eq!(handover.take_over(vec![4], record), Some(vec![1, 2, 3, 4]));
    }

    #[test]
    fn the_take_over_waits_for_the_chunk_the_worker_is_on() {
        let handover = Handover::new(Worked::new());
        let started = AtomicBool::new(false);
        let worked = std::thread::scope(|scope| {
            scope.spawn(|| {
                handover.work_handed(|worked: &mut Worked, item| {
                    started.store(true, Ordering::SeqCst);
                    std::thread::sleep(Duration::from_millis(20));
                    worked.push(item);
                })
            });
            handover.hand(vec![1, 2]);
            while !started.load(Ordering::SeqCst) {
                std::thread::yield_now();
            }
            handover.hand(vec![3]);
            handover.take_over(vec![4], record)
        });
        assert_eq!(worked, Some(vec![1, 2, 3, 4]));
    }

    #[test]
    fn a_closed_handover_drops_what_is_left_and_stops_its_worker() {
        let handover = Handover::new(Worked::new());
        handover.hand(vec![1]);
        drop(handover.closing());
        handover.hand(vec![2]);
        std::thread::scope(|scope| {
            // Closed: a worker stops at once, without working anything.
            scope.spawn(|| handover.work_handed(|_: &mut Worked, _| panic!("worked")));
        });
        assert_eq!(handover.take_over(vec![3], record), Some(vec![3]));
    }

    #[test]
    fn a_claiming_thread_that_unwinds_still_lets_the_worker_stop() {
        let handover = Handover::new(Worked::new());
        let unwound = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
            std::thread::scope(|scope| {
                scope.spawn(|| handover.work_handed(record));
                let _closing = handover.closing();
                handover.hand(vec![1]);
                panic!("claiming failed");
            })
        }));
        assert!(unwound.is_err(), "the panic reaches the caller, not a hang");
    }
}
