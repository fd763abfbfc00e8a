//! The constructor's callback options (`onLog`, `onTeamChange`,
//! `onHostQuestion`): each called on the JS thread with one JSON value,
//! without waiting (a slow listener never holds up background work); its
//! result and any exception it throws are ignored (a throwing listener never
//! reaches Node's fatal-exception path or the addon). Weak, so it never
//! keeps Node alive.

use napi::threadsafe_function::{
    ThreadsafeFunction, ThreadsafeFunctionCallMode, UnknownReturnValue,
};
use napi::Status;
use serde_json::{json, Value};

use crate::application::log::{LogEntry, LogSink};
use crate::application::turn_settled::{TeamChangeEvent, TeamChangeSink};
use crate::infrastructure::host_questions::waits::QuestionPost;

/// A callback option as napi converts it.
pub(super) type JsCallback =
    ThreadsafeFunction<Value, UnknownReturnValue, Value, Status, false, true>;

/// One callback option: `onLog` entries `{ level, code, message, context? }`,
/// `onTeamChange` events, `onHostQuestion` questions `{ id, kind, input }`.
pub(crate) struct Callback(pub(crate) JsCallback);

impl Callback {
    /// Queues the call with `value`; `false` when it could not be queued.
    fn send(&self, value: Value) -> bool {
        let queued = self.0.call_with_return_value(
            value,
            ThreadsafeFunctionCallMode::NonBlocking,
            |_, _| Ok(()),
        );
        queued == Status::Ok
    }
}

impl LogSink for Callback {
    fn log(&self, entry: LogEntry) {
        let mut value = json!({
            "level": entry.level,
            "code": entry.code.as_str(),
            "message": entry.message,
        });
        if !entry.context.is_empty() {
            value["context"] = Value::Object(entry.context);
        }
        self.send(value);
    }
}

impl TeamChangeSink for Callback {
    fn emit(&self, event: TeamChangeEvent) {
        if let Ok(value) = serde_json::to_value(event) {
            self.send(value);
        }
    }
}

impl QuestionPost for Callback {
    fn post(&self, question: Value) -> bool {
        self.send(question)
    }
}
