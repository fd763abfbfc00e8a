//! Spool file names: what the hook names a payload, and the
//! names the drain gives a claim, a result's meta file and an abandoned hook
//! temp file.

use crate::domain::time::EpochMs;
use crate::domain::turn_settled::RuntimeProvider;

/// Prefix of the hook's hidden temp files in `incoming/`.
pub(super) const HOOK_TEMP_PREFIX: &str = ".turn-settled.";
/// `processing/<id>.claimed-<ms>`.
const CLAIM_TAG: &str = ".claimed-";
/// `<result>.meta.json` beside each result.
pub(super) const META_SUFFIX: &str = ".meta.json";
/// What the Stop hook stamps a name with when `date` fails, and its `-`.
const UNKNOWN_TIME_STAMP: &str = "unknown-time-";
/// Longest name kept as a claim id. The hook's names are about 50 bytes; a
/// longer one (anyone may write into `incoming/`) would leave no room under
/// the 255-byte name limit for the claim tag or the `.meta.json` suffix, so
/// it is claimed under a shortened id (see [`claim_id`]).
pub(super) const MAX_ID_BYTES: usize = 160;
/// Marks a shortened id: no name the hook writes ends like this.
const SHORTENED_MARK: &str = ".long-name";

/// What a spool file name says.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum SpoolName {
    /// A name one of the app's emitters writes, with a known provider:
    /// `<stamp>-<pid>-<suffix>.<provider>.json` (the Stop hook; its stamp is
    /// `YYYYMMDDTHHMMSSZ`, or `unknown-time` when `date` failed) or
    /// `<stamp>-.turn-settled.<pid>-<uuid>.opencode.json` (the OpenCode
    /// emitter; its stamp also carries milliseconds, `YYYYMMDDTHHMMSSmmmZ`).
    Event {
        /// The provider of the suffix.
        provider: RuntimeProvider,
        /// The stamp, epoch ms; `None` for `unknown-time`.
        stamp_ms: Option<EpochMs>,
    },
    /// The documented shape, but a provider we do not know.
    UnsupportedProvider,
    /// Any other name: not an event file; the drain files it as invalid.
    Malformed,
}

/// Parses a spool file name. Only plain names: ASCII letters,
/// digits, `.`, `_` and `-`, never a leading dot (the hooks' temp files).
pub fn parse_spool_name(name: &str) -> SpoolName {
    let Some(rest) = name.strip_suffix(".json") else {
        return SpoolName::Malformed;
    };
    let Some((head, provider)) = rest.rsplit_once('.') else {
        return SpoolName::Malformed;
    };
    let Some((stamp_ms, after_stamp)) = split_stamp(head) else {
        return SpoolName::Malformed;
    };
    // The OpenCode emitter keeps its temp file's name after the stamp.
    let after_stamp = after_stamp
        .strip_prefix(HOOK_TEMP_PREFIX)
        .unwrap_or(after_stamp);
    let Some((pid, suffix)) = after_stamp.split_once('-') else {
        return SpoolName::Malformed;
    };
    let suffix_ok = !suffix.is_empty()
        && suffix
            .bytes()
            .all(|b| b.is_ascii_alphanumeric() || matches!(b, b'.' | b'_' | b'-'));
    if pid.is_empty() || !pid.bytes().all(|b| b.is_ascii_digit()) || !suffix_ok {
        return SpoolName::Malformed;
    }
    match RuntimeProvider::parse(provider) {
        Some(provider) => SpoolName::Event { provider, stamp_ms },
        None if !provider.is_empty() && provider.bytes().all(|b| b.is_ascii_alphanumeric()) => {
            SpoolName::UnsupportedProvider
        }
        None => SpoolName::Malformed,
    }
}

/// The stamp an emitter starts a name with and what follows its `-`:
/// `YYYYMMDDTHHMMSSZ`, `YYYYMMDDTHHMMSSmmmZ` or `unknown-time` (no time).
fn split_stamp(head: &str) -> Option<(Option<EpochMs>, &str)> {
    if let Some(rest) = head.strip_prefix(UNKNOWN_TIME_STAMP) {
        return Some((None, rest));
    }
    if let Some(at) = parse_stamp(head) {
        return Some((Some(at), &head[17..]));
    }
    let stamp = head.get(..19)?;
    if head.as_bytes().get(19) != Some(&b'-') || !stamp.is_ascii() {
        return None;
    }
    let at = chrono::NaiveDateTime::parse_from_str(stamp, "%Y%m%dT%H%M%S%3fZ").ok()?;
    Some((Some(at.and_utc().timestamp_millis()), &head[20..]))
}

/// `YYYYMMDDTHHMMSSZ-` at the start of `head`, as epoch ms.
pub(super) fn parse_stamp(head: &str) -> Option<EpochMs> {
    let stamp = head.get(..16)?;
    if head.as_bytes().get(16) != Some(&b'-') {
        return None;
    }
    plain_stamp(stamp.as_bytes()).or_else(|| chrono_stamp(stamp))
}

/// What chrono's format parser makes of a stamp: the last word on one
/// [`plain_stamp`] leaves.
fn chrono_stamp(stamp: &str) -> Option<EpochMs> {
    chrono::NaiveDateTime::parse_from_str(stamp, "%Y%m%dT%H%M%SZ")
        .ok()
        .map(|t| t.and_utc().timestamp_millis())
}

/// The stamp `YYYYMMDDTHHMMSSZ` of a real date and time, every field its
/// digits, as epoch ms: what the hook writes, read without chrono's
/// format parser, which cost more than the rest of a name's parsing
/// (retention parses each kept result's name at every prune: about ten
/// names per drained event). `None` sends any other stamp (a leap second,
/// a day the month lacks, a sign or a space) to that parser, which has the
/// last word.
fn plain_stamp(stamp: &[u8]) -> Option<EpochMs> {
    let &[y0, y1, y2, y3, mo0, mo1, d0, d1, b'T', h0, h1, mi0, mi1, s0, s1, b'Z'] = stamp else {
        return None;
    };
    let number = |digits: &[u8]| {
        digits.iter().try_fold(0u32, |n, &d| {
            d.is_ascii_digit().then(|| n * 10 + u32::from(d - b'0'))
        })
    };
    let year = i32::try_from(number(&[y0, y1, y2, y3])?).ok()?;
    let date = chrono::NaiveDate::from_ymd_opt(year, number(&[mo0, mo1])?, number(&[d0, d1])?)?;
    let time = chrono::NaiveTime::from_hms_opt(
        number(&[h0, h1])?,
        number(&[mi0, mi1])?,
        number(&[s0, s1])?,
    )?;
    Some(date.and_time(time).and_utc().timestamp_millis())
}

/// The id a file in `incoming/` is claimed, filed and given back under: its
/// name, or for a name longer than [`MAX_ID_BYTES`] its start and a mark
/// (never a valid event name, so it is filed under `invalid/`).
pub(super) fn claim_id(name: &str) -> String {
    if name.len() <= MAX_ID_BYTES {
        return name.to_string();
    }
    format!("{}{SHORTENED_MARK}", shorten(name))
}

/// At most [`MAX_ID_BYTES`] minus room for a mark, cut at a character boundary.
pub(super) fn shorten(text: &str) -> &str {
    let mut end = MAX_ID_BYTES - SHORTENED_MARK.len();
    while !text.is_char_boundary(end.min(text.len())) {
        end -= 1;
    }
    &text[..end.min(text.len())]
}

/// `<id>.claimed-<ms>`: the claim time travels in the name, atomically with
/// the claim.
pub(super) fn claimed_name(id: &str, claimed_at_ms: EpochMs) -> String {
    // Room for the whole name at once (20 digits hold any `i64`): a
    // `format!` of it grew its string twice, twice per drained event.
    let mut name = String::with_capacity(id.len() + CLAIM_TAG.len() + 20);
    name.push_str(id);
    name.push_str(CLAIM_TAG);
    let _ = std::fmt::Write::write_fmt(&mut name, format_args!("{claimed_at_ms}"));
    name
}

/// A name in `processing/`: the id it goes back to `incoming/` under, and its
/// claim time (`None` for a name without one, left by another implementation).
pub(super) fn parse_claimed(name: &str) -> (&str, Option<EpochMs>) {
    match name.rsplit_once(CLAIM_TAG) {
        Some((original, ms)) if !original.is_empty() => (original, ms.parse().ok()),
        _ => (name, None),
    }
}

/// `<result>.meta.json`.
pub(super) fn meta_name(result: &str) -> String {
    [result, META_SUFFIX].concat()
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A stamp read by hand is the time chrono reads from it, and one it
    /// leaves to chrono (a leap second, a day the month lacks, a month or
    /// hour out of range, a sign) gets chrono's answer.
    #[test]
    fn a_stamp_reads_as_chrono_reads_it() {
        let stamps = [
            "20261128T152300Z",
            "00000101T000000Z",
            "99991231T235959Z",
            "20240229T120000Z",
            "20250229T120000Z",
            "20261231T235960Z",
            "20261301T000000Z",
            "20261100T000000Z",
            "20261128T240000Z",
            "20261128T236000Z",
            "+0261128T152300Z",
            "2026112 T152300Z",
            "20261128t152300Z",
        ];
        for stamp in stamps {
            assert_eq!(
                parse_stamp(&format!("{stamp}-1")),
                chrono_stamp(stamp),
                "{stamp}"
            );
            if let Some(at) = plain_stamp(stamp.as_bytes()) {
                assert_eq!(Some(at), chrono_stamp(stamp), "{stamp}");
            }
        }
        assert!(plain_stamp(b"20261128T152300Z").is_some());
    }

    proptest::proptest! {
        /// Any stamp of the hook's shape, each field in its range or just
        /// past it.
        #[test]
        fn any_stamp_of_digits_reads_as_chrono_reads_it(
            year in 0u32..10_000,
            month in 0u32..14,
            day in 0u32..33,
            hour in 0u32..25,
            minute in 0u32..61,
            second in 0u32..62,
        ) {
            let stamp = format!("{year:04}{month:02}{day:02}T{hour:02}{minute:02}{second:02}Z");
            proptest::prop_assert_eq!(parse_stamp(&format!("{stamp}-1")), chrono_stamp(&stamp));
        }
    }

    #[test]
    fn names_follow_the_documented_pattern() {
        assert_eq!(
            parse_spool_name("20261122T100000Z-123-ab.C_1.claude.json"),
            SpoolName::Event {
                provider: RuntimeProvider::Claude,
                stamp_ms: crate::domain::time::parse_iso("2026-11-22T10:00:00Z")
            }
        );
        // Every name the app's emitters write: the OpenCode emitter's (its
        // stamp with milliseconds, its temp name kept) and the Stop hook's
        // when `date` failed.
        let opencode = "20261122T100000123Z-.turn-settled.4242-0b6f3c2e-9d7a-4f8e-8a51-3c1d2e4f5a6b.opencode.json";
        assert_eq!(
            parse_spool_name(opencode),
            SpoolName::Event {
                provider: RuntimeProvider::Opencode,
                stamp_ms: crate::domain::time::parse_iso("2026-11-22T10:00:00.123Z")
            }
        );
        assert_eq!(
            parse_spool_name("20261122T100000Z-.turn-settled.7-ab.codex.json"),
            SpoolName::Event {
                provider: RuntimeProvider::Codex,
                stamp_ms: crate::domain::time::parse_iso("2026-11-22T10:00:00Z")
            }
        );
        assert_eq!(
            parse_spool_name("unknown-time-77-Xy12Zq.claude.json"),
            SpoolName::Event {
                provider: RuntimeProvider::Claude,
                stamp_ms: None
            }
        );
        assert!(matches!(
            parse_spool_name("20261122T100000Z-1-0.opencode.json"),
            SpoolName::Event {
                provider: RuntimeProvider::Opencode,
                ..
            }
        ));
        assert_eq!(
            parse_spool_name("20261122T100000Z-1-0.gemini.json"),
            SpoolName::UnsupportedProvider
        );
        for bad in [
            "x.claude.json",
            "20261122T100000Z-1-0.claude.txt",
            "20261122T100000Z--0.claude.json",
            "20261122T100000Z-1-.claude.json",
            "20261322T100000Z-1-0.claude.json",
            "20261122T100000Z-1-a b.claude.json",
            "20261122T100000Z-1-0.json",
            "é",
            ".turn-settled.4242-ab.opencode.json",
            "20261122T100000123Z-.turn-settled.-ab.opencode.json",
            "20261122T100000123Z-.turn-settled.1-a/b.opencode.json",
            "20261122T1000001234Z-1-0.claude.json",
            "unknown-time--0.claude.json",
        ] {
            assert_eq!(parse_spool_name(bad), SpoolName::Malformed, "{bad}");
        }
    }

    #[test]
    fn long_names_get_short_ids_that_never_parse_as_events() {
        let long = format!("20261122T100000Z-1-{}.claude.json", "é".repeat(120));
        let id = claim_id(&long);
        assert!(id.len() <= MAX_ID_BYTES, "{}", id.len());
        assert!(long.starts_with(id.trim_end_matches(SHORTENED_MARK)));
        assert_eq!(parse_spool_name(&id), SpoolName::Malformed);
        let short = "20261122T100000Z-1-0.claude.json";
        assert_eq!(claim_id(short), short);
    }

    #[test]
    fn claimed_names_round_trip() {
        let name = claimed_name("a.claude.json", 42);
        assert_eq!(parse_claimed(&name), ("a.claude.json", Some(42)));
        assert_eq!(parse_claimed("plain.json"), ("plain.json", None));
        assert_eq!(parse_claimed(".claimed-7"), (".claimed-7", None));
        // As `format!` spelled them, whatever the time.
        for at in [0, 42, 1_795_893_492_711, -1, EpochMs::MIN, EpochMs::MAX] {
            let id = "20261128T150000Z-1-a.claude.json";
            assert_eq!(claimed_name(id, at), format!("{id}.claimed-{at}"));
            assert_eq!(meta_name(id), format!("{id}.meta.json"));
        }
    }
}
