//! Column strings exactly as JavaScript's `JSON.stringify` prints a value:
//! the app compares stored JSON columns with their re-stringified form and
//! rewrites a team whose rows differ, so every byte counts.
//!
//! serde_json already prints compact JSON with the escapes `JSON.stringify`
//! uses (the short forms `\b \f \n \r \t`, `\u00xx` in lowercase for the
//! other control characters, nothing else escaped). Numbers are where the
//! two differ: serde_json prints the float `1.0` as `1.0` and `1e21` as
//! `1e21`, JavaScript as `1` and `1e+21`.

use std::io;

use serde::Serialize;
use serde_json::ser::{CompactFormatter, Formatter, PrettyFormatter};

use crate::domain::js_semantics::number_to_string;

/// `JSON.stringify(value)` of a serializable value, its fields in their
/// declaration (or insertion) order, as a JavaScript object keeps them.
pub(crate) fn stringify<T: Serialize + ?Sized>(value: &T) -> Result<String, serde_json::Error> {
    let mut out = Vec::with_capacity(256);
    let mut serializer = serde_json::Serializer::with_formatter(&mut out, JsFormatter);
    value.serialize(&mut serializer)?;
    // serde_json writes only UTF-8.
    String::from_utf8(out).map_err(|e| serde_json::Error::io(io::Error::other(e)))
}

/// `JSON.stringify(value, null, 2)`: two-space indents, `": "` between a
/// key and its value, `[]` and `{}` for empty ones (the replica's and the
/// purge marker's layout).
pub(crate) fn stringify_pretty<T: Serialize + ?Sized>(
    value: &T,
) -> Result<String, serde_json::Error> {
    let mut out = Vec::with_capacity(1024);
    let formatter = JsPrettyFormatter(PrettyFormatter::with_indent(b"  "));
    let mut serializer = serde_json::Serializer::with_formatter(&mut out, formatter);
    value.serialize(&mut serializer)?;
    String::from_utf8(out).map_err(|e| serde_json::Error::io(io::Error::other(e)))
}

/// Compact output with JavaScript's number formatting.
struct JsFormatter;

/// Pretty output with JavaScript's number formatting.
struct JsPrettyFormatter(PrettyFormatter<'static>);

impl Formatter for JsPrettyFormatter {
    fn write_f32<W: ?Sized + io::Write>(&mut self, writer: &mut W, value: f32) -> io::Result<()> {
        JsFormatter.write_f32(writer, value)
    }
    fn write_f64<W: ?Sized + io::Write>(&mut self, writer: &mut W, value: f64) -> io::Result<()> {
        JsFormatter.write_f64(writer, value)
    }
    fn write_u64<W: ?Sized + io::Write>(&mut self, writer: &mut W, value: u64) -> io::Result<()> {
        JsFormatter.write_u64(writer, value)
    }
    fn write_i64<W: ?Sized + io::Write>(&mut self, writer: &mut W, value: i64) -> io::Result<()> {
        JsFormatter.write_i64(writer, value)
    }
    fn begin_array<W: ?Sized + io::Write>(&mut self, writer: &mut W) -> io::Result<()> {
        self.0.begin_array(writer)
    }
    fn end_array<W: ?Sized + io::Write>(&mut self, writer: &mut W) -> io::Result<()> {
        self.0.end_array(writer)
    }
    fn begin_array_value<W: ?Sized + io::Write>(
        &mut self,
        writer: &mut W,
        first: bool,
    ) -> io::Result<()> {
        self.0.begin_array_value(writer, first)
    }
    fn end_array_value<W: ?Sized + io::Write>(&mut self, writer: &mut W) -> io::Result<()> {
        self.0.end_array_value(writer)
    }
    fn begin_object<W: ?Sized + io::Write>(&mut self, writer: &mut W) -> io::Result<()> {
        self.0.begin_object(writer)
    }
    fn end_object<W: ?Sized + io::Write>(&mut self, writer: &mut W) -> io::Result<()> {
        self.0.end_object(writer)
    }
    fn begin_object_key<W: ?Sized + io::Write>(
        &mut self,
        writer: &mut W,
        first: bool,
    ) -> io::Result<()> {
        self.0.begin_object_key(writer, first)
    }
    fn begin_object_value<W: ?Sized + io::Write>(&mut self, writer: &mut W) -> io::Result<()> {
        self.0.begin_object_value(writer)
    }
    fn end_object_value<W: ?Sized + io::Write>(&mut self, writer: &mut W) -> io::Result<()> {
        self.0.end_object_value(writer)
    }
}

impl JsFormatter {
    fn write_number<W: ?Sized + io::Write>(writer: &mut W, value: f64) -> io::Result<()> {
        // JSON.stringify prints NaN and the infinities as null.
        if value.is_finite() {
            writer.write_all(number_to_string(value).as_bytes())
        } else {
            writer.write_all(b"null")
        }
    }
}

impl Formatter for JsFormatter {
    fn write_f32<W: ?Sized + io::Write>(&mut self, writer: &mut W, value: f32) -> io::Result<()> {
        Self::write_number(writer, f64::from(value))
    }

    fn write_f64<W: ?Sized + io::Write>(&mut self, writer: &mut W, value: f64) -> io::Result<()> {
        Self::write_number(writer, value)
    }

    fn write_u64<W: ?Sized + io::Write>(&mut self, writer: &mut W, value: u64) -> io::Result<()> {
        // A JavaScript number holds integers exactly only up to 2^53.
        if value <= (1u64 << 53) {
            CompactFormatter.write_u64(writer, value)
        } else {
            Self::write_number(writer, value as f64)
        }
    }

    fn write_i64<W: ?Sized + io::Write>(&mut self, writer: &mut W, value: i64) -> io::Result<()> {
        if value.unsigned_abs() <= (1u64 << 53) {
            CompactFormatter.write_i64(writer, value)
        } else {
            Self::write_number(writer, value as f64)
        }
    }
}

#[cfg(test)]
mod tests {
    use super::{stringify, stringify_pretty};
    use serde_json::json;

    #[test]
    fn prints_what_json_stringify_prints() {
        let cases = [
            (
                json!({"a": 1.0, "b": 60000.0, "c": 0.5}),
                r#"{"a":1,"b":60000,"c":0.5}"#,
            ),
            (
                json!([1e21, 1.5e-7, -0.0, 123456789012345680000.0]),
                "[1e+21,1.5e-7,0,123456789012345680000]",
            ),
            (
                json!({"z": 1, "a": [true, null]}),
                r#"{"z":1,"a":[true,null]}"#,
            ),
            (
                json!("tab\tnl\ncr\rbs\u{8}ff\u{c}us\u{1f}del\u{7f}"),
                "\"tab\\tnl\\ncr\\rbs\\bff\\fus\\u001fdel\u{7f}\"",
            ),
            (
                json!("quote\" slash/ back\\ ls\u{2028} é 😀"),
                "\"quote\\\" slash/ back\\\\ ls\u{2028} é 😀\"",
            ),
            (json!(9007199254740993u64), "9007199254740992"),
        ];
        for (value, expected) in cases {
            assert_eq!(stringify(&value).unwrap(), expected, "{value:?}");
        }
    }

    #[test]
    fn pretty_prints_what_json_stringify_with_two_spaces_prints() {
        let value = json!({"a": [], "b": {}, "c": [1.0, {"d": 1e21}], "e": null});
        assert_eq!(
            stringify_pretty(&value).unwrap(),
            "{\n  \"a\": [],\n  \"b\": {},\n  \"c\": [\n    1,\n    {\n      \"d\": 1e+21\n    }\n  ],\n  \"e\": null\n}"
        );
    }
}
