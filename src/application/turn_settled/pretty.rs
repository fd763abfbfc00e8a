//! Pretty JSON from compact JSON, byte for byte as `serde_json`'s pretty
//! printer writes the same value.
//!
//! A filing's meta is stored twice: compact (its batch's outcome record) and
//! pretty (the result's meta file). Serializing the meta a second time, for
//! the pretty form, escaped every string again and cost about a tenth of the
//! CPU time a drained Stop event took beyond the file system's work; laying
//! out the compact text copies each string as it is.

use crate::domain::json_text::write_str;

/// The pretty form (two-space indent, `": "` between key and value, an empty
/// object or array as `{}` or `[]`, no final newline) of `compact`, which
/// must be `serde_json`'s compact serialization of a value (no whitespace
/// outside strings, as its compact writer makes it; a `RawValue` holding
/// whitespace would not be one). Strings are copied as they are: both
/// printers escape them alike.
pub(super) fn pretty_from_compact(compact: &[u8]) -> Vec<u8> {
    let mut out = Vec::with_capacity(compact.len() * 2);
    let mut depth = 0usize;
    // Bytes not yet copied start here: runs of scalars and strings are
    // copied whole, at the next bracket, comma or colon.
    let mut copied = 0;
    let mut i = 0;
    while i < compact.len() {
        let byte = compact[i];
        match byte {
            b'"' => {
                // Past the closing quote: the first one not escaped.
                i += 1;
                loop {
                    i = quote_or_backslash(compact, i);
                    match compact.get(i) {
                        Some(b'\\') => i += 2,
                        Some(_) => {
                            i += 1;
                            break;
                        }
                        None => break,
                    }
                }
                continue;
            }
            b'{' | b'[' | b'}' | b']' | b',' | b':' => {}
            _ => {
                i += 1;
                continue;
            }
        }
        out.extend_from_slice(&compact[copied..i]);
        i += 1;
        match byte {
            b'{' | b'[' => {
                let close = if byte == b'{' { b'}' } else { b']' };
                if compact.get(i) == Some(&close) {
                    out.extend_from_slice(&[byte, close]);
                    i += 1;
                } else {
                    out.push(byte);
                    depth += 1;
                    newline(&mut out, depth);
                }
            }
            b'}' | b']' => {
                depth = depth.saturating_sub(1);
                newline(&mut out, depth);
                out.push(byte);
            }
            b',' => {
                out.push(b',');
                newline(&mut out, depth);
            }
            _ => out.extend_from_slice(b": "),
        }
        copied = i;
    }
    out.extend_from_slice(&compact[copied.min(compact.len())..]);
    out
}

/// A JSON object written in both forms at once, compact and pretty, byte
/// for byte as `serde_json`'s compact and pretty writers write it: a
/// filing's meta written straight from its fields, each string escaped
/// once (into the compact form, then copied), where serializing it with
/// `serde_json` looked at every byte of every string one by one and laying
/// out the pretty form scanned the compact one again.
pub(super) struct JsonPair {
    compact: Vec<u8>,
    pretty: Vec<u8>,
    /// Objects open.
    depth: usize,
    /// No entry yet in the innermost object open.
    first: bool,
}

impl JsonPair {
    /// Nothing written yet; room for a usual meta (about 700 bytes compact).
    pub(super) fn new() -> Self {
        Self {
            compact: Vec::with_capacity(1024),
            pretty: Vec::with_capacity(1024),
            depth: 0,
            first: true,
        }
    }

    /// Opens an object (the whole value, or the value of the key just written).
    pub(super) fn begin(&mut self) {
        self.compact.push(b'{');
        self.pretty.push(b'{');
        self.depth += 1;
        self.first = true;
    }

    /// Closes the innermost object.
    pub(super) fn end(&mut self) {
        self.depth -= 1;
        if !self.first {
            newline(&mut self.pretty, self.depth);
        }
        self.compact.push(b'}');
        self.pretty.push(b'}');
        self.first = false;
    }

    /// The next entry's key (a field name: nothing in it to escape), and
    /// what comes between it and its value.
    pub(super) fn key(&mut self, key: &'static str) {
        if !std::mem::take(&mut self.first) {
            self.compact.push(b',');
            self.pretty.push(b',');
        }
        newline(&mut self.pretty, self.depth);
        // A key is one of the meta's field names: nothing to escape.
        debug_assert!(!key.bytes().any(|b| b < 0x20 || b == b'"' || b == b'\\'));
        for out in [&mut self.compact, &mut self.pretty] {
            out.push(b'"');
            out.extend_from_slice(key.as_bytes());
            out.push(b'"');
        }
        self.compact.push(b':');
        self.pretty.extend_from_slice(b": ");
    }

    /// An entry whose value is the string `text`.
    pub(super) fn text(&mut self, key: &'static str, text: &str) -> serde_json::Result<()> {
        self.key(key);
        self.escaped(text)
    }

    /// An entry whose value is `literal` (a number, `true`), written as it is.
    pub(super) fn literal(&mut self, key: &'static str, literal: &str) {
        self.key(key);
        self.compact.extend_from_slice(literal.as_bytes());
        self.pretty.extend_from_slice(literal.as_bytes());
    }

    /// `text` as a JSON string, in both forms.
    fn escaped(&mut self, text: &str) -> serde_json::Result<()> {
        let start = self.compact.len();
        write_str(&mut self.compact, text)?;
        self.pretty.extend_from_slice(&self.compact[start..]);
        Ok(())
    }

    /// The compact form and the pretty one.
    pub(super) fn finish(self) -> (Vec<u8>, Vec<u8>) {
        (self.compact, self.pretty)
    }
}

/// The index of the first `"` or `\\` of `bytes` from `from` on (the
/// length if none): eight bytes a step, a string's bytes being most of a
/// meta's.
fn quote_or_backslash(bytes: &[u8], from: usize) -> usize {
    const ONES: u64 = u64::from_ne_bytes([1; 8]);
    const HIGHS: u64 = u64::from_ne_bytes([0x80; 8]);
    let mut i = from;
    while let Some(chunk) = bytes.get(i..i + 8) {
        let word = u64::from_le_bytes(chunk.try_into().expect("eight bytes"));
        // The high bit of each byte equal to `target`; also of some bytes
        // after the first such one, never before it: the lowest bit set
        // marks the first match.
        let equal = |target: u8| {
            let x = word ^ (ONES * u64::from(target));
            x.wrapping_sub(ONES) & !x & HIGHS
        };
        let found = equal(b'"') | equal(b'\\');
        if found != 0 {
            return i + (found.trailing_zeros() / 8) as usize;
        }
        i += 8;
    }
    while i < bytes.len() && bytes[i] != b'"' && bytes[i] != b'\\' {
        i += 1;
    }
    i
}

/// A new line indented to `depth`.
fn newline(out: &mut Vec<u8>, depth: usize) {
    const SPACES: [u8; 32] = [b' '; 32];
    out.push(b'\n');
    let mut left = 2 * depth;
    while left > 0 {
        let run = left.min(SPACES.len());
        out.extend_from_slice(&SPACES[..run]);
        left -= run;
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;
    use serde_json::{json, Value};

    fn pretty_of(value: &Value) -> String {
        let compact = serde_json::to_vec(value).unwrap();
        String::from_utf8(pretty_from_compact(&compact)).unwrap()
    }

    /// Nested, empty and escaped values come out as `serde_json` prints them.
    #[test]
    fn lays_out_values_as_serde_json_prints_them() {
        let values = [
            json!({}),
            json!([]),
            json!(null),
            json!("a \"b\" \\ c\n{[,:]}\u{1}é"),
            json!(-1.5e300),
            json!({"a": {}, "b": [], "c": [{}, [], [[]], {"d": {"e": [1, 2.25, true, null]}}]}),
            json!({"\"k\\": "\\", "x,y": ":", "": ""}),
            json!([[{"a": [{}]}], "}", "]", 0]),
            // Deeper than one run of indent.
            (0..40).fold(json!([1]), |inner, i| json!({ i.to_string(): [inner, {}] })),
        ];
        for value in values {
            assert_eq!(
                pretty_of(&value),
                serde_json::to_string_pretty(&value).unwrap()
            );
        }
    }

    fn any_value() -> impl Strategy<Value = Value> {
        let text = "[a-z\"\\\\{}\\[\\],: \n\t\u{1}é]{0,6}";
        let leaf = prop_oneof![
            Just(Value::Null),
            any::<bool>().prop_map(Value::from),
            any::<i64>().prop_map(Value::from),
            any::<f64>().prop_map(Value::from),
            text.prop_map(Value::from),
        ];
        leaf.prop_recursive(4, 32, 4, move |inner| {
            prop_oneof![
                prop::collection::vec(inner.clone(), 0..4).prop_map(Value::from),
                prop::collection::vec((text, inner), 0..4)
                    .prop_map(|entries| Value::Object(entries.into_iter().collect())),
            ]
        })
    }

    proptest! {
        /// The eight-byte search finds what a byte-by-byte one finds.
        #[test]
        fn finds_the_first_quote_or_backslash(bytes in prop::collection::vec(prop_oneof![Just(b'"'), Just(b'\\'), any::<u8>()], 0..40), from in 0usize..40) {
            let want = (from..bytes.len())
                .find(|&i| bytes[i] == b'"' || bytes[i] == b'\\')
                .unwrap_or(bytes.len().max(from));
            prop_assert_eq!(quote_or_backslash(&bytes, from), want);
        }

        /// Any value's compact form laid out is its pretty form, byte for byte.
        #[test]
        fn any_compact_value_lays_out_as_its_pretty_form(value in any_value()) {
            prop_assert_eq!(pretty_of(&value), serde_json::to_string_pretty(&value).unwrap());
        }
    }
}
