//! The scanner against `JSON.parse` (each row of the table checked with
//! Node 22) and against serde_json on what both accept.

use super::*;
use proptest::prelude::*;
use serde_json::Value;

fn accepts(text: &[u8]) -> bool {
    scan(text, |_| {}).is_ok()
}

#[test]
fn accepts_what_json_parse_accepts_and_refuses_the_rest() {
    for (text, json_parse_accepts) in [
        ("[]", true),
        (" [ ] ", true),
        ("[0,0,0]", true),
        ("[{},{}]", true),
        (r#"["\ud83d"]"#, true),
        (r#"["\udc00\ud83d"]"#, true),
        ("[1.5e+3,-0,0.1,1E5]", true),
        ("[true,false,null]", true),
        (r#""x""#, true),
        (r#"{"a":[1]}"#, true),
        ("[\"\u{7f}\"]", true),
        ("[\"é\"]", true),
        (r#"[{"a":1,"a":2}]"#, true),
        ("\t[\r\n]\n", true),
        ("[\"\u{2028}\"]", true),
        ("", false),
        ("[", false),
        ("[,]", false),
        ("[1,]", false),
        ("[01]", false),
        ("[1.]", false),
        ("[.5]", false),
        ("[-]", false),
        ("[1e]", false),
        (r#"["\x"]"#, false),
        (r#"["\u12"]"#, false),
        ("[\"a\tb\"]", false),
        ("[tru]", false),
        ("[nul]", false),
        ("[]x", false),
        ("\u{feff}[]", false),
        ("[1 2]", false),
        (r#"{"a" 1}"#, false),
        (r#"{"a":1,}"#, false),
        ("{,}", false),
        ("[NaN]", false),
        ("[Infinity]", false),
        (r#"["\'"]"#, false),
        ("[+1]", false),
        ("{1:2}", false),
        ("[\u{a0}]", false),
        (" ", false),
        ("[]]", false),
        ("[[]", false),
    ] {
        assert_eq!(accepts(text.as_bytes()), json_parse_accepts, "{text:?}");
    }
    // Bytes that are not UTF-8 are U+FFFD to the app: text inside a string,
    // an error outside one.
    assert!(accepts(b"[\"\xff\xfe\"]"));
    assert!(!accepts(b"[\xff]"));
}

#[test]
fn layout_and_fields_are_what_javascript_sees() {
    let text =
        br#" [ {"messageId":"a","messageKind":7}, 0, {"messageId":"x","messageId":{"n":[1]}},
        {"message\u0049d":"\ud83d","workSyncPayloadHash":"h","x":{"messageId":"deep"}} ] "#;
    let mut rows = Vec::new();
    let layout = scan(text, |fields| rows.push(fields.clone())).unwrap();
    let close = text.iter().rposition(|&b| b == b']').unwrap();
    let last_end = text[..close].iter().rposition(|&b| b == b'}').unwrap() + 1;
    assert_eq!(
        layout,
        Layout::Array {
            open: 1,
            close,
            last_row_end: Some(last_end)
        }
    );
    let text_of = |fields: &RowFields, field| match fields.get(field) {
        Some(FieldValue::Text(range)) => Some(js_string_lossy(&text[range.clone()], 100)),
        _ => None,
    };
    assert_eq!(rows.len(), 4);
    assert_eq!(text_of(&rows[0], Field::MessageId).as_deref(), Some("a"));
    assert_eq!(rows[0].get(Field::MessageKind), Some(&FieldValue::NotText));
    assert_eq!(rows[1], RowFields::default());
    // The last duplicate wins, even an object after a string.
    assert_eq!(rows[2].get(Field::MessageId), Some(&FieldValue::NotText));
    // An escaped key is the same key; a nested member is not the row's.
    let Some(FieldValue::Text(id)) = rows[3].get(Field::MessageId) else {
        panic!("{:?}", rows[3]);
    };
    assert_eq!(js_units(&text[id.clone()]).collect::<Vec<_>>(), [0xd83d]);
    assert!(!js_string_eq(&text[id.clone()], "\u{fffd}"));
    assert_eq!(text_of(&rows[3], Field::PayloadHash).as_deref(), Some("h"));
    assert_eq!(
        scan(br#"{"a":[]}"#, |_| panic!("not a row")),
        Ok(Layout::NotAnArray)
    );
    assert_eq!(
        scan(b"[]", |_| panic!("no rows")),
        Ok(Layout::Array {
            open: 0,
            close: 1,
            last_row_end: None
        })
    );
}

#[test]
fn strings_compare_as_utf16_units() {
    for (raw, expected, equal) in [
        (&br"plain"[..], "plain", true),
        (br"\u0041\n\/", "A\n/", true),
        (br"\ud83d\ude00", "😀", true),
        ("😀".as_bytes(), "😀", true),
        (br"\ud83d", "😀", false),
        (b"a\xffb", "a\u{fffd}b", true),
        (br"abc", "abcd", false),
    ] {
        assert_eq!(js_string_eq(raw, expected), equal, "{raw:?}");
    }
    assert_eq!(js_string_lossy(br"ab\ud83dcd", 3), "ab\u{fffd}…");
}

/// Nesting as deep as the file allows, scanned on a thread with a small
/// stack: the scanner keeps one bit per level, never a stack frame.
#[test]
fn deep_nesting_is_accepted_without_recursion() {
    let depth = 1_000_000;
    let mut text = Vec::with_capacity(2 * depth + 16);
    text.extend_from_slice(b"[{\"messageId\":\"x\",\"deep\":");
    text.extend(std::iter::repeat_n(b'[', depth));
    text.extend(std::iter::repeat_n(b']', depth));
    text.extend_from_slice(b"}]");
    let scanned = std::thread::Builder::new()
        .stack_size(64 * 1024)
        .spawn(move || {
            let mut ids = 0;
            let layout = scan(&text, |fields| {
                ids += usize::from(fields.get(Field::MessageId).is_some())
            });
            (layout.is_ok(), ids)
        })
        .unwrap()
        .join()
        .unwrap();
    assert_eq!(scanned, (true, 1));
    let unbalanced = [b"[".repeat(1000), b"]".repeat(999)].concat();
    assert!(!accepts(&unbalanced));
}

fn json_value() -> impl Strategy<Value = Value> {
    let leaf = prop_oneof![
        Just(Value::Null),
        any::<bool>().prop_map(Value::Bool),
        any::<i64>().prop_map(Value::from),
        any::<f64>()
            .prop_filter("finite", |f| f.is_finite())
            .prop_map(Value::from),
        "\\PC{0,8}".prop_map(Value::String),
        prop_oneof![Just("messageId"), Just("messageKind")].prop_map(Value::from),
    ];
    leaf.prop_recursive(4, 32, 6, |inner| {
        prop_oneof![
            prop::collection::vec(inner.clone(), 0..6).prop_map(Value::Array),
            prop::collection::vec(
                (
                    prop_oneof![
                        Just("messageId".to_string()),
                        Just("workSyncPayloadHash".to_string()),
                        "[a-z]{0,3}"
                    ],
                    inner
                ),
                0..6
            )
            .prop_map(|members| Value::Object(members.into_iter().collect())),
        ]
    })
}

proptest! {
    /// What serde_json writes, the scanner reads, with the same `messageId` per row.
    #[test]
    fn agrees_with_serde_json(rows in prop::collection::vec(json_value(), 0..8), pretty in any::<bool>()) {
        let text = if pretty {
            serde_json::to_vec_pretty(&rows).unwrap()
        } else {
            serde_json::to_vec(&rows).unwrap()
        };
        let mut ids = Vec::new();
        let layout = scan(&text, |fields| {
            ids.push(match fields.get(Field::MessageId) {
                Some(FieldValue::Text(range)) => Some(js_string_lossy(&text[range.clone()], usize::MAX)),
                _ => None,
            })
        });
        prop_assert!(matches!(layout, Ok(Layout::Array { .. })), "{:?}", layout);
        let expected: Vec<_> = rows
            .iter()
            .map(|row| row.get("messageId").and_then(Value::as_str).map(str::to_string))
            .collect();
        prop_assert_eq!(ids, expected);
    }
}
