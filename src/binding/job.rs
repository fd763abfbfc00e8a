//! Runs a use case on the libuv thread pool and settles its Promise, turning
//! failures (and panics) into JS errors with a stable `code`.

use std::panic::{catch_unwind, AssertUnwindSafe};

use napi::bindgen_prelude::{
    Function, JsObjectValue, JsValue, Object, ToNapiValue, TypeName, Unknown, ValueType,
};
use napi::{sys, Env, JsError, JsString, Task};

use crate::application::reconcile::WorkSyncError;

/// Stable error codes of the JS surface.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ErrorCode {
    /// An argument or option is malformed or names an unsafe team or member;
    /// nothing was read or written.
    InvalidArgument,
    /// A file system operation failed; the message names the path.
    Io,
    /// The instance was disposed before the call was admitted.
    Disposed,
    /// The team is being deleted (`prepareTeamDeletion` until `resumeTeam`).
    TeamQuiesced,
    /// A fault inside the addon (a panic), caught before it reached Node.
    Internal,
}

impl AsRef<str> for ErrorCode {
    fn as_ref(&self) -> &str {
        match self {
            Self::InvalidArgument => "MWS_INVALID_ARGUMENT",
            Self::Io => "MWS_IO",
            Self::Disposed => "MWS_DISPOSED",
            Self::TeamQuiesced => "MWS_TEAM_QUIESCED",
            Self::Internal => "MWS_INTERNAL",
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

    /// A file system failure (`MWS_IO`).
    pub fn io(message: impl Into<String>) -> Self {
        Self {
            code: ErrorCode::Io,
            message: message.into(),
        }
    }

    /// As a napi error carrying the code.
    pub fn into_napi(self) -> napi::Error<ErrorCode> {
        napi::Error::new(self.code, self.message)
    }
}

impl From<JsFailure> for napi::Error<ErrorCode> {
    fn from(failure: JsFailure) -> Self {
        failure.into_napi()
    }
}

/// Runs the body of the napi entry point `what`; a panic in it becomes an
/// `MWS_INTERNAL` failure naming `what` and the panic message instead of
/// unwinding into Node (which aborts the process, Electron included).
pub(crate) fn guard<T, E: From<JsFailure>>(
    what: &str,
    body: impl FnOnce() -> Result<T, E>,
) -> Result<T, E> {
    catch_unwind(AssertUnwindSafe(body)).unwrap_or_else(|panic| {
        let detail = panic
            .downcast_ref::<&str>()
            .copied()
            .or_else(|| panic.downcast_ref::<String>().map(String::as_str))
            .unwrap_or("no message");
        Err(E::from(JsFailure {
            code: ErrorCode::Internal,
            message: format!("internal error (panic) in member-work-sync {what}: {detail}"),
        }))
    })
}

impl From<crate::runtime::composition::Disposed> for JsFailure {
    fn from(error: crate::runtime::composition::Disposed) -> Self {
        Self {
            code: ErrorCode::Disposed,
            message: error.to_string(),
        }
    }
}

impl From<crate::runtime::options::InvalidOption> for JsFailure {
    fn from(error: crate::runtime::options::InvalidOption) -> Self {
        Self::invalid(error.0)
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

type Work = Box<dyn FnOnce() -> Result<JobOutput, JsFailure> + Send>;

/// What a finished job hands to JS.
pub enum JobOutput {
    /// A JSON value (`null` included) as its text, rendered on the thread
    /// pool and turned into JS by the engine's own `JSON.parse` on the JS
    /// thread: one native parse instead of one Node-API call per property
    /// (an 80 KB status is thousands of them), and every key becomes an own
    /// data property (`__proto__` included), never a setter call.
    Json(String),
    /// Nothing: the Promise resolves `undefined` (`Promise<void>` methods).
    Undefined,
}

/// One unit of off-thread work resolving to a JSON value or `undefined`.
pub struct Job {
    work: Option<Work>,
}

impl Job {
    /// Wraps `work`; it runs on the thread pool, never on the JS thread.
    pub fn new<R: serde::Serialize>(
        work: impl FnOnce() -> Result<R, JsFailure> + Send + 'static,
    ) -> Self {
        Self {
            work: Some(Box::new(move || work().and_then(|value| render(&value)))),
        }
    }

    /// Wraps `work` whose Promise resolves `undefined` (a `Promise<void>`).
    pub fn unit(work: impl FnOnce() -> Result<(), JsFailure> + Send + 'static) -> Self {
        Self {
            work: Some(Box::new(move || work().map(|()| JobOutput::Undefined))),
        }
    }
}

impl Task for Job {
    type Output = Result<JobOutput, JsFailure>;
    type JsValue = JobOutput;

    fn compute(&mut self) -> napi::Result<Self::Output> {
        let Some(work) = self.work.take() else {
            return Ok(Err(JsFailure::io("job ran twice")));
        };
        Ok(guard("background job", work))
    }

    fn resolve(&mut self, env: Env, output: Self::Output) -> napi::Result<Self::JsValue> {
        output.map_err(|failure| {
            let js_error = JsError::from(failure.into_napi()).into_unknown(env);
            napi::Error::from(js_error)
        })
    }
}

/// `value` as JSON text for [`JobOutput::Json`], straight from its own
/// `Serialize` (no `Value` in between): every result reaches JS this way.
pub(crate) fn render(value: &impl serde::Serialize) -> Result<JobOutput, JsFailure> {
    serde_json::to_string(value)
        .map(JobOutput::Json)
        .map_err(|e| JsFailure::io(format!("could not encode result: {e}")))
}

/// `JSON.parse(text)` in `env`, through the global `JSON` object.
///
/// # Safety
/// `env` must be the env of the JS thread this runs on.
unsafe fn json_parse(env: sys::napi_env, text: &str) -> napi::Result<sys::napi_value> {
    let env = Env::from_raw(env);
    let json: Object = env.get_global()?.get_named_property("JSON")?;
    let parse: Function<JsString, Unknown> = json.get_named_property("parse")?;
    let parsed = parse.apply(Some(&json), env.create_string(text)?)?;
    Ok(parsed.raw())
}

impl TypeName for JobOutput {
    fn type_name() -> &'static str {
        "unknown"
    }

    fn value_type() -> ValueType {
        ValueType::Unknown
    }
}

impl ToNapiValue for JobOutput {
    unsafe fn to_napi_value(env: sys::napi_env, val: Self) -> napi::Result<sys::napi_value> {
        match val {
            // SAFETY: `env` is the live env napi hands to this conversion.
            JobOutput::Json(text) => unsafe { json_parse(env, &text) },
            // SAFETY: `()` converts to `undefined` in the same env.
            JobOutput::Undefined => unsafe { <()>::to_napi_value(env, ()) },
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_panic_becomes_an_internal_failure_and_a_result_passes_through() {
        let panicked: Result<(), JsFailure> = guard("noteTeamChange", || panic!("boom"));
        let failure = panicked.unwrap_err();
        assert_eq!(failure.code, ErrorCode::Internal);
        assert_eq!(failure.code.as_ref(), "MWS_INTERNAL");
        assert!(
            failure.message.contains("noteTeamChange: boom"),
            "{failure:?}"
        );

        let formatted: Result<(), JsFailure> = guard("x", || panic!("bad {}", 7));
        assert!(formatted.unwrap_err().message.ends_with("x: bad 7"));

        let invalid = JsFailure::invalid("nope");
        assert_eq!(guard("x", || Err::<(), _>(invalid.clone())), Err(invalid));
        assert_eq!(guard("x", || Ok::<_, JsFailure>(5)), Ok(5));
    }

    #[test]
    fn a_panicking_job_settles_with_an_internal_failure() {
        for mut job in [
            Job::new::<()>(|| panic!("in a job")),
            Job::unit(|| panic!("in a job")),
        ] {
            let failure = match job.compute() {
                Ok(Err(failure)) => failure,
                _ => panic!("the panic was not converted"),
            };
            assert_eq!(failure.code, ErrorCode::Internal);
            assert!(failure.message.contains("in a job"), "{failure:?}");
        }
    }
}
