//! ISO-8601 timestamps as the app writes them (`2026-11-22T10:00:00.000Z`).

use chrono::{DateTime, SecondsFormat, Utc};

/// Milliseconds since the Unix epoch; the only time unit inside the addon.
pub type EpochMs = i64;

/// Milliseconds of a clock that a wall-clock step does not move, since a
/// fixed point of one process: comparable only with other readings of the
/// same process.
pub(crate) type MonotonicMs = i64;

/// The clocks the addon accepts (`options.clock.nowMs`, `setClockForTesting`):
/// 1970-01-01T00:00:00.000Z up to (not including) 9999-01-01T00:00:00.000Z.
/// Every time stored is ISO-8601 text with a four-digit year ([`format_iso`]),
/// and a year of headroom keeps every lease, token and retry added to the
/// clock inside it; file times and spool names start at 1970. JavaScript's
/// `Date` reaches ±8.64e15 ms, far beyond: such a clock is refused, never
/// run as if it were 1970.
pub(crate) const CLOCK_RANGE_MS: std::ops::Range<EpochMs> = 0..253_370_764_800_000;

/// A clock in epoch milliseconds as JavaScript passes it (a finite number),
/// when it lies in [`CLOCK_RANGE_MS`]; fractions are dropped.
pub(crate) fn clock_from_js(now_ms: f64) -> Option<EpochMs> {
    let range = CLOCK_RANGE_MS.start as f64..CLOCK_RANGE_MS.end as f64;
    // NaN is in no range.
    range.contains(&now_ms).then_some(now_ms.trunc() as EpochMs)
}

/// Formats like JavaScript's `Date.prototype.toISOString`.
pub fn format_iso(ms: EpochMs) -> String {
    DateTime::<Utc>::from_timestamp_millis(ms)
        .unwrap_or_default()
        .to_rfc3339_opts(SecondsFormat::Millis, true)
}

/// Parses an RFC 3339 timestamp (any offset) to epoch milliseconds.
pub fn parse_iso(value: &str) -> Option<EpochMs> {
    DateTime::parse_from_rfc3339(value.trim())
        .ok()
        .map(|t| t.timestamp_millis())
}

/// Whether a lease (or token) ending at `expires_ms`, granted for at most
/// `max_ttl_ms`, still holds at `now_ms`: not yet ended, and ending no later
/// than `max_ttl_ms` from now. One ending further out was granted before the
/// clock stepped back; it is over, rather than outliving its longest TTL by
/// the size of the step.
pub(crate) fn lease_holds(expires_ms: EpochMs, now_ms: EpochMs, max_ttl_ms: EpochMs) -> bool {
    expires_ms > now_ms && expires_ms - now_ms <= max_ttl_ms
}

/// A time stored as ISO-8601 text in a JSON file: parsed once when the file
/// is read, and written back as the very text that was read (so rewriting a
/// file never changes a time it did not mean to). Text that is not a valid
/// time is kept and has no [`IsoTime::ms`]; what that means is up to the
/// reader of the field, which has to say so.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct IsoTime {
    text: String,
    ms: Option<EpochMs>,
}

impl IsoTime {
    /// `ms` as the app writes times ([`format_iso`]).
    pub fn at(ms: EpochMs) -> Self {
        Self {
            text: format_iso(ms),
            ms: Some(ms),
        }
    }

    /// A stored text, parsed ([`parse_iso`]).
    pub fn parse(text: String) -> Self {
        let ms = parse_iso(&text);
        Self { text, ms }
    }

    /// The time, when the text is a valid one.
    pub fn ms(&self) -> Option<EpochMs> {
        self.ms
    }

    /// The text as stored.
    pub fn as_str(&self) -> &str {
        &self.text
    }
}

impl From<&str> for IsoTime {
    fn from(text: &str) -> Self {
        Self::parse(text.to_string())
    }
}

/// Compares the stored text (`"2026-01-01T00:00:00Z"` and
/// `"2026-01-01T00:00:00.000Z"` are different texts of one time).
impl PartialEq<&str> for IsoTime {
    fn eq(&self, other: &&str) -> bool {
        self.text == *other
    }
}

impl serde::Serialize for IsoTime {
    fn serialize<S: serde::Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        serializer.serialize_str(&self.text)
    }
}

impl<'de> serde::Deserialize<'de> for IsoTime {
    fn deserialize<D: serde::Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        String::deserialize(deserializer).map(Self::parse)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn stored_times_keep_their_text_and_parse_once() {
        for (json, ms) in [
            (
                r#""2026-11-22T10:00:00Z""#,
                parse_iso("2026-11-22T10:00:00Z"),
            ),
            (
                r#""2026-11-22T10:00:00.250+01:00""#,
                parse_iso("2026-11-22T09:00:00.250Z"),
            ),
            (r#""soon""#, None),
        ] {
            let time: IsoTime = serde_json::from_str(json).unwrap();
            assert_eq!(time.ms(), ms, "{json}");
            assert_eq!(serde_json::to_string(&time).unwrap(), json);
        }
        let now = IsoTime::at(1_800_000_000_123);
        assert_eq!(now.as_str(), format_iso(1_800_000_000_123));
        assert_eq!(now, IsoTime::parse(format_iso(1_800_000_000_123)));
        assert!(serde_json::from_str::<IsoTime>("5").is_err());
    }

    #[test]
    fn a_lease_never_outlives_its_longest_ttl_from_now() {
        const NOW: EpochMs = 1_800_000_000_000;
        const TTL: EpochMs = 15 * 60_000;
        const DAY: EpochMs = 24 * 60 * 60_000;
        // (expires at, holds)
        for (expires, holds) in [
            (NOW + 1, true),
            (NOW + TTL, true),
            (NOW, false),
            (NOW - 1, false),
            // Granted just before the clock stepped back 24 h.
            (NOW + DAY + TTL, false),
            (NOW + TTL + 1, false),
        ] {
            assert_eq!(lease_holds(expires, NOW, TTL), holds, "{}", expires - NOW);
        }
    }

    #[test]
    fn clocks_outside_what_is_stored_as_text_are_refused() {
        // (nowMs from JavaScript, accepted as)
        for (now_ms, accepted) in [
            (0.0, Some(0)),
            (1_795_000_000_000.5, Some(1_795_000_000_000)),
            (253_370_764_799_999.0, Some(253_370_764_799_999)),
            (253_370_764_800_000.0, None),
            (8.64e15, None),
            (-8.64e15, None),
            (-1.0, None),
            (f64::NAN, None),
            (f64::INFINITY, None),
        ] {
            assert_eq!(clock_from_js(now_ms), accepted, "{now_ms}");
        }
        let last = CLOCK_RANGE_MS.end - 1;
        assert_eq!(parse_iso(&format_iso(last)), Some(last));
        assert_eq!(format_iso(0), "1970-01-01T00:00:00.000Z");
    }

    #[test]
    fn round_trips_like_javascript() {
        let ms = parse_iso("2026-11-22T10:00:00Z").unwrap();
        assert_eq!(format_iso(ms), "2026-11-22T10:00:00.000Z");
        assert_eq!(parse_iso("2026-11-22T11:00:00.250+01:00"), Some(ms + 250));
        assert_eq!(parse_iso("yesterday"), None);
    }
}
