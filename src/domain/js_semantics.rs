//! The JavaScript string and array semantics the reference implementation's
//! agenda rules rely on, so the addon reproduces its agendas byte for byte.
//!
//! The reference (the TypeScript app this addon replaces) trims with
//! `String.prototype.trim`, sorts id lists with the default `Array.prototype.sort`
//! (UTF-16 code unit order), orders fingerprint items and roster names with
//! `String.prototype.localeCompare` (ICU collation of the default locale, whose
//! collation is the CLDR root order), turns numeric ids into text with
//! `Number.prototype.toString`, and sorts review history with a comparator that is
//! not a total order (V8's binary insertion sort decides the outcome). Each of
//! these differs from the obvious Rust call on some input an agent can write.

use std::cmp::Ordering;
use std::sync::LazyLock;

use icu_collator::options::CollatorOptions;
use icu_collator::{Collator, CollatorBorrowed};

/// True for the characters `String.prototype.trim` removes and a regular
/// expression's `\s` matches: ECMAScript WhiteSpace (tab, VT, FF, space,
/// NBSP, BOM, category Zs) and LineTerminator.
///
/// Rust's `char::is_whitespace` differs: it keeps U+FEFF and removes U+0085.
pub(crate) fn is_js_whitespace(c: char) -> bool {
    matches!(
        c,
        '\u{9}' | '\u{a}' | '\u{b}' | '\u{c}' | '\u{d}' | ' ' | '\u{a0}' | '\u{1680}' | '\u{2000}'
            ..='\u{200a}'
                | '\u{2028}'
                | '\u{2029}'
                | '\u{202f}'
                | '\u{205f}'
                | '\u{3000}'
                | '\u{feff}'
    )
}

/// `String.prototype.trim`.
pub(crate) fn js_trim(value: &str) -> &str {
    value.trim_matches(is_js_whitespace)
}

/// The default order of `Array.prototype.sort` on strings: UTF-16 code units.
///
/// It equals byte order except between supplementary characters (surrogate
/// pairs, U+D800..) and U+E000–U+FFFF.
pub(crate) fn compare_code_units(left: &str, right: &str) -> Ordering {
    left.encode_utf16().cmp(right.encode_utf16())
}

/// The root collator; `None` only if the compiled-in data were unusable.
static ROOT_COLLATOR: LazyLock<Option<CollatorBorrowed<'static>>> =
    LazyLock::new(|| Collator::try_new(Default::default(), CollatorOptions::default()).ok());

/// `left.localeCompare(right)` with no locale argument: ICU collation of the
/// CLDR root order, tertiary strength (ICU4X's `icu_collator` implements the same
/// algorithm and data as the ICU inside Node).
///
/// Byte order is not a substitute even on ASCII ids: the collator puts
/// punctuation before digits and letters (`work:1:1` < `work:10:10`, byte
/// order says the opposite) and lowercase before uppercase at equal letters.
pub(crate) fn locale_compare(left: &str, right: &str) -> Ordering {
    if let Some(order) = plain_ascii_order(left, right) {
        return order;
    }
    match ROOT_COLLATOR.as_ref() {
        Some(collator) => collator.compare(left, right),
        // The data are compiled into the crate; this arm is unreachable in
        // practice and keeps the order deterministic if it ever were not.
        None => compare_code_units(left, right),
    }
}

/// The ASCII characters ids and the keys built from them are made of, whose
/// root collation is a plain order of one weight each: digits, lowercase
/// letters and a little punctuation. None has a case or accent level, none
/// is ignorable, and no two form a contraction or an expansion, so two
/// strings made only of them collate as the lexicographic order of their
/// characters' ranks (a proper prefix first). The test
/// `plain_ascii_order_is_the_collators_order` holds that against the
/// collator; uppercase letters are left out (they differ from lowercase
/// only at the tertiary level, after every primary difference).
const PLAIN_ASCII: &[u8] = b"0123456789abcdefghijklmnopqrstuvwxyz-_:.#/";

/// Each [`PLAIN_ASCII`] byte's rank in the root collation's order of the
/// characters alone (from 1; 0 for every other byte), asked of the
/// collator itself so it follows its data. `None` if any two of them were
/// not strictly ordered (then every comparison goes to the collator).
static PLAIN_ASCII_RANKS: LazyLock<Option<[u8; 128]>> =
    LazyLock::new(|| plain_ranks(ROOT_COLLATOR.as_ref()?));

/// [`PLAIN_ASCII_RANKS`] as the numeric, case-blind collator of
/// [`locale_compare_numeric_base`] ranks them, uppercase letters with their
/// lowercase ones (it compares at the primary level only). `None` if that
/// collator ranks them otherwise.
static PLAIN_ASCII_BASE_RANKS: LazyLock<Option<[u8; 128]>> = LazyLock::new(|| {
    let collator = NUMERIC_BASE_COLLATOR.as_ref()?;
    let mut ranks = plain_ranks(collator)?;
    for upper in b'A'..=b'Z' {
        let lower = upper.to_ascii_lowercase();
        if collator.compare(&alone(upper), &alone(lower)) != Ordering::Equal {
            return None;
        }
        ranks[usize::from(upper)] = ranks[usize::from(lower)];
    }
    Some(ranks)
});

/// One byte as a one-character string.
fn alone(byte: u8) -> String {
    char::from(byte).to_string()
}

/// The ranks `collator` gives the [`PLAIN_ASCII`] characters alone, from 1;
/// `None` unless they are strictly ordered with the digits side by side
/// (no other character between two digits).
fn plain_ranks(collator: &CollatorBorrowed<'static>) -> Option<[u8; 128]> {
    let mut ordered = PLAIN_ASCII.to_vec();
    ordered.sort_by(|a, b| collator.compare(&alone(*a), &alone(*b)));
    let strict = ordered
        .windows(2)
        .all(|pair| collator.compare(&alone(pair[0]), &alone(pair[1])) == Ordering::Less);
    let first_digit = ordered.iter().position(u8::is_ascii_digit)?;
    let digits_together = ordered[first_digit..first_digit + 10]
        .iter()
        .all(u8::is_ascii_digit);
    if !strict || !digits_together {
        return None;
    }
    let mut ranks = [0u8; 128];
    for (rank, byte) in (1u8..).zip(&ordered) {
        ranks[usize::from(*byte)] = rank;
    }
    Some(ranks)
}

/// [`locale_compare`] of two strings made only of [`PLAIN_ASCII`]
/// characters, by their ranks: the same order without the collator's walk
/// through collation elements, which sorting a member's agenda items by
/// their `kind:id:display` keys did on every reconcile. `None` for any
/// other string.
fn plain_ascii_order(left: &str, right: &str) -> Option<Ordering> {
    let ranks = PLAIN_ASCII_RANKS.as_ref()?;
    let rank = |byte: &u8| ranks.get(usize::from(*byte)).copied().unwrap_or(0);
    let (left, right) = (left.as_bytes(), right.as_bytes());
    if left.iter().chain(right).any(|byte| rank(byte) == 0) {
        return None;
    }
    Some(left.iter().map(rank).cmp(right.iter().map(rank)))
}

static NUMERIC_BASE_COLLATOR: LazyLock<Option<CollatorBorrowed<'static>>> = LazyLock::new(|| {
    let mut prefs = icu_collator::CollatorPreferences::default();
    prefs.numeric_ordering = Some(icu_collator::preferences::CollationNumericOrdering::True);
    let mut options = CollatorOptions::default();
    options.strength = Some(icu_collator::options::Strength::Primary);
    Collator::try_new(prefs, options).ok()
});

/// `left.localeCompare(right, undefined, { numeric: true, sensitivity: 'base' })`:
/// root collation at primary strength (case and accents ignored) with digit
/// runs compared by value, the order the app lists tasks in.
pub(crate) fn locale_compare_numeric_base(left: &str, right: &str) -> Ordering {
    if let Some(order) = plain_ascii_numeric_base_order(left, right) {
        return order;
    }
    match NUMERIC_BASE_COLLATOR.as_ref() {
        Some(collator) => collator.compare(left, right),
        None => compare_code_units(left, right),
    }
}

/// Appends to `out` a sort key of `text` whose byte order is
/// [`locale_compare`]'s among every string that has one: its characters'
/// ranks ([`plain_ascii_order`]). Sorting many strings by keys made once
/// compares bytes instead of ranking characters at every comparison.
/// `false`, with `out` left as it was, for a string `plain_ascii_order`
/// does not order (compare that one with `locale_compare`).
pub(crate) fn push_locale_key(text: &str, out: &mut Vec<u8>) -> bool {
    let Some(ranks) = PLAIN_ASCII_RANKS.as_ref() else {
        return false;
    };
    let start = out.len();
    for &byte in text.as_bytes() {
        match ranks.get(usize::from(byte)) {
            Some(&rank) if rank != 0 => out.push(rank),
            _ => {
                out.truncate(start);
                return false;
            }
        }
    }
    true
}

/// Appends to `out` a sort key of `text` whose byte order is
/// [`locale_compare_numeric_base`]'s among every string that has one
/// ([`plain_ascii_numeric_base_order`]): each character's rank (case
/// ignored), and each digit run as the rank of `0`, then its length and
/// its digits with leading zeros left out. The digits rank side by side
/// ([`plain_ranks`]), so against any other character a run orders as its
/// first digit does; against another run, by length, then by digits, as
/// the runs' values do. `false`, with `out` left as it was, for a string
/// that order does not cover.
pub(crate) fn push_numeric_base_key(text: &str, out: &mut Vec<u8>) -> bool {
    let Some(ranks) = PLAIN_ASCII_BASE_RANKS.as_ref() else {
        return false;
    };
    let start = out.len();
    let bytes = text.as_bytes();
    let mut at = 0;
    while let Some(&byte) = bytes.get(at) {
        if byte.is_ascii_digit() {
            let Some((digits, after)) = number_at(bytes, at) else {
                out.truncate(start);
                return false;
            };
            // At most `PLAIN_NUMBER_DIGITS` digits: the length is one byte.
            out.extend([ranks[usize::from(b'0')], digits.len() as u8]);
            out.extend_from_slice(digits);
            at = after;
            continue;
        }
        match ranks.get(usize::from(byte)) {
            Some(&rank) if rank != 0 => out.push(rank),
            _ => {
                out.truncate(start);
                return false;
            }
        }
        at += 1;
    }
    true
}

/// The longest digit run [`plain_ascii_numeric_base_order`] compares
/// itself; the collator splits very long numbers, so longer ones go to it.
const PLAIN_NUMBER_DIGITS: usize = 32;

/// [`locale_compare_numeric_base`] of two strings made only of
/// [`PLAIN_ASCII`] characters and uppercase letters, without the collator:
/// letters and punctuation by rank (case ignored), and where both strings
/// have a digit run, the runs by value (leading zeros ignored, as the
/// collator's primary weights ignore them); a run against another
/// character goes by the digits' rank. Each member's agenda sorts its
/// tasks' display labels (`#1a2b3c4d`) this way. `None` for any other
/// string, or a run over [`PLAIN_NUMBER_DIGITS`] digits.
fn plain_ascii_numeric_base_order(left: &str, right: &str) -> Option<Ordering> {
    let ranks = PLAIN_ASCII_BASE_RANKS.as_ref()?;
    let rank = |byte: &u8| ranks.get(usize::from(*byte)).copied().unwrap_or(0);
    let (left, right) = (left.as_bytes(), right.as_bytes());
    if left.iter().chain(right).any(|byte| rank(byte) == 0) {
        return None;
    }
    let (mut at_left, mut at_right) = (0, 0);
    loop {
        let order = match (left.get(at_left), right.get(at_right)) {
            (None, None) => return Some(Ordering::Equal),
            (None, Some(_)) => return Some(Ordering::Less),
            (Some(_), None) => return Some(Ordering::Greater),
            (Some(a), Some(b)) if a.is_ascii_digit() && b.is_ascii_digit() => {
                let (a, after_a) = number_at(left, at_left)?;
                let (b, after_b) = number_at(right, at_right)?;
                (at_left, at_right) = (after_a, after_b);
                a.len().cmp(&b.len()).then_with(|| a.cmp(b))
            }
            (Some(a), Some(b)) => {
                (at_left, at_right) = (at_left + 1, at_right + 1);
                rank(a).cmp(&rank(b))
            }
        };
        if order != Ordering::Equal {
            return Some(order);
        }
    }
}

/// The digits of the run starting at `start` without its leading zeros,
/// and where the run ends; `None` past [`PLAIN_NUMBER_DIGITS`] digits.
fn number_at(bytes: &[u8], start: usize) -> Option<(&[u8], usize)> {
    let run = bytes[start..]
        .iter()
        .take_while(|b| b.is_ascii_digit())
        .count();
    if run > PLAIN_NUMBER_DIGITS {
        return None;
    }
    let digits = &bytes[start..start + run];
    let zeros = digits.iter().take_while(|b| **b == b'0').count();
    Some((&digits[zeros..], start + run))
}

/// `String(number)`: the shortest round-trip digits, laid out by the
/// ECMAScript `Number::toString` rules (`1`, not `1.0`; `1e+21`, `1.5e-7`).
pub(crate) fn number_to_string(value: f64) -> String {
    if value.is_nan() {
        return "NaN".into();
    }
    if value == 0.0 {
        return "0".into();
    }
    if value.is_infinite() {
        return if value > 0.0 { "Infinity" } else { "-Infinity" }.into();
    }
    if value < 0.0 {
        return format!("-{}", number_to_string(-value));
    }
    // `{:e}` prints the shortest round-trip digits as `d[.ddd]e<exp>`.
    let scientific = format!("{value:e}");
    let (mantissa, exponent) = scientific.split_once('e').unwrap_or((&scientific, "0"));
    let digits: String = mantissa.chars().filter(char::is_ascii_digit).collect();
    let exponent: i64 = exponent.parse().unwrap_or(0);
    let k = digits.len() as i64;
    let n = exponent + 1;
    if k <= n && n <= 21 {
        format!("{digits}{}", "0".repeat((n - k) as usize))
    } else if 0 < n && n <= 21 {
        let (int, frac) = digits.split_at(n as usize);
        format!("{int}.{frac}")
    } else if -6 < n && n <= 0 {
        format!("0.{}{digits}", "0".repeat((-n) as usize))
    } else {
        let sign = if n - 1 < 0 { '-' } else { '+' };
        let (first, rest) = digits.split_at(1);
        let rest = if rest.is_empty() {
            String::new()
        } else {
            format!(".{rest}")
        };
        format!("{first}{rest}e{sign}{}", (n - 1).abs())
    }
}

/// Sorts like V8's `Array.prototype.sort` does for arrays shorter than 64
/// elements: the leading run (a strictly descending one reversed), then binary
/// insertion of the rest.
///
/// With a total order this is an ordinary stable sort. It matters for a
/// comparator that is not one (the reference's history comparator, once a
/// timestamp does not parse): the outcome is then the one the reference sees.
/// It never panics on such a comparator, unlike `slice::sort_by`. Longer
/// arrays go through the same steps; V8 would merge runs instead, which only
/// changes the outcome of an inconsistent comparator.
pub(crate) fn sort_like_v8<T>(items: &mut [T], mut compare: impl FnMut(&T, &T) -> Ordering) {
    let len = items.len();
    if len < 2 {
        return;
    }
    let mut run = 2;
    let descending = compare(&items[1], &items[0]) == Ordering::Less;
    while run < len {
        let order = compare(&items[run], &items[run - 1]);
        let continues = if descending {
            order == Ordering::Less
        } else {
            order != Ordering::Less
        };
        if !continues {
            break;
        }
        run += 1;
    }
    if descending {
        items[..run].reverse();
    }
    for start in run..len {
        let (mut left, mut right) = (0, start);
        while left < right {
            let mid = left + (right - left) / 2;
            if compare(&items[start], &items[mid]) == Ordering::Less {
                right = mid;
            } else {
                left = mid + 1;
            }
        }
        items[left..=start].rotate_right(1);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn trim_removes_what_javascript_removes() {
        // (input, String.prototype.trim result)
        let cases = [
            ("  a b \n", "a b"),
            ("\u{feff}x\u{feff}", "x"),
            ("\u{85}x\u{85}", "\u{85}x\u{85}"),
            ("\u{3000}\u{2028}x\u{a0}", "x"),
            ("", ""),
        ];
        for (input, want) in cases {
            assert_eq!(js_trim(input), want, "{input:?}");
        }
    }

    #[test]
    fn code_unit_order_differs_from_byte_order_above_the_bmp() {
        // U+1F600 is a surrogate pair (0xD83D ...), below U+FF5E in UTF-16.
        assert_eq!(compare_code_units("😀", "～"), Ordering::Less);
        assert_eq!("😀".cmp("～"), Ordering::Greater);
        assert_eq!(compare_code_units("a", "b"), Ordering::Less);
    }

    #[test]
    fn locale_compare_matches_javascript() {
        // (left, right, "left".localeCompare("right") in Node)
        let cases = [
            ("work:1:1", "work:10:10", Ordering::Less),
            ("work:10:10", "work:1:1", Ordering::Greater),
            ("a", "B", Ordering::Less),
            ("a", "A", Ordering::Less),
            ("review:x", "review-x", Ordering::Greater),
            ("task_1", "task-1", Ordering::Less),
            ("same", "same", Ordering::Equal),
        ];
        for (left, right, want) in cases {
            assert_eq!(locale_compare(left, right), want, "{left} vs {right}");
        }
    }

    /// The collator's own answer, without the plain ASCII path.
    fn collator_order(left: &str, right: &str) -> Ordering {
        ROOT_COLLATOR.as_ref().unwrap().compare(left, right)
    }

    #[test]
    fn plain_ascii_ranks_are_known_and_follow_javascript() {
        let ranks = PLAIN_ASCII_RANKS
            .as_ref()
            .expect("every plain character strictly ordered");
        let rank = |c: char| ranks[c as usize];
        // Punctuation before digits before letters, `_` before `-`, as
        // `localeCompare` in Node has them.
        assert!(rank('_') < rank('-') && rank('-') < rank(':') && rank(':') < rank('0'));
        assert!(rank('9') < rank('a') && rank('a') < rank('z'));
        assert_eq!(ranks.iter().filter(|r| **r != 0).count(), PLAIN_ASCII.len());
        // Any other character goes to the collator.
        for (left, right) in [("a", "B"), ("é", "e"), ("a b", "ab"), ("", "\u{0}")] {
            assert_eq!(
                plain_ascii_order(left, right),
                None,
                "{left:?} vs {right:?}"
            );
        }
        assert_eq!(plain_ascii_order("", "a"), Some(Ordering::Less));
    }

    proptest::proptest! {
        #[test]
        fn plain_ascii_order_is_the_collators_order(
            left in "[0-9a-z_:.#/-]{0,8}",
            right in "[0-9a-z_:.#/-]{0,8}",
            shared in "[0-9a-z_:.#/-]{0,4}",
        ) {
            // With and without a common prefix, where the collator skips
            // ahead before it compares.
            for (left, right) in [
                (left.clone(), right.clone()),
                (format!("{shared}{left}"), format!("{shared}{right}")),
            ] {
                proptest::prop_assert_eq!(
                    plain_ascii_order(&left, &right),
                    Some(collator_order(&left, &right)),
                    "{:?} vs {:?}", left, right
                );
            }
        }
    }

    /// The numeric, case-blind collator's own answer.
    fn numeric_base_collator_order(left: &str, right: &str) -> Ordering {
        NUMERIC_BASE_COLLATOR.as_ref().unwrap().compare(left, right)
    }

    proptest::proptest! {
        #[test]
        fn plain_ascii_numeric_base_order_is_the_collators_order(
            left in "[0-9a-zA-Z_:.#/-]{0,8}",
            right in "[0-9a-zA-Z_:.#/-]{0,8}",
            shared in "[0-9a-zA-Z_:.#/-]{0,4}",
            // Numbers with leading zeros, equal values, long runs.
            left_number in "#?0{0,3}[0-9]{0,40}[a-c]?",
            right_number in "#?0{0,3}[0-9]{0,40}[a-c]?",
        ) {
            for (left, right) in [
                (left.clone(), right.clone()),
                (format!("{shared}{left}"), format!("{shared}{right}")),
                (left_number.clone(), right_number.clone()),
                (format!("{left_number}{left}"), format!("{left_number}{right}")),
            ] {
                let want = numeric_base_collator_order(&left, &right);
                match plain_ascii_numeric_base_order(&left, &right) {
                    Some(fast) => proptest::prop_assert_eq!(fast, want, "{:?} vs {:?}", left, right),
                    // Only a run over the limit goes to the collator.
                    None => proptest::prop_assert!(
                        [&left, &right].iter().any(|s| s
                            .as_bytes()
                            .split(|b| !b.is_ascii_digit())
                            .any(|run| run.len() > PLAIN_NUMBER_DIGITS)),
                        "{:?} vs {:?}", left, right
                    ),
                }
            }
        }
    }

    /// `text`'s key from `push` (`None` when it has none), pushed after a
    /// prefix that must stay as it was.
    fn key_of(push: fn(&str, &mut Vec<u8>) -> bool, text: &str) -> Option<Vec<u8>> {
        let mut out = vec![7];
        let made = push(text, &mut out);
        if !made {
            assert_eq!(
                out,
                [7],
                "{text:?}: a refused key leaves the buffer as it was"
            );
        }
        made.then(|| out[1..].to_vec())
    }

    proptest::proptest! {
        #[test]
        fn sort_keys_order_as_the_comparisons_they_stand_for(
            left in "[0-9a-zA-Z_:.#/ -]{0,8}",
            right in "[0-9a-zA-Z_:.#/ -]{0,8}",
            // Numbers with leading zeros, equal values, long runs.
            left_number in "#?0{0,3}[0-9]{0,40}[a-cA-C]?",
            right_number in "#?0{0,3}[0-9]{0,40}[a-cA-C]?",
        ) {
            for (left, right) in [
                (left.clone(), right.clone()),
                (left_number.clone(), right_number.clone()),
                (format!("{left_number}{left}"), format!("{left_number}{right}")),
                (format!("{left}{left_number}"), format!("{left}{right_number}")),
            ] {
                for (push, compare, fast) in [
                    (
                        push_locale_key as fn(&str, &mut Vec<u8>) -> bool,
                        locale_compare as fn(&str, &str) -> Ordering,
                        plain_ascii_order as fn(&str, &str) -> Option<Ordering>,
                    ),
                    (
                        push_numeric_base_key,
                        locale_compare_numeric_base,
                        plain_ascii_numeric_base_order,
                    ),
                ] {
                    let keys = (key_of(push, &left), key_of(push, &right));
                    // A key exactly where the plain order answers for the string.
                    proptest::prop_assert_eq!(keys.0.is_some(), fast(&left, &left).is_some());
                    proptest::prop_assert_eq!(keys.1.is_some(), fast(&right, &right).is_some());
                    if let (Some(l), Some(r)) = keys {
                        proptest::prop_assert_eq!(
                            l.cmp(&r),
                            compare(&left, &right),
                            "{:?} vs {:?}", left, right
                        );
                    }
                }
            }
        }
    }

    #[test]
    fn numeric_base_order_follows_javascript() {
        // (left, right, "left".localeCompare("right", undefined,
        //  { numeric: true, sensitivity: "base" }) in Node)
        let cases = [
            ("#9", "#10", Ordering::Less),
            ("#007", "#7", Ordering::Equal),
            ("B9", "b10", Ordering::Less),
            ("task-2", "task-10", Ordering::Less),
            ("a", "A", Ordering::Equal),
            ("#a", "#1", Ordering::Greater),
            ("x_1", "x-1", Ordering::Less),
        ];
        for (left, right, want) in cases {
            assert_eq!(
                locale_compare_numeric_base(left, right),
                want,
                "{left} vs {right}"
            );
            assert_eq!(plain_ascii_numeric_base_order(left, right), Some(want));
            let keys = (
                key_of(push_numeric_base_key, left),
                key_of(push_numeric_base_key, right),
            );
            assert!(
                keys.0.is_some() && keys.1.is_some(),
                "{left}, {right} have keys"
            );
            assert_eq!(keys.0.cmp(&keys.1), want, "{left} vs {right} by keys");
        }
    }

    #[test]
    fn plain_ascii_order_is_the_collators_order_on_every_short_pair() {
        // Every string of up to two plain characters against every other.
        let mut strings = vec![String::new()];
        for a in PLAIN_ASCII {
            strings.push(char::from(*a).to_string());
            for b in PLAIN_ASCII {
                strings.push(format!("{}{}", char::from(*a), char::from(*b)));
            }
        }
        for left in &strings {
            for right in strings.iter().step_by(7) {
                assert_eq!(
                    plain_ascii_order(left, right),
                    Some(collator_order(left, right)),
                    "{left:?} vs {right:?}"
                );
            }
        }
    }

    #[test]
    fn numbers_print_like_javascript() {
        // (value, String(value))
        let cases = [
            (1.0, "1"),
            (42.0, "42"),
            (-3.0, "-3"),
            (1.5, "1.5"),
            (0.000001, "0.000001"),
            (1.5e-7, "1.5e-7"),
            (1e21, "1e+21"),
            (1.25e22, "1.25e+22"),
            (123456789012345680000.0, "123456789012345680000"),
            (0.0, "0"),
        ];
        for (value, want) in cases {
            assert_eq!(number_to_string(value), want, "{value}");
        }
    }

    #[test]
    fn v8_sort_is_stable_and_follows_an_inconsistent_comparator_like_v8() {
        let mut pairs = vec![(2, 'a'), (1, 'b'), (2, 'c'), (0, 'd'), (1, 'e')];
        sort_like_v8(&mut pairs, |a, b| a.0.cmp(&b.0));
        assert_eq!(pairs, [(0, 'd'), (1, 'b'), (1, 'e'), (2, 'a'), (2, 'c')]);
        // (time or none, index): compare by time when both have one, else by index.
        let compare = |a: &(Option<i32>, usize), b: &(Option<i32>, usize)| match (a.0, b.0) {
            (Some(x), Some(y)) if x != y => x.cmp(&y),
            _ => a.1.cmp(&b.1),
        };
        let mut events = vec![(Some(2), 0), (None, 1), (Some(1), 2)];
        sort_like_v8(&mut events, compare);
        // V8: run [0,1] ascending; 2 is inserted by bisection against index 1 (None: by index).
        assert_eq!(events, [(Some(2), 0), (None, 1), (Some(1), 2)]);
    }
}
