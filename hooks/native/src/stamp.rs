//! The UTC `YYYYMMDDTHHMMSSZ` stamp that starts a payload's name, from the
//! system clock.

use std::time::{SystemTime, UNIX_EPOCH};

/// Seconds in a day.
const DAY_SECS: u64 = 86_400;

/// `YYYYMMDDTHHMMSSZ` of `now`; `None` before 1970 or past year 9999
/// (a clock that wrong names nothing, as the script's check does).
pub fn stamp(now: SystemTime) -> Option<String> {
    let secs = now.duration_since(UNIX_EPOCH).ok()?.as_secs();
    let (year, month, day) = civil_from_days(secs / DAY_SECS);
    let rem = secs % DAY_SECS;
    (year <= 9999).then(|| {
        format!(
            "{year:04}{month:02}{day:02}T{:02}{:02}{:02}Z",
            rem / 3600,
            rem % 3600 / 60,
            rem % 60
        )
    })
}

/// Civil date of `days` since 1970-01-01 (H. Hinnant's `civil_from_days`,
/// the arithmetic the script uses).
fn civil_from_days(days: u64) -> (u64, u64, u64) {
    let z = days + 719_468;
    let era = z / 146_097;
    let doe = z - era * 146_097;
    let yoe = (doe - doe / 1460 + doe / 36_524 - doe / 146_096) / 365;
    let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    let mp = (5 * doy + 2) / 153;
    let day = doy - (153 * mp + 2) / 5 + 1;
    let month = if mp < 10 { mp + 3 } else { mp - 9 };
    let year = yoe + era * 400 + u64::from(month <= 2);
    (year, month, day)
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::time::Duration;

    #[test]
    fn names_the_utc_calendar_second() {
        // (epoch seconds, stamp): leap days, century years, year ends, 2038, far ones.
        let cases = [
            (0, Some("19700101T000000Z")),
            (951_825_600, Some("20000229T120000Z")),
            (951_868_800, Some("20000301T000000Z")),
            (978_307_198, Some("20001231T235958Z")),
            (1_709_251_198, Some("20240229T235958Z")),
            (2_147_483_647, Some("20380119T031407Z")),
            (4_102_444_798, Some("20991231T235958Z")),
            (4_107_542_398, Some("21000228T235958Z")),
            (4_107_542_400, Some("21000301T000000Z")),
            (9_999_999_990, Some("22861120T174630Z")),
            (64_065_729_600, Some("40000229T120000Z")),
            (253_402_300_799, Some("99991231T235959Z")),
            (253_402_300_800, None),
        ];
        for (secs, want) in cases {
            let got = stamp(UNIX_EPOCH + Duration::from_secs(secs));
            assert_eq!(got.as_deref(), want, "{secs}");
        }
        assert_eq!(stamp(UNIX_EPOCH - Duration::from_secs(1)), None);
    }
}
