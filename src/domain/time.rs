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
    // The times the addon runs on (see `CLOCK_RANGE_MS`) and a year more,
    // written digit by digit: a drained Stop event formats four times,
    // and chrono's general formatter cost several times this each.
    if (0..FOUR_DIGIT_YEARS_END_MS).contains(&ms) {
        return format_iso_four_digit_year(ms);
    }
    DateTime::<Utc>::from_timestamp_millis(ms)
        .unwrap_or_default()
        .to_rfc3339_opts(SecondsFormat::Millis, true)
}

/// 10000-01-01T00:00:00.000Z: the first time with a five-digit year.
const FOUR_DIGIT_YEARS_END_MS: EpochMs = 253_402_300_800_000;

/// `YYYY-MM-DDTHH:MM:SS.mmmZ` of `ms` in `0..FOUR_DIGIT_YEARS_END_MS`, as
/// chrono writes it (the civil date from the day count as in Howard
/// Hinnant's `civil_from_days`).
fn format_iso_four_digit_year(ms: EpochMs) -> String {
    let (days, ms_of_day) = (ms / 86_400_000, ms % 86_400_000);
    // Days since 0000-03-01; years counted from March, so that the leap
    // day falls last.
    let z = days + 719_468;
    let era = z / 146_097;
    let day_of_era = z - era * 146_097;
    let year_of_era =
        (day_of_era - day_of_era / 1460 + day_of_era / 36_524 - day_of_era / 146_096) / 365;
    let day_of_year = day_of_era - (365 * year_of_era + year_of_era / 4 - year_of_era / 100);
    let month_from_march = (5 * day_of_year + 2) / 153;
    let day = day_of_year - (153 * month_from_march + 2) / 5 + 1;
    let month = if month_from_march < 10 {
        month_from_march + 3
    } else {
        month_from_march - 9
    };
    let year = year_of_era + era * 400 + EpochMs::from(month <= 2);
    let mut out = String::with_capacity(24);
    let mut digits = |value: EpochMs, width: u32, then: Option<char>| {
        for place in (0..width).rev() {
            let digit = (value / 10_i64.pow(place)) % 10;
            out.push(char::from(b'0' + digit as u8));
        }
        if let Some(then) = then {
            out.push(then);
        }
    };
    digits(year, 4, Some('-'));
    digits(month, 2, Some('-'));
    digits(day, 2, Some('T'));
    digits(ms_of_day / 3_600_000, 2, Some(':'));
    digits(ms_of_day / 60_000 % 60, 2, Some(':'));
    digits(ms_of_day / 1000 % 60, 2, Some('.'));
    digits(ms_of_day % 1000, 3, Some('Z'));
    out
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
    use proptest::prelude::*;

    /// chrono's text of `ms`, as `format_iso` wrote every time before.
    fn by_chrono(ms: EpochMs) -> String {
        DateTime::<Utc>::from_timestamp_millis(ms)
            .unwrap_or_default()
            .to_rfc3339_opts(SecondsFormat::Millis, true)
    }

    /// Every time is written as chrono writes it: the epoch, leap days,
    /// month and year ends, the last four-digit year and past it, before
    /// 1970, and times chrono cannot hold.
    #[test]
    fn a_time_is_written_as_chrono_writes_it() {
        let day = 86_400_000;
        let times = [
            0,
            1,
            999,
            day - 1,
            day,
            951_782_400_000,     // 2000-02-29
            951_868_800_000 - 1, // 2000-02-29T23:59:59.999
            4_107_456_000_000,   // 2100-02-28
            4_107_542_400_000,   // 2100-03-01
            1_795_893_492_711,
            CLOCK_RANGE_MS.end,
            FOUR_DIGIT_YEARS_END_MS - 1,
            FOUR_DIGIT_YEARS_END_MS,
            -1,
            -day,
            EpochMs::MIN,
            EpochMs::MAX,
        ];
        for ms in times {
            assert_eq!(format_iso(ms), by_chrono(ms), "{ms}");
        }
    }

    proptest! {
        #[test]
        fn any_time_is_written_as_chrono_writes_it(
            ms in prop_oneof![0..FOUR_DIGIT_YEARS_END_MS + 1, any::<EpochMs>()],
        ) {
            prop_assert_eq!(format_iso(ms), by_chrono(ms));
        }
    }

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
