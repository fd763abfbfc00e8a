//! JSON text written straight into a buffer, byte for byte as `serde_json`
//! writes it, for hot paths: a drained Stop event writes its meta and two
//! journal lines, an agenda's fingerprint the canonical JSON of every item,
//! and a nudge's payload hash the payload's.

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

/// `text` as a JSON string ([`write_str`]) into a buffer, where writing
/// cannot fail.
pub(crate) fn push_str(out: &mut Vec<u8>, text: &str) {
    // Only `serde_json::to_writer` into a `Vec` could fail, and it cannot.
    let _ = write_str(out, text);
}

/// A JSON object written key by key with no whitespace, the keys given in
/// the order they are to appear (canonical JSON wants code unit order: the
/// writer's tests compare it with `canonical_json`). Keys are plain ASCII
/// and written as they are.
pub(crate) struct ObjectText<'a> {
    out: &'a mut Vec<u8>,
    first: bool,
}

impl<'a> ObjectText<'a> {
    /// Opens an object at the end of `out`.
    pub(crate) fn open(out: &'a mut Vec<u8>) -> Self {
        out.push(b'{');
        Self { out, first: true }
    }

    /// Writes `"key":` and hands the buffer over for the value.
    pub(crate) fn key(&mut self, key: &'static str) -> &mut Vec<u8> {
        if !self.first {
            self.out.push(b',');
        }
        self.first = false;
        self.out.push(b'"');
        self.out.extend_from_slice(key.as_bytes());
        self.out.extend_from_slice(b"\":");
        self.out
    }

    /// `"key":"text"`.
    pub(crate) fn string(&mut self, key: &'static str, text: &str) {
        push_str(self.key(key), text);
    }

    /// `"key":"text"`, or nothing for `None`.
    pub(crate) fn optional_string(&mut self, key: &'static str, text: Option<&str>) {
        if let Some(text) = text {
            self.string(key, text);
        }
    }

    /// `"key":[...]`, the strings in the order given.
    pub(crate) fn strings<'t>(
        &mut self,
        key: &'static str,
        texts: impl IntoIterator<Item = &'t str>,
    ) {
        let out = self.key(key);
        out.push(b'[');
        for (i, text) in texts.into_iter().enumerate() {
            if i > 0 {
                out.push(b',');
            }
            push_str(out, text);
        }
        out.push(b']');
    }

    /// Closes the object.
    pub(crate) fn close(self) {
        self.out.push(b'}');
    }
}

/// Test strings for writers of JSON text: they sort differently by UTF-16
/// code units, code points and bytes (U+1F600 against U+FF5E, "B" against
/// "a", "10"), and some need escapes.
#[cfg(test)]
pub(crate) fn a_test_text() -> impl proptest::strategy::Strategy<Value = String> {
    use proptest::strategy::Strategy;
    const TEXTS: [&str; 8] = [
        "",
        "a",
        "B",
        "\u{FF5E}",
        "\u{1F600}",
        "\"\\\n\u{0}",
        "\u{7f}\u{2028}",
        "10",
    ];
    (0..TEXTS.len()).prop_map(|i| TEXTS[i].to_string())
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
