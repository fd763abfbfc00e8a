//! Versioned JSON envelopes on disk (`{"schemaVersion": N, <field>: ...}`), with
//! quarantine: a file that does not parse, carries an unknown future version,
//! is too large or is not a regular file (a link, a FIFO) is renamed to
//! `<path>.invalid.<ms>` and the caller rebuilds from the default. Only the
//! newest [`KEEP_QUARANTINED`] copies of one file are kept, so a file that
//! keeps going bad cannot fill the disk.
//!
//! Every access goes through [`TrustedRoot`]: no link is followed below it.

use std::borrow::Borrow;
use std::collections::HashMap;
use std::ffi::OsStr;
use std::hash::Hash;
use std::io;
use std::path::Path;
use std::sync::Mutex;

use serde::de::{DeserializeOwned, IgnoredAny};
use serde::Serialize;
use serde_json::Value;

use super::safe_fs::{commit, Dir, FileRead, Staged, TrustedRoot};

/// Largest store file the addon reads; anything bigger is quarantined.
pub(crate) const MAX_STORE_FILE_BYTES: u64 = 10 * 1024 * 1024;
/// Quarantined copies kept per store file, newest first.
const KEEP_QUARANTINED: usize = 3;
/// The tag between a quarantined file's name and its time.
const QUARANTINE_TAG: &str = ".invalid.";

/// Result of reading a store file.
#[derive(Debug)]
pub(crate) enum Loaded<T> {
    /// No file at the path (never written, or removed).
    Missing,
    /// The file's content, parsed and of the expected schema.
    Found(T),
    /// The file was bad and has been moved aside ([`quarantine`]).
    Quarantined {
        /// Why it was moved.
        reason: String,
    },
}

/// Reads `path` as `{schemaVersion: version, <field>: T}`.
pub(crate) fn read_envelope<T: DeserializeOwned>(
    root: &TrustedRoot,
    path: &Path,
    version: u64,
    field: &str,
    now_ms: i64,
) -> io::Result<Loaded<T>> {
    read_versioned(root, path, now_ms, |bytes| {
        check_version(bytes, version).and_then(|()| decode_field(bytes, field))
    })
}

/// Reads a flat envelope `{schemaVersion: version, ...fields}` as `T` (the
/// version key is ignored by `T`).
pub(crate) fn read_flat_envelope<T: DeserializeOwned>(
    root: &TrustedRoot,
    path: &Path,
    version: u64,
    now_ms: i64,
) -> io::Result<Loaded<T>> {
    read_versioned(root, path, now_ms, |bytes| {
        check_version(bytes, version).and_then(|()| decode_flat(bytes))
    })
}

/// A store file's bytes and what they decoded to, kept by its reader so a
/// later read of the same bytes is answered with a copy of the value
/// instead of checking and decoding them again. Keyed by content, not by
/// a change stamp: no change to the file, however quick, can be missed.
#[derive(Debug)]
pub(crate) struct Decoded<T> {
    bytes: Vec<u8>,
    /// What the bytes decoded to (tests mark it to show a read reused it).
    pub(super) value: T,
}

impl<T> Decoded<T> {
    /// `value` kept as what `bytes` decode to: they must be the bytes a
    /// store wrote for it (so a later read of them answers with `value`).
    pub(crate) fn new(bytes: Vec<u8>, value: T) -> Self {
        Self { bytes, value }
    }

    /// The bytes and their value.
    pub(crate) fn into_parts(self) -> (Vec<u8>, T) {
        (self.bytes, self.value)
    }

    /// `last` itself when it was decoded from `bytes` (nothing copied),
    /// else `decode(bytes)` with a copy of the bytes.
    fn try_take_or<E>(
        last: Option<Self>,
        bytes: &[u8],
        decode: impl FnOnce(&[u8]) -> Result<T, E>,
    ) -> Result<Self, E> {
        match last.filter(|kept| kept.bytes == bytes) {
            Some(kept) => Ok(kept),
            None => Ok(Self {
                value: decode(bytes)?,
                bytes: bytes.to_vec(),
            }),
        }
    }
}

impl<T: Clone> Decoded<T> {
    /// `decode(bytes)`, or a copy of `last`'s value when `last` was decoded
    /// from these same bytes; `last` then keeps this decode.
    pub(crate) fn reuse_or(
        last: &mut Option<Self>,
        bytes: &[u8],
        decode: impl FnOnce(&[u8]) -> T,
    ) -> T {
        match Self::try_reuse_or(last, bytes, |bytes| {
            Ok::<T, std::convert::Infallible>(decode(bytes))
        }) {
            Ok(value) => value,
            Err(never) => match never {},
        }
    }

    /// [`Decoded::reuse_or`] for a decode that can fail: a failure is
    /// returned and `last` left as it was.
    pub(crate) fn try_reuse_or<E>(
        last: &mut Option<Self>,
        bytes: &[u8],
        decode: impl FnOnce(&[u8]) -> Result<T, E>,
    ) -> Result<T, E> {
        if bytes.len() > KEPT_FILE_BYTES {
            // Not kept (see [`KEPT_FILE_BYTES`]): no copy of the bytes either.
            return decode(bytes);
        }
        if let Some(kept) = last.as_ref().filter(|kept| kept.bytes == bytes) {
            return Ok(kept.value.clone());
        }
        let value = decode(bytes)?;
        *last = Some(Self {
            bytes: bytes.to_vec(),
            value: value.clone(),
        });
        Ok(value)
    }
}

/// Largest file whose decode is kept ([`Decoded`], [`KeptDecodes`]): a
/// file written bigger (by anyone: agents can write below the Claude root)
/// is decoded at every read instead of held in memory twice over.
pub(crate) const KEPT_FILE_BYTES: usize = 1024 * 1024;

/// The last decode of each of a store's files ([`Decoded`]), by key (a
/// path, a team), for at most `files` keys holding at most `bytes` of file
/// content, and files of up to [`KEPT_FILE_BYTES`]: past either bound the
/// kept ones are dropped, so the memory held stays bounded however many
/// files are read and however large agents write them.
#[derive(Debug)]
pub(crate) struct KeptDecodes<K, T> {
    kept: Mutex<Kept<K, T>>,
    files: usize,
    bytes: usize,
}

/// The kept decodes and the file bytes they hold.
#[derive(Debug)]
struct Kept<K, T> {
    decodes: HashMap<K, Decoded<T>>,
    bytes: usize,
}

impl<K: Eq + Hash, T> KeptDecodes<K, T> {
    /// Nothing kept yet; at most `files` files' decodes kept at once, of at
    /// most `bytes` file bytes in all.
    pub(crate) fn new(files: usize, bytes: usize) -> Self {
        Self {
            kept: Mutex::new(Kept {
                decodes: HashMap::new(),
                bytes: 0,
            }),
            files,
            bytes,
        }
    }

    /// The decode kept for `key`, taken out while a read or write uses it
    /// (a concurrent one decodes for itself).
    pub(crate) fn take<Q: Eq + Hash + ?Sized>(&self, key: &Q) -> Option<Decoded<T>>
    where
        K: Borrow<Q>,
    {
        let mut kept = self.lock();
        let taken = kept.decodes.remove(key);
        kept.bytes = kept
            .bytes
            .saturating_sub(taken.as_ref().map_or(0, |d| d.bytes.len()));
        taken
    }

    /// Keeps `decoded` (if any) as `key`'s.
    pub(crate) fn keep(&self, key: K, decoded: Option<Decoded<T>>) {
        let Some(decoded) = decoded.filter(|d| d.bytes.len() <= KEPT_FILE_BYTES.min(self.bytes))
        else {
            return;
        };
        let mut kept = self.lock();
        if let Some(replaced) = kept.decodes.remove(&key) {
            kept.bytes = kept.bytes.saturating_sub(replaced.bytes.len());
        }
        if kept.decodes.len() >= self.files || kept.bytes + decoded.bytes.len() > self.bytes {
            kept.decodes.clear();
            kept.bytes = 0;
        }
        kept.bytes += decoded.bytes.len();
        kept.decodes.insert(key, decoded);
    }

    /// `decode(bytes)` of `key`'s file, or a copy of the decode kept for
    /// it when that came from these same bytes; what is decoded is kept.
    pub(crate) fn reuse_or(&self, key: K, bytes: &[u8], decode: impl FnOnce(&[u8]) -> T) -> T
    where
        T: Clone,
    {
        let mut last = self.take(&key);
        let value = Decoded::reuse_or(&mut last, bytes, decode);
        self.keep(key, last);
        value
    }

    /// Forgets every kept decode.
    pub(crate) fn clear(&self) {
        let mut kept = self.lock();
        kept.decodes.clear();
        kept.bytes = 0;
    }

    /// How many decodes are kept.
    #[cfg(test)]
    pub(crate) fn len(&self) -> usize {
        self.lock().decodes.len()
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, Kept<K, T>> {
        // A decode that panicked left at most a stale entry, which the next
        // read's byte comparison replaces.
        self.kept.lock().unwrap_or_else(|e| e.into_inner())
    }
}

/// [`read_envelope`] answered from `last` when the file holds the bytes
/// `last` was decoded from; `last` then keeps what this read decoded.
pub(crate) fn read_envelope_reusing<T: DeserializeOwned + Clone>(
    root: &TrustedRoot,
    path: &Path,
    version: u64,
    field: &str,
    now_ms: i64,
    last: &mut Option<Decoded<T>>,
) -> io::Result<Loaded<T>> {
    read_versioned(root, path, now_ms, |bytes| {
        Decoded::try_reuse_or(last, bytes, |bytes| {
            check_version(bytes, version).and_then(|()| decode_field(bytes, field))
        })
    })
}

/// [`read_flat_envelope`] answered from `last` when the file holds the bytes
/// `last` was decoded from; `last` then keeps what this read decoded.
pub(crate) fn read_flat_envelope_reusing<T: DeserializeOwned + Clone>(
    root: &TrustedRoot,
    path: &Path,
    version: u64,
    now_ms: i64,
    last: &mut Option<Decoded<T>>,
) -> io::Result<Loaded<T>> {
    read_versioned(root, path, now_ms, |bytes| {
        Decoded::try_reuse_or(last, bytes, |bytes| {
            check_version(bytes, version).and_then(|()| decode_flat(bytes))
        })
    })
}

/// [`read_envelope_reusing`] for a read that consumes what it read: `last`
/// itself is answered (not a copy of its value) when the file holds its
/// bytes; nothing is kept.
pub(crate) fn read_envelope_taking<T: DeserializeOwned>(
    root: &TrustedRoot,
    path: &Path,
    version: u64,
    field: &str,
    now_ms: i64,
    last: Option<Decoded<T>>,
) -> io::Result<Loaded<T>> {
    read_versioned(root, path, now_ms, |bytes| {
        Decoded::try_take_or(last, bytes, |bytes| {
            check_version(bytes, version).and_then(|()| decode_field(bytes, field))
        })
        .map(|decoded| decoded.value)
    })
}

/// [`read_flat_envelope_reusing`] for a read that changes what it read:
/// `last` itself is answered (not a copy of its value) when the file holds
/// its bytes, and what was read comes with its bytes, so that an unchanged
/// value can be kept again ([`KeptDecodes::keep`]) without a copy.
pub(crate) fn read_flat_envelope_taking<T: DeserializeOwned>(
    root: &TrustedRoot,
    path: &Path,
    version: u64,
    now_ms: i64,
    last: Option<Decoded<T>>,
) -> io::Result<Loaded<Decoded<T>>> {
    read_versioned(root, path, now_ms, |bytes| {
        Decoded::try_take_or(last, bytes, |bytes| {
            check_version(bytes, version).and_then(|()| decode_flat(bytes))
        })
    })
}

/// Reads, checks `schemaVersion` and decodes; anything bad is quarantined.
///
/// A link or FIFO in place of a store file is moved aside unopened (reason
/// `not_a_file`): store files are the addon's own and never point elsewhere.
fn read_versioned<T>(
    root: &TrustedRoot,
    path: &Path,
    now_ms: i64,
    decode: impl FnOnce(&[u8]) -> Result<T, String>,
) -> io::Result<Loaded<T>> {
    Ok(match inspect(root, path, decode)? {
        Peeked::Missing => Loaded::Missing,
        Peeked::Found(value) => Loaded::Found(value),
        Peeked::Unusable { reason } => {
            quarantine(root, path, now_ms)?;
            Loaded::Quarantined { reason }
        }
    })
}

/// What [`peek_envelope`] found: like [`Loaded`], but a bad file is only
/// described, never moved.
#[derive(Debug)]
pub(crate) enum Peeked<T> {
    /// No file at the path (never written, or removed).
    Missing,
    /// The file's content, parsed and of the expected schema.
    Found(T),
    /// The file is bad; a writing read would quarantine it for this reason.
    Unusable {
        /// Why (`invalid_json`, `not_a_file`, ...).
        reason: String,
    },
}

/// [`read_envelope`] without side effects: a bad file is reported as
/// [`Peeked::Unusable`] and left where it is (operators' read-only views).
pub(crate) fn peek_envelope<T: DeserializeOwned>(
    root: &TrustedRoot,
    path: &Path,
    version: u64,
    field: &str,
) -> io::Result<Peeked<T>> {
    inspect(root, path, |bytes| {
        check_version(bytes, version).and_then(|()| decode_field(bytes, field))
    })
}

/// [`read_flat_envelope`] without side effects, as [`peek_envelope`] is to
/// [`read_envelope`].
pub(crate) fn peek_flat_envelope<T: DeserializeOwned>(
    root: &TrustedRoot,
    path: &Path,
    version: u64,
) -> io::Result<Peeked<T>> {
    inspect(root, path, |bytes| {
        check_version(bytes, version).and_then(|()| decode_flat(bytes))
    })
}

/// [`peek_flat_envelope`] answered from `last` itself (not a copy of its
/// value) when the file holds the bytes `last` was decoded from; what was
/// read comes with its bytes, so that it can be kept again
/// ([`KeptDecodes::keep`]) without a copy.
pub(crate) fn peek_flat_envelope_taking<T: DeserializeOwned>(
    root: &TrustedRoot,
    path: &Path,
    version: u64,
    last: Option<Decoded<T>>,
) -> io::Result<Peeked<Decoded<T>>> {
    inspect(root, path, |bytes| {
        Decoded::try_take_or(last, bytes, |bytes| {
            check_version(bytes, version).and_then(|()| decode_flat(bytes))
        })
    })
}

/// Reads and decodes (`decode` checks `schemaVersion` first), moving
/// nothing: the one read behind both the quarantining and the read-only
/// views.
fn inspect<T>(
    root: &TrustedRoot,
    path: &Path,
    decode: impl FnOnce(&[u8]) -> Result<T, String>,
) -> io::Result<Peeked<T>> {
    let read = match root.read_swapped(path, MAX_STORE_FILE_BYTES) {
        // A file the app may not read (mode 000) would fail every call for
        // good; like a corrupt one it is unusable (and moved aside by a
        // writing read).
        Err(e) if e.kind() == io::ErrorKind::PermissionDenied => {
            return Ok(Peeked::Unusable {
                reason: "unreadable".into(),
            })
        }
        read => read?,
    };
    let parsed = match read {
        FileRead::Missing => return Ok(Peeked::Missing),
        FileRead::NotAFile => Err("not_a_file".to_string()),
        FileRead::TooLarge => Err("file_too_large".to_string()),
        FileRead::Bytes(bytes) => decode(&bytes),
    };
    Ok(match parsed {
        Ok(value) => Peeked::Found(value),
        Err(reason) => Peeked::Unusable { reason },
    })
}

/// Checks that `bytes` are one JSON document whose top-level
/// `schemaVersion` is `version`, without building the document: the
/// checks and their order are those of parsing it into a `Value` and
/// reading the key (a syntax error first, then the version; the last of
/// duplicate keys counts).
fn check_version(bytes: &[u8], version: u64) -> Result<(), String> {
    // Only an object carries a version; any other document need only parse.
    let is_object = bytes.iter().find(|b| !b" \t\n\r".contains(b)) == Some(&b'{');
    let found = if is_object {
        serde_json::from_slice::<VersionProbe>(bytes).map(|probe| probe.0)
    } else {
        serde_json::from_slice::<Skipped>(bytes).map(|_| None)
    }
    .map_err(|_| "invalid_json".to_string())?;
    match found {
        Some(v) if v == version => Ok(()),
        Some(v) if v > version => Err(format!("future_schema_version:{v}")),
        _ => Err("unsupported_schema_version".to_string()),
    }
}

/// `T` from a checked flat envelope, decoded straight from the bytes.
fn decode_flat<T: DeserializeOwned>(bytes: &[u8]) -> Result<T, String> {
    serde_json::from_slice(bytes).map_err(|e| decode_failure(&e))
}

/// `T` from the `field` of a checked envelope, decoded straight from the
/// bytes (the other keys are skipped unbuilt); a missing field decodes as
/// `null`, the last of duplicate fields counts.
fn decode_field<T: DeserializeOwned>(bytes: &[u8], field: &str) -> Result<T, String> {
    let mut de = serde_json::Deserializer::from_slice(bytes);
    let found = serde::de::DeserializeSeed::deserialize(FieldOf::<T>::new(field), &mut de)
        .and_then(|found| de.end().map(|()| found))
        .map_err(|e| decode_failure(&e))?;
    match found {
        Some(value) => Ok(value),
        None => T::deserialize(Value::Null).map_err(|_| "invalid_shape".to_string()),
    }
}

/// The reason a checked document did not decode: it parsed as JSON, so a
/// failure is its shape, unless it nests deeper than a typed parse
/// allows (a syntax-class error, as a parse into `Value` reports it).
fn decode_failure(error: &serde_json::Error) -> String {
    match error.classify() {
        serde_json::error::Category::Syntax | serde_json::error::Category::Eof => {
            "invalid_json".to_string()
        }
        _ => "invalid_shape".to_string(),
    }
}

/// The top-level `schemaVersion` of an object as `Value::as_u64` reads it
/// (`None`: no such key, or not a non-negative integer).
struct VersionProbe(Option<u64>);

impl<'de> serde::Deserialize<'de> for VersionProbe {
    fn deserialize<D: serde::Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        deserializer.deserialize_map(VersionProbe(None))
    }
}

/// Its own visitor: reads `schemaVersion` and walks past every other key.
impl<'de> serde::de::Visitor<'de> for VersionProbe {
    type Value = VersionProbe;

    fn expecting(&self, f: &mut std::fmt::Formatter) -> std::fmt::Result {
        f.write_str("a JSON object")
    }

    fn visit_map<A: serde::de::MapAccess<'de>>(self, mut map: A) -> Result<VersionProbe, A::Error> {
        let mut version = None;
        while let Some(key) = map.next_key::<std::borrow::Cow<'de, str>>()? {
            if key == "schemaVersion" {
                version = map.next_value::<Value>()?.as_u64();
            } else {
                map.next_value::<Skipped>()?;
            }
        }
        Ok(VersionProbe(version))
    }
}

/// A value walked and dropped through `deserialize_any`, so that nesting
/// counts against the parser's depth limit as it does for a `Value`
/// (`IgnoredAny` skips without that limit).
struct Skipped;

impl<'de> serde::Deserialize<'de> for Skipped {
    fn deserialize<D: serde::Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        deserializer.deserialize_any(Skipped)
    }
}

/// Its own visitor: accepts every JSON value, walking into arrays and objects.
impl<'de> serde::de::Visitor<'de> for Skipped {
    type Value = Skipped;

    fn expecting(&self, f: &mut std::fmt::Formatter) -> std::fmt::Result {
        f.write_str("any JSON value")
    }

    fn visit_map<A: serde::de::MapAccess<'de>>(self, mut map: A) -> Result<Skipped, A::Error> {
        while map.next_entry::<IgnoredAny, Skipped>()?.is_some() {}
        Ok(Skipped)
    }

    fn visit_seq<A: serde::de::SeqAccess<'de>>(self, mut seq: A) -> Result<Skipped, A::Error> {
        while seq.next_element::<Skipped>()?.is_some() {}
        Ok(Skipped)
    }

    fn visit_bool<E>(self, _: bool) -> Result<Skipped, E> {
        Ok(Skipped)
    }

    fn visit_i64<E>(self, _: i64) -> Result<Skipped, E> {
        Ok(Skipped)
    }

    fn visit_u64<E>(self, _: u64) -> Result<Skipped, E> {
        Ok(Skipped)
    }

    fn visit_f64<E>(self, _: f64) -> Result<Skipped, E> {
        Ok(Skipped)
    }

    fn visit_str<E>(self, _: &str) -> Result<Skipped, E> {
        Ok(Skipped)
    }

    fn visit_unit<E>(self) -> Result<Skipped, E> {
        Ok(Skipped)
    }
}

/// Decodes the value of one key of the top-level object as `T`.
struct FieldOf<'f, T> {
    field: &'f str,
    decoded: std::marker::PhantomData<T>,
}

impl<'f, T> FieldOf<'f, T> {
    fn new(field: &'f str) -> Self {
        Self {
            field,
            decoded: std::marker::PhantomData,
        }
    }
}

impl<'de, T: DeserializeOwned> serde::de::DeserializeSeed<'de> for FieldOf<'_, T> {
    type Value = Option<T>;

    fn deserialize<D: serde::Deserializer<'de>>(
        self,
        deserializer: D,
    ) -> Result<Option<T>, D::Error> {
        deserializer.deserialize_map(self)
    }
}

impl<'de, T: DeserializeOwned> serde::de::Visitor<'de> for FieldOf<'_, T> {
    type Value = Option<T>;

    fn expecting(&self, f: &mut std::fmt::Formatter) -> std::fmt::Result {
        write!(f, "an object with `{}`", self.field)
    }

    fn visit_map<A: serde::de::MapAccess<'de>>(self, mut map: A) -> Result<Option<T>, A::Error> {
        let mut found = None;
        while let Some(key) = map.next_key::<std::borrow::Cow<'de, str>>()? {
            if key == self.field {
                found = Some(map.next_value::<T>()?);
            } else {
                map.next_value::<IgnoredAny>()?;
            }
        }
        Ok(found)
    }
}

/// A flat envelope on its way out: `schemaVersion`, then `fields`' own keys.
#[derive(Serialize)]
struct FlatEnvelope<'a, T: Serialize> {
    #[serde(rename = "schemaVersion")]
    schema_version: u64,
    #[serde(flatten)]
    fields: &'a T,
}

/// An envelope on its way out: `schemaVersion`, then `field` holding `value`.
struct FieldEnvelope<'a, T: Serialize> {
    schema_version: u64,
    field: &'a str,
    value: &'a T,
}

impl<T: Serialize> Serialize for FieldEnvelope<'_, T> {
    fn serialize<S: serde::Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        use serde::ser::SerializeMap;
        let mut map = serializer.serialize_map(Some(2))?;
        map.serialize_entry("schemaVersion", &self.schema_version)?;
        map.serialize_entry(self.field, self.value)?;
        map.end()
    }
}

/// Writes a flat envelope: `value`'s fields beside `schemaVersion`.
pub(crate) fn write_flat_envelope<T: Serialize>(
    root: &TrustedRoot,
    path: &Path,
    version: u64,
    value: &T,
) -> io::Result<()> {
    let envelope = FlatEnvelope {
        schema_version: version,
        fields: value,
    };
    write_text(root, path, &render_json(path, &envelope)?)
}

/// [`write_flat_envelope`] for a derived view that replaces a file already
/// there: still a temp file and a rename (a reader sees the old content or
/// the new), but nothing is synced. For files rebuilt from durable ones
/// whenever missing or unusable, where a power cut losing the replacement
/// (or leaving it torn) costs a rebuild and loses no state. A file not yet
/// there is written durably: its existence may be what a reader looks for.
/// Returns the bytes written (to keep with `value`, [`Decoded::new`]).
pub(crate) fn replace_flat_view<T: Serialize>(
    root: &TrustedRoot,
    path: &Path,
    version: u64,
    value: &T,
) -> io::Result<Vec<u8>> {
    let envelope = FlatEnvelope {
        schema_version: version,
        fields: value,
    };
    let text = render_json(path, &envelope)?;
    match (path.parent(), path.file_name()) {
        (Some(dir), Some(name)) => match root.open_dir(dir)? {
            Some(folder) if folder.meta(name)?.is_some() => folder
                .stage_swapping(name, text.as_bytes(), 0o644)?
                .publish()?,
            _ => write_text(root, path, &text)?,
        },
        // Not a store file path: refused with its message.
        _ => write_text(root, path, &text)?,
    }
    Ok(text.into_bytes())
}

/// Writes `{schemaVersion: version, <field>: value}` atomically, pretty-printed like the app;
/// returns the bytes written (to keep with `value`, [`Decoded::new`]).
pub(crate) fn write_envelope<T: Serialize>(
    root: &TrustedRoot,
    path: &Path,
    version: u64,
    field: &str,
    value: &T,
) -> io::Result<Vec<u8>> {
    let text = render_envelope(path, version, field, value)?;
    write_text(root, path, &text)?;
    Ok(text.into_bytes())
}

/// `{schemaVersion: version, <field>: value}` as [`write_envelope`] writes
/// it ([`render_json`]).
pub(crate) fn render_envelope<T: Serialize>(
    path: &Path,
    version: u64,
    field: &str,
    value: &T,
) -> io::Result<String> {
    let envelope = FieldEnvelope {
        schema_version: version,
        field,
        value,
    };
    render_json(path, &envelope)
}

/// Writes any JSON value atomically as `JSON.stringify(v, null, 2) + "\n"`.
/// A value too large to be read back ([`MAX_STORE_FILE_BYTES`]) is refused
/// and the file left as it was: written, it would be quarantined by the next
/// read and take the valid state before it along.
pub(crate) fn write_json<T: Serialize + ?Sized>(
    root: &TrustedRoot,
    path: &Path,
    value: &T,
) -> io::Result<()> {
    let text = render_json(path, value)?;
    root.write_atomic(path, text.as_bytes())
}

/// `text` (`value` rendered, [`render_json`]) staged beside `path` for a
/// group commit ([`safe_fs::commit`]), `value` kept with it in `last`, so
/// once they are committed a read through [`read_envelope_reusing`] or
/// [`read_flat_envelope_reusing`] answers from it.
///
/// [`safe_fs::commit`]: super::safe_fs::commit
pub(crate) fn stage_kept<T>(
    root: &TrustedRoot,
    path: &Path,
    text: String,
    value: T,
    last: &mut Option<Decoded<T>>,
) -> io::Result<Staged> {
    let staged = stage_text(root, path, &text)?;
    *last = Some(Decoded {
        bytes: text.into_bytes(),
        value,
    });
    Ok(staged)
}

/// `text` made `path`'s content durably: staged and committed alone.
pub(crate) fn write_text(root: &TrustedRoot, path: &Path, text: &str) -> io::Result<()> {
    commit(vec![stage_text(root, path, text)?])
}

/// `text` staged beside `path`.
fn stage_text(root: &TrustedRoot, path: &Path, text: &str) -> io::Result<Staged> {
    let (Some(dir), Some(name)) = (path.parent(), path.file_name()) else {
        return Err(io::Error::new(
            io::ErrorKind::InvalidInput,
            format!("{}: not a store file path", path.display()),
        ));
    };
    root.create_dir_all(dir)?
        .stage_swapping(name, text.as_bytes(), 0o644)
}

/// `JSON.stringify(v, null, 2) + "\n"`, refused past [`MAX_STORE_FILE_BYTES`].
pub(crate) fn render_json<T: Serialize + ?Sized>(path: &Path, value: &T) -> io::Result<String> {
    let mut text = serde_json::to_string_pretty(value).map_err(io::Error::other)?;
    text.push('\n');
    if text.len() as u64 > MAX_STORE_FILE_BYTES {
        return Err(io::Error::new(
            io::ErrorKind::InvalidData,
            format!(
                "{}: {} bytes is more than a store file may hold ({MAX_STORE_FILE_BYTES}); not written",
                path.display(),
                text.len()
            ),
        ));
    }
    Ok(text)
}

/// Renames a bad file to `<path>.invalid.<ms>` (never through a link: the
/// entry itself moves) and drops all but the newest [`KEEP_QUARANTINED`]
/// copies of that file.
pub(crate) fn quarantine(root: &TrustedRoot, path: &Path, now_ms: i64) -> io::Result<()> {
    let (Some(dir_path), Some(name)) = (path.parent(), path.file_name().and_then(OsStr::to_str))
    else {
        return Err(io::Error::new(
            io::ErrorKind::InvalidInput,
            format!("{}: not a store file path", path.display()),
        ));
    };
    let dir = root.create_dir_all(dir_path)?;
    quarantine_in(&dir, name, now_ms).map(drop)
}

/// [`quarantine`] of the entry `name` of the open folder `dir` (a file, a
/// link, a folder: the entry itself is renamed); returns the name it got.
pub(crate) fn quarantine_in(dir: &Dir, name: &str, now_ms: i64) -> io::Result<String> {
    let mut n = 0;
    let target = loop {
        let target = match n {
            0 => format!("{name}{QUARANTINE_TAG}{now_ms}"),
            n => format!("{name}{QUARANTINE_TAG}{now_ms}-{n}"),
        };
        if dir.rename(name, dir, &target, false)? {
            break target;
        }
        if dir.meta(name)?.is_none() {
            // Someone else moved it first: nothing left to quarantine.
            break target;
        }
        n += 1;
    };
    prune_quarantined(dir, name);
    Ok(target)
}

/// Keeps the newest [`KEEP_QUARANTINED`] quarantined copies of `name`. Best
/// effort: a copy that cannot be removed now is removed by a later quarantine.
fn prune_quarantined(dir: &Dir, name: &str) {
    let Ok(entries) = dir.entries() else {
        return;
    };
    let prefix = format!("{name}{QUARANTINE_TAG}");
    let mut copies: Vec<((i64, u32), String)> = entries
        .into_iter()
        .filter_map(|entry| {
            let stamp = entry.name.strip_prefix(&prefix)?;
            let (ms, n) = stamp.split_once('-').unwrap_or((stamp, "0"));
            Some(((ms.parse().ok()?, n.parse().ok()?), entry.name))
        })
        .collect();
    copies.sort_unstable_by(|a, b| b.cmp(a));
    for (_, old) in copies.into_iter().skip(KEEP_QUARANTINED) {
        let _ = dir.remove_tree(&old);
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::fs;

    fn store() -> (tempfile::TempDir, TrustedRoot, std::path::PathBuf) {
        let dir = tempfile::tempdir().unwrap();
        let root = TrustedRoot::new(dir.path());
        let path = dir.path().join("s.json");
        (dir, root, path)
    }

    #[test]
    fn round_trip() {
        let (_dir, root, path) = store();
        write_envelope(&root, &path, 2, "status", &serde_json::json!({"a": 1})).unwrap();
        let text = fs::read_to_string(&path).unwrap();
        assert!(
            text.starts_with("{\n  \"schemaVersion\": 2,") && text.ends_with("}\n"),
            "{text}"
        );
        let loaded: Loaded<Value> = read_envelope(&root, &path, 2, "status", 5).unwrap();
        assert!(matches!(loaded, Loaded::Found(v) if v["a"] == 1));
    }

    #[test]
    fn peeking_reports_bad_files_and_leaves_them_in_place() {
        let (dir, root, path) = store();
        let peek = |root: &TrustedRoot| peek_envelope::<Value>(root, &path, 2, "status").unwrap();
        assert!(matches!(peek(&root), Peeked::Missing));
        for (content, reason) in [
            (&b"{not json"[..], "invalid_json"),
            (
                br#"{"schemaVersion":3,"status":{}}"#,
                "future_schema_version:3",
            ),
            (br#"{"schemaVersion":2,"status":{"a":1}}"#, ""),
        ] {
            fs::write(&path, content).unwrap();
            match peek(&root) {
                Peeked::Unusable { reason: found } => assert_eq!(found, reason),
                Peeked::Found(value) => assert!(reason.is_empty() && value["a"] == 1),
                Peeked::Missing => panic!("file vanished"),
            }
            assert_eq!(fs::read(&path).unwrap(), content);
            assert_eq!(fs::read_dir(dir.path()).unwrap().count(), 1);
        }
    }

    #[test]
    fn corrupt_and_future_files_are_quarantined_not_deleted() {
        let (dir, root, path) = store();
        for (content, reason) in [
            (&b"{not json"[..], "invalid_json"),
            (
                br#"{"schemaVersion":3,"status":{}}"#,
                "future_schema_version:3",
            ),
            (br#"{"schemaVersion":2,"status":"nope"}"#, "invalid_shape"),
        ] {
            fs::write(&path, content).unwrap();
            let loaded: Loaded<std::collections::BTreeMap<String, u8>> =
                read_envelope(&root, &path, 2, "status", 42).unwrap();
            let Loaded::Quarantined { reason: got } = loaded else {
                panic!("not quarantined: {reason}")
            };
            assert_eq!(got, reason);
            assert!(!path.exists());
            let kept = fs::read_dir(dir.path())
                .unwrap()
                .map(|entry| entry.unwrap().path())
                .filter(|moved| moved.to_string_lossy().contains("s.json.invalid.42"))
                .any(|moved| fs::read(moved).unwrap() == content);
            assert!(kept, "the bad bytes kept beside the store file");
        }
        assert_eq!(
            fs::read_dir(dir.path()).unwrap().count(),
            3,
            "every bad file kept"
        );
    }

    /// The direct decode answers what parsing into a `Value`, reading
    /// `schemaVersion` and converting the rest did: the same reasons in the
    /// same order, the same values.
    #[test]
    fn decoding_answers_as_the_value_round_trip_did() {
        type Map = std::collections::BTreeMap<String, u8>;
        /// What a document should decode to: `Ok(None)` for an empty map.
        type Expected = Result<Option<Map>, &'static str>;
        let deep = format!(
            "{{\"schemaVersion\":2,\"status\":{}{}}}",
            "[".repeat(200),
            "]".repeat(200)
        );
        let cases: [(&[u8], Expected); 12] = [
            (
                br#"{"schemaVersion":2,"status":{"a":1}}"#,
                Ok(Some(Map::from([("a".into(), 1)]))),
            ),
            // The last of duplicate keys counts, as in a `Value`.
            (
                br#"{"schemaVersion":3,"schemaVersion":2,"status":{"a":1},"status":{"b":2}}"#,
                Ok(Some(Map::from([("b".into(), 2)]))),
            ),
            (br#"{"schemaVersion":2}"#, Err("invalid_shape")),
            (
                br#"{"schemaVersion":2,"status":{"a":1}} x"#,
                Err("invalid_json"),
            ),
            (
                br#"[1, {"schemaVersion":2}]"#,
                Err("unsupported_schema_version"),
            ),
            (br#""text""#, Err("unsupported_schema_version")),
            (
                br#"{"schemaVersion":2.0,"status":{}}"#,
                Err("unsupported_schema_version"),
            ),
            (
                br#"{"schemaVersion":-2,"status":{}}"#,
                Err("unsupported_schema_version"),
            ),
            (
                br#"{"schemaVersion":"2","status":{}}"#,
                Err("unsupported_schema_version"),
            ),
            (
                br#"{"schemaVersion":7,"status":{}}"#,
                Err("future_schema_version:7"),
            ),
            (
                br#"{"schemaVersion":2,"status":{"a":300}}"#,
                Err("invalid_shape"),
            ),
            (deep.as_bytes(), Err("invalid_json")),
        ];
        for (bytes, expected) in cases {
            let got = check_version(bytes, 2).and_then(|()| decode_field::<Map>(bytes, "status"));
            let expected = expected
                .map(|m| m.unwrap_or_default())
                .map_err(str::to_string);
            assert_eq!(got, expected, "{}", String::from_utf8_lossy(bytes));
        }
        // A missing field decodes from `null`: fine for an `Option`.
        assert_eq!(
            decode_field::<Option<u8>>(br#"{"schemaVersion":2}"#, "status"),
            Ok(None)
        );
    }

    #[test]
    fn kept_decodes_hold_at_most_their_bounds_of_files_and_bytes_and_no_large_one() {
        let kept = KeptDecodes::new(2, 2 * KEPT_FILE_BYTES);
        let decoded = |len: usize| {
            Some(Decoded {
                bytes: vec![b' '; len],
                value: len,
            })
        };
        kept.keep("a", decoded(1));
        kept.keep("b", decoded(KEPT_FILE_BYTES));
        kept.keep("c", decoded(KEPT_FILE_BYTES + 1));
        assert_eq!(kept.take("c").map(|d| d.value), None, "too large");
        assert_eq!(kept.take("b").map(|d| d.value), Some(KEPT_FILE_BYTES));
        kept.keep("b", decoded(2));
        // A third file drops the two kept before it.
        kept.keep("d", decoded(3));
        assert!(kept.take("a").is_none() && kept.take("b").is_none());
        assert_eq!(kept.take("d").map(|d| d.value), Some(3));
        assert!(kept.take("d").is_none(), "taken out");

        // The byte bound: files that would hold more than it in all drop
        // the kept ones; a file larger than it is never kept.
        let kept = KeptDecodes::new(8, 10);
        kept.keep("a", decoded(4));
        kept.keep("b", decoded(4));
        kept.keep("b", decoded(6)); // replaces b's 4 bytes: 10 in all
        assert_eq!(kept.len(), 2);
        kept.keep("c", decoded(1));
        assert_eq!(kept.len(), 1, "11 bytes would be past the bound");
        assert_eq!(kept.take("c").map(|d| d.value), Some(1));
        kept.keep("a", decoded(4));
        kept.keep("e", decoded(11));
        assert_eq!(
            kept.take("e").map(|d| d.value),
            None,
            "larger than the bound"
        );
        assert_eq!(kept.take("a").map(|d| d.value), Some(4));
        // Taking out frees its bytes.
        kept.keep("f", decoded(10));
        assert_eq!(kept.take("f").map(|d| d.value), Some(10));
    }

    #[test]
    fn a_kept_decode_answers_only_for_the_bytes_it_came_from() {
        let (_dir, root, path) = store();
        let read = |last: &mut Option<Decoded<Value>>| match read_flat_envelope_reusing::<Value>(
            &root, &path, 2, 5, last,
        )
        .unwrap()
        {
            Loaded::Found(value) => value["a"].clone(),
            Loaded::Missing => Value::from("missing"),
            Loaded::Quarantined { reason, .. } => Value::from(reason),
        };
        let staged = |value: Value, last: &mut Option<Decoded<Value>>| {
            let envelope = FlatEnvelope {
                schema_version: 2,
                fields: &value,
            };
            let text = render_json(&path, &envelope).unwrap();
            let staged = stage_kept(&root, &path, text, value, last).unwrap();
            super::super::safe_fs::commit(vec![staged]).unwrap();
        };
        let mut last = None;
        staged(serde_json::json!({"a": 1}), &mut last);
        // Kept from the write: the same bytes on disk answer with the kept
        // value (marked here, to show no decode happened).
        let written = fs::read(&path).unwrap();
        last = Some(Decoded {
            bytes: written.clone(),
            value: serde_json::json!({"a": "kept"}),
        });
        assert_eq!(read(&mut last), "kept");
        // Other bytes of the same length, written in place at once (the same
        // stamp tick): decoded, and kept in turn.
        fs::write(&path, String::from_utf8(written).unwrap().replace('1', "2")).unwrap();
        assert_eq!(read(&mut last), 2);
        assert_eq!(read(&mut last), 2);
        fs::write(&path, b"{not json").unwrap();
        assert_eq!(read(&mut last), "invalid_json");
        assert_eq!(read(&mut last), "missing");
    }

    /// The envelopes render byte for byte as the `Value` they replace did.
    #[test]
    fn envelopes_render_as_the_value_they_replace() {
        #[derive(Serialize)]
        #[serde(rename_all = "camelCase")]
        struct Body {
            zeta: u64,
            alpha: Vec<f64>,
            #[serde(skip_serializing_if = "Option::is_none")]
            missing: Option<String>,
            nested: std::collections::BTreeMap<String, Option<bool>>,
            text: String,
        }
        let body = Body {
            zeta: u64::MAX,
            alpha: vec![0.1, -2.5e-7, 1e21],
            missing: None,
            nested: [("b".to_string(), Some(true)), ("a".to_string(), None)].into(),
            text: "quote \" and \u{2028} and é".into(),
        };
        let mut flat = serde_json::Map::new();
        flat.insert("schemaVersion".into(), Value::from(2));
        if let Value::Object(fields) = serde_json::to_value(&body).unwrap() {
            flat.extend(fields);
        }
        let direct = FlatEnvelope {
            schema_version: 2,
            fields: &body,
        };
        assert_eq!(
            render_json(Path::new("f"), &direct).unwrap(),
            render_json(Path::new("f"), &Value::Object(flat)).unwrap()
        );
        let field = serde_json::json!({"schemaVersion": 2, "status": &body});
        let direct = FieldEnvelope {
            schema_version: 2,
            field: "status",
            value: &body,
        };
        assert_eq!(
            render_json(Path::new("f"), &direct).unwrap(),
            render_json(Path::new("f"), &field).unwrap()
        );
    }

    #[test]
    fn only_the_newest_quarantined_copies_are_kept() {
        let (dir, root, path) = store();
        for ms in 1..=10 {
            fs::write(&path, vec![b'x'; 64]).unwrap();
            let loaded: Loaded<Value> = read_envelope(&root, &path, 2, "status", ms).unwrap();
            assert!(matches!(loaded, Loaded::Quarantined { .. }));
        }
        let mut left: Vec<String> = fs::read_dir(dir.path())
            .unwrap()
            .map(|e| e.unwrap().file_name().into_string().unwrap())
            .collect();
        left.sort();
        assert_eq!(
            left,
            ["s.json.invalid.10", "s.json.invalid.8", "s.json.invalid.9"]
        );
    }

    #[test]
    fn a_fifo_store_file_is_moved_aside_unopened() {
        let (dir, root, path) = store();
        crate::infrastructure::safe_fs::mkfifo(&path);
        let loaded: Loaded<Value> = read_envelope(&root, &path, 2, "status", 7).unwrap();
        assert!(
            matches!(&loaded, Loaded::Quarantined { reason, .. } if reason == "not_a_file"),
            "{loaded:?}"
        );
        assert!(dir.path().join("s.json.invalid.7").exists());
    }

    #[test]
    fn a_linked_store_folder_is_never_written_through() {
        let (dir, root, _) = store();
        let outside = dir.path().join("outside");
        fs::create_dir_all(&outside).unwrap();
        std::os::unix::fs::symlink(&outside, dir.path().join("members")).unwrap();
        let path = dir.path().join("members/jack/status.json");
        let error = write_envelope(&root, &path, 2, "status", &1).unwrap_err();
        assert_eq!(error.kind(), io::ErrorKind::NotADirectory);
        assert!(error.to_string().contains("members"), "{error}");
        assert_eq!(fs::read_dir(&outside).unwrap().count(), 0);
    }

    #[test]
    fn a_value_too_large_to_read_back_is_not_written() {
        let (_dir, root, path) = store();
        write_envelope(&root, &path, 2, "status", &"small").unwrap();
        let huge = "x".repeat(MAX_STORE_FILE_BYTES as usize);
        let error = write_envelope(&root, &path, 2, "status", &huge).unwrap_err();
        assert_eq!(error.kind(), io::ErrorKind::InvalidData);
        assert!(error.to_string().contains("s.json"), "{error}");
        let loaded: Loaded<String> = read_envelope(&root, &path, 2, "status", 1).unwrap();
        assert!(matches!(loaded, Loaded::Found(s) if s == "small"));
    }

    #[test]
    fn missing_file() {
        let (dir, root, _) = store();
        let loaded: Loaded<Value> =
            read_envelope(&root, &dir.path().join("none.json"), 2, "status", 1).unwrap();
        assert!(matches!(loaded, Loaded::Missing));
    }
}
