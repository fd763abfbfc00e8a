//! The inbox array read the way the app reads it, without building it.
//!
//! The app reads an inbox with `JSON.parse` of the file decoded as UTF-8
//! (invalid bytes become U+FFFD). `JSON.parse` accepts strings holding lone
//! UTF-16 surrogates (`"\ud83d"`, which `JSON.stringify` writes for a string
//! cut mid-emoji) and nesting as deep as memory allows; a parser into
//! `serde_json::Value` refuses both, and builds every row as a tree whose size
//! grows with the element count (32 bytes per `0`), not with the file.
//!
//! So this scanner only checks the grammar `JSON.parse` applies, in one pass
//! over the bytes, with no recursion (an explicit stack of one bit per open
//! container) and no allocation per row, and reports per row only the byte
//! ranges of the three fields delivery compares. Rows are never rebuilt: the
//! writer copies the file's own bytes around the row it adds.

use std::ops::Range;

/// Why the bytes are not one JSON value as `JSON.parse` reads it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(super) struct SyntaxError {
    /// Byte offset of the first byte that does not fit.
    pub at: usize,
    /// What was expected there.
    pub expected: &'static str,
}

impl std::fmt::Display for SyntaxError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "expected {} at byte {}", self.expected, self.at)
    }
}

/// What the file holds, when it is JSON.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(super) enum Layout {
    /// An array: where its brackets are and where its last row ends.
    Array {
        /// Offset of `[`.
        open: usize,
        /// Offset of the final `]`.
        close: usize,
        /// End offset of the last row; `None` for `[]`.
        last_row_end: Option<usize>,
    },
    /// A JSON value that is not an array.
    NotAnArray,
}

/// A member of a row object that delivery reads.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum Field {
    /// `messageId`: a row with the nudge's id is the nudge, already there.
    MessageId = 0,
    /// `workSyncPayloadHash`: the same hash makes that row the same nudge,
    /// another one a conflict.
    PayloadHash = 1,
    /// `messageKind`: the row is the same nudge only when this is the
    /// nudge kind.
    MessageKind = 2,
}

impl Field {
    const ALL: [Field; 3] = [Field::MessageId, Field::PayloadHash, Field::MessageKind];

    fn name(self) -> &'static str {
        match self {
            Field::MessageId => "messageId",
            Field::PayloadHash => "workSyncPayloadHash",
            Field::MessageKind => "messageKind",
        }
    }
}

/// The value of a [`Field`] in a row, as `row[field]` sees it in JavaScript
/// (the last of duplicate keys wins).
#[derive(Debug, Clone, PartialEq, Eq)]
pub(super) enum FieldValue {
    /// A string; the range of its raw content between the quotes, escapes
    /// still in it (decode with [`js_units`]).
    Text(Range<usize>),
    /// A number, object, array, `true`, `false` or `null`.
    NotText,
}

/// The [`Field`]s of one row; all absent for a row that is not an object.
#[derive(Debug, Default, Clone, PartialEq, Eq)]
pub(super) struct RowFields([Option<FieldValue>; 3]);

impl RowFields {
    /// The row's `field`, if it has one.
    pub(super) fn get(&self, field: Field) -> Option<&FieldValue> {
        self.0[field as usize].as_ref()
    }
}

/// Checks `bytes` as `JSON.parse` would and, when they hold an array, calls
/// `on_row` with each row's fields in order. Memory beyond `bytes`: one bit
/// per nesting level.
pub(super) fn scan(
    bytes: &[u8],
    mut on_row: impl FnMut(&RowFields),
) -> Result<Layout, SyntaxError> {
    let mut scanner = Scanner { bytes, pos: 0 };
    scanner.skip_ws();
    if scanner.peek() != Some(b'[') {
        scanner.value(None)?;
        scanner.end()?;
        return Ok(Layout::NotAnArray);
    }
    let open = scanner.pos;
    scanner.pos += 1;
    scanner.skip_ws();
    if scanner.peek() == Some(b']') {
        let close = scanner.pos;
        scanner.pos += 1;
        scanner.end()?;
        return Ok(Layout::Array {
            open,
            close,
            last_row_end: None,
        });
    }
    loop {
        let mut fields = RowFields::default();
        scanner.value(Some(&mut fields))?;
        let row_end = scanner.pos;
        on_row(&fields);
        scanner.skip_ws();
        match scanner.next() {
            Some(b',') => scanner.skip_ws(),
            Some(b']') => {
                let close = scanner.pos - 1;
                scanner.end()?;
                return Ok(Layout::Array {
                    open,
                    close,
                    last_row_end: Some(row_end),
                });
            }
            _ => return Err(scanner.error_before("`,` or `]`")),
        }
    }
}

/// The UTF-16 code units of a string's raw content (validated by [`scan`]),
/// as JavaScript holds it: escapes decoded, lone surrogates kept, invalid
/// UTF-8 read as U+FFFD like Node's `readFile(…, 'utf8')`. Lazy: nothing is
/// allocated however long the string.
pub(super) fn js_units(raw: &[u8]) -> impl Iterator<Item = u16> + '_ {
    let mut chars = raw.utf8_chunks().flat_map(|chunk| {
        let invalid = (!chunk.invalid().is_empty()).then_some(char::REPLACEMENT_CHARACTER);
        chunk.valid().chars().chain(invalid)
    });
    let mut low_surrogate = None;
    std::iter::from_fn(move || {
        if let Some(low) = low_surrogate.take() {
            return Some(low);
        }
        let c = chars.next()?;
        if c != '\\' {
            let mut buf = [0u16; 2];
            let units = c.encode_utf16(&mut buf);
            if let [high, low] = units {
                low_surrogate = Some(*low);
                return Some(*high);
            }
            return Some(units[0]);
        }
        Some(match chars.next()? {
            'b' => 0x08,
            'f' => 0x0c,
            'n' => 0x0a,
            'r' => 0x0d,
            't' => 0x09,
            'u' => {
                let mut unit = 0u16;
                for _ in 0..4 {
                    unit = unit * 16 + chars.next()?.to_digit(16)? as u16;
                }
                unit
            }
            other => other as u16,
        })
    })
}

/// True when the string with raw content `raw` equals `expected` as
/// JavaScript's `===` compares them (code unit by code unit).
pub(super) fn js_string_eq(raw: &[u8], expected: &str) -> bool {
    js_units(raw).eq(expected.encode_utf16())
}

/// The string with raw content `raw` as Rust text (a lone surrogate becomes
/// U+FFFD), cut at `max_chars` characters with `…` after the cut.
pub(super) fn js_string_lossy(raw: &[u8], max_chars: usize) -> String {
    let mut text = String::new();
    for (count, c) in char::decode_utf16(js_units(raw)).enumerate() {
        if count == max_chars {
            text.push('…');
            break;
        }
        text.push(c.unwrap_or(char::REPLACEMENT_CHARACTER));
    }
    text
}

/// A stack of open containers, one bit each (set: object).
#[derive(Default)]
struct Open {
    bits: Vec<u64>,
    depth: usize,
}

impl Open {
    fn push(&mut self, object: bool) {
        let (word, bit) = (self.depth / 64, self.depth % 64);
        if word == self.bits.len() {
            self.bits.push(0);
        }
        if object {
            self.bits[word] |= 1 << bit;
        } else {
            self.bits[word] &= !(1 << bit);
        }
        self.depth += 1;
    }

    /// Whether the innermost open container is an object; `None` when none is open.
    fn top_is_object(&self) -> Option<bool> {
        let top = self.depth.checked_sub(1)?;
        Some(self.bits[top / 64] & (1 << (top % 64)) != 0)
    }

    fn pop(&mut self) {
        self.depth -= 1;
    }
}

struct Scanner<'a> {
    bytes: &'a [u8],
    pos: usize,
}

impl Scanner<'_> {
    fn peek(&self) -> Option<u8> {
        self.bytes.get(self.pos).copied()
    }

    fn next(&mut self) -> Option<u8> {
        let byte = self.peek()?;
        self.pos += 1;
        Some(byte)
    }

    /// `JSON.parse` whitespace: space, tab, line feed, carriage return only.
    fn skip_ws(&mut self) {
        while matches!(self.peek(), Some(b' ' | b'\t' | b'\n' | b'\r')) {
            self.pos += 1;
        }
    }

    fn error(&self, expected: &'static str) -> SyntaxError {
        SyntaxError {
            at: self.pos,
            expected,
        }
    }

    /// The error for the byte just consumed.
    fn error_before(&self, expected: &'static str) -> SyntaxError {
        SyntaxError {
            at: self.pos.saturating_sub(1),
            expected,
        }
    }

    /// Only whitespace may follow the value.
    fn end(&mut self) -> Result<(), SyntaxError> {
        self.skip_ws();
        match self.peek() {
            None => Ok(()),
            Some(_) => Err(self.error("the end of the file")),
        }
    }

    /// One value, iteratively. With `fields`, the members of the value
    /// itself (when it is an object) named by a [`Field`] are recorded.
    fn value(&mut self, mut fields: Option<&mut RowFields>) -> Result<(), SyntaxError> {
        let mut open = Open::default();
        // The row field the next value belongs to.
        let mut pending: Option<Field> = None;
        loop {
            self.skip_ws();
            let start = self.pos;
            // A row field is what `row[field]` reads: the last duplicate
            // wins, so a later value that is not text clears an earlier one.
            let field = pending.take().filter(|_| fields.is_some());
            let is_text = self.peek() == Some(b'"');
            if let (Some(field), Some(fields), false) = (field, fields.as_deref_mut(), is_text) {
                fields.0[field as usize] = Some(FieldValue::NotText);
            }
            match self.next() {
                Some(b'{') => {
                    self.skip_ws();
                    if self.peek() == Some(b'}') {
                        self.pos += 1;
                    } else {
                        open.push(true);
                        pending = self.member_key(open.depth == 1 && fields.is_some())?;
                        continue;
                    }
                }
                Some(b'[') => {
                    self.skip_ws();
                    if self.peek() == Some(b']') {
                        self.pos += 1;
                    } else {
                        open.push(false);
                        continue;
                    }
                }
                Some(b'"') => self.string_rest()?,
                Some(b'-' | b'0'..=b'9') => self.number_rest(start)?,
                Some(b't') => self.literal_rest(b"rue")?,
                Some(b'f') => self.literal_rest(b"alse")?,
                Some(b'n') => self.literal_rest(b"ull")?,
                _ => {
                    self.pos = start;
                    return Err(self.error("a value"));
                }
            }
            if let (Some(field), Some(fields), true) = (field, fields.as_deref_mut(), is_text) {
                fields.0[field as usize] = Some(FieldValue::Text(start + 1..self.pos - 1));
            }
            // The value is complete: close what it completes.
            loop {
                let Some(object) = open.top_is_object() else {
                    return Ok(());
                };
                self.skip_ws();
                match self.next() {
                    Some(b',') => {
                        if object {
                            pending = self.member_key(open.depth == 1 && fields.is_some())?;
                        }
                        break;
                    }
                    Some(b'}') if object => open.pop(),
                    Some(b']') if !object => open.pop(),
                    _ if object => return Err(self.error_before("`,` or `}`")),
                    _ => return Err(self.error_before("`,` or `]`")),
                }
            }
        }
    }

    /// `"key"` and `:`; the [`Field`] it names when `record` is set.
    fn member_key(&mut self, record: bool) -> Result<Option<Field>, SyntaxError> {
        self.skip_ws();
        if self.next() != Some(b'"') {
            return Err(self.error_before("a member name"));
        }
        let start = self.pos;
        self.string_rest()?;
        let raw = &self.bytes[start..self.pos - 1];
        self.skip_ws();
        if self.next() != Some(b':') {
            return Err(self.error_before("`:`"));
        }
        Ok(record
            .then(|| {
                Field::ALL
                    .into_iter()
                    .find(|field| js_string_eq(raw, field.name()))
            })
            .flatten())
    }

    /// The rest of a string after its opening quote, through the closing one.
    fn string_rest(&mut self) -> Result<(), SyntaxError> {
        loop {
            match self.next() {
                Some(b'"') => return Ok(()),
                Some(b'\\') => match self.next() {
                    Some(b'"' | b'\\' | b'/' | b'b' | b'f' | b'n' | b'r' | b't') => {}
                    Some(b'u') => {
                        for _ in 0..4 {
                            if !self.next().is_some_and(|b| b.is_ascii_hexdigit()) {
                                return Err(self.error_before("four hex digits after `\\u`"));
                            }
                        }
                    }
                    _ => return Err(self.error_before("an escape")),
                },
                // Control characters must be escaped; every other byte,
                // non-ASCII or not valid UTF-8, is text to `JSON.parse`.
                Some(0x00..=0x1f) => return Err(self.error_before("an escaped control character")),
                Some(_) => {}
                None => return Err(self.error("`\"`")),
            }
        }
    }

    /// `-?(0|[1-9][0-9]*)(\.[0-9]+)?([eE][+-]?[0-9]+)?`, its first byte consumed.
    fn number_rest(&mut self, start: usize) -> Result<(), SyntaxError> {
        self.pos = start;
        if self.peek() == Some(b'-') {
            self.pos += 1;
        }
        match self.next() {
            Some(b'0') => {}
            Some(b'1'..=b'9') => self.digits(),
            _ => return Err(self.error_before("a digit")),
        }
        if self.peek() == Some(b'.') {
            self.pos += 1;
            self.required_digits()?;
        }
        if matches!(self.peek(), Some(b'e' | b'E')) {
            self.pos += 1;
            if matches!(self.peek(), Some(b'+' | b'-')) {
                self.pos += 1;
            }
            self.required_digits()?;
        }
        Ok(())
    }

    fn digits(&mut self) {
        while self.peek().is_some_and(|b| b.is_ascii_digit()) {
            self.pos += 1;
        }
    }

    fn required_digits(&mut self) -> Result<(), SyntaxError> {
        if !self.peek().is_some_and(|b| b.is_ascii_digit()) {
            return Err(self.error("a digit"));
        }
        self.digits();
        Ok(())
    }

    fn literal_rest(&mut self, rest: &'static [u8]) -> Result<(), SyntaxError> {
        if self.bytes[self.pos..].starts_with(rest) {
            self.pos += rest.len();
            Ok(())
        } else {
            Err(self.error("`true`, `false` or `null`"))
        }
    }
}

#[cfg(test)]
mod tests;
