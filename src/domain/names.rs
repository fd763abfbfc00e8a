//! Team and member names: validation at the boundary, normalization and store keys.

/// Names reserved for the app itself; they never own work and never report.
const RESERVED_MEMBER_NAMES: [&str; 2] = ["user", "system"];

/// Longest accepted team or member name, in bytes.
const MAX_NAME_BYTES: usize = 128;

/// Why a team or member name was refused.
#[derive(Debug, Clone, Copy, PartialEq, Eq, thiserror::Error)]
pub enum NameError {
    /// Empty or only whitespace.
    #[error("must not be empty")]
    Empty,
    /// Longer than [`MAX_NAME_BYTES`].
    #[error("must be at most {MAX_NAME_BYTES} bytes")]
    TooLong,
    /// A member name within [`MAX_NAME_BYTES`] whose normalized form
    /// ([`normalize_member_name`]) is longer: lowercasing widened it.
    #[error("must be at most {MAX_NAME_BYTES} bytes once lowercased")]
    LowercasedTooLong,
    /// Contains `/`, `\` or NUL, or is `.` / `..`: it could leave its directory.
    #[error("must not contain '/', '\\\\' or NUL, nor be '.' or '..'")]
    Unsafe,
}

/// Checks that `name` is safe to use as one path component under a team dir.
///
/// The check runs on the name as given (not trimmed) because the raw name is
/// what reaches the file system in the team dir. Emptiness and `.` / `..`
/// are judged on the name as JavaScript trims it (the app's trim, which
/// every runtime key and member key is made with): Rust's trim keeps U+FEFF,
/// so `"\u{FEFF}.."` would pass and key as `..`.
pub(crate) fn validate_name(name: &str) -> Result<(), NameError> {
    let trimmed = super::js_semantics::js_trim(name);
    if trimmed.is_empty() {
        return Err(NameError::Empty);
    }
    if name.len() > MAX_NAME_BYTES {
        return Err(NameError::TooLong);
    }
    if name.contains(['/', '\\', '\0']) || trimmed == "." || trimmed == ".." {
        return Err(NameError::Unsafe);
    }
    Ok(())
}

/// A team name checked once where it enters (the binding): safe as one path
/// component ([`validate_name`]).
///
/// The name is used exactly as given for everything on disk: `Forge` and
/// `forge` are two team folders on a case-sensitive file system, each with
/// its own files and report-token secret. Only the in-memory runtime
/// bookkeeping (queue, deletion fences, supervisor state, tool activity)
/// compares teams by [`team_runtime_key`], as the reference app does.
#[derive(Debug, Clone, PartialEq, Eq, Hash, PartialOrd, Ord, serde::Serialize)]
#[serde(transparent)]
pub struct TeamName(String);

impl TeamName {
    /// The name, when it is safe to use ([`validate_name`]).
    pub fn parse(name: &str) -> Result<Self, NameError> {
        validate_name(name)?;
        Ok(Self(name.to_string()))
    }

    /// The name as given (the team folder's name).
    pub fn as_str(&self) -> &str {
        &self.0
    }
}

/// A checked name reads as the string it is (paths, keys, messages); only
/// [`TeamName::parse`] makes one.
impl std::ops::Deref for TeamName {
    type Target = str;

    fn deref(&self) -> &str {
        &self.0
    }
}

impl std::fmt::Display for TeamName {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.0)
    }
}

/// The key in-memory runtime bookkeeping compares team names by: trimmed and
/// lowercased. Never a folder name: files use the team name as given.
pub(crate) fn team_runtime_key(team: &TeamName) -> String {
    super::js_semantics::js_trim(team).to_lowercase()
}

/// A member name checked once where it enters (the binding): safe as one
/// path component ([`validate_name`]), as given and in its normalized form.
/// Members compare by [`normalize_member_name`] everywhere, and their store
/// folder is [`member_key`].
#[derive(Debug, Clone, PartialEq, Eq, Hash, PartialOrd, Ord, serde::Serialize)]
#[serde(transparent)]
pub struct MemberName(String);

impl MemberName {
    /// The name, when it is safe to use ([`validate_name`]) both as given
    /// and normalized ([`normalize_member_name`]).
    ///
    /// The normalized form is checked too because it is what the member is
    /// known by ([`MemberName::normalized`]): lowercasing can widen a name
    /// (`İ` is two bytes, its lowercase three) past [`MAX_NAME_BYTES`].
    pub fn parse(name: &str) -> Result<Self, NameError> {
        validate_name(name)?;
        match validate_name(&normalize_member_name(name)) {
            Err(NameError::TooLong) => Err(NameError::LowercasedTooLong),
            checked => checked.map(|()| Self(name.to_string())),
        }
    }

    /// The name as given.
    pub fn as_str(&self) -> &str {
        &self.0
    }

    /// The comparison form ([`normalize_member_name`]) as a name: what the
    /// app's runtime questions (`isMemberActive`) are asked with. It is a
    /// name [`MemberName::parse`] accepts (parse checks it), and normalizing
    /// it again changes nothing.
    pub fn normalized(&self) -> MemberName {
        MemberName(normalize_member_name(&self.0))
    }
}

/// A checked name reads as the string it is (paths, keys, messages); only
/// [`MemberName::parse`] makes one.
impl std::ops::Deref for MemberName {
    type Target = str;

    fn deref(&self) -> &str {
        &self.0
    }
}

impl std::fmt::Display for MemberName {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.0)
    }
}

/// The comparison form of a member name: trimmed and lowercased, as
/// JavaScript's `trim()` and `toLowerCase()` do it (the reference's rule).
pub fn normalize_member_name(name: &str) -> String {
    super::js_semantics::js_trim(name).to_lowercase()
}

/// True for the empty name and for `user` / `system` (after normalization).
pub(crate) fn is_reserved_member_name(name: &str) -> bool {
    let normalized = normalize_member_name(name);
    normalized.is_empty() || RESERVED_MEMBER_NAMES.contains(&normalized.as_str())
}

/// Longest member store key, in bytes: the longest file name Linux, macOS
/// and Windows accept (the key is ASCII, so bytes and UTF-16 units agree).
/// Every key that fits is the reference's key unchanged, so existing store
/// folders keep working.
const MAX_MEMBER_KEY_BYTES: usize = 255;

/// Separator between the cut encoded name and the hash of a key too long to
/// keep: `encodeURIComponent` always escapes `+`, so no name's plain key
/// contains one and a cut key can never equal another member's plain key.
const CUT_KEY_SEPARATOR: char = '+';

/// Hex digits of the SHA-256 of the normalized name a cut key ends with
/// (128 bits: two roster names never share a folder by accident).
const CUT_KEY_HASH_HEX: usize = 32;

/// The directory key of a member's store: `encodeURIComponent(trim + lowercase)`,
/// with a key of exactly `.` or `..` escaped so it can never name a parent dir.
/// A key longer than [`MAX_MEMBER_KEY_BYTES`] (a 128-byte name can encode to
/// 448) is cut at an escape boundary and ends with `+` and a hash of the
/// normalized name, so every name has a folder the file system accepts.
pub fn member_key(name: &str) -> String {
    let normalized = normalize_member_name(name);
    let key = match normalized.as_str() {
        "." => "%2E".to_string(),
        ".." => "%2E%2E".to_string(),
        _ => encode_uri_component(&normalized),
    };
    if key.len() <= MAX_MEMBER_KEY_BYTES {
        key
    } else {
        cut_key(&key, &normalized)
    }
}

/// The member name whose [`member_key`] is `key` (its normalized form), or
/// `None` when no name has that key: a cut key (its hash cannot be undone)
/// or a folder name `encodeURIComponent` would not write.
pub fn member_name_of_key(key: &str) -> Option<String> {
    let name = decode_uri_component(key)?;
    (member_key(&name) == key).then_some(name)
}

/// `decodeURIComponent`; `None` where it throws (a `%` not followed by two
/// hex digits, bytes that are not UTF-8).
pub(crate) fn decode_uri_component(text: &str) -> Option<String> {
    let bytes = text.as_bytes();
    let mut decoded = Vec::with_capacity(bytes.len());
    let mut at = 0;
    while at < bytes.len() {
        if bytes[at] == b'%' {
            let hex = bytes.get(at + 1..at + 3)?;
            if !hex.iter().all(u8::is_ascii_hexdigit) {
                return None;
            }
            decoded.push(u8::from_str_radix(std::str::from_utf8(hex).ok()?, 16).ok()?);
            at += 3;
        } else {
            decoded.push(bytes[at]);
            at += 1;
        }
    }
    String::from_utf8(decoded).ok()
}

/// `key` cut to fit [`MAX_MEMBER_KEY_BYTES`] with the hash of `normalized`:
/// the cut never splits a `%XX` escape, so the prefix still reads as the name.
fn cut_key(key: &str, normalized: &str) -> String {
    use sha2::{Digest, Sha256};
    let budget = MAX_MEMBER_KEY_BYTES - CUT_KEY_SEPARATOR.len_utf8() - CUT_KEY_HASH_HEX;
    let mut end = budget;
    // An escape is `%` and two hex digits: back off when the cut lands inside one.
    if let Some(percent) = key[..end].rfind('%') {
        if percent + 3 > end {
            end = percent;
        }
    }
    let digest = Sha256::digest(normalized.as_bytes());
    let hash: String = digest[..CUT_KEY_HASH_HEX / 2]
        .iter()
        .map(|byte| format!("{byte:02x}"))
        .collect();
    format!("{}{CUT_KEY_SEPARATOR}{hash}", &key[..end])
}

/// JavaScript's `encodeURIComponent`: every byte outside
/// `A-Z a-z 0-9 - _ . ! ~ * ' ( )` becomes `%XX` of its UTF-8 encoding.
fn encode_uri_component(value: &str) -> String {
    let mut out = String::with_capacity(value.len());
    for byte in value.bytes() {
        let keep = byte.is_ascii_alphanumeric()
            || matches!(
                byte,
                b'-' | b'_' | b'.' | b'!' | b'~' | b'*' | b'\'' | b'(' | b')'
            );
        if keep {
            out.push(byte as char);
        } else {
            out.push_str(&format!("%{byte:02X}"));
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn hostile_names_are_refused() {
        assert_eq!(validate_name(""), Err(NameError::Empty));
        assert_eq!(validate_name("   "), Err(NameError::Empty));
        assert_eq!(validate_name("../etc"), Err(NameError::Unsafe));
        assert_eq!(validate_name("a\\b"), Err(NameError::Unsafe));
        assert_eq!(validate_name("a\0b"), Err(NameError::Unsafe));
        assert_eq!(validate_name(".."), Err(NameError::Unsafe));
        assert_eq!(validate_name(" . "), Err(NameError::Unsafe));
        assert_eq!(validate_name(&"x".repeat(129)), Err(NameError::TooLong));
        assert_eq!(validate_name(&"x".repeat(128)), Ok(()));
        assert_eq!(validate_name("team-lead"), Ok(()));
    }

    #[test]
    fn names_are_trimmed_as_javascript_trims_them() {
        // U+FEFF and U+0085 are the only characters on which Rust's
        // `str::trim` (Unicode White_Space) and `String.prototype.trim` (the
        // app's) disagree: Node removes U+FEFF and keeps U+0085.
        // (name, name.trim() in Node, the verdict on the name)
        let cases = [
            ("\u{feff}..", "..", Err(NameError::Unsafe)),
            ("..\u{feff}", "..", Err(NameError::Unsafe)),
            ("\u{feff}.", ".", Err(NameError::Unsafe)),
            ("\u{feff}", "", Err(NameError::Empty)),
            (" \u{feff} ", "", Err(NameError::Empty)),
            ("\u{feff}Forge\u{feff}", "Forge", Ok(())),
            ("\u{85}", "\u{85}", Ok(())),
            ("\u{85}..", "\u{85}..", Ok(())),
            ("..\u{85}", "..\u{85}", Ok(())),
            ("\u{85}Forge\u{85}", "\u{85}Forge\u{85}", Ok(())),
        ];
        for (name, js_trimmed, verdict) in cases {
            assert_eq!(
                super::super::js_semantics::js_trim(name),
                js_trimmed,
                "{name:?}"
            );
            assert_eq!(validate_name(name), verdict, "{name:?}");
            assert_eq!(TeamName::parse(name).err(), verdict.err(), "{name:?}");
            assert_eq!(MemberName::parse(name).err(), verdict.err(), "{name:?}");
            if let Ok(team) = TeamName::parse(name) {
                // The runtime key is never a name the check would refuse.
                assert_eq!(team_runtime_key(&team), js_trimmed.to_lowercase());
                assert_eq!(validate_name(&team_runtime_key(&team)), Ok(()));
            }
        }
    }

    #[test]
    fn member_key_matches_encode_uri_component() {
        assert_eq!(member_key(" Alice "), "alice");
        assert_eq!(member_key("a b/c"), "a%20b%2Fc");
        assert_eq!(member_key("jürgen"), "j%C3%BCrgen");
        assert_eq!(member_key("."), "%2E");
        assert_eq!(member_key(".."), "%2E%2E");
        assert_eq!(member_key("a.b"), "a.b");
        assert_eq!(member_key("it's(ok)!*~"), "it's(ok)!*~");
    }

    #[test]
    fn decode_uri_component_takes_what_javascript_takes() {
        // (text, decodeURIComponent(text) in Node, None where it throws)
        let cases = [
            ("dev%20ops", Some("dev ops")),
            ("j%C3%BCrgen", Some("jürgen")),
            ("%2e%2E", Some("..")),
            ("plain", Some("plain")),
            ("%", None),
            ("%2", None),
            ("%+1", None),
            ("%-1", None),
            ("%zz", None),
            ("%FF", None),
        ];
        for (text, want) in cases {
            assert_eq!(decode_uri_component(text).as_deref(), want, "{text}");
        }
    }

    #[test]
    fn a_member_key_reads_back_as_its_name_when_it_is_one() {
        // (folder name, the name it is the key of)
        let cases: [(String, Option<&str>); 10] = [
            ("jack".into(), Some("jack")),
            ("dev%20ops".into(), Some("dev ops")),
            ("j%C3%BCrgen".into(), Some("jürgen")),
            ("%2E%2E".into(), Some("..")),
            ("%2E".into(), Some(".")),
            // Not what `member_key` writes: lowercase hex, an escaped
            // letter, an uppercase name, a broken escape, invalid UTF-8.
            ("dev%2fops".into(), None),
            ("%6Aack".into(), None),
            ("Jack".into(), None),
            ("jack%2".into(), None),
            ("%FF".into(), None),
        ];
        for (key, name) in cases {
            assert_eq!(member_name_of_key(&key).as_deref(), name, "{key}");
        }
        // A cut key's hash cannot be undone.
        assert_eq!(member_name_of_key(&member_key(&"漢".repeat(29))), None);
    }

    #[test]
    fn member_keys_always_fit_a_file_name_and_short_keys_are_unchanged() {
        // (name, plain encodeURIComponent key length, key kept as is)
        let cases: [(String, usize, bool); 9] = [
            ("漢".repeat(29), 261, false),
            ("İ".repeat(64), 448, false),
            ("%".repeat(100), 300, false),
            ("漢".repeat(28), 252, true),
            ("%".repeat(85), 255, true),
            ("%".repeat(86), 258, false),
            (format!("{}a", "%".repeat(84)), 253, true),
            ("x".repeat(255), 255, true),
            ("x".repeat(256), 256, false),
        ];
        for (name, plain_len, kept) in cases {
            let plain = encode_uri_component(&normalize_member_name(&name));
            assert_eq!(plain.len(), plain_len, "{name}");
            let key = member_key(&name);
            assert!(key.len() <= MAX_MEMBER_KEY_BYTES, "{name}: {}", key.len());
            assert_eq!(key == plain, kept, "{name}: {key}");
            if !kept {
                let (prefix, hash) = key.rsplit_once(CUT_KEY_SEPARATOR).unwrap();
                assert!(plain.starts_with(prefix), "{key}");
                assert_eq!(hash.len(), CUT_KEY_HASH_HEX);
                // Never a split escape at the cut.
                let tail = &prefix[prefix.len().saturating_sub(2)..];
                assert!(!tail.contains('%'), "{key}");
                // The same member (any spelling) gets the same folder.
                assert_eq!(member_key(&format!(" {} ", name.to_uppercase())), key);
            }
        }
        // Names sharing the kept prefix still get distinct folders.
        let a = format!("{}a", "%".repeat(100));
        let b = format!("{}b", "%".repeat(100));
        assert_ne!(member_key(&a), member_key(&b));
        assert_eq!(member_key(&a).len(), member_key(&b).len());
    }

    #[test]
    fn checked_names_keep_their_spelling_and_team_keys_are_not_folders() {
        for bad in ["", " ", "a/b", "..", "a\0b"] {
            assert!(TeamName::parse(bad).is_err(), "{bad:?}");
            assert!(MemberName::parse(bad).is_err(), "{bad:?}");
        }
        let team = TeamName::parse("Forge").unwrap();
        assert_eq!(team.as_str(), "Forge");
        assert_ne!(team, TeamName::parse("forge").unwrap());
        let key = |name: &str| team_runtime_key(&TeamName::parse(name).unwrap());
        assert_eq!(key(" Forge "), key("forge"));
        assert_eq!(MemberName::parse(" Jack ").unwrap().as_str(), " Jack ");
    }

    #[test]
    fn a_member_name_is_accepted_only_when_its_normalized_form_is_too() {
        // (name as given, the refusal, or the normalized form)
        let cases: [(String, Result<String, NameError>); 11] = [
            ("jack".into(), Ok("jack".into())),
            (" Jack ".into(), Ok("jack".into())),
            ("dev.ops".into(), Ok("dev.ops".into())),
            ("X".repeat(128), Ok("x".repeat(128))),
            ("\u{feff}Jack".into(), Ok("jack".into())),
            // 84 bytes, 126 once lowercased (`İ` lowercases to `i` + U+0307).
            ("İ".repeat(42), Ok("i\u{307}".repeat(42))),
            // 128 bytes as given, 192 once lowercased.
            ("İ".repeat(64), Err(NameError::LowercasedTooLong)),
            // JavaScript's trim (the app's) removes U+FEFF.
            ("\u{feff}..".into(), Err(NameError::Unsafe)),
            ("\u{feff}.".into(), Err(NameError::Unsafe)),
            ("\u{feff}".into(), Err(NameError::Empty)),
            ("a/b".into(), Err(NameError::Unsafe)),
        ];
        for (name, expected) in cases {
            let parsed = MemberName::parse(&name);
            match expected {
                Ok(normalized) => {
                    let member = parsed.unwrap_or_else(|e| panic!("{name:?}: {e}"));
                    assert_eq!(member.as_str(), name, "kept as given");
                    let normalized_member = member.normalized();
                    assert_eq!(normalized_member.as_str(), normalized, "{name:?}");
                    // The type's guarantee: the normalized form is itself a name.
                    assert_eq!(
                        MemberName::parse(&normalized).as_ref(),
                        Ok(&normalized_member),
                        "{name:?}"
                    );
                    assert_eq!(normalized_member.normalized(), normalized_member);
                }
                Err(error) => assert_eq!(parsed, Err(error), "{name:?}"),
            }
        }
    }

    #[test]
    fn reserved_names() {
        assert!(is_reserved_member_name(" User "));
        assert!(is_reserved_member_name("system"));
        assert!(is_reserved_member_name(""));
        assert!(!is_reserved_member_name("alice"));
    }
}
