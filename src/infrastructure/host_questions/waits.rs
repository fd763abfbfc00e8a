//! How a question reaches the host and its answer comes back: the question
//! is posted to the JS thread as `{ id, kind, input }` (by the binding's
//! `onHostQuestion` callback, a [`QuestionPost`]); the host answers with
//! `settleHostQuestion(id, outcome)`, which [`Waiting::settle`]s it. The
//! asking thread waits at most `hostTimeoutMs` (default
//! [`DEFAULT_TIMEOUT_MS`]); a callback that is slow, throws or never settles
//! costs at most that wait. A question is never asked on the JS thread
//! itself (that thread could not answer it while it waits): it is not asked
//! at all. Dispose ([`Waiting::close`]) ends every wait.

use std::collections::HashMap;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::mpsc::{sync_channel, RecvTimeoutError, SyncSender};
use std::sync::{Arc, Mutex};
use std::thread::ThreadId;
use std::time::Duration;

use serde_json::{json, Value};

use super::{QuestionChannel, QuestionKind, Unanswered};

/// Longest wait for one answer unless `hostTimeoutMs` says otherwise.
pub(crate) const DEFAULT_TIMEOUT_MS: u64 = 5_000;
/// Bounds of `hostTimeoutMs`.
pub(crate) const TIMEOUT_MS_BOUNDS: (u64, u64) = (10, 120_000);

/// Posts one question to the host without waiting; `false` when it could
/// not be queued.
pub(crate) trait QuestionPost: Send + Sync {
    /// Hands `question` (`{ id, kind, input }`) to the host.
    fn post(&self, question: Value) -> bool;
}

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

/// A `settleHostQuestion` outcome: `{ ok: true, value? }` answers `value`
/// (`null` when absent), `{ ok: false, error }` fails with `error` (`callback
/// failed` when it is not a string); `None` for any other shape.
pub(crate) fn outcome(outcome: &Value) -> Option<Result<Value, String>> {
    match (outcome.get("ok"), outcome.get("error")) {
        (Some(Value::Bool(true)), _) => Some(Ok(outcome.get("value").cloned().unwrap_or_default())),
        (Some(Value::Bool(false)), Some(Value::String(error))) => Some(Err(error.clone())),
        (Some(Value::Bool(false)), _) => Some(Err("callback failed".to_string())),
        _ => None,
    }
}

/// The [`QuestionChannel`] over a [`QuestionPost`].
pub(crate) struct PostedQuestions {
    post: Box<dyn QuestionPost>,
    timeout: Duration,
    js_thread: ThreadId,
    waiting: Arc<Waiting>,
}

impl PostedQuestions {
    /// Questions to `post`, each answer waited for at most `timeout`;
    /// built on the JS thread.
    pub(crate) fn new(
        post: Box<dyn QuestionPost>,
        timeout: Duration,
        waiting: Arc<Waiting>,
    ) -> Self {
        Self {
            post,
            timeout,
            js_thread: std::thread::current().id(),
            waiting,
        }
    }
}

impl QuestionChannel for PostedQuestions {
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
        let outcome = if self.post.post(question) {
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

    #[test]
    fn an_outcome_is_a_value_an_error_or_refused() {
        // (settleHostQuestion outcome, what it settles)
        for (given, settled) in [
            (json!({"ok": true, "value": 3}), Some(Ok(json!(3)))),
            (json!({"ok": true}), Some(Ok(Value::Null))),
            (
                json!({"ok": false, "error": "no"}),
                Some(Err("no".to_string())),
            ),
            (
                json!({"ok": false, "error": 1}),
                Some(Err("callback failed".to_string())),
            ),
            (
                json!({"ok": false}),
                Some(Err("callback failed".to_string())),
            ),
            (json!({"ok": "yes"}), None),
            (json!(null), None),
        ] {
            assert_eq!(outcome(&given), settled, "{given}");
        }
    }
}
