//! Task positions by reference, keyed by the reference's hash rather than a
//! copy of it: indexing a board allocates no key string per task id and
//! display id, and dropping the index frees none.

use std::collections::hash_map::RandomState;
use std::collections::HashMap;
use std::hash::{BuildHasher, BuildHasherDefault, Hasher};

use smallvec::SmallVec;

/// The positions under one key: nearly always one task (ids are unique on a
/// sane board), held inline so indexing a board allocates no list per task.
type Positions = SmallVec<[usize; 1]>;

/// Positions of tasks filed by one reference of theirs ([`task_reference`]
/// of the id, or of the display id).
///
/// References with the same 64-bit hash share a list, and every lookup
/// keeps only the positions whose task has the reference asked for, so a
/// collision costs a comparison, never a wrong answer. The hash is keyed
/// at random per map, so agents cannot choose ids that collide.
///
/// [`task_reference`]: super::task_facts::task_reference
#[derive(Debug, Clone, Default)]
pub(super) struct ReferenceMap {
    hasher: RandomState,
    lists: HashMap<u64, Positions, BuildHasherDefault<KeyIsHash>>,
}

impl ReferenceMap {
    /// An empty map with room for `capacity` references.
    pub(super) fn with_capacity(capacity: usize) -> Self {
        Self {
            hasher: RandomState::new(),
            lists: HashMap::with_capacity_and_hasher(capacity, BuildHasherDefault::default()),
        }
    }

    /// The key `reference` is filed under.
    pub(super) fn key(&self, reference: &str) -> u64 {
        self.hasher.hash_one(reference)
    }

    /// Files position `i` under `reference`.
    pub(super) fn add(&mut self, reference: &str, i: usize) {
        self.lists.entry(self.key(reference)).or_default().push(i);
    }

    /// Unfiles position `i` from under `reference`.
    pub(super) fn remove(&mut self, reference: &str, i: usize) {
        let key = self.key(reference);
        if let Some(positions) = self.lists.get_mut(&key) {
            positions.retain(|p| *p != i);
            if positions.is_empty() {
                self.lists.remove(&key);
            }
        }
    }

    /// The positions filed under `reference`, in filing order;
    /// `reference_of` gives the reference a position was filed by.
    pub(super) fn get<'a>(
        &'a self,
        reference: &'a str,
        reference_of: impl Fn(usize) -> &'a str + 'a,
    ) -> impl Iterator<Item = usize> + 'a {
        self.lists
            .get(&self.key(reference))
            .into_iter()
            .flatten()
            .copied()
            .filter(move |&p| reference_of(p) == reference)
    }

    /// Every list, to move the positions in it.
    pub(super) fn lists_mut(&mut self) -> impl Iterator<Item = &mut [usize]> {
        self.lists
            .values_mut()
            .map(|positions| positions.as_mut_slice())
    }

    /// Every list with its key.
    #[cfg(test)]
    pub(super) fn lists(&self) -> impl Iterator<Item = (u64, &[usize])> {
        self.lists.iter().map(|(key, list)| (*key, list.as_slice()))
    }
}

/// The hasher of keys that are hashes already: the key is its own hash.
#[derive(Debug, Default)]
struct KeyIsHash(u64);

impl Hasher for KeyIsHash {
    fn finish(&self) -> u64 {
        self.0
    }

    fn write(&mut self, bytes: &[u8]) {
        // Only `write_u64` is called for a `u64` key; any other input is
        // still folded in rather than ignored.
        for &byte in bytes {
            self.0 = self.0.rotate_left(8) ^ u64::from(byte);
        }
    }

    fn write_u64(&mut self, key: u64) {
        self.0 = key;
    }
}
