//! Which tasks of a board wait on a task: the board's task ids and the
//! references their `blockedBy` lists hold, kept beside a folder's entries
//! and updated with each one, so routing a one-task change looks up the
//! tasks that name it instead of scanning the board.

use std::collections::hash_map::RandomState;
use std::collections::{BTreeSet, HashMap};
use std::hash::BuildHasher;
use std::sync::Arc;

use smallvec::SmallVec;

use crate::domain::team::Task;

/// A task reference as the app's index keys it: trimmed, one `#` dropped.
pub(crate) fn reference_key(reference: &str) -> &str {
    let reference = reference.trim();
    reference.strip_prefix('#').unwrap_or(reference)
}

/// Which references name one task on a board: its id's key when some task
/// of the board has that id, else its display id's key when no task has
/// that as its id (ids win over display ids).
pub(crate) struct TaskReferences<'a> {
    id: &'a str,
    display_id: &'a str,
    /// Some task of the board has the key of `id` as its id's key.
    id_on_board: bool,
    /// Some task of the board has the key of `display_id` as its id's key.
    display_shadowed: bool,
}

impl<'a> TaskReferences<'a> {
    /// The references naming `task` on the board `tasks`, found in one pass
    /// over it: the definition [`BoardReferences`] is checked against.
    #[cfg(test)]
    pub(crate) fn of(tasks: &[Arc<Task>], task: &'a Task) -> Self {
        Self::with(task, |key| {
            tasks.iter().any(|t| reference_key(&t.id) == key)
        })
    }

    /// The references naming `task` on a board where `has_id(key)` says
    /// whether some task has `key` as its id's key.
    fn with(task: &'a Task, has_id: impl Fn(&str) -> bool) -> Self {
        let (id, display_id) = (reference_key(&task.id), reference_key(&task.display_id));
        Self {
            id,
            display_id,
            id_on_board: has_id(id),
            display_shadowed: has_id(display_id),
        }
    }

    /// Whether `reference` names the task: what [`TaskReferences::keys`]
    /// stands for, checked against it by the tests.
    #[cfg(test)]
    pub(crate) fn named_by(&self, reference: &str) -> bool {
        let key = reference_key(reference);
        !key.is_empty()
            && ((self.id_on_board && key == self.id)
                || (!self.display_shadowed && key == self.display_id))
    }

    /// The keys a reference naming the task has (none, one or two).
    fn keys(&self) -> impl Iterator<Item = &'a str> {
        let id = (self.id_on_board && !self.id.is_empty()).then_some(self.id);
        let display =
            (!self.display_shadowed && !self.display_id.is_empty()).then_some(self.display_id);
        id.into_iter().chain(display)
    }
}

/// The tasks of one board by id key, and the names of the task files whose
/// `blockedBy` holds each reference key.
///
/// Ids are filed by a hash of their key, keyed at random per index so that
/// agents cannot choose ids that collide; every lookup compares the tasks
/// under a hash with the key asked for, so a collision costs a comparison,
/// never a wrong answer. Tasks are the board's own `Arc`s: filing one costs
/// a pointer, not a copy of its id.
#[derive(Debug, Default)]
pub(super) struct BoardReferences {
    hasher: RandomState,
    ids: HashMap<u64, SmallVec<[Arc<Task>; 1]>>,
    /// File names (sorted: board order) of the tasks waiting on each key.
    waiting: HashMap<String, BTreeSet<String>>,
}

impl BoardReferences {
    /// Files the task of file `name`.
    pub(super) fn add(&mut self, name: &str, task: &Arc<Task>) {
        let key = self.hasher.hash_one(reference_key(&task.id));
        self.ids.entry(key).or_default().push(task.clone());
        for reference in &task.blocked_by {
            let reference = reference_key(reference);
            if reference.is_empty() {
                continue;
            }
            match self.waiting.get_mut(reference) {
                Some(names) => {
                    names.insert(name.to_string());
                }
                None => {
                    let names = BTreeSet::from([name.to_string()]);
                    self.waiting.insert(reference.to_string(), names);
                }
            }
        }
    }

    /// Unfiles the task of file `name` (filed by [`BoardReferences::add`]).
    pub(super) fn remove(&mut self, name: &str, task: &Arc<Task>) {
        let key = self.hasher.hash_one(reference_key(&task.id));
        if let Some(tasks) = self.ids.get_mut(&key) {
            if let Some(at) = tasks.iter().position(|t| Arc::ptr_eq(t, task)) {
                tasks.remove(at);
            }
            if tasks.is_empty() {
                self.ids.remove(&key);
            }
        }
        for reference in &task.blocked_by {
            let reference = reference_key(reference);
            if let Some(names) = self.waiting.get_mut(reference) {
                names.remove(name);
                if names.is_empty() {
                    self.waiting.remove(reference);
                }
            }
        }
    }

    /// Whether some task of the board has `key` as its id's key.
    fn has_id(&self, key: &str) -> bool {
        self.ids
            .get(&self.hasher.hash_one(key))
            .is_some_and(|tasks| tasks.iter().any(|t| reference_key(&t.id) == key))
    }

    /// The file names of the tasks whose `blockedBy` names `task` (as
    /// [`TaskReferences`] resolves it), in board order.
    pub(super) fn waiting_on(&self, task: &Task) -> BTreeSet<&str> {
        let references = TaskReferences::with(task, |key| self.has_id(key));
        references
            .keys()
            .filter_map(|key| self.waiting.get(key))
            .flatten()
            .map(String::as_str)
            .collect()
    }
}
