//! Canonical JSON of any value written straight from its `Serialize` impl,
//! so hashing it (a nudge's payload, a name) builds no `serde_json::Value`
//! tree.
//!
//! The bytes are those of [`super::canonical_json`] over the value's
//! `serde_json::to_value`: object keys in UTF-16 code unit order at every
//! depth, no whitespace, serde_json's (= `JSON.stringify`'s) escaping. The
//! tests hold the two side by side.

use std::borrow::Cow;
use std::ops::Range;

use serde::ser::{self, Serialize};
use serde_json::{Error, Value};

use crate::domain::js_semantics::compare_code_units;
use crate::domain::json_text::write_str;

/// Appends the canonical JSON of `value` (`null` if it does not serialize,
/// as `to_value(..).unwrap_or(Null)` gives).
pub(super) fn write_plain<T: Serialize + ?Sized>(value: &T, out: &mut Vec<u8>) {
    let start = out.len();
    if value.serialize(Canonical { out }).is_err() {
        out.truncate(start);
        out.extend_from_slice(b"null");
    }
}

/// An externally tagged enum variant, which serde_json writes as the object
/// `{"<variant>": <content>}`.
#[derive(Clone, Copy)]
struct Tag {
    variant: &'static str,
}

impl Tag {
    /// Writes the object around `content`.
    fn write(
        self,
        out: &mut Vec<u8>,
        content: impl FnOnce(&mut Vec<u8>) -> Result<(), Error>,
    ) -> Result<(), Error> {
        out.push(b'{');
        write_str(out, self.variant)?;
        out.push(b':');
        content(out)?;
        out.push(b'}');
        Ok(())
    }
}

/// A scalar in serde_json's compact form.
fn write_scalar<T: Serialize>(value: T, out: &mut Vec<u8>) -> Result<(), Error> {
    serde_json::to_writer(out, &value)
}

/// A map key as serde_json's value serializer spells it: strings as they
/// are, numbers and booleans in their JSON form.
fn map_key<K: Serialize + ?Sized>(key: &K) -> Result<String, Error> {
    match serde_json::to_value(key)? {
        Value::String(text) => Ok(text),
        Value::Number(number) => Ok(number.to_string()),
        Value::Bool(flag) => Ok(flag.to_string()),
        _ => Err(ser::Error::custom("key must be a string")),
    }
}

/// The serializer: writes one value into `out`.
struct Canonical<'a> {
    out: &'a mut Vec<u8>,
}

impl<'a> ser::Serializer for Canonical<'a> {
    type Ok = ();
    type Error = Error;
    type SerializeSeq = ArrayWriter<'a>;
    type SerializeTuple = ArrayWriter<'a>;
    type SerializeTupleStruct = ArrayWriter<'a>;
    type SerializeTupleVariant = ArrayWriter<'a>;
    type SerializeMap = ObjectWriter<'a>;
    type SerializeStruct = ObjectWriter<'a>;
    type SerializeStructVariant = ObjectWriter<'a>;

    fn serialize_bool(self, v: bool) -> Result<(), Error> {
        write_scalar(v, self.out)
    }
    fn serialize_i8(self, v: i8) -> Result<(), Error> {
        write_scalar(v, self.out)
    }
    fn serialize_i16(self, v: i16) -> Result<(), Error> {
        write_scalar(v, self.out)
    }
    fn serialize_i32(self, v: i32) -> Result<(), Error> {
        write_scalar(v, self.out)
    }
    fn serialize_i64(self, v: i64) -> Result<(), Error> {
        write_scalar(v, self.out)
    }
    fn serialize_i128(self, v: i128) -> Result<(), Error> {
        // As the value serializer: only what fits 64 bits.
        match (i64::try_from(v), u64::try_from(v)) {
            (Ok(small), _) => write_scalar(small, self.out),
            (_, Ok(unsigned)) => write_scalar(unsigned, self.out),
            _ => Err(ser::Error::custom("number out of range")),
        }
    }
    fn serialize_u8(self, v: u8) -> Result<(), Error> {
        write_scalar(v, self.out)
    }
    fn serialize_u16(self, v: u16) -> Result<(), Error> {
        write_scalar(v, self.out)
    }
    fn serialize_u32(self, v: u32) -> Result<(), Error> {
        write_scalar(v, self.out)
    }
    fn serialize_u64(self, v: u64) -> Result<(), Error> {
        write_scalar(v, self.out)
    }
    fn serialize_u128(self, v: u128) -> Result<(), Error> {
        match u64::try_from(v) {
            Ok(small) => write_scalar(small, self.out),
            Err(_) => Err(ser::Error::custom("number out of range")),
        }
    }
    fn serialize_f32(self, v: f32) -> Result<(), Error> {
        // A `Value` holds every float as f64, and prints it as one.
        write_scalar(f64::from(v), self.out)
    }
    fn serialize_f64(self, v: f64) -> Result<(), Error> {
        write_scalar(v, self.out)
    }
    fn serialize_char(self, v: char) -> Result<(), Error> {
        write_scalar(v, self.out)
    }
    fn serialize_str(self, v: &str) -> Result<(), Error> {
        write_str(self.out, v)
    }
    fn serialize_bytes(self, v: &[u8]) -> Result<(), Error> {
        // An array of numbers; sorting it as a list would keep its order.
        write_scalar(v, self.out)
    }
    fn serialize_none(self) -> Result<(), Error> {
        self.serialize_unit()
    }
    fn serialize_some<T: Serialize + ?Sized>(self, value: &T) -> Result<(), Error> {
        value.serialize(self)
    }
    fn serialize_unit(self) -> Result<(), Error> {
        self.out.extend_from_slice(b"null");
        Ok(())
    }
    fn serialize_unit_struct(self, _name: &'static str) -> Result<(), Error> {
        self.serialize_unit()
    }
    fn serialize_unit_variant(
        self,
        _name: &'static str,
        _index: u32,
        variant: &'static str,
    ) -> Result<(), Error> {
        self.serialize_str(variant)
    }
    fn serialize_newtype_struct<T: Serialize + ?Sized>(
        self,
        _name: &'static str,
        value: &T,
    ) -> Result<(), Error> {
        value.serialize(self)
    }
    fn serialize_newtype_variant<T: Serialize + ?Sized>(
        self,
        _name: &'static str,
        _index: u32,
        variant: &'static str,
        value: &T,
    ) -> Result<(), Error> {
        Tag { variant }.write(self.out, |out| value.serialize(Canonical { out }))
    }
    fn serialize_seq(self, len: Option<usize>) -> Result<ArrayWriter<'a>, Error> {
        Ok(ArrayWriter::new(self.out, None, len))
    }
    fn serialize_tuple(self, len: usize) -> Result<ArrayWriter<'a>, Error> {
        self.serialize_seq(Some(len))
    }
    fn serialize_tuple_struct(
        self,
        _name: &'static str,
        len: usize,
    ) -> Result<ArrayWriter<'a>, Error> {
        self.serialize_seq(Some(len))
    }
    fn serialize_tuple_variant(
        self,
        _name: &'static str,
        _index: u32,
        variant: &'static str,
        len: usize,
    ) -> Result<ArrayWriter<'a>, Error> {
        Ok(ArrayWriter::new(self.out, Some(Tag { variant }), Some(len)))
    }
    fn serialize_map(self, len: Option<usize>) -> Result<ObjectWriter<'a>, Error> {
        Ok(ObjectWriter::new(self.out, None, len))
    }
    fn serialize_struct(self, _name: &'static str, len: usize) -> Result<ObjectWriter<'a>, Error> {
        self.serialize_map(Some(len))
    }
    fn serialize_struct_variant(
        self,
        _name: &'static str,
        _index: u32,
        variant: &'static str,
        len: usize,
    ) -> Result<ObjectWriter<'a>, Error> {
        Ok(ObjectWriter::new(
            self.out,
            Some(Tag { variant }),
            Some(len),
        ))
    }
}

/// An array, buffered: its elements are written in order.
struct ArrayWriter<'a> {
    out: &'a mut Vec<u8>,
    tag: Option<Tag>,
    buffer: Vec<u8>,
    elements: Vec<Range<usize>>,
}

impl<'a> ArrayWriter<'a> {
    fn new(out: &'a mut Vec<u8>, tag: Option<Tag>, len: Option<usize>) -> Self {
        Self {
            out,
            tag,
            buffer: Vec::new(),
            elements: Vec::with_capacity(len.unwrap_or(0)),
        }
    }

    fn element<T: Serialize + ?Sized>(&mut self, value: &T) -> Result<(), Error> {
        let start = self.buffer.len();
        value.serialize(Canonical {
            out: &mut self.buffer,
        })?;
        self.elements.push(start..self.buffer.len());
        Ok(())
    }

    fn finish(self) -> Result<(), Error> {
        let (buffer, elements) = (&self.buffer, &self.elements);
        let body = |out: &mut Vec<u8>| {
            out.push(b'[');
            for (i, range) in elements.iter().enumerate() {
                if i > 0 {
                    out.push(b',');
                }
                out.extend_from_slice(&buffer[range.clone()]);
            }
            out.push(b']');
            Ok(())
        };
        match self.tag {
            Some(tag) => tag.write(self.out, body),
            None => body(self.out),
        }
    }
}

impl ser::SerializeSeq for ArrayWriter<'_> {
    type Ok = ();
    type Error = Error;
    fn serialize_element<T: Serialize + ?Sized>(&mut self, value: &T) -> Result<(), Error> {
        self.element(value)
    }
    fn end(self) -> Result<(), Error> {
        self.finish()
    }
}

impl ser::SerializeTuple for ArrayWriter<'_> {
    type Ok = ();
    type Error = Error;
    fn serialize_element<T: Serialize + ?Sized>(&mut self, value: &T) -> Result<(), Error> {
        self.element(value)
    }
    fn end(self) -> Result<(), Error> {
        self.finish()
    }
}

impl ser::SerializeTupleStruct for ArrayWriter<'_> {
    type Ok = ();
    type Error = Error;
    fn serialize_field<T: Serialize + ?Sized>(&mut self, value: &T) -> Result<(), Error> {
        self.element(value)
    }
    fn end(self) -> Result<(), Error> {
        self.finish()
    }
}

impl ser::SerializeTupleVariant for ArrayWriter<'_> {
    type Ok = ();
    type Error = Error;
    fn serialize_field<T: Serialize + ?Sized>(&mut self, value: &T) -> Result<(), Error> {
        self.element(value)
    }
    fn end(self) -> Result<(), Error> {
        self.finish()
    }
}

/// An object, buffered: entries are written as they come and emitted in
/// code unit order of their keys (the last of equal keys wins, as in a map).
struct ObjectWriter<'a> {
    out: &'a mut Vec<u8>,
    tag: Option<Tag>,
    buffer: Vec<u8>,
    entries: Vec<(Cow<'static, str>, Range<usize>)>,
    /// A map's key, waiting for its value.
    pending_key: Option<String>,
}

impl<'a> ObjectWriter<'a> {
    fn new(out: &'a mut Vec<u8>, tag: Option<Tag>, len: Option<usize>) -> Self {
        Self {
            out,
            tag,
            buffer: Vec::new(),
            entries: Vec::with_capacity(len.unwrap_or(0)),
            pending_key: None,
        }
    }

    fn entry<T: Serialize + ?Sized>(
        &mut self,
        key: Cow<'static, str>,
        value: &T,
    ) -> Result<(), Error> {
        let start = self.buffer.len();
        value.serialize(Canonical {
            out: &mut self.buffer,
        })?;
        self.entries.push((key, start..self.buffer.len()));
        Ok(())
    }

    fn finish(mut self) -> Result<(), Error> {
        // Stable, so of equal keys the last written is last.
        self.entries
            .sort_by(|(left, _), (right, _)| compare_code_units(left, right));
        let (buffer, entries) = (&self.buffer, &self.entries);
        let body = |out: &mut Vec<u8>| {
            out.push(b'{');
            let mut first = true;
            for (i, (key, range)) in entries.iter().enumerate() {
                if entries.get(i + 1).is_some_and(|(next, _)| next == key) {
                    continue;
                }
                if !first {
                    out.push(b',');
                }
                first = false;
                write_str(out, key)?;
                out.push(b':');
                out.extend_from_slice(&buffer[range.clone()]);
            }
            out.push(b'}');
            Ok(())
        };
        match self.tag {
            Some(tag) => tag.write(self.out, body),
            None => body(self.out),
        }
    }
}

impl ser::SerializeMap for ObjectWriter<'_> {
    type Ok = ();
    type Error = Error;
    fn serialize_key<T: Serialize + ?Sized>(&mut self, key: &T) -> Result<(), Error> {
        self.pending_key = Some(map_key(key)?);
        Ok(())
    }
    fn serialize_value<T: Serialize + ?Sized>(&mut self, value: &T) -> Result<(), Error> {
        let key = self
            .pending_key
            .take()
            .ok_or_else(|| <Error as ser::Error>::custom("map value without a key"))?;
        self.entry(Cow::Owned(key), value)
    }
    fn end(self) -> Result<(), Error> {
        self.finish()
    }
}

impl ser::SerializeStruct for ObjectWriter<'_> {
    type Ok = ();
    type Error = Error;
    fn serialize_field<T: Serialize + ?Sized>(
        &mut self,
        key: &'static str,
        value: &T,
    ) -> Result<(), Error> {
        self.entry(Cow::Borrowed(key), value)
    }
    fn end(self) -> Result<(), Error> {
        self.finish()
    }
}

impl ser::SerializeStructVariant for ObjectWriter<'_> {
    type Ok = ();
    type Error = Error;
    fn serialize_field<T: Serialize + ?Sized>(
        &mut self,
        key: &'static str,
        value: &T,
    ) -> Result<(), Error> {
        self.entry(Cow::Borrowed(key), value)
    }
    fn end(self) -> Result<(), Error> {
        self.finish()
    }
}
