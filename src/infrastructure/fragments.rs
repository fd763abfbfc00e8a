//! Pretty-printed fragments of a store file's entries, kept between its
//! writes.
//!
//! A store file is `JSON.stringify(v, null, 2)` of an envelope whose bulk is
//! one map or list of entries (a team's member summaries and metric events,
//! a member's outbox items), and a write changes few of them: rendering the
//! whole file again at every write spent most of its time escaping strings
//! that had not changed. [`Fragments`] keeps each entry's text, indented for
//! its place in the file, with the entry it was rendered from, and the next
//! render reuses the text of an entry that is *equal* to the kept one (never
//! by key alone: a changed entry is always rendered anew). The envelope
//! around the fragments is still serialized by `serde_json`, which writes a
//! fragment ([`RawValue`]) verbatim where the entry's own serialization
//! would have gone, so the file is byte for byte what rendering the entries
//! would give (each user's tests compare the two).
//!
//! Only the fragments the last render used are kept, so what a file's
//! fragments hold is about that file's text; [`FragmentCache`] bounds how
//! many files' fragments are kept and their bytes in all.

use std::collections::HashMap;
use std::hash::Hash;
use std::io;
use std::sync::Mutex;

use serde::{Serialize, Serializer};
use serde_json::value::RawValue;

/// The fragments of one file's entries, at one depth of nesting.
#[derive(Debug)]
pub(crate) struct Fragments<V> {
    /// Levels of nesting above an entry's value (the envelope's is 0):
    /// every line of a fragment after its first is indented by this many
    /// two-space steps, as the pretty printer indents the entry in place.
    depth: usize,
    /// By entry key: the entry rendered and its text.
    kept: HashMap<String, (V, Box<RawValue>)>,
    /// The bytes of text kept.
    bytes: usize,
}

impl<V: Serialize + PartialEq + Clone> Fragments<V> {
    /// No fragments yet, for entries `depth` levels deep.
    pub(crate) fn new(depth: usize) -> Self {
        Self {
            depth,
            kept: HashMap::new(),
            bytes: 0,
        }
    }

    /// `write` given each of `entries` (key and value), in their order, as
    /// its key and fragment: the kept one of an equal entry, else the entry
    /// rendered now. Afterwards these entries' fragments are kept (of a key
    /// seen twice, as an agent's hand-made file may have, the last: each
    /// occurrence after the first finds nothing kept and is rendered).
    pub(crate) fn with<R>(
        &mut self,
        entries: &[(&str, &V)],
        write: impl FnOnce(&[(&str, &RawValue)]) -> io::Result<R>,
    ) -> io::Result<R> {
        let mut fresh: Vec<(String, V, Box<RawValue>)> = Vec::with_capacity(entries.len());
        for &(key, value) in entries {
            fresh.push(match self.kept.remove_entry(key) {
                Some((key, (kept, text))) if kept == *value => (key, kept, text),
                _ => (key.to_string(), value.clone(), self.render(value)?),
            });
        }
        let fragments: Vec<(&str, &RawValue)> = fresh
            .iter()
            .map(|(key, _, text)| (key.as_str(), &**text))
            .collect();
        let written = write(&fragments);
        drop(fragments);
        self.bytes = fresh.iter().map(|(_, _, text)| text.get().len()).sum();
        self.kept = fresh
            .into_iter()
            .map(|(key, value, text)| (key, (value, text)))
            .collect();
        written
    }

    /// `value` pretty-printed, its lines after the first indented for its
    /// depth. JSON text has no raw line breaks inside strings, so every
    /// `\n` is one the printer put between lines.
    fn render(&self, value: &V) -> io::Result<Box<RawValue>> {
        let text = serde_json::to_string_pretty(value).map_err(io::Error::other)?;
        let indent = "  ".repeat(self.depth);
        let text = if self.depth == 0 {
            text
        } else {
            text.replace('\n', &format!("\n{indent}"))
        };
        RawValue::from_string(text).map_err(io::Error::other)
    }
}

/// Keyed fragments ([`Fragments::with`]) serialized as a JSON object.
pub(crate) struct FragmentMap<'a>(pub(crate) &'a [(&'a str, &'a RawValue)]);

impl Serialize for FragmentMap<'_> {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        serializer.collect_map(self.0.iter().copied())
    }
}

/// Keyed fragments ([`Fragments::with`]) serialized as a JSON array of
/// their values (the keys only told equal entries apart).
pub(crate) struct FragmentList<'a>(pub(crate) &'a [(&'a str, &'a RawValue)]);

impl Serialize for FragmentList<'_> {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        serializer.collect_seq(self.0.iter().map(|(_, fragment)| fragment))
    }
}

/// The fragments of recently written files' entries of one kind (all
/// `depth` levels deep), by key (a path), for at most `files` files holding
/// at most `bytes` of text: past either bound the kept ones are dropped, so
/// the memory held stays bounded however many files are written.
#[derive(Debug)]
pub(crate) struct FragmentCache<K, V> {
    kept: Mutex<HashMap<K, Fragments<V>>>,
    depth: usize,
    files: usize,
    bytes: usize,
}

impl<K: Eq + Hash, V: Serialize + PartialEq + Clone> FragmentCache<K, V> {
    /// Nothing kept yet.
    pub(crate) fn new(depth: usize, files: usize, bytes: usize) -> Self {
        Self {
            kept: Mutex::new(HashMap::new()),
            depth,
            files,
            bytes,
        }
    }

    /// [`Fragments::with`] over the fragments kept for `key` (taken out
    /// while `write` runs, so a concurrent write of the same file renders
    /// for itself), kept again if it succeeds.
    pub(crate) fn with<R>(
        &self,
        key: K,
        entries: &[(&str, &V)],
        write: impl FnOnce(&[(&str, &RawValue)]) -> io::Result<R>,
    ) -> io::Result<R> {
        let taken = self.lock().remove(&key);
        let mut fragments = taken.unwrap_or_else(|| Fragments::new(self.depth));
        let written = fragments.with(entries, write)?;
        self.keep(key, fragments);
        Ok(written)
    }

    /// Keeps `fragments` as `key`'s.
    fn keep(&self, key: K, fragments: Fragments<V>) {
        if fragments.bytes > self.bytes {
            return;
        }
        let mut kept = self.lock();
        kept.remove(&key);
        let held: usize = kept.values().map(|f| f.bytes).sum();
        if kept.len() >= self.files || held + fragments.bytes > self.bytes {
            kept.clear();
        }
        kept.insert(key, fragments);
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, HashMap<K, Fragments<V>>> {
        // A render that panicked left at most fragments of equal entries.
        self.kept.lock().unwrap_or_else(|e| e.into_inner())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[derive(Debug, Clone, PartialEq, Serialize)]
    struct Entry {
        name: String,
        tags: Vec<String>,
    }

    fn entry(name: &str, tags: &[&str]) -> Entry {
        Entry {
            name: name.into(),
            tags: tags.iter().map(|t| t.to_string()).collect(),
        }
    }

    /// `raw` as a list nested in `levels` objects (`{"in": ...}`), written
    /// through serde (not through a `Value`, which would parse the fragments).
    struct Nest<'a>(usize, &'a [(&'a str, &'a RawValue)]);

    impl Serialize for Nest<'_> {
        fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
            match self.0 {
                0 => FragmentList(self.1).serialize(serializer),
                n => serializer.collect_map([("in", Nest(n - 1, self.1))]),
            }
        }
    }

    /// `raw` nested in `levels` objects, pretty-printed.
    fn nested(levels: usize, raw: &[(&str, &RawValue)]) -> io::Result<String> {
        serde_json::to_string_pretty(&Nest(levels, raw)).map_err(io::Error::other)
    }

    /// What the fragments of `entries` (at depth 2) write as `{"in": [...]}`.
    fn as_list(fragments: &mut Fragments<Entry>, entries: &[(&str, &Entry)]) -> String {
        fragments.with(entries, |raw| nested(1, raw)).unwrap()
    }

    #[test]
    fn fragments_write_what_the_entries_would_at_every_depth() {
        let (a, b) = (entry("a \"q\" é", &["x", "\n"]), entry("b", &[]));
        for depth in 1..5 {
            let mut fragments = Fragments::new(depth);
            let written = fragments
                .with(&[("a", &a), ("b", &b)], |raw| nested(depth - 1, raw))
                .unwrap();
            let mut plain = json!([a, b]);
            for _ in 1..depth {
                plain = json!({ "in": plain });
            }
            assert_eq!(
                written,
                serde_json::to_string_pretty(&plain).unwrap(),
                "depth {depth}"
            );
        }
    }

    #[test]
    fn an_equal_entry_reuses_its_text_and_a_changed_one_is_rendered_anew() {
        let mut fragments = Fragments::new(2);
        let a = entry("a", &["x"]);
        as_list(&mut fragments, &[("a", &a)]);
        // Mark the kept text: a render that reuses it writes the mark.
        let marked = RawValue::from_string("\"marked\"".into()).unwrap();
        fragments.kept.get_mut("a").unwrap().1 = marked;
        assert!(as_list(&mut fragments, &[("a", &a)]).contains("marked"));
        let changed = entry("a", &["y"]);
        let written = as_list(&mut fragments, &[("a", &changed)]);
        assert!(
            !written.contains("marked") && written.contains("\"y\""),
            "{written}"
        );
    }

    #[test]
    fn only_the_last_render_is_kept_and_a_repeated_key_is_rendered_each_time() {
        let mut fragments = Fragments::new(2);
        let (a, b) = (entry("a", &[]), entry("b", &[]));
        as_list(&mut fragments, &[("a", &a), ("b", &b)]);
        as_list(&mut fragments, &[("b", &b)]);
        assert_eq!(fragments.kept.len(), 1);
        let written = as_list(&mut fragments, &[("k", &a), ("k", &b)]);
        assert_eq!(
            written,
            serde_json::to_string_pretty(&json!({"in": [a, b]})).unwrap()
        );
    }

    #[test]
    fn the_cache_stays_within_its_files_and_bytes() {
        let cache: FragmentCache<u32, Entry> = FragmentCache::new(2, 2, 64);
        for key in 0..5 {
            cache
                .with(key, &[("a", &entry("a", &[]))], |raw| nested(1, raw))
                .unwrap();
            assert!(cache.lock().len() <= 2);
        }
        let big = entry(&"x".repeat(100), &[]);
        cache.with(9, &[("a", &big)], |raw| nested(1, raw)).unwrap();
        assert!(
            !cache.lock().contains_key(&9),
            "more than the bytes: not kept"
        );
    }

    #[test]
    fn the_cache_keeps_nothing_of_a_failed_write() {
        let cache: FragmentCache<u32, Entry> = FragmentCache::new(2, 2, 1024);
        let failed = cache.with(1, &[("a", &entry("a", &[]))], |_| {
            Err::<(), _>(io::Error::other("refused"))
        });
        assert!(failed.is_err());
        assert!(!cache.lock().contains_key(&1));
    }
}
