//! JSON text written straight into a buffer, byte for byte as `serde_json`
//! writes it, for hot paths: a drained Stop event writes its meta and two
//! journal lines, and an agenda's fingerprint the canonical JSON of every
//! item.

/// `text` as a JSON string, escaped as `serde_json` escapes it (only control
/// characters, `"` and `\\`): one with none of them, as nearly every string
/// written is, is copied whole; `serde_json` looks at every byte one by one.
pub(crate) fn write_str(out: &mut Vec<u8>, text: &str) -> serde_json::Result<()> {
    // Every byte looked at, no early exit: the check runs many bytes a step.
    let escapes = text.bytes().fold(false, |any, b| {
        any | (b < 0x20) | (b == b'"') | (b == b'\\')
    });
    if escapes {
        return serde_json::to_writer(out, text);
    }
    out.reserve(text.len() + 2);
    out.push(b'"');
    out.extend_from_slice(text.as_bytes());
    out.push(b'"');
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Strings with and without what JSON escapes come out as
    /// `serde_json` writes them.
    #[test]
    fn strings_are_written_as_serde_json_writes_them() {
        let texts = [
            "",
            "plain é",
            "a\"b",
            "back\\slash",
            "nl\n\t\r\u{0}\u{1f}",
            "\u{7f}/<>&'",
        ];
        for text in texts {
            let mut out = Vec::new();
            write_str(&mut out, text).unwrap();
            assert_eq!(out, serde_json::to_vec(text).unwrap(), "{text:?}");
        }
    }
}
