//! Which tasks of a board wait on a task: the board's task ids (those not
//! found by file name) and the references their `blockedBy` lists hold,
//! kept beside a folder's entries and updated with each one, so routing a
//! one-task change looks up the tasks that name it instead of scanning the
//! board.

use std::collections::{BTreeSet, HashMap};
#[cfg(test)]
use std::sync::Arc;

use crate::domain::js_semantics::js_trim;
use crate::domain::team::Task;

/// A task reference as the app's index keys it: trimmed (as JavaScript
/// trims), one `#` dropped.
pub(crate) fn reference_key(reference: &str) -> &str {
    let reference = js_trim(reference);
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

/// Which ids the tasks of one board have, and the names of the task files
/// whose `blockedBy` holds each reference key.
///
/// A task whose id's key is its file's name without `.json` (the usual
/// `12.json` holding task `12`) is found by that name in the folder's
/// entries and filed nowhere here; only the others are counted by key, so
/// a sane board costs nothing but the tasks that wait on others.
#[derive(Debug, Default)]
pub(super) struct BoardReferences {
    /// How many tasks have each id key that is not their file's stem.
    other_ids: HashMap<String, usize>,
    /// File names (sorted: board order) of the tasks waiting on each key.
    waiting: HashMap<String, BTreeSet<String>>,
}

/// Whether the task of file `name` is found by its name: its id's key is the
/// name without `.json`.
fn named_by_id(name: &str, task: &Task) -> bool {
    name.strip_suffix(".json") == Some(reference_key(&task.id))
}

impl BoardReferences {
    /// Files the task of file `name`.
    pub(super) fn add(&mut self, name: &str, task: &Task) {
        if !named_by_id(name, task) {
            *self
                .other_ids
                .entry(reference_key(&task.id).to_string())
                .or_default() += 1;
        }
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
    pub(super) fn remove(&mut self, name: &str, task: &Task) {
        if !named_by_id(name, task) {
            let key = reference_key(&task.id);
            if let Some(count) = self.other_ids.get_mut(key) {
                *count -= 1;
                if *count == 0 {
                    self.other_ids.remove(key);
                }
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

    /// The file names of the tasks whose `blockedBy` names `task` (as
    /// [`TaskReferences`] resolves it), in board order; `task_of(name)` is
    /// the board's task of file `name`, if any.
    pub(super) fn waiting_on<'a>(
        &'a self,
        task: &Task,
        task_of: impl Fn(&str) -> Option<&'a Task>,
    ) -> BTreeSet<&'a str> {
        // Some task has `key` as its id's key: one filed here, or the task
        // of the file named after the key.
        let has_id = |key: &str| {
            let name = format!("{key}.json");
            self.other_ids.contains_key(key)
                || task_of(&name).is_some_and(|t| named_by_id(&name, t))
        };
        let references = TaskReferences::with(task, has_id);
        references
            .keys()
            .filter_map(|key| self.waiting.get(key))
            .flatten()
            .map(String::as_str)
            .collect()
    }
}
