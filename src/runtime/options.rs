//! The constructor options' checks: every bad option is refused with a
//! message naming it (the binding throws it as `MWS_INVALID_ARGUMENT`), and
//! `tuning` becomes the instance's [`Tuning`]. They read the options as the
//! binding's bounded converter gives them (JSON), so nothing here knows napi.

use std::time::Duration;

use serde_json::Value;

use super::composition::Tuning;
use crate::domain::retention::bounds;
use crate::domain::time::{clock_from_js, format_iso, CLOCK_RANGE_MS};
use crate::infrastructure::host_questions::waits::TIMEOUT_MS_BOUNDS;
use crate::infrastructure::host_questions::QuestionKind;

/// Longest `options.controlUrl` accepted.
const MAX_CONTROL_URL_CHARS: usize = 2048;
/// Bounds of `options.tuning.drainIntervalMs` and `dispatchIntervalMs` (100 ms to 24 h).
const INTERVAL_MS_BOUNDS: (u64, u64) = (100, 86_400_000);
/// Bounds of `options.tuning.queueConcurrency` (the worker's blocking pool has 8 threads).
const QUEUE_CONCURRENCY_BOUNDS: (u64, u64) = (1, 8);

/// An option the constructor refuses, and why (names the option).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct InvalidOption(pub String);

impl InvalidOption {
    fn new(message: impl Into<String>) -> Self {
        Self(message.into())
    }
}

/// Checks the converted constructor options, in a fixed order (the first
/// bad option is the one named), and reads their `tuning`.
pub(crate) fn checked(json: &Value) -> Result<Tuning, InvalidOption> {
    match json.get("controlUrl") {
        None | Some(Value::Null) => {}
        Some(Value::String(url))
            if url.chars().count() <= MAX_CONTROL_URL_CHARS
                && !url.chars().any(|c| c == '"' || c.is_control()) => {}
        Some(_) => {
            return Err(InvalidOption::new(format!(
                "options.controlUrl must be a string of at most {MAX_CONTROL_URL_CHARS} \
                 characters without quotes or control characters"
            )))
        }
    }
    let tuning = tuning(json.get("tuning"))?;
    check_storage(json.get("storage"))?;
    // Plain fields: absent, null or of their type.
    for (key, is_type, kind) in [
        (
            "claudeRoot",
            Value::is_string as fn(&Value) -> bool,
            "a string",
        ),
        ("teamsBasePath", Value::is_string, "a string"),
        ("tasksBasePath", Value::is_string, "a string"),
        ("autoStart", Value::is_boolean, "a boolean"),
    ] {
        if json.get(key).is_some_and(|v| !v.is_null() && !is_type(v)) {
            return Err(InvalidOption::new(format!("options.{key} must be {kind}")));
        }
    }
    match json.get("clock") {
        None | Some(Value::Null) => {}
        Some(clock) => match clock.get("nowMs").and_then(Value::as_f64) {
            Some(now_ms) => {
                clock_ms(now_ms, "options.clock.nowMs")?;
            }
            None => {
                return Err(InvalidOption::new(
                    "options.clock must be { nowMs: <finite number> }",
                ))
            }
        },
    }
    check_host_options(json)?;
    Ok(tuning)
}

/// A test clock the addon can represent ([`CLOCK_RANGE_MS`]), or why not,
/// naming `field` and the range.
pub(crate) fn clock_ms(now_ms: f64, field: &str) -> Result<i64, InvalidOption> {
    clock_from_js(now_ms).ok_or_else(|| {
        InvalidOption::new(format!(
            "{field} must be epoch milliseconds from {} ({}) up to {} ({}), got {now_ms}",
            CLOCK_RANGE_MS.start,
            format_iso(CLOCK_RANGE_MS.start),
            CLOCK_RANGE_MS.end - 1,
            format_iso(CLOCK_RANGE_MS.end - 1),
        ))
    })
}

/// `hostAnswers` names known questions; `hostTimeoutMs`, when given, is an
/// integer in bounds. `null` is refused as no integer (as the declared
/// `number` type and napi's conversion refuse it): NaN and ±Infinity reach
/// here as `null` and would otherwise pass as a timeout of 0 or forever.
fn check_host_options(json: &Value) -> Result<(), InvalidOption> {
    match json.get("hostAnswers") {
        None | Some(Value::Null) => {}
        Some(Value::Array(names)) => {
            for name in names {
                if name.as_str().and_then(QuestionKind::parse).is_none() {
                    return Err(InvalidOption::new(format!(
                        "options.hostAnswers: unknown question {name}"
                    )));
                }
            }
        }
        Some(_) => return Err(InvalidOption::new("options.hostAnswers must be an array")),
    }
    let (min, max) = TIMEOUT_MS_BOUNDS;
    match json.get("hostTimeoutMs") {
        Some(ms) if ms.as_f64().and_then(integer_in((min, max))).is_none() => {
            Err(InvalidOption::new(format!(
                "options.hostTimeoutMs must be an integer from {min} to {max}"
            )))
        }
        _ => Ok(()),
    }
}

/// Checks `options.storage` without a gateway (`storage_gateway` reads
/// that one): `{ sqlitePath: <non-empty string>, readOnly?: boolean }`.
fn check_storage(storage: Option<&Value>) -> Result<(), InvalidOption> {
    let fields = match storage {
        None | Some(Value::Null) => return Ok(()),
        Some(Value::Object(fields)) => fields,
        Some(_) => return Err(InvalidOption::new("options.storage must be an object")),
    };
    if let Some(key) = fields
        .keys()
        .find(|key| !matches!(key.as_str(), "sqlitePath" | "readOnly"))
    {
        return Err(InvalidOption::new(format!(
            "options.storage.{key} is not an option (sqlitePath, readOnly; or gateway, selector, callTimeoutMs)"
        )));
    }
    match fields.get("sqlitePath") {
        Some(Value::String(path)) if !path.trim().is_empty() => {}
        _ => {
            return Err(InvalidOption::new(
                "options.storage.sqlitePath must be a non-empty string",
            ))
        }
    }
    if !matches!(
        fields.get("readOnly"),
        None | Some(Value::Null) | Some(Value::Bool(_))
    ) {
        return Err(InvalidOption::new(
            "options.storage.readOnly must be a boolean",
        ));
    }
    Ok(())
}

/// A field of `options.tuning`: its name, its bounds and its setter.
type TuningField = (&'static str, (u64, u64), fn(&mut Tuning, u64));

/// The fields of `options.tuning`: each an integer within its bounds, and
/// where it goes in the instance's [`Tuning`] (the casts are exact: the
/// value is a checked integer).
const TUNING_FIELDS: [TuningField; 12] = [
    ("drainIntervalMs", INTERVAL_MS_BOUNDS, |t, ms| {
        t.intervals.drain_every = Duration::from_millis(ms)
    }),
    ("dispatchIntervalMs", INTERVAL_MS_BOUNDS, |t, ms| {
        t.intervals.dispatch_every = Duration::from_millis(ms)
    }),
    ("queueConcurrency", QUEUE_CONCURRENCY_BOUNDS, |t, n| {
        t.queue_concurrency = Some(n as usize)
    }),
    ("queueQuietWindowMs", (1, INTERVAL_MS_BOUNDS.1), |t, ms| {
        t.queue_quiet_window_ms = Some(ms as i64)
    }),
    (
        "journalRotateBytes",
        bounds::JOURNAL_ROTATE_BYTES,
        |t, n| t.retention.journal_rotate_bytes = n,
    ),
    ("journalRotations", bounds::JOURNAL_ROTATIONS, |t, n| {
        t.retention.journal_rotations = n as u32
    }),
    (
        "outboxFinishedMaxAgeMs",
        bounds::OUTBOX_FINISHED_MAX_AGE_MS,
        |t, ms| t.retention.outbox_finished_max_age_ms = ms as i64,
    ),
    (
        "outboxFinishedMaxItems",
        bounds::OUTBOX_FINISHED_MAX_ITEMS,
        |t, n| t.retention.outbox_finished_max_items = n as usize,
    ),
    ("spoolProcessedMaxFiles", bounds::SPOOL_MAX_FILES, |t, n| {
        t.retention.spool_processed_max_files = n as usize
    }),
    (
        "spoolProcessedMaxAgeMs",
        bounds::SPOOL_MAX_AGE_MS,
        |t, ms| t.retention.spool_processed_max_age_ms = ms as i64,
    ),
    ("spoolInvalidMaxFiles", bounds::SPOOL_MAX_FILES, |t, n| {
        t.retention.spool_invalid_max_files = n as usize
    }),
    ("spoolInvalidMaxAgeMs", bounds::SPOOL_MAX_AGE_MS, |t, ms| {
        t.retention.spool_invalid_max_age_ms = ms as i64
    }),
];

/// The instance's [`Tuning`] from the converted `options.tuning`: an object
/// whose fields are absent (`undefined`) or integers within their bounds;
/// absent fields keep their defaults. `null` is refused with the option's
/// name, as napi's conversion would refuse it anyway.
fn tuning(option: Option<&Value>) -> Result<Tuning, InvalidOption> {
    let mut tuning = Tuning::default();
    let fields = match option {
        None => return Ok(tuning),
        Some(Value::Object(fields)) => fields,
        Some(_) => return Err(InvalidOption::new("options.tuning must be an object")),
    };
    for (key, (min, max), set) in TUNING_FIELDS {
        let Some(value) = fields.get(key) else {
            continue;
        };
        match value.as_f64().and_then(integer_in((min, max))) {
            Some(n) => set(&mut tuning, n),
            None => {
                return Err(InvalidOption::new(format!(
                    "options.tuning.{key} must be an integer from {min} to {max}"
                )))
            }
        }
    }
    Ok(tuning)
}

/// A number within `bounds` with no fraction (JS numbers arrive as f64),
/// as the integer it is.
pub(crate) fn integer_in((min, max): (u64, u64)) -> impl Fn(f64) -> Option<u64> {
    move |n| (n.fract() == 0.0 && (min as f64..=max as f64).contains(&n)).then_some(n as u64)
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn integers_in_bounds_are_whole_numbers_between_them() {
        // (number, its integer within 10..=20)
        for (n, expected) in [
            (10.0, Some(10)),
            (20.0, Some(20)),
            (15.0, Some(15)),
            (9.0, None),
            (21.0, None),
            (15.5, None),
            (-0.5, None),
            (f64::NAN, None),
            (f64::INFINITY, None),
        ] {
            assert_eq!(integer_in((10, 20))(n), expected, "{n}");
        }
    }

    #[test]
    fn the_first_bad_option_is_named_and_tuning_is_read() {
        // (options, the refusal; None: accepted)
        for (options, refused) in [
            (json!({}), None),
            (json!({"controlUrl": "http://x\"y"}), Some("options.controlUrl must be a string of at most 2048 characters without quotes or control characters")),
            (json!({"tuning": null}), Some("options.tuning must be an object")),
            (json!({"tuning": {"queueConcurrency": 9}}), Some("options.tuning.queueConcurrency must be an integer from 1 to 8")),
            (json!({"storage": {"sqlitePath": " "}}), Some("options.storage.sqlitePath must be a non-empty string")),
            (json!({"storage": {"sqlitePath": "a.db", "x": 1}}), Some("options.storage.x is not an option (sqlitePath, readOnly; or gateway, selector, callTimeoutMs)")),
            (json!({"autoStart": "yes"}), Some("options.autoStart must be a boolean")),
            (json!({"clock": {}}), Some("options.clock must be { nowMs: <finite number> }")),
            (json!({"hostAnswers": ["nope"]}), Some("options.hostAnswers: unknown question \"nope\"")),
            (json!({"hostTimeoutMs": 9}), Some("options.hostTimeoutMs must be an integer from 10 to 120000")),
            // `null` is no number (NaN and ±Infinity reach here as `null`, too).
            (json!({"hostTimeoutMs": null}), Some("options.hostTimeoutMs must be an integer from 10 to 120000")),
            (json!({"hostTimeoutMs": 10}), None),
            // Several bad: the controlUrl check comes first.
            (json!({"autoStart": 1, "controlUrl": 2}), Some("options.controlUrl must be a string of at most 2048 characters without quotes or control characters")),
        ] {
            let got = checked(&options).err().map(|InvalidOption(message)| message);
            assert_eq!(got.as_deref(), refused, "{options}");
        }
        let tuning = checked(&json!({"tuning": {"drainIntervalMs": 250, "journalRotations": 3}}));
        let tuning = tuning.unwrap();
        assert_eq!(tuning.intervals.drain_every, Duration::from_millis(250));
        assert_eq!(tuning.retention.journal_rotations, 3);
        assert_eq!(tuning.queue_concurrency, None);
    }
}
