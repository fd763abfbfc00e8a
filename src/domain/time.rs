//! ISO-8601 timestamps as the app writes them (`2026-11-22T10:00:00.000Z`).

use chrono::{DateTime, SecondsFormat, Utc};

/// Milliseconds since the Unix epoch; the only time unit inside the addon.
pub type EpochMs = i64;

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

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn round_trips_like_javascript() {
        let ms = parse_iso("2026-11-22T10:00:00Z").unwrap();
        assert_eq!(format_iso(ms), "2026-11-22T10:00:00.000Z");
        assert_eq!(parse_iso("2026-11-22T11:00:00.250+01:00"), Some(ms + 250));
        assert_eq!(parse_iso("yesterday"), None);
    }
}
