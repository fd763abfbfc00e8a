//! Identity fields from the cut-off start of a JSON object.
//!
//! A payload over the spool bound is stored cut (the hook keeps a prefix), so
//! it is no longer JSON. The identity of a turn (`session_id`,
//! `transcript_path`, `cwd`, ...) sits in the first few hundred bytes, ahead
//! of the long final answer, so it can still be read: this scanner walks the
//! top-level object once, front to back, and keeps the complete string values
//! of the keys it is asked for. Every other value, the message text included,
//! is stepped over without being decoded or kept. Linear in the input, no
//! recursion (nesting is a counter), and a value or key cut by the end of the
//! input is dropped, never kept half.

use serde_json::{Map, Value};

/// Longest kept value, in bytes of its JSON spelling: identity fields are
/// ids and paths; anything longer is not one and is left out.
const MAX_IDENTITY_VALUE_BYTES: usize = 4096;
/// Longest key compared against the wanted ones, in bytes of its JSON spelling.
const MAX_KEY_BYTES: usize = 128;

/// The complete top-level string fields named in `wanted` of the object that
/// `prefix` begins (its end may be cut anywhere). `None` when `prefix` does
/// not begin an object. A key given twice keeps its last value, as a JSON
/// parser does.
pub(crate) fn identity_fields(prefix: &[u8], wanted: &[&str]) -> Option<Map<String, Value>> {
    let mut scan = Scanner {
        bytes: prefix,
        at: 0,
    };
    scan.skip_space();
    if scan.peek() != Some(b'{') {
        return None;
    }
    scan.at += 1;
    let mut fields = Map::new();
    loop {
        scan.skip_space();
        if scan.peek() != Some(b'"') {
            // `}`, the cut, or malformed input: the fields so far are all there is.
            break;
        }
        let Some(key) = scan.string() else { break };
        scan.skip_space();
        if scan.peek() != Some(b':') {
            break;
        }
        scan.at += 1;
        scan.skip_space();
        let key = (key.len() <= MAX_KEY_BYTES)
            .then(|| serde_json::from_slice::<String>(key).ok())
            .flatten()
            .filter(|k| wanted.contains(&k.as_str()));
        match (scan.peek(), key) {
            (Some(b'"'), Some(key)) => {
                let Some(raw) = scan.string() else { break };
                if raw.len() <= MAX_IDENTITY_VALUE_BYTES {
                    if let Ok(value) = serde_json::from_slice::<String>(raw) {
                        fields.insert(key, Value::String(value));
                    }
                }
            }
            (Some(_), _) => {
                if !scan.skip_value() {
                    break;
                }
            }
            (None, _) => break,
        }
        scan.skip_space();
        if scan.peek() != Some(b',') {
            break;
        }
        scan.at += 1;
    }
    Some(fields)
}

struct Scanner<'a> {
    bytes: &'a [u8],
    at: usize,
}

impl<'a> Scanner<'a> {
    fn peek(&self) -> Option<u8> {
        self.bytes.get(self.at).copied()
    }

    fn skip_space(&mut self) {
        while matches!(self.peek(), Some(b' ' | b'\t' | b'\n' | b'\r')) {
            self.at += 1;
        }
    }

    /// The string starting here, quotes included (undecoded), or `None` when
    /// the input ends inside it.
    fn string(&mut self) -> Option<&'a [u8]> {
        let start = self.at;
        let mut at = start + 1;
        while let Some(&byte) = self.bytes.get(at) {
            match byte {
                b'\\' => at += 2,
                b'"' => {
                    self.at = at + 1;
                    return Some(&self.bytes[start..self.at]);
                }
                _ => at += 1,
            }
        }
        self.at = self.bytes.len();
        None
    }

    /// Steps over one value of any kind; false when the input ends inside it.
    fn skip_value(&mut self) -> bool {
        let mut depth: usize = 0;
        loop {
            match self.peek() {
                None => return false,
                Some(b'"') => {
                    if self.string().is_none() {
                        return false;
                    }
                }
                Some(b'{' | b'[') => {
                    depth += 1;
                    self.at += 1;
                }
                Some(b'}' | b']') if depth > 0 => {
                    depth -= 1;
                    self.at += 1;
                }
                // A scalar ends at the next delimiter (or at the cut).
                Some(_) if depth == 0 => {
                    while !matches!(
                        self.peek(),
                        None | Some(b',' | b'}' | b']' | b' ' | b'\t' | b'\n' | b'\r')
                    ) {
                        self.at += 1;
                    }
                    return self.peek().is_some();
                }
                Some(_) => self.at += 1,
            }
            if depth == 0 {
                return true;
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;
    use serde_json::json;

    const WANTED: [&str; 3] = ["session_id", "cwd", "transcript_path"];

    fn scan(text: &str) -> Option<Value> {
        identity_fields(text.as_bytes(), &WANTED).map(Value::Object)
    }

    #[test]
    fn keeps_complete_wanted_strings_only() {
        // (input, fields found)
        let cases = [
            (
                r#"{"session_id":"s1","cwd":"/p"}"#,
                Some(json!({"session_id": "s1", "cwd": "/p"})),
            ),
            (
                r#" { "session_id" : "s1" , "cwd":"/p"#,
                Some(json!({"session_id": "s1"})),
            ),
            (
                r#"{"session_id":"s\"1\u00e9","cwd""#,
                Some(json!({"session_id": "s\"1é"})),
            ),
            // Other values of every kind are stepped over, strings with braces too.
            (
                r#"{"effort":{"level":"}]"},"n":-1.5e3,"ok":true,"x":null,"a":[[],{"b":"\\"}],"cwd":"/p"}"#,
                Some(json!({"cwd": "/p"})),
            ),
            // Not a string: not taken.
            (r#"{"session_id":5,"cwd":["/p"]}"#, Some(json!({}))),
            // Cut inside an unwanted value, a key, a scalar.
            (
                r#"{"cwd":"/p","last_assistant_message":"long answ"#,
                Some(json!({"cwd": "/p"})),
            ),
            (r#"{"cwd":"/p","sess"#, Some(json!({"cwd": "/p"}))),
            (r#"{"cwd":"/p","n":12"#, Some(json!({"cwd": "/p"}))),
            // The last of a repeated key wins.
            (r#"{"cwd":"/a","cwd":"/b"}"#, Some(json!({"cwd": "/b"}))),
            // Nested wanted keys are not top-level fields.
            (
                r#"{"inner":{"cwd":"/x"},"session_id":"s"}"#,
                Some(json!({"session_id": "s"})),
            ),
            (r#"["cwd","/p"]"#, None),
            ("", None),
            ("aaaa", None),
            (r#"{}"#, Some(json!({}))),
            (r#"{"cwd" "/p"}"#, Some(json!({}))),
        ];
        for (input, fields) in cases {
            assert_eq!(scan(input), fields, "{input}");
        }
    }

    #[test]
    fn an_overlong_value_is_left_out() {
        let long = "p".repeat(MAX_IDENTITY_VALUE_BYTES);
        let input = format!(r#"{{"cwd":"{long}","session_id":"s"}}"#);
        assert_eq!(scan(&input), Some(json!({"session_id": "s"})));
    }

    #[test]
    fn deep_nesting_needs_no_stack() {
        let input = format!(
            r#"{{"a":{}{},"cwd":"/p"}}"#,
            "[".repeat(200_000),
            "]".repeat(200_000)
        );
        assert_eq!(scan(&input), Some(json!({"cwd": "/p"})));
    }

    proptest! {
        /// On complete JSON the scanner agrees with a parser; on any cut of
        /// it, it finds a subset of those fields, never a different value.
        #[test]
        fn agrees_with_a_parser_and_never_invents(
            fields in prop::collection::vec(
                (prop::sample::select(vec!["session_id", "cwd", "transcript_path", "msg", "n"]),
                 prop_oneof![".{0,12}".prop_map(Value::String), any::<i32>().prop_map(|n| json!(n)),
                             Just(json!({"cwd": "x", "l": [1, "]"]}))]),
                0..6),
            cut in 0usize..400,
        ) {
            let object: Map<String, Value> = fields.into_iter().map(|(k, v)| (k.to_string(), v)).collect();
            let text = Value::Object(object.clone()).to_string();
            let expected: Map<String, Value> = object
                .into_iter()
                .filter(|(k, v)| WANTED.contains(&k.as_str()) && v.is_string())
                .collect();
            prop_assert_eq!(identity_fields(text.as_bytes(), &WANTED), Some(expected.clone()));
            let cut = cut.min(text.len());
            if let Some(found) = identity_fields(&text.as_bytes()[..cut], &WANTED) {
                for (key, value) in &found {
                    prop_assert_eq!(expected.get(key), Some(value));
                }
            }
        }
    }
}
