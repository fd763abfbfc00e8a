//! Runs a use case on the libuv thread pool and settles its Promise, turning
//! failures (and panics) into JS errors with a stable `code`.

use std::panic::{catch_unwind, AssertUnwindSafe};

use napi::bindgen_prelude::{ToNapiValue, TypeName, ValueType};
use napi::{sys, Env, JsError, Task};

use crate::application::reconcile::WorkSyncError;

/// Stable error codes of the JS surface (API.md "Errors").
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ErrorCode {
    /// Bad argument.
    InvalidArgument,
    /// File system failure.
    Io,
    /// A store could not be read or repaired.
    CorruptStore,
    /// Used after `dispose()`.
    Disposed,
    /// The team is being deleted (`prepareTeamDeletion` until `resumeTeam`).
    TeamQuiesced,
}

impl AsRef<str> for ErrorCode {
    fn as_ref(&self) -> &str {
        match self {
            Self::InvalidArgument => "MWS_INVALID_ARGUMENT",
            Self::Io => "MWS_IO",
            Self::CorruptStore => "MWS_CORRUPT_STORE",
            Self::Disposed => "MWS_DISPOSED",
            Self::TeamQuiesced => "MWS_TEAM_QUIESCED",
        }
    }
}

/// A JS-facing failure: a code and a message.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct JsFailure {
    /// Stable code.
    pub code: ErrorCode,
    /// Human message.
    pub message: String,
}

impl JsFailure {
    /// An invalid-argument failure.
    pub fn invalid(message: impl Into<String>) -> Self {
        Self {
            code: ErrorCode::InvalidArgument,
            message: message.into(),
        }
    }

    /// As a napi error carrying the code.
    pub fn into_napi(self) -> napi::Error<ErrorCode> {
        napi::Error::new(self.code, self.message)
    }
}

impl From<crate::infrastructure::composition::Disposed> for JsFailure {
    fn from(error: crate::infrastructure::composition::Disposed) -> Self {
        Self {
            code: ErrorCode::Disposed,
            message: error.to_string(),
        }
    }
}

impl From<WorkSyncError> for JsFailure {
    fn from(error: WorkSyncError) -> Self {
        let code = match error {
            WorkSyncError::InvalidArgument { .. } => ErrorCode::InvalidArgument,
            WorkSyncError::Io(_) => ErrorCode::Io,
            WorkSyncError::TeamQuiesced(_) => ErrorCode::TeamQuiesced,
        };
        Self {
            code,
            message: error.to_string(),
        }
    }
}

type Work = Box<dyn FnOnce() -> Result<serde_json::Value, JsFailure> + Send>;

/// One unit of off-thread work resolving to a JSON value.
pub struct Job {
    work: Option<Work>,
}

impl Job {
    /// Wraps `work`; it runs on the thread pool, never on the JS thread.
    pub fn new(
        work: impl FnOnce() -> Result<serde_json::Value, JsFailure> + Send + 'static,
    ) -> Self {
        Self {
            work: Some(Box::new(work)),
        }
    }
}

impl Task for Job {
    type Output = Result<serde_json::Value, JsFailure>;
    type JsValue = JsonValue;

    fn compute(&mut self) -> napi::Result<Self::Output> {
        let Some(work) = self.work.take() else {
            return Ok(Err(JsFailure {
                code: ErrorCode::Io,
                message: "job ran twice".into(),
            }));
        };
        Ok(catch_unwind(AssertUnwindSafe(work)).unwrap_or_else(|_| {
            Err(JsFailure {
                code: ErrorCode::Io,
                message: "internal error (panic) in member-work-sync".into(),
            })
        }))
    }

    fn resolve(&mut self, env: Env, output: Self::Output) -> napi::Result<Self::JsValue> {
        output.map(JsonValue).map_err(|failure| {
            let js_error = JsError::from(failure.into_napi()).into_unknown(env);
            napi::Error::from(js_error)
        })
    }
}

/// A JSON result handed to JS as a plain object.
pub struct JsonValue(pub serde_json::Value);

impl TypeName for JsonValue {
    fn type_name() -> &'static str {
        "Object"
    }

    fn value_type() -> ValueType {
        ValueType::Object
    }
}

impl ToNapiValue for JsonValue {
    unsafe fn to_napi_value(env: sys::napi_env, val: Self) -> napi::Result<sys::napi_value> {
        // SAFETY: forwarded unchanged to serde_json's own conversion with the same env.
        unsafe { serde_json::Value::to_napi_value(env, val.0) }
    }
}
