//! The `onHostQuestion` option: the addon asks the host app (the Electron
//! entry's callbacks) at decision time, from its worker threads, and waits a
//! bounded time for the answer.
//!
//! What is asked and what the answers mean is
//! [`crate::infrastructure::host_questions`]; here is how a question gets
//! there: it goes to the JS thread through a threadsafe function as
//! `{ id, kind, input }`; the host answers with
//! `settleHostQuestion(id, outcome)`. The asking thread waits at most
//! `hostTimeoutMs` (default [`DEFAULT_TIMEOUT_MS`]); a callback that is slow,
//! throws or never settles costs at most that wait, is logged with a stable
//! code and answered with the fallback the caller chose. A question is never
//! asked on the JS thread itself (that thread could not answer it while it
//! waits): it gets the fallback at once. Dispose ends every wait.

use std::collections::HashMap;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::mpsc::{sync_channel, RecvTimeoutError, SyncSender};
use std::sync::{Arc, Mutex};
use std::thread::ThreadId;
use std::time::Duration;

use napi::threadsafe_function::{
    ThreadsafeFunction, ThreadsafeFunctionCallMode, UnknownReturnValue,
};
use napi::Status;
use serde_json::{json, Value};

use crate::infrastructure::host_questions::{QuestionChannel, QuestionKind, Unanswered};

/// Longest wait for one answer unless `hostTimeoutMs` says otherwise.
pub const DEFAULT_TIMEOUT_MS: u64 = 5_000;
/// Bounds of `hostTimeoutMs`.
pub const TIMEOUT_MS_BOUNDS: (u64, u64) = (10, 120_000);

/// The `onHostQuestion` callback: gets `{ id, kind, input }`; its result and
/// any exception are ignored (the answer comes through `settleHostQuestion`).
/// Weak, so it never keeps Node alive.
pub type HostQuestionCallback =
    ThreadsafeFunction<Value, UnknownReturnValue, Value, Status, false, true>;

/// The questions waiting for an answer, shared with `settleHostQuestion`.
#[derive(Default)]
pub(crate) struct Waiting {
    next_id: AtomicU64,
    closed: AtomicBool,
    senders: Mutex<HashMap<u64, SyncSender<Result<Value, String>>>>,
}

impl Waiting {
    /// Delivers the host's outcome of question `id`; unknown or late ids
    /// (the wait ended) are ignored.
    pub(crate) fn settle(&self, id: u64, outcome: Result<Value, String>) {
        let sender = self
            .senders
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .remove(&id);
        if let Some(sender) = sender {
            let _ = sender.try_send(outcome);
        }
    }

    /// Ends every wait now and refuses new questions (dispose).
    pub(crate) fn close(&self) {
        self.closed.store(true, Ordering::SeqCst);
        self.senders
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .clear();
    }
}

/// The channel behind `onHostQuestion`.
pub(crate) struct JsQuestions {
    callback: HostQuestionCallback,
    timeout: Duration,
    js_thread: ThreadId,
    waiting: Arc<Waiting>,
}

impl JsQuestions {
    /// Questions to `callback`, each answer waited for at most `timeout`;
    /// built on the JS thread.
    pub(crate) fn new(
        callback: HostQuestionCallback,
        timeout: Duration,
        waiting: Arc<Waiting>,
    ) -> Self {
        Self {
            callback,
            timeout,
            js_thread: std::thread::current().id(),
            waiting,
        }
    }
}

impl QuestionChannel for JsQuestions {
    fn ask(&self, kind: QuestionKind, input: Value) -> Result<Value, Unanswered> {
        if std::thread::current().id() == self.js_thread
            || self.waiting.closed.load(Ordering::SeqCst)
        {
            return Err(Unanswered::NotAsked);
        }
        let id = self.waiting.next_id.fetch_add(1, Ordering::Relaxed);
        let (sender, receiver) = sync_channel(1);
        self.waiting
            .senders
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .insert(id, sender);
        let question = json!({ "id": id, "kind": kind.as_str(), "input": input });
        let queued = self.callback.call_with_return_value(
            question,
            ThreadsafeFunctionCallMode::NonBlocking,
            |_, _| Ok(()),
        );
        let outcome = if queued == Status::Ok {
            receiver.recv_timeout(self.timeout)
        } else {
            Err(RecvTimeoutError::Disconnected)
        };
        // A late answer finds no sender and is dropped.
        self.waiting
            .senders
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .remove(&id);
        match outcome {
            Ok(Ok(value)) => Ok(value),
            Ok(Err(error)) => Err(Unanswered::Failed(error)),
            Err(RecvTimeoutError::Timeout) => Err(Unanswered::TimedOut),
            Err(RecvTimeoutError::Disconnected) => Err(Unanswered::NotAsked),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_late_or_unknown_answer_is_dropped_and_close_ends_waits() {
        let waiting = Waiting::default();
        waiting.settle(7, Ok(Value::Null));
        let (sender, receiver) = sync_channel(1);
        waiting.senders.lock().unwrap().insert(1, sender);
        waiting.close();
        assert_eq!(
            receiver.recv_timeout(Duration::from_secs(5)),
            Err(RecvTimeoutError::Disconnected)
        );
        assert!(waiting.closed.load(Ordering::SeqCst));
    }
}
