//! The actionable agenda of a member.
//!
//! [`TaskIndex`] derives everything per task once (effective review state,
//! workflow column, dependency resolution, review cycle) and buckets tasks by
//! the members they can concern, so building the agendas of every member is
//! linear in tasks, not members × tasks; kept between reads, it follows a
//! changed board in time proportional to the change. [`TeamIndex`] pairs it
//! with the roster of one snapshot and builds the agendas.

use std::borrow::Cow;
use std::collections::{BTreeMap, BTreeSet, HashMap};
use std::sync::Arc;

use serde::{Deserialize, Serialize};

use super::diagnostic::Diagnostic;
use super::fingerprint::agenda_fingerprint;
use super::js_semantics::{
    compare_code_units, js_trim, locale_compare, locale_compare_numeric_base,
};
use super::names::{is_reserved_member_name, normalize_member_name};
use super::review_cycle::{current_review_cycle, ReviewCycle};
use super::team::{
    Clarification, HistoryEvent, KanbanColumn, KanbanEntry, ReviewState, Task, TaskStatus,
    TeamSnapshot,
};

/// What a member has to do about a task.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
#[cfg_attr(test, derive(ts_rs::TS))]
pub enum ItemKind {
    /// Owned work: pending, in progress or changes requested.
    Work,
    /// A review the member owes in the current cycle.
    Review,
    /// A question only the lead can answer.
    Clarification,
    /// A dependency that cannot resolve (lead oversight).
    BlockedDependency,
}

impl ItemKind {
    /// The item's `kind` in an agenda and its status, and the first part of
    /// its fingerprint sort key.
    pub fn as_str(self) -> &'static str {
        match self {
            Self::Work => "work",
            Self::Review => "review",
            Self::Clarification => "clarification",
            Self::BlockedDependency => "blocked_dependency",
        }
    }
}

/// Why an item is on the agenda (the reference's seven reasons).
///
/// A stored agenda (a status the app or another version wrote) may carry a
/// reason outside this set: it is kept as [`ItemReason::Unrecognized`] and
/// written back as read, and no rule treats it as one of the seven.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum ItemReason {
    /// The lead must answer a clarification.
    TaskNeedsLeadClarification,
    /// A dependency of the task cannot resolve (lead).
    TaskHasBrokenDependency,
    /// The task's reviewer is its owner (lead).
    SelfReviewInvalid,
    /// The member reviews the task in the current review cycle.
    CurrentCycleReviewAssigned,
    /// Review asked the owner for changes.
    ReviewChangesRequested,
    /// Owned work not started yet.
    OwnedPendingTask,
    /// Owned work in progress.
    OwnedInProgressTask,
    /// A spelling outside the set, as read.
    Unrecognized(String),
}

impl ItemReason {
    /// The known reasons.
    pub const KNOWN: [ItemReason; 7] = [
        Self::TaskNeedsLeadClarification,
        Self::TaskHasBrokenDependency,
        Self::SelfReviewInvalid,
        Self::CurrentCycleReviewAssigned,
        Self::ReviewChangesRequested,
        Self::OwnedPendingTask,
        Self::OwnedInProgressTask,
    ];

    /// The wire spelling.
    pub fn as_str(&self) -> &str {
        match self {
            Self::TaskNeedsLeadClarification => "task_needs_lead_clarification",
            Self::TaskHasBrokenDependency => "task_has_broken_dependency",
            Self::SelfReviewInvalid => "self_review_invalid",
            Self::CurrentCycleReviewAssigned => "current_cycle_review_assigned",
            Self::ReviewChangesRequested => "review_changes_requested",
            Self::OwnedPendingTask => "owned_pending_task",
            Self::OwnedInProgressTask => "owned_in_progress_task",
            Self::Unrecognized(spelling) => spelling,
        }
    }
}

/// Reads a wire spelling; one outside the set is kept as read.
impl From<&str> for ItemReason {
    fn from(spelling: &str) -> Self {
        Self::KNOWN
            .into_iter()
            .find(|r| r.as_str() == spelling)
            .unwrap_or_else(|| Self::Unrecognized(spelling.to_string()))
    }
}

impl Serialize for ItemReason {
    fn serialize<S: serde::Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        serializer.serialize_str(self.as_str())
    }
}

impl<'de> Deserialize<'de> for ItemReason {
    fn deserialize<D: serde::Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        let spelling = Cow::<'de, str>::deserialize(deserializer)?;
        Ok(Self::from(spelling.as_ref()))
    }
}

impl std::fmt::Display for ItemReason {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.as_str())
    }
}

/// How urgent an item is; fixed per kind.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
#[cfg_attr(test, derive(ts_rs::TS))]
pub enum Priority {
    /// Ordinary owned work.
    Normal,
    /// A review is waiting.
    ReviewRequested,
    /// Work is blocked.
    Blocked,
    /// A clarification is waiting.
    NeedsClarification,
}

/// Board facts that justify an item; part of the fingerprint.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
#[allow(missing_docs)]
#[cfg_attr(test, derive(ts_rs::TS), ts(optional_fields))]
pub struct Evidence {
    pub status: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub owner: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub reviewer: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub review_state: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub needs_clarification: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub blocker_task_ids: Option<Vec<String>>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub blocked_by_task_ids: Option<Vec<String>>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub history_event_ids: Option<Vec<String>>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub review_cycle_id: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub review_obligation: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub can_bypass_phase2: Option<bool>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub review_request_event_id: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub review_requested_at: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub review_started_event_id: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub review_started_at: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub review_started_by: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub review_diagnostics: Option<Vec<String>>,
}

/// One thing a member should act on.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
#[cfg_attr(test, derive(ts_rs::TS), ts(optional_fields))]
pub struct ActionableWorkItem {
    /// Canonical task id.
    pub task_id: String,
    /// Human task id.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub display_id: Option<String>,
    /// Task subject (`Untitled task` when empty).
    pub subject: String,
    /// What to do.
    pub kind: ItemKind,
    /// The member the item is for.
    pub assignee: String,
    /// How urgent the item is; set by its kind (review, blocker,
    /// clarification, or ordinary work).
    pub priority: Priority,
    /// Why (not part of the fingerprint).
    pub reason: ItemReason,
    /// The board facts the item was derived from (status, owner, review,
    /// blockers, history ids).
    pub evidence: Evidence,
}

impl ActionableWorkItem {
    /// Sort key of the fingerprint: `kind:taskId:displayId`, compared with
    /// [`locale_compare`] (the reference's `localeCompare`), not as bytes.
    pub fn sort_key(&self) -> String {
        format!(
            "{}:{}:{}",
            self.kind.as_str(),
            self.task_id,
            self.display_id.as_deref().unwrap_or_default()
        )
    }
}

/// A member's agenda with its fingerprint.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
#[cfg_attr(test, derive(ts_rs::TS))]
pub struct Agenda {
    /// The team the agenda was computed in.
    pub team_name: String,
    /// Member, normalized (trimmed, lowercased), as the reference reports it.
    pub member_name: String,
    /// When it was built.
    pub generated_at: String,
    /// `agenda:v1:<sha256 hex>`.
    pub fingerprint: String,
    /// Items in fingerprint order.
    pub items: Vec<ActionableWorkItem>,
    /// Why the agenda looks the way it does (not part of the fingerprint).
    pub diagnostics: Vec<String>,
}

/// Everything derived from one task: what the task and its kanban card
/// alone say ([`TaskFacts::local`]), then its dependencies, resolved
/// against the whole board ([`TaskIndex::resolve_dependencies`]).
#[derive(Debug, Clone)]
struct TaskFacts {
    task: Arc<Task>,
    review_state: ReviewState,
    column: Option<KanbanColumn>,
    needs_fix_actionable: bool,
    terminal: bool,
    /// A task waiting on this one may go ahead.
    finished_for_dependency: bool,
    owner: Option<String>,
    /// `blockedBy`, tidied ([`tidy_ids`]).
    blocked_by: Vec<String>,
    blocks: Vec<String>,
    broken: Vec<String>,
    waiting: Vec<String>,
    cycle: Option<ReviewCycle>,
    cycle_reviewer: Option<String>,
}

impl TaskFacts {
    /// What `task` and its kanban card say, without looking at other tasks
    /// (`broken` and `waiting` are left empty).
    fn local(task: &Arc<Task>, kanban: &BTreeMap<String, KanbanEntry>) -> Self {
        let card = kanban.get(&task.id);
        let review_state = effective_review_state(task);
        let column = workflow_column(task, review_state, card);
        let deleted = task.status == TaskStatus::Deleted;
        let needs_fix_actionable =
            review_state == ReviewState::NeedsFix && !deleted && column.is_none();
        let terminal = deleted
            || column == Some(KanbanColumn::Approved)
            || (column != Some(KanbanColumn::Review)
                && review_state != ReviewState::NeedsFix
                && task.status == TaskStatus::Completed);
        let finished_for_dependency = match column {
            Some(KanbanColumn::Approved) => true,
            Some(KanbanColumn::Review) => false,
            None => review_state != ReviewState::NeedsFix && task.status == TaskStatus::Completed,
        };
        let cycle = (column == Some(KanbanColumn::Review))
            .then(|| {
                let kanban_reviewer = card.and_then(|k| k.reviewer.as_deref());
                current_review_cycle(&task.history, kanban_reviewer)
            })
            .flatten();
        let cycle_reviewer = cycle.as_ref().map(|c| c.reviewer.clone());
        Self {
            task: task.clone(),
            review_state,
            column,
            needs_fix_actionable,
            terminal,
            finished_for_dependency,
            owner: task
                .owner
                .as_deref()
                .map(normalize_member_name)
                .filter(|o| !o.is_empty()),
            blocked_by: tidy_ids(&task.blocked_by),
            blocks: tidy_ids(&task.blocks),
            broken: Vec::new(),
            waiting: Vec::new(),
            cycle,
            cycle_reviewer,
        }
    }

    fn is_self_review(&self) -> bool {
        self.column == Some(KanbanColumn::Review)
            && self.owner.is_some()
            && self.owner == self.cycle_reviewer
    }

    /// Whether the task can be on any agenda: it has an id and is not
    /// finished outside review.
    fn listed(&self) -> bool {
        !(self.task.id.is_empty() || (self.terminal && self.column != Some(KanbanColumn::Review)))
    }

    /// Whether the lead oversees the task (a listed one).
    fn lead_oversees(&self) -> bool {
        self.task.needs_clarification == Some(Clarification::Lead)
            || !self.broken.is_empty()
            || self.is_self_review()
    }

    /// The references other tasks name this one by (id, display id).
    fn references(&self) -> impl Iterator<Item = &str> {
        [self.task.id.as_str(), self.task.display_id.as_str()]
            .into_iter()
            .map(task_reference)
            .filter(|r| !r.is_empty())
    }
}

/// Changed tasks (window sizes summed) up to which [`TaskIndex::refresh`]
/// updates the index in place; a bigger change is a full build, which is
/// cheaper per task.
const MAX_INCREMENTAL_CHANGE: usize = 256;

/// The task side of a team's agendas: every task's facts, its dependencies
/// resolved, and the tasks bucketed by the members they can concern.
///
/// [`TaskIndex::refresh`] brings it to a new task list in time proportional
/// to the change (plus one pointer comparison per task): tasks are told
/// apart by their `Arc`, which the task cache keeps for unchanged files, and
/// only the changed tasks and the tasks that name them are looked at again.
/// The result is exactly what [`TaskIndex::build`] gives for the new list
/// (the tests compare the two over random change sequences).
#[derive(Debug, Clone, Default)]
pub struct TaskIndex {
    kanban: BTreeMap<String, KanbanEntry>,
    facts: Vec<TaskFacts>,
    /// Task positions by canonical id reference ([`task_reference`]).
    by_id: HashMap<String, Vec<usize>>,
    /// Task positions by display id reference.
    by_display: HashMap<String, Vec<usize>>,
    /// Positions of the tasks whose `blockedBy` names a reference.
    dependents: HashMap<String, Vec<usize>>,
    /// Listed task positions by owner and current-cycle reviewer, sorted.
    by_member: HashMap<String, Vec<usize>>,
    /// Listed task positions the lead oversees, sorted.
    lead_oversight: Vec<usize>,
}

impl TaskIndex {
    /// Derives the facts of every task (`kanban` holds their cards).
    pub fn build(tasks: &[Arc<Task>], kanban: &BTreeMap<String, KanbanEntry>) -> Self {
        let mut index = Self {
            kanban: kanban.clone(),
            facts: tasks.iter().map(|t| TaskFacts::local(t, kanban)).collect(),
            ..Self::default()
        };
        for i in 0..tasks.len() {
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
        let same = |(f, t): (&TaskFacts, &Arc<Task>)| Arc::ptr_eq(&f.task, t);
        let prefix = self
            .facts
            .iter()
            .zip(tasks)
            .take_while(|p| same(*p))
            .count();
        let suffix = self.facts[prefix..]
            .iter()
            .rev()
            .zip(tasks[prefix..].iter().rev())
            .take_while(|p| same(*p))
            .count();
        let removed = prefix..self.facts.len() - suffix;
        let added = prefix..tasks.len() - suffix;
        if removed.is_empty() && added.is_empty() {
            return;
        }
        if removed.len() + added.len() > MAX_INCREMENTAL_CHANGE {
            *self = Self::build(tasks, kanban);
            return;
        }
        // References whose resolution may change: the old and new tasks'.
        let mut touched: BTreeSet<String> = BTreeSet::new();
        for i in removed.clone() {
            touched.extend(self.facts[i].references().map(str::to_string));
            self.remove_from_buckets(i);
            self.remove_references(i);
        }
        let fresh: Vec<TaskFacts> = tasks[added.clone()]
            .iter()
            .map(|t| TaskFacts::local(t, kanban))
            .collect();
        self.facts.splice(removed.clone(), fresh);
        if removed.len() != added.len() {
            self.shift_positions(removed.end, added.len() as isize - removed.len() as isize);
        }
        for i in added.clone() {
            touched.extend(self.facts[i].references().map(str::to_string));
            self.add_references(i);
        }
        let dependents: BTreeSet<usize> = touched
            .iter()
            .filter_map(|reference| self.dependents.get(reference))
            .flatten()
            .copied()
            .filter(|i| !added.contains(i))
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
        for i in added.chain(dependents) {
            self.resolve_dependencies(i);
            self.add_to_buckets(i);
        }
    }

    /// Files task `i` under its references and the ones it waits on.
    fn add_references(&mut self, i: usize) {
        let f = &self.facts[i];
        for (map, reference) in [
            (&mut self.by_id, &f.task.id),
            (&mut self.by_display, &f.task.display_id),
        ] {
            let reference = task_reference(reference);
            if !reference.is_empty() {
                map.entry(reference.to_string()).or_default().push(i);
            }
        }
        let waits_on: BTreeSet<&str> = f.blocked_by.iter().map(|d| task_reference(d)).collect();
        for reference in waits_on {
            self.dependents
                .entry(reference.to_string())
                .or_default()
                .push(i);
        }
    }

    /// Undoes [`TaskIndex::add_references`] of task `i`.
    fn remove_references(&mut self, i: usize) {
        let f = &self.facts[i];
        let unfile = |map: &mut HashMap<String, Vec<usize>>, reference: &str| {
            if let Some(positions) = map.get_mut(reference) {
                positions.retain(|&p| p != i);
                if positions.is_empty() {
                    map.remove(reference);
                }
            }
        };
        unfile(&mut self.by_id, task_reference(&f.task.id));
        unfile(&mut self.by_display, task_reference(&f.task.display_id));
        for dep in &f.blocked_by {
            unfile(&mut self.dependents, task_reference(dep));
        }
    }

    /// The task a reference names: the only task with that canonical id,
    /// else (no task has it) the only one with that display id.
    fn resolve(&self, reference: &str) -> Option<usize> {
        let reference = task_reference(reference);
        match self.by_id.get(reference).map(Vec::as_slice) {
            Some([only]) => Some(*only),
            Some(_) => None,
            None => match self.by_display.get(reference).map(Vec::as_slice) {
                Some([only]) => Some(*only),
                _ => None,
            },
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
        let f = &mut self.facts[i];
        f.broken = broken;
        f.waiting = waiting;
    }

    /// The buckets task `i` belongs in, by its facts.
    fn buckets(&self, i: usize) -> (Vec<&str>, bool) {
        let f = &self.facts[i];
        if !f.listed() {
            return (Vec::new(), false);
        }
        let mut members: Vec<&str> = f.owner.as_deref().into_iter().collect();
        if let Some(reviewer) = &f.cycle_reviewer {
            if f.owner.as_ref() != Some(reviewer) {
                members.push(reviewer);
            }
        }
        (members, f.lead_oversees())
    }

    fn add_to_buckets(&mut self, i: usize) {
        let (members, lead) = self.buckets(i);
        let members: Vec<String> = members.into_iter().map(str::to_string).collect();
        for member in members {
            insert_sorted(self.by_member.entry(member).or_default(), i);
        }
        if lead {
            insert_sorted(&mut self.lead_oversight, i);
        }
    }

    fn remove_from_buckets(&mut self, i: usize) {
        let (members, lead) = self.buckets(i);
        let members: Vec<String> = members.into_iter().map(str::to_string).collect();
        for member in members {
            if let Some(positions) = self.by_member.get_mut(&member) {
                remove_sorted(positions, i);
                if positions.is_empty() {
                    self.by_member.remove(&member);
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
        let shift = |positions: &mut Vec<usize>| {
            for p in positions.iter_mut().filter(|p| **p >= from) {
                *p = p.wrapping_add_signed(by);
            }
        };
        for map in [
            &mut self.by_id,
            &mut self.by_display,
            &mut self.dependents,
            &mut self.by_member,
        ] {
            map.values_mut().for_each(shift);
        }
        shift(&mut self.lead_oversight);
    }
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

/// A team's snapshot with its [`TaskIndex`]; builds agendas for any member
/// of the team.
#[derive(Debug)]
pub struct TeamIndex<'a> {
    snapshot: &'a TeamSnapshot,
    tasks: Cow<'a, TaskIndex>,
    lead: Option<String>,
    active: BTreeSet<String>,
}

impl<'a> TeamIndex<'a> {
    /// Derives the facts of every task of `snapshot`.
    pub fn build(snapshot: &'a TeamSnapshot) -> Self {
        let tasks = TaskIndex::build(&snapshot.tasks, &snapshot.kanban);
        Self::over(snapshot, Cow::Owned(tasks))
    }

    /// The index of `snapshot` from a kept [`TaskIndex`], first brought to
    /// the snapshot's tasks ([`TaskIndex::refresh`]).
    pub fn cached(snapshot: &'a TeamSnapshot, tasks: &'a mut TaskIndex) -> Self {
        tasks.refresh(&snapshot.tasks, &snapshot.kanban);
        Self::over(snapshot, Cow::Borrowed(tasks))
    }

    fn over(snapshot: &'a TeamSnapshot, tasks: Cow<'a, TaskIndex>) -> Self {
        Self {
            snapshot,
            tasks,
            lead: snapshot.lead().map(|m| normalize_member_name(&m.name)),
            active: snapshot.active_member_names().into_iter().collect(),
        }
    }
    /// The agenda of `member_name`, stamped with `generated_at`.
    pub fn agenda_for(&self, member_name: &str, generated_at: &str) -> Agenda {
        let normalized = normalize_member_name(member_name);
        let mut diagnostics = self.snapshot.diagnostics.clone();
        let mut items = Vec::new();
        if !self.snapshot.config_found {
            diagnostics.push(Diagnostic::TeamConfigMissing.as_str().into());
        } else if self.snapshot.deleted {
            diagnostics.push(Diagnostic::TeamDeleted.as_str().into());
        } else if is_reserved_member_name(&normalized) {
            diagnostics.push(Diagnostic::MemberInvalidOrReserved.as_str().into());
        } else if !self.active.contains(&normalized) {
            diagnostics.push(Diagnostic::MemberNotActive.as_str().into());
        } else {
            let is_lead = self.lead.as_deref() == Some(normalized.as_str());
            let tasks = &*self.tasks;
            let mut relevant: Vec<usize> = tasks
                .by_member
                .get(&normalized)
                .cloned()
                .unwrap_or_default();
            if is_lead {
                relevant.extend_from_slice(&tasks.lead_oversight);
            }
            relevant.sort_unstable();
            relevant.dedup();
            // In the app's task list order (stable: equal labels keep the
            // order of the task files).
            relevant.sort_by(|&left, &right| {
                app_task_order(&tasks.facts[left].task, &tasks.facts[right].task)
            });
            items = relevant
                .into_iter()
                .filter_map(|i| item_for(&tasks.facts[i], &normalized, is_lead))
                .collect();
        }
        let fingerprint = fingerprint_of(&self.snapshot.team_name, &normalized, &items);
        Agenda {
            team_name: self.snapshot.team_name.clone(),
            member_name: normalized,
            generated_at: generated_at.to_string(),
            fingerprint,
            items,
            diagnostics,
        }
    }
}
/// Applies the first matching agenda rule to one task.
///
/// Names in evidence (`owner`, `reviewer`, `reviewStartedBy`) and the assignee
/// are normalized; `reviewState` is always there (`none` included), as the
/// reference's task reader always sets it.
fn item_for(f: &TaskFacts, member: &str, is_lead: bool) -> Option<ActionableWorkItem> {
    let task = &*f.task;
    let review_state = Some(f.review_state.as_str().to_string());
    let subject = js_trim(&task.subject);
    let base = |kind, priority, reason: ItemReason, evidence| ActionableWorkItem {
        task_id: task.id.clone(),
        display_id: (!task.display_id.is_empty()).then(|| task.display_id.clone()),
        subject: if subject.is_empty() {
            "Untitled task".to_string()
        } else {
            subject.to_string()
        },
        kind,
        assignee: member.to_string(),
        priority,
        reason,
        evidence,
    };
    let status = task.status.as_str().to_string();

    if is_lead && task.needs_clarification == Some(Clarification::Lead) {
        let evidence = Evidence {
            status,
            owner: f.owner.clone(),
            review_state,
            needs_clarification: Some("lead".into()),
            ..Evidence::default()
        };
        return Some(base(
            ItemKind::Clarification,
            Priority::NeedsClarification,
            ItemReason::TaskNeedsLeadClarification,
            evidence,
        ));
    }
    if is_lead && !f.broken.is_empty() {
        let evidence = Evidence {
            status,
            owner: f.owner.clone(),
            review_state,
            blocked_by_task_ids: Some(f.broken.clone()),
            blocker_task_ids: (!f.blocks.is_empty()).then(|| f.blocks.clone()),
            ..Evidence::default()
        };
        return Some(base(
            ItemKind::BlockedDependency,
            Priority::Blocked,
            ItemReason::TaskHasBrokenDependency,
            evidence,
        ));
    }
    if f.column == Some(KanbanColumn::Review) {
        let cycle = f.cycle.as_ref()?;
        let history_event_ids =
            (!cycle.history_event_ids.is_empty()).then(|| cycle.history_event_ids.clone());
        let request = cycle.request.as_ref();
        let started = cycle.started.as_ref();
        if is_lead && f.is_self_review() {
            let mut diagnostics: Vec<String> =
                cycle.diagnostics.iter().map(|d| d.to_string()).collect();
            diagnostics.push("self_review_invalid".into());
            diagnostics.sort();
            diagnostics.dedup();
            let evidence = Evidence {
                status,
                owner: f.owner.clone(),
                reviewer: Some(cycle.reviewer.clone()),
                review_state: Some("review".into()),
                review_request_event_id: request.and_then(|r| r.id.clone()),
                history_event_ids,
                review_diagnostics: Some(diagnostics),
                ..Evidence::default()
            };
            return Some(base(
                ItemKind::Clarification,
                Priority::NeedsClarification,
                ItemReason::SelfReviewInvalid,
                evidence,
            ));
        }
        if cycle.reviewer == member && !f.is_self_review() {
            let evidence = Evidence {
                status,
                owner: f.owner.clone(),
                reviewer: Some(member.to_string()),
                review_state: Some("review".into()),
                review_cycle_id: Some(cycle.id.clone()),
                review_obligation: Some(cycle.obligation.as_str().into()),
                can_bypass_phase2: Some(cycle.can_bypass_phase2),
                review_request_event_id: request.and_then(|r| r.id.clone()),
                review_requested_at: request.and_then(|r| r.timestamp.clone()),
                review_started_event_id: started.and_then(|s| s.id.clone()),
                review_started_at: started.and_then(|s| s.timestamp.clone()),
                review_started_by: started.and_then(|s| s.who.clone()),
                history_event_ids,
                review_diagnostics: (!cycle.diagnostics.is_empty())
                    .then(|| cycle.diagnostics.iter().map(|d| d.to_string()).collect()),
                ..Evidence::default()
            };
            return Some(base(
                ItemKind::Review,
                Priority::ReviewRequested,
                ItemReason::CurrentCycleReviewAssigned,
                evidence,
            ));
        }
        return None;
    }
    if f.owner.as_deref() != Some(member)
        || task.needs_clarification.is_some()
        || !f.waiting.is_empty()
        || !f.broken.is_empty()
    {
        return None;
    }
    let reason = if f.needs_fix_actionable {
        ItemReason::ReviewChangesRequested
    } else {
        match task.status {
            TaskStatus::Pending => ItemReason::OwnedPendingTask,
            TaskStatus::InProgress => ItemReason::OwnedInProgressTask,
            TaskStatus::Completed | TaskStatus::Deleted => return None,
        }
    };
    let evidence = Evidence {
        status,
        owner: Some(member.to_string()),
        review_state,
        ..Evidence::default()
    };
    Some(base(ItemKind::Work, Priority::Normal, reason, evidence))
}

/// A task reference as the index keys it: trimmed, one leading `#` removed.
fn task_reference(reference: &str) -> &str {
    let reference = js_trim(reference);
    reference.strip_prefix('#').unwrap_or(reference)
}

/// The order the app's task reader lists tasks in, which its agendas keep:
/// by display label, numeric labels first by value, then the others by
/// `localeCompare` with numeric collation and case ignored, ties by id the
/// same way.
fn app_task_order(left: &Task, right: &Task) -> std::cmp::Ordering {
    use std::cmp::Ordering;
    let numeric = |label: &str| {
        (!label.is_empty() && label.bytes().all(|b| b.is_ascii_digit()))
            .then(|| label.parse::<f64>().unwrap_or(f64::INFINITY))
    };
    let (a, b) = (left.display_id.as_str(), right.display_id.as_str());
    match (numeric(a), numeric(b)) {
        (Some(a), Some(b)) => a.partial_cmp(&b).unwrap_or(Ordering::Equal),
        (Some(_), None) => Ordering::Less,
        (None, Some(_)) => Ordering::Greater,
        (None, None) => locale_compare_numeric_base(a, b)
            .then_with(|| locale_compare_numeric_base(&left.id, &right.id)),
    }
}

/// The fingerprint of `items`, which hashes them in `kind:taskId:displayId`
/// order ([`ActionableWorkItem::sort_key`] under `localeCompare`), whatever
/// order the agenda lists them in.
fn fingerprint_of(team_name: &str, member_name: &str, items: &[ActionableWorkItem]) -> String {
    // Stable: equal keys (tasks sharing an id) keep agenda order.
    let mut keyed: Vec<(String, &ActionableWorkItem)> =
        items.iter().map(|item| (item.sort_key(), item)).collect();
    keyed.sort_by(|(left, _), (right, _)| locale_compare(left, right));
    let sorted: Vec<ActionableWorkItem> = keyed.into_iter().map(|(_, item)| item.clone()).collect();
    agenda_fingerprint(team_name, member_name, &sorted)
}

/// Trims, drops empties, dedupes and sorts task id lists (UTF-16 code unit
/// order, JavaScript's default sort).
fn tidy_ids(ids: &[String]) -> Vec<String> {
    let set: BTreeSet<&str> = ids
        .iter()
        .map(|id| js_trim(id))
        .filter(|id| !id.is_empty())
        .collect();
    let mut ids: Vec<String> = set.into_iter().map(str::to_string).collect();
    ids.sort_by(|a, b| compare_code_units(a, b));
    ids
}

/// The review state after history,
/// clamped by status, by the reference task reader's rule: the last review
/// event decides (its `to`, `none` when that is missing or unknown); a later
/// reopening to in_progress/deleted means none; one to pending keeps only a
/// needsFix of the review event right before it (none across a boundary).
/// Without any of these events the task's own `reviewState` applies.
pub fn effective_review_state(task: &Task) -> ReviewState {
    let state = review_state_from_history(&task.history).unwrap_or(task.review_state);
    match task.status {
        TaskStatus::InProgress | TaskStatus::Deleted => ReviewState::None,
        TaskStatus::Pending if state != ReviewState::NeedsFix => ReviewState::None,
        _ => state,
    }
}

fn is_review_event(event: &HistoryEvent) -> bool {
    matches!(
        event.kind.as_str(),
        "review_requested" | "review_changes_requested" | "review_approved" | "review_started"
    )
}

fn review_state_to(event: &HistoryEvent) -> ReviewState {
    event
        .to
        .as_deref()
        .map_or(ReviewState::None, ReviewState::parse)
}

fn review_state_from_history(history: &[HistoryEvent]) -> Option<ReviewState> {
    for (i, event) in history.iter().enumerate().rev() {
        if is_review_event(event) {
            return Some(review_state_to(event));
        }
        if event.kind != "status_changed" {
            continue;
        }
        match event.to.as_deref() {
            Some("in_progress" | "deleted") => return Some(ReviewState::None),
            Some("pending") => {
                for previous in history[..i].iter().rev() {
                    if is_review_event(previous) {
                        return Some(if review_state_to(previous) == ReviewState::NeedsFix {
                            ReviewState::NeedsFix
                        } else {
                            ReviewState::None
                        });
                    }
                    let boundary = previous.kind == "task_created"
                        || (previous.kind == "status_changed"
                            && matches!(
                                previous.to.as_deref(),
                                Some("in_progress" | "pending" | "deleted")
                            ));
                    if boundary {
                        return Some(ReviewState::None);
                    }
                }
                return Some(ReviewState::None);
            }
            _ => {}
        }
    }
    None
}

/// The workflow column: none for deleted/pending tasks; else the kanban card's
/// column; else from the review state. The card counts however old it is.
fn workflow_column(
    task: &Task,
    review_state: ReviewState,
    kanban: Option<&KanbanEntry>,
) -> Option<KanbanColumn> {
    if task.status == TaskStatus::Deleted || task.status == TaskStatus::Pending {
        return None;
    }
    if let Some(entry) = kanban {
        return Some(entry.column);
    }
    match review_state {
        ReviewState::Approved => Some(KanbanColumn::Approved),
        ReviewState::Review => Some(KanbanColumn::Review),
        _ => None,
    }
}

#[cfg(test)]
mod tests;
