//! The board's tasks indexed once: their facts, their dependencies resolved
//! against the whole board, and buckets by the members they can concern;
//! kept between reads, it follows a changed board in time proportional to
//! the change.

use std::collections::{BTreeMap, BTreeSet, HashMap};
use std::sync::Arc;

use crate::domain::team::{KanbanEntry, Task, TaskStatus};
/// Changed tasks (window sizes summed) up to which [`TaskIndex::refresh`]
/// updates the index in place; a bigger change is a full build, which is
/// cheaper per task.
pub(super) const MAX_INCREMENTAL_CHANGE: usize = 256;

use super::reference_map::ReferenceMap;
use super::task_facts::{task_reference, TaskFacts};

/// The task side of a team's agendas: every task's facts, its dependencies
/// resolved, and the tasks bucketed by the members they can concern.
///
/// [`TaskIndex::refresh`] brings it to a new task list in time proportional
/// to the change (plus one pointer comparison per task, over one contiguous
/// array): tasks are told apart by their `Arc`, which the task cache keeps
/// for unchanged files, and
/// only the changed tasks and the tasks that name them are looked at again.
/// The result is exactly what [`TaskIndex::build`] gives for the new list
/// (the tests compare the two over random change sequences).
#[derive(Debug, Clone, Default)]
pub struct TaskIndex {
    kanban: BTreeMap<String, KanbanEntry>,
    pub(super) facts: Vec<TaskFacts>,
    /// The address of each fact's task, at the fact's position: what a
    /// refresh compares a new list against. Read from the facts themselves,
    /// the comparison touched one strided fact per task, which after other
    /// work has left the CPU cache costs a memory load each (a tenth of a
    /// millisecond on 10,000 tasks); this array is 8 bytes per task. The
    /// facts hold the tasks, so no address is reused while it is here.
    pub(super) task_addresses: Vec<usize>,
    /// Task positions by canonical id reference ([`task_reference`]).
    pub(super) by_id: ReferenceMap,
    /// Task positions by display id reference, of the tasks whose display
    /// id is not their id.
    pub(super) by_display: ReferenceMap,
    /// Positions of the tasks whose `blockedBy` names a reference.
    pub(super) dependents: HashMap<String, Vec<usize>>,
    /// Listed task positions by owner and current-cycle reviewer, sorted.
    pub(super) by_member: HashMap<String, Vec<usize>>,
    /// Listed task positions the lead oversees, sorted.
    pub(super) lead_oversight: Vec<usize>,
}

impl TaskIndex {
    /// Derives the facts of every task (`kanban` holds their cards).
    pub fn build(tasks: &[Arc<Task>], kanban: &BTreeMap<String, KanbanEntry>) -> Self {
        // Sized up front: each task files one id and one display id, so the
        // maps never rehash while the board is filed.
        let mut index = Self {
            kanban: kanban.clone(),
            facts: Vec::with_capacity(tasks.len()),
            task_addresses: tasks.iter().map(address).collect(),
            by_id: ReferenceMap::with_capacity(tasks.len()),
            by_display: ReferenceMap::with_capacity(tasks.len()),
            ..Self::default()
        };
        // A task is filed under its references as soon as its facts are
        // made, while what it points to is still in the CPU cache.
        for (i, task) in tasks.iter().enumerate() {
            index.facts.push(TaskFacts::local(task, kanban));
            index.add_references(i);
        }
        for i in 0..tasks.len() {
            index.resolve_dependencies(i);
            index.add_to_buckets(i);
        }
        index
    }

    /// Brings the index to `tasks` and `kanban`: in place when a few tasks
    /// changed (see the type docs), by a full build otherwise.
    pub fn refresh(&mut self, tasks: &[Arc<Task>], kanban: &BTreeMap<String, KanbanEntry>) {
        // A first read takes the full build, the path the golden corpus checks.
        if *kanban != self.kanban || self.facts.is_empty() {
            *self = Self::build(tasks, kanban);
            return;
        }
        let same = |(&kept, task): (&usize, &Arc<Task>)| kept == address(task);
        let prefix = self
            .task_addresses
            .iter()
            .zip(tasks)
            .take_while(|p| same(*p))
            .count();
        let suffix = self.task_addresses[prefix..]
            .iter()
            .rev()
            .zip(tasks[prefix..].iter().rev())
            .take_while(|p| same(*p))
            .count();
        let window_removed = prefix..self.facts.len() - suffix;
        let window_added = prefix..tasks.len() - suffix;
        if window_removed.is_empty() && window_added.is_empty() {
            return;
        }
        // As many tasks as before: only the positions whose task differs
        // changed, however far apart (two edits at both ends of the board
        // cost two tasks, not the window between them). Otherwise the
        // window is spliced.
        let in_place = window_removed.len() == window_added.len();
        let (removed, added): (Vec<usize>, Vec<usize>) = if in_place {
            let changed: Vec<usize> = window_added
                .clone()
                .filter(|&i| self.task_addresses[i] != address(&tasks[i]))
                .collect();
            (changed.clone(), changed)
        } else {
            (
                window_removed.clone().collect(),
                window_added.clone().collect(),
            )
        };
        if removed.len() + added.len() > MAX_INCREMENTAL_CHANGE {
            *self = Self::build(tasks, kanban);
            return;
        }
        // References whose resolution may change: the old and new tasks'.
        let mut touched: BTreeSet<String> = BTreeSet::new();
        for &i in &removed {
            touched.extend(self.facts[i].references().map(str::to_string));
            self.remove_from_buckets(i);
            self.remove_references(i);
        }
        if in_place {
            for &i in &added {
                self.facts[i] = TaskFacts::local(&tasks[i], kanban);
                self.task_addresses[i] = address(&tasks[i]);
            }
        } else {
            let fresh: Vec<TaskFacts> = tasks[window_added.clone()]
                .iter()
                .map(|t| TaskFacts::local(t, kanban))
                .collect();
            self.facts.splice(window_removed.clone(), fresh);
            self.task_addresses.splice(
                window_removed.clone(),
                tasks[window_added.clone()].iter().map(address),
            );
            self.shift_positions(
                window_removed.end,
                window_added.len() as isize - window_removed.len() as isize,
            );
        }
        for &i in &added {
            touched.extend(self.facts[i].references().map(str::to_string));
            self.add_references(i);
        }
        // `added` is sorted: the positions just refreshed are left out.
        let dependents: BTreeSet<usize> = touched
            .iter()
            .filter_map(|reference| self.dependents.get(reference))
            .flatten()
            .copied()
            .filter(|i| added.binary_search(i).is_err())
            .collect();
        // Each dependent moves within bucket lists as long as the board: past
        // the limit, one full build is cheaper (a task thousands wait on).
        if removed.len() + added.len() + dependents.len() > MAX_INCREMENTAL_CHANGE {
            *self = Self::build(tasks, kanban);
            return;
        }
        for &i in &dependents {
            self.remove_from_buckets(i);
        }
        for i in added.into_iter().chain(dependents) {
            self.resolve_dependencies(i);
            self.add_to_buckets(i);
        }
    }

    /// Files task `i` under its references and the ones it waits on.
    fn add_references(&mut self, i: usize) {
        let f = &self.facts[i];
        let id = task_reference(&f.task.id);
        let display = task_reference(&f.task.display_id);
        if !id.is_empty() {
            self.by_id.add(id, i);
        }
        // A display id naming the task's own id (`#12` of task `12`, the
        // usual one) is never looked up: [`TaskIndex::resolve`] reads
        // display ids only when no task has the id asked for, and this one
        // has it. Not filing it saves a hash and an entry per task.
        if !display.is_empty() && display != id {
            self.by_display.add(display, i);
        }
        let waits_on: BTreeSet<&str> = f.blocked_by.iter().map(|d| task_reference(d)).collect();
        for reference in waits_on {
            file_under(&mut self.dependents, reference, i);
        }
    }

    /// Undoes [`TaskIndex::add_references`] of task `i`.
    fn remove_references(&mut self, i: usize) {
        let f = &self.facts[i];
        self.by_id.remove(task_reference(&f.task.id), i);
        self.by_display
            .remove(task_reference(&f.task.display_id), i);
        for dep in &f.blocked_by {
            let reference = task_reference(dep);
            if let Some(positions) = self.dependents.get_mut(reference) {
                positions.retain(|&p| p != i);
                if positions.is_empty() {
                    self.dependents.remove(reference);
                }
            }
        }
    }

    /// The task a reference names: the only task with that canonical id,
    /// else (no task has it) the only one with that display id.
    fn resolve(&self, reference: &str) -> Option<usize> {
        let reference = task_reference(reference);
        let facts = &self.facts;
        let mut ids = self
            .by_id
            .get(reference, |p| task_reference(&facts[p].task.id));
        match (ids.next(), ids.next()) {
            (Some(only), None) => Some(only),
            (Some(_), Some(_)) => None,
            (None, _) => {
                let mut displays = self
                    .by_display
                    .get(reference, |p| task_reference(&facts[p].task.display_id));
                match (displays.next(), displays.next()) {
                    (Some(only), None) => Some(only),
                    _ => None,
                }
            }
        }
    }

    /// Sorts the dependencies of task `i` into broken and still waiting.
    fn resolve_dependencies(&mut self, i: usize) {
        let mut broken = Vec::new();
        let mut waiting = Vec::new();
        for dep in &self.facts[i].blocked_by {
            match self.resolve(dep) {
                Some(j) if self.facts[j].task.status != TaskStatus::Deleted => {
                    if !self.facts[j].finished_for_dependency {
                        waiting.push(dep.clone());
                    }
                }
                _ => broken.push(dep.clone()),
            }
        }
        self.facts[i].set_dependencies(broken, waiting);
    }

    fn add_to_buckets(&mut self, i: usize) {
        let (members, lead) = buckets(&self.facts[i]);
        for member in members.into_iter().flatten() {
            // A member's bucket exists after their first task: its name is
            // allocated once, not once per task.
            match self.by_member.get_mut(member) {
                Some(positions) => insert_sorted(positions, i),
                None => {
                    self.by_member.insert(member.to_string(), vec![i]);
                }
            }
        }
        if lead {
            insert_sorted(&mut self.lead_oversight, i);
        }
    }

    fn remove_from_buckets(&mut self, i: usize) {
        let (members, lead) = buckets(&self.facts[i]);
        for member in members.into_iter().flatten() {
            if let Some(positions) = self.by_member.get_mut(member) {
                remove_sorted(positions, i);
                if positions.is_empty() {
                    self.by_member.remove(member);
                }
            }
        }
        if lead {
            remove_sorted(&mut self.lead_oversight, i);
        }
    }

    /// Moves every position from `from` on by `by` (tasks were inserted or
    /// removed before them); the order of every list is kept.
    fn shift_positions(&mut self, from: usize, by: isize) {
        let shift = |positions: &mut [usize]| {
            for p in positions.iter_mut().filter(|p| **p >= from) {
                *p = p.wrapping_add_signed(by);
            }
        };
        self.by_id.lists_mut().for_each(shift);
        self.by_display.lists_mut().for_each(shift);
        for map in [&mut self.dependents, &mut self.by_member] {
            map.values_mut().for_each(|positions| shift(positions));
        }
        shift(&mut self.lead_oversight);
    }
}

/// Adds position `i` under `reference`; the key is allocated only when the
/// reference is new (many tasks can wait on one reference).
fn file_under(map: &mut HashMap<String, Vec<usize>>, reference: &str, i: usize) {
    match map.get_mut(reference) {
        Some(positions) => positions.push(i),
        None => {
            map.insert(reference.to_string(), vec![i]);
        }
    }
}

/// The buckets a task belongs in, by its facts: its owner and its
/// current-cycle reviewer (when another member), and whether the lead
/// oversees it.
fn buckets(f: &TaskFacts) -> ([Option<&str>; 2], bool) {
    if !f.listed() {
        return ([None, None], false);
    }
    let reviewer = f
        .cycle_reviewer()
        .filter(|reviewer| f.owner() != Some(*reviewer));
    ([f.owner(), reviewer], f.lead_oversees())
}

fn insert_sorted(positions: &mut Vec<usize>, i: usize) {
    if let Err(at) = positions.binary_search(&i) {
        positions.insert(at, i);
    }
}

fn remove_sorted(positions: &mut Vec<usize>, i: usize) {
    if let Ok(at) = positions.binary_search(&i) {
        positions.remove(at);
    }
}

/// A task's identity while an `Arc` holds it: its address.
fn address(task: &Arc<Task>) -> usize {
    Arc::as_ptr(task) as usize
}
