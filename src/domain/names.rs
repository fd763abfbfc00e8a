//! Team and member names: validation at the boundary, normalization and store keys.

/// Names reserved for the app itself; they never own work and never report.
pub const RESERVED_MEMBER_NAMES: [&str; 2] = ["user", "system"];

/// Longest accepted team or member name, in bytes.
pub const MAX_NAME_BYTES: usize = 128;

/// Why a team or member name was refused.
#[derive(Debug, Clone, Copy, PartialEq, Eq, thiserror::Error)]
pub enum NameError {
    /// Empty or only whitespace.
    #[error("must not be empty")]
    Empty,
    /// Longer than [`MAX_NAME_BYTES`].
    #[error("must be at most {MAX_NAME_BYTES} bytes")]
    TooLong,
    /// Contains `/`, `\` or NUL, or is `.` / `..`: it could leave its directory.
    #[error("must not contain '/', '\\\\' or NUL, nor be '.' or '..'")]
    Unsafe,
}

/// Checks that `name` is safe to use as one path component under a team dir.
///
/// The check runs on the name as given (not trimmed) because the raw name is
/// what reaches the file system in the team dir.
pub fn validate_name(name: &str) -> Result<(), NameError> {
    let trimmed = name.trim();
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

/// The comparison form of a member name: trimmed and lowercased, as
/// JavaScript's `trim()` and `toLowerCase()` do it (the reference's rule).
pub fn normalize_member_name(name: &str) -> String {
    super::js_semantics::js_trim(name).to_lowercase()
}

/// True for the empty name and for `user` / `system` (after normalization).
pub fn is_reserved_member_name(name: &str) -> bool {
    let normalized = normalize_member_name(name);
    normalized.is_empty() || RESERVED_MEMBER_NAMES.contains(&normalized.as_str())
}

/// The directory key of a member's store: `encodeURIComponent(trim + lowercase)`,
/// with a key of exactly `.` or `..` escaped so it can never name a parent dir.
pub fn member_key(name: &str) -> String {
    let normalized = normalize_member_name(name);
    match normalized.as_str() {
        "." => "%2E".to_string(),
        ".." => "%2E%2E".to_string(),
        _ => encode_uri_component(&normalized),
    }
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
    fn reserved_names() {
        assert!(is_reserved_member_name(" User "));
        assert!(is_reserved_member_name("system"));
        assert!(is_reserved_member_name(""));
        assert!(!is_reserved_member_name("alice"));
    }
}
