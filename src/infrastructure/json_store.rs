//! Versioned JSON envelopes on disk (`{"schemaVersion": N, <field>: ...}`), with
//! quarantine: a file that does not parse, or carries an unknown future
//! version, is renamed to `<path>.invalid.<ms>` (never deleted) and the caller
//! rebuilds from the default.

use std::fs;
use std::io::{self, Read};
use std::path::{Path, PathBuf};

use serde::de::DeserializeOwned;
use serde::Serialize;
use serde_json::Value;

use super::atomic_file::write_atomic;

/// Largest store file the addon reads; anything bigger is quarantined.
pub const MAX_STORE_FILE_BYTES: u64 = 10 * 1024 * 1024;

/// Result of reading a store file.
#[derive(Debug)]
pub enum Loaded<T> {
    /// No file.
    Missing,
    /// Parsed content.
    Found(T),
    /// The file was bad and has been moved aside.
    Quarantined {
        /// Where the bad file now lives.
        moved_to: PathBuf,
        /// Why it was moved.
        reason: String,
    },
}

/// Reads `path` as `{schemaVersion: version, <field>: T}`.
pub fn read_envelope<T: DeserializeOwned>(
    path: &Path,
    version: u64,
    field: &str,
    now_ms: i64,
) -> io::Result<Loaded<T>> {
    read_versioned(path, version, now_ms, |value| {
        let inner = value.get(field).cloned().unwrap_or(Value::Null);
        serde_json::from_value(inner).map_err(|_| "invalid_shape".to_string())
    })
}

/// Reads a flat envelope `{schemaVersion: version, ...fields}` as `T` (the
/// version key is ignored by `T`).
pub fn read_flat_envelope<T: DeserializeOwned>(
    path: &Path,
    version: u64,
    now_ms: i64,
) -> io::Result<Loaded<T>> {
    read_versioned(path, version, now_ms, |value| {
        serde_json::from_value(value).map_err(|_| "invalid_shape".to_string())
    })
}

/// Reads, checks `schemaVersion` and converts; anything bad is quarantined.
///
/// A symlink in place of a store file is moved aside unread (reason `symlink`):
/// store files are the addon's own and never point elsewhere.
fn read_versioned<T>(
    path: &Path,
    version: u64,
    now_ms: i64,
    convert: impl FnOnce(Value) -> Result<T, String>,
) -> io::Result<Loaded<T>> {
    if fs::symlink_metadata(path).is_ok_and(|m| m.file_type().is_symlink()) {
        return Ok(Loaded::Quarantined {
            moved_to: quarantine(path, now_ms)?,
            reason: "symlink".into(),
        });
    }
    let Some(bytes) = read_capped(path, MAX_STORE_FILE_BYTES)? else {
        return Ok(Loaded::Missing);
    };
    let parsed = match bytes {
        Capped::TooLarge => Err("file_too_large".to_string()),
        Capped::Bytes(bytes) => check_version(&bytes, version).and_then(convert),
    };
    match parsed {
        Ok(value) => Ok(Loaded::Found(value)),
        Err(reason) => Ok(Loaded::Quarantined {
            moved_to: quarantine(path, now_ms)?,
            reason,
        }),
    }
}

fn check_version(bytes: &[u8], version: u64) -> Result<Value, String> {
    let value: Value = serde_json::from_slice(bytes).map_err(|_| "invalid_json".to_string())?;
    match value.get("schemaVersion").and_then(Value::as_u64) {
        Some(v) if v == version => Ok(value),
        Some(v) if v > version => Err(format!("future_schema_version:{v}")),
        _ => Err("unsupported_schema_version".to_string()),
    }
}

/// Writes a flat envelope: `value`'s fields beside `schemaVersion`.
pub fn write_flat_envelope<T: Serialize>(path: &Path, version: u64, value: &T) -> io::Result<()> {
    let mut envelope = serde_json::Map::new();
    envelope.insert("schemaVersion".into(), Value::from(version));
    if let Value::Object(fields) = serde_json::to_value(value).map_err(io::Error::other)? {
        envelope.extend(fields);
    }
    write_json(path, &Value::Object(envelope))
}

/// Writes `{schemaVersion: version, <field>: value}` atomically, pretty-printed like the app.
pub fn write_envelope<T: Serialize>(
    path: &Path,
    version: u64,
    field: &str,
    value: &T,
) -> io::Result<()> {
    let mut envelope = serde_json::Map::new();
    envelope.insert("schemaVersion".into(), Value::from(version));
    envelope.insert(
        field.into(),
        serde_json::to_value(value).map_err(io::Error::other)?,
    );
    write_json(path, &Value::Object(envelope))
}

/// Writes any JSON value atomically as `JSON.stringify(v, null, 2) + "\n"`.
pub fn write_json(path: &Path, value: &Value) -> io::Result<()> {
    let mut text = serde_json::to_string_pretty(value).map_err(io::Error::other)?;
    text.push('\n');
    write_atomic(path, text.as_bytes())
}

/// Renames a bad file to `<path>.invalid.<ms>`; nothing is deleted.
pub fn quarantine(path: &Path, now_ms: i64) -> io::Result<PathBuf> {
    let mut name = path.as_os_str().to_owned();
    name.push(format!(".invalid.{now_ms}"));
    let mut target = PathBuf::from(name);
    let mut n = 1;
    while target.exists() {
        let mut name = path.as_os_str().to_owned();
        name.push(format!(".invalid.{now_ms}-{n}"));
        target = PathBuf::from(name);
        n += 1;
    }
    fs::rename(path, &target)?;
    Ok(target)
}

/// File content, or a note that it exceeded the cap.
#[derive(Debug)]
pub enum Capped {
    /// The whole file.
    Bytes(Vec<u8>),
    /// Bigger than the cap; not read.
    TooLarge,
}

/// Reads a file of at most `max` bytes; `None` when it does not exist.
pub fn read_capped(path: &Path, max: u64) -> io::Result<Option<Capped>> {
    let file = match fs::File::open(path) {
        Ok(file) => file,
        Err(e) if e.kind() == io::ErrorKind::NotFound => return Ok(None),
        Err(e) => return Err(e),
    };
    let mut bytes = Vec::new();
    file.take(max + 1).read_to_end(&mut bytes)?;
    if bytes.len() as u64 > max {
        return Ok(Some(Capped::TooLarge));
    }
    Ok(Some(Capped::Bytes(bytes)))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn round_trip() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("s.json");
        write_envelope(&path, 2, "status", &serde_json::json!({"a": 1})).unwrap();
        let text = fs::read_to_string(&path).unwrap();
        assert!(
            text.starts_with("{\n  \"schemaVersion\": 2,") && text.ends_with("}\n"),
            "{text}"
        );
        let loaded: Loaded<Value> = read_envelope(&path, 2, "status", 5).unwrap();
        assert!(matches!(loaded, Loaded::Found(v) if v["a"] == 1));
    }

    #[test]
    fn corrupt_and_future_files_are_quarantined_not_deleted() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("s.json");
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
                read_envelope(&path, 2, "status", 42).unwrap();
            let Loaded::Quarantined {
                moved_to,
                reason: got,
            } = loaded
            else {
                panic!("not quarantined: {reason}")
            };
            assert_eq!(got, reason);
            assert!(!path.exists());
            assert_eq!(fs::read(&moved_to).unwrap(), content);
            assert!(moved_to.to_string_lossy().contains("s.json.invalid.42"));
        }
        assert_eq!(
            fs::read_dir(dir.path()).unwrap().count(),
            3,
            "every bad file kept"
        );
    }

    #[test]
    fn missing_file() {
        let dir = tempfile::tempdir().unwrap();
        let loaded: Loaded<Value> =
            read_envelope(&dir.path().join("none.json"), 2, "status", 1).unwrap();
        assert!(matches!(loaded, Loaded::Missing));
    }
}
