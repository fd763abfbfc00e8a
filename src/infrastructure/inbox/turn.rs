//! This process's turn on one inbox: threads queue first come, first served.

use std::collections::{HashMap, VecDeque};
use std::path::{Path, PathBuf};
use std::sync::{Condvar, Mutex, OnceLock};
use std::time::Instant;

/// Per inbox path, the threads of this process that hold or wait for it, in
/// arrival order; the front one holds it. Threads sleep on the condvar instead
/// of racing each other for the lock file every 20 ms, and first come is first
/// served, so no thread starves into the lock timeout under load.
struct InboxQueues {
    queues: Mutex<Waiters>,
    changed: Condvar,
}

#[derive(Default)]
struct Waiters {
    by_path: HashMap<PathBuf, VecDeque<u64>>,
    next_ticket: u64,
}

impl Waiters {
    fn leave(&mut self, path: &Path, ticket: u64) {
        if let Some(queue) = self.by_path.get_mut(path) {
            queue.retain(|&t| t != ticket);
            if queue.is_empty() {
                self.by_path.remove(path);
            }
        }
    }
}

fn inbox_queues() -> &'static InboxQueues {
    static QUEUES: OnceLock<InboxQueues> = OnceLock::new();
    QUEUES.get_or_init(|| InboxQueues {
        queues: Mutex::new(Waiters::default()),
        changed: Condvar::new(),
    })
}

/// This process's turn on one inbox path, given up on drop.
pub(super) struct InProcessClaim {
    path: PathBuf,
    ticket: u64,
}

impl InProcessClaim {
    /// `None` when the turn has not come by `deadline`.
    pub(super) fn acquire(path: &Path, deadline: Instant) -> Option<Self> {
        let shared = inbox_queues();
        let mut waiters = shared.queues.lock().unwrap_or_else(|p| p.into_inner());
        let ticket = waiters.next_ticket;
        waiters.next_ticket = waiters.next_ticket.wrapping_add(1);
        waiters
            .by_path
            .entry(path.to_path_buf())
            .or_default()
            .push_back(ticket);
        loop {
            let front = waiters.by_path.get(path).and_then(|q| q.front().copied());
            if front == Some(ticket) {
                return Some(Self {
                    path: path.to_path_buf(),
                    ticket,
                });
            }
            let left = deadline.saturating_duration_since(Instant::now());
            if left.is_zero() {
                waiters.leave(path, ticket);
                return None;
            }
            waiters = shared
                .changed
                .wait_timeout(waiters, left)
                .unwrap_or_else(|p| p.into_inner())
                .0;
        }
    }
}

impl Drop for InProcessClaim {
    fn drop(&mut self) {
        let shared = inbox_queues();
        let mut waiters = shared.queues.lock().unwrap_or_else(|p| p.into_inner());
        waiters.leave(&self.path, self.ticket);
        shared.changed.notify_all();
    }
}
