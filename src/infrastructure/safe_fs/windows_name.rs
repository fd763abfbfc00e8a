//! Which names are one plain entry on Windows. Compiled everywhere so its
//! table runs with the Unix test suite too.

/// Whether `name` is one plain Windows file name: not empty, `.` or `..`;
/// no separator, `:` (an alternate data stream), wildcard or control
/// character; no trailing dot or space (Windows strips them, so two names
/// would be one); not a device name.
pub(super) fn is_plain_name(name: &str) -> bool {
    const FORBIDDEN: &[char] = &['/', '\\', ':', '*', '?', '"', '<', '>', '|'];
    !name.is_empty()
        && name != "."
        && name != ".."
        && !name.chars().any(|c| c < ' ' || FORBIDDEN.contains(&c))
        && !name.ends_with(['.', ' '])
        && !is_device_name(name)
}

/// `CON`, `PRN`, `AUX`, `NUL`, `COM0`-`COM9`, `LPT0`-`LPT9` (also with
/// superscript digits) and the console names, with any extension: Windows
/// maps them to devices in every folder.
fn is_device_name(name: &str) -> bool {
    let stem = name.split('.').next().unwrap_or(name).trim_end_matches(' ');
    let upper = stem.to_uppercase();
    if matches!(
        upper.as_str(),
        "CON" | "PRN" | "AUX" | "NUL" | "CONIN$" | "CONOUT$"
    ) {
        return true;
    }
    let mut chars = upper.chars();
    let prefix: String = chars.by_ref().take(3).collect();
    let digit: Vec<char> = chars.collect();
    (prefix == "COM" || prefix == "LPT")
        && matches!(digit.as_slice(), [d] if d.is_ascii_digit() || matches!(d, '¹' | '²' | '³'))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn windows_names_that_alias_or_reach_a_device_are_refused() {
        let cases = [
            ("status.json", true),
            (".status.json.mws-tmp.12.0", true),
            ("COMPANY.json", true),
            ("console.log", true),
            ("CON", false),
            ("nul.json", false),
            ("Com1.txt", false),
            ("LPT¹", false),
            ("conin$", false),
            ("a:stream", false),
            ("a\\b", false),
            ("a/b", false),
            ("trailing.", false),
            ("trailing ", false),
            ("wild*", false),
            ("", false),
            ("..", false),
        ];
        for (name, plain) in cases {
            assert_eq!(is_plain_name(name), plain, "{name:?}");
        }
    }
}
