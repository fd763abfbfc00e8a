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

    /// `write` given the fragment of each of `entries` (key and value), in
    /// their order: the kept one of an equal entry, else the entry rendered
    /// now. Afterwards these entries' fragments are kept (of a key seen
    /// twice, as an agent's hand-made file may have, the last: each
    /// occurrence after the first finds nothing kept and is rendered).
    pub(crate) fn with<R>(
        &mut self,
        entries: &[(&str, &V)],
        write: impl FnOnce(&[&RawValue]) -> R,
    ) -> serde_json::Result<R> {
        let mut fresh: Vec<(String, V, Box<RawValue>)> = Vec::with_capacity(entries.len());
        for &(key, value) in entries {
            fresh.push(match self.kept.remove_entry(key) {
                Some((key, (kept, text))) if kept == *value => (key, kept, text),
                _ => (key.to_string(), value.clone(), self.render(value)?),
            });
        }
        let fragments: Vec<&RawValue> = fresh.iter().map(|(_, _, text)| &**text).collect();
        let written = write(&fragments);
        drop(fragments);
        self.bytes = fresh.iter().map(|(_, _, text)| text.get().len()).sum();
        self.kept = fresh
            .into_iter()
            .map(|(key, value, text)| (key, (value, text)))
            .collect();
        Ok(written)
    }

    /// `value` pretty-printed, its lines after the first indented for its
    /// depth. JSON text has no raw line breaks inside strings, so every
    /// `\n` is one the printer put between lines.
    fn render(&self, value: &V) -> serde_json::Result<Box<RawValue>> {
        let text = serde_json::to_string_pretty(value)?;
        let indent = "  ".repeat(self.depth);
        let text = if self.depth == 0 {
            text
        } else {
            text.replace('\n', &format!("\n{indent}"))
        };
        RawValue::from_string(text)
    }
}

/// A map whose values are fragments, serialized as a JSON object.
pub(crate) struct FragmentMap<'a> {
    /// The keys, in order.
    pub(crate) keys: &'a [&'a str],
    /// Their values' fragments, in the same order.
    pub(crate) fragments: &'a [&'a RawValue],
}

impl Serialize for FragmentMap<'_> {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        serializer.collect_map(self.keys.iter().zip(self.fragments))
    }
}

/// The fragments of recently written files, by key (a path), for at most
/// `files` files holding at most `bytes` of text: past either bound the
/// kept ones are dropped, so the memory held stays bounded however many
/// files are written.
#[derive(Debug)]
pub(crate) struct FragmentCache<K, V> {
    kept: Mutex<HashMap<K, Fragments<V>>>,
    files: usize,
    bytes: usize,
}

impl<K: Eq + Hash, V> FragmentCache<K, V> {
    /// Nothing kept yet.
    pub(crate) fn new(files: usize, bytes: usize) -> Self {
        Self {
            kept: Mutex::new(HashMap::new()),
            files,
            bytes,
        }
    }

    /// The fragments kept for `key`, taken out while a write uses them.
    pub(crate) fn take(&self, key: &K) -> Option<Fragments<V>> {
        self.lock().remove(key)
    }

    /// Keeps `fragments` as `key`'s.
    pub(crate) fn keep(&self, key: K, fragments: Fragments<V>) {
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
    struct Nest<'a>(usize, &'a [&'a RawValue]);

    impl Serialize for Nest<'_> {
        fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
            match self.0 {
                0 => self.1.serialize(serializer),
                n => serializer.collect_map([("in", Nest(n - 1, self.1))]),
            }
        }
    }

    /// What the fragments of `entries` (at depth 2) write as `{"in": [...]}`.
    fn as_list(fragments: &mut Fragments<Entry>, entries: &[(&str, &Entry)]) -> String {
        fragments
            .with(entries, |raw| serde_json::to_string_pretty(&Nest(1, raw)))
            .unwrap()
            .unwrap()
    }

    #[test]
    fn fragments_write_what_the_entries_would_at_every_depth() {
        let (a, b) = (entry("a \"q\" é", &["x", "\n"]), entry("b", &[]));
        for depth in 1..5 {
            let mut fragments = Fragments::new(depth);
            let written = fragments
                .with(&[("a", &a), ("b", &b)], |raw| {
                    serde_json::to_string_pretty(&Nest(depth - 1, raw)).unwrap()
                })
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
        let cache: FragmentCache<u32, Entry> = FragmentCache::new(2, 64);
        for key in 0..5 {
            let mut fragments = Fragments::new(2);
            as_list(&mut fragments, &[("a", &entry("a", &[]))]);
            cache.keep(key, fragments);
            assert!(cache.lock().len() <= 2);
        }
        let mut big = Fragments::new(2);
        as_list(&mut big, &[("a", &entry(&"x".repeat(100), &[]))]);
        cache.keep(9, big);
        assert!(cache.take(&9).is_none(), "more than the bytes: not kept");
    }
}
