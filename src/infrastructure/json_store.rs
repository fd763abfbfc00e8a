//! Versioned JSON envelopes on disk (`{"schemaVersion": N, <field>: ...}`), with
//! quarantine: a file that does not parse, carries an unknown future version,
//! is too large or is not a regular file (a link, a FIFO) is renamed to
//! `<path>.invalid.<ms>` and the caller rebuilds from the default. Only the
//! newest [`KEEP_QUARANTINED`] copies of one file are kept, so a file that
//! keeps going bad cannot fill the disk.
//!
//! Every access goes through [`TrustedRoot`]: no link is followed below it.

use std::ffi::OsStr;
use std::io;
use std::path::{Path, PathBuf};

use serde::de::DeserializeOwned;
use serde::Serialize;
use serde_json::Value;

use super::safe_fs::{Dir, FileRead, Staged, TrustedRoot};

/// Largest store file the addon reads; anything bigger is quarantined.
pub(crate) const MAX_STORE_FILE_BYTES: u64 = 10 * 1024 * 1024;
/// Quarantined copies kept per store file, newest first.
const KEEP_QUARANTINED: usize = 3;
/// The tag between a quarantined file's name and its time.
const QUARANTINE_TAG: &str = ".invalid.";

/// Result of reading a store file.
#[derive(Debug)]
pub enum Loaded<T> {
    /// No file at the path (never written, or removed).
    Missing,
    /// The file's content, parsed and of the expected schema.
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
pub(crate) fn read_envelope<T: DeserializeOwned>(
    root: &TrustedRoot,
    path: &Path,
    version: u64,
    field: &str,
    now_ms: i64,
) -> io::Result<Loaded<T>> {
    read_versioned(root, path, version, now_ms, envelope_field(field))
}

/// Converts the `field` of a checked envelope.
fn envelope_field<T: DeserializeOwned>(
    field: &str,
) -> impl FnOnce(Value) -> Result<T, String> + '_ {
    move |mut value| {
        // Taken out, not cloned: a status is tens of KB of JSON.
        let inner = value.get_mut(field).map(Value::take).unwrap_or(Value::Null);
        serde_json::from_value(inner).map_err(|_| "invalid_shape".to_string())
    }
}

/// Reads a flat envelope `{schemaVersion: version, ...fields}` as `T` (the
/// version key is ignored by `T`).
pub(crate) fn read_flat_envelope<T: DeserializeOwned>(
    root: &TrustedRoot,
    path: &Path,
    version: u64,
    now_ms: i64,
) -> io::Result<Loaded<T>> {
    read_versioned(root, path, version, now_ms, |value| {
        serde_json::from_value(value).map_err(|_| "invalid_shape".to_string())
    })
}

/// Reads, checks `schemaVersion` and converts; anything bad is quarantined.
///
/// A link or FIFO in place of a store file is moved aside unopened (reason
/// `not_a_file`): store files are the addon's own and never point elsewhere.
fn read_versioned<T>(
    root: &TrustedRoot,
    path: &Path,
    version: u64,
    now_ms: i64,
    convert: impl FnOnce(Value) -> Result<T, String>,
) -> io::Result<Loaded<T>> {
    Ok(match inspect(root, path, version, convert)? {
        Peeked::Missing => Loaded::Missing,
        Peeked::Found(value) => Loaded::Found(value),
        Peeked::Unusable { reason } => Loaded::Quarantined {
            moved_to: quarantine(root, path, now_ms)?,
            reason,
        },
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
    inspect(root, path, version, envelope_field(field))
}

/// [`read_flat_envelope`] without side effects, as [`peek_envelope`] is to
/// [`read_envelope`].
pub(crate) fn peek_flat_envelope<T: DeserializeOwned>(
    root: &TrustedRoot,
    path: &Path,
    version: u64,
) -> io::Result<Peeked<T>> {
    inspect(root, path, version, |value| {
        serde_json::from_value(value).map_err(|_| "invalid_shape".to_string())
    })
}

/// Reads, checks `schemaVersion` and converts, moving nothing: the one read
/// behind both the quarantining and the read-only views.
fn inspect<T>(
    root: &TrustedRoot,
    path: &Path,
    version: u64,
    convert: impl FnOnce(Value) -> Result<T, String>,
) -> io::Result<Peeked<T>> {
    let read = match root.read(path, MAX_STORE_FILE_BYTES) {
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
        FileRead::Bytes(bytes) => check_version(&bytes, version).and_then(convert),
    };
    Ok(match parsed {
        Ok(value) => Peeked::Found(value),
        Err(reason) => Peeked::Unusable { reason },
    })
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
pub(crate) fn write_flat_envelope<T: Serialize>(
    root: &TrustedRoot,
    path: &Path,
    version: u64,
    value: &T,
) -> io::Result<()> {
    let mut envelope = serde_json::Map::new();
    envelope.insert("schemaVersion".into(), Value::from(version));
    if let Value::Object(fields) = serde_json::to_value(value).map_err(io::Error::other)? {
        envelope.extend(fields);
    }
    write_json(root, path, &Value::Object(envelope))
}

/// [`write_flat_envelope`] for a derived view that replaces a file already
/// there: still a temp file and a rename (a reader sees the old content or
/// the new), but nothing is synced. For files rebuilt from durable ones
/// whenever missing or unusable, where a power cut losing the replacement
/// (or leaving it torn) costs a rebuild and loses no state. A file not yet
/// there is written durably: its existence may be what a reader looks for.
pub(crate) fn replace_flat_view<T: Serialize>(
    root: &TrustedRoot,
    path: &Path,
    version: u64,
    value: &T,
) -> io::Result<()> {
    let mut envelope = serde_json::Map::new();
    envelope.insert("schemaVersion".into(), Value::from(version));
    if let Value::Object(fields) = serde_json::to_value(value).map_err(io::Error::other)? {
        envelope.extend(fields);
    }
    let envelope = Value::Object(envelope);
    let (Some(dir), Some(name)) = (path.parent(), path.file_name()) else {
        return write_json(root, path, &envelope);
    };
    match root.open_dir(dir)? {
        Some(folder) if folder.meta(name)?.is_some() => {
            let text = render_json(path, &envelope)?;
            folder.write_replacing(name, text.as_bytes(), 0o644, false)
        }
        _ => write_json(root, path, &envelope),
    }
}

/// Writes `{schemaVersion: version, <field>: value}` atomically, pretty-printed like the app.
pub(crate) fn write_envelope<T: Serialize>(
    root: &TrustedRoot,
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
    write_json(root, path, &Value::Object(envelope))
}

/// Writes any JSON value atomically as `JSON.stringify(v, null, 2) + "\n"`.
/// A value too large to be read back ([`MAX_STORE_FILE_BYTES`]) is refused
/// and the file left as it was: written, it would be quarantined by the next
/// read and take the valid state before it along.
pub(crate) fn write_json(root: &TrustedRoot, path: &Path, value: &Value) -> io::Result<()> {
    let text = render_json(path, value)?;
    root.write_atomic(path, text.as_bytes())
}

/// [`write_envelope`] staged for a group commit ([`safe_fs::commit`]): the
/// new content sits in a temp file beside `path` until then.
///
/// [`safe_fs::commit`]: super::safe_fs::commit
pub(crate) fn stage_envelope<T: Serialize>(
    root: &TrustedRoot,
    path: &Path,
    version: u64,
    field: &str,
    value: &T,
) -> io::Result<Staged> {
    let mut envelope = serde_json::Map::new();
    envelope.insert("schemaVersion".into(), Value::from(version));
    envelope.insert(
        field.into(),
        serde_json::to_value(value).map_err(io::Error::other)?,
    );
    stage_value(root, path, &Value::Object(envelope))
}

/// [`write_flat_envelope`] staged for a group commit, as [`stage_envelope`].
pub(crate) fn stage_flat_envelope<T: Serialize>(
    root: &TrustedRoot,
    path: &Path,
    version: u64,
    value: &T,
) -> io::Result<Staged> {
    let mut envelope = serde_json::Map::new();
    envelope.insert("schemaVersion".into(), Value::from(version));
    if let Value::Object(fields) = serde_json::to_value(value).map_err(io::Error::other)? {
        envelope.extend(fields);
    }
    stage_value(root, path, &Value::Object(envelope))
}

/// `value` rendered and staged beside `path`.
fn stage_value(root: &TrustedRoot, path: &Path, value: &Value) -> io::Result<Staged> {
    let text = render_json(path, value)?;
    let (Some(dir), Some(name)) = (path.parent(), path.file_name()) else {
        return Err(io::Error::new(
            io::ErrorKind::InvalidInput,
            format!("{}: not a store file path", path.display()),
        ));
    };
    root.create_dir_all(dir)?
        .stage(name, text.as_bytes(), 0o644)
}

/// `JSON.stringify(v, null, 2) + "\n"`, refused past [`MAX_STORE_FILE_BYTES`].
fn render_json(path: &Path, value: &Value) -> io::Result<String> {
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
pub fn quarantine(root: &TrustedRoot, path: &Path, now_ms: i64) -> io::Result<PathBuf> {
    let (Some(dir_path), Some(name)) = (path.parent(), path.file_name().and_then(OsStr::to_str))
    else {
        return Err(io::Error::new(
            io::ErrorKind::InvalidInput,
            format!("{}: not a store file path", path.display()),
        ));
    };
    let dir = root.create_dir_all(dir_path)?;
    let target = quarantine_in(&dir, name, now_ms)?;
    Ok(dir_path.join(target))
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

    fn store() -> (tempfile::TempDir, TrustedRoot, PathBuf) {
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
