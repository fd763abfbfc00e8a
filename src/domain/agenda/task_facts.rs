//! What one task alone says for every agenda: its effective review state
//! (the kanban card over the task's history), its workflow column, whether
//! it is finished, who owns and reviews it, and its tidied references.

use std::collections::{BTreeMap, BTreeSet};
use std::sync::{Arc, OnceLock};

use crate::domain::js_semantics::{compare_code_units, js_trim};
use crate::domain::names::normalize_member_name;
use crate::domain::review_cycle::{current_review_cycle, ReviewCycle};
use crate::domain::team::{
    Clarification, HistoryEvent, KanbanColumn, KanbanEntry, ReviewState, Task, TaskStatus,
};

use super::item::ActionableWorkItem;
/// A task reference as the index keys it: trimmed, one leading `#` removed.
pub(super) fn task_reference(reference: &str) -> &str {
    let reference = js_trim(reference);
    reference.strip_prefix('#').unwrap_or(reference)
}

/// Trims, drops empties, dedupes and sorts task id lists (UTF-16 code unit
/// order, JavaScript's default sort).
fn tidy_ids(ids: &[String]) -> Vec<String> {
    // One id (the usual dependency list) needs no set to dedupe and sort.
    if let [only] = ids {
        let id = js_trim(only);
        return if id.is_empty() {
            Vec::new()
        } else {
            vec![id.to_string()]
        };
    }
    let set: BTreeSet<&str> = ids
        .iter()
        .map(|id| js_trim(id))
        .filter(|id| !id.is_empty())
        .collect();
    let mut ids: Vec<String> = set.into_iter().map(str::to_string).collect();
    ids.sort_by(|a, b| compare_code_units(a, b));
    ids
}

/// Everything derived from one task: what the task and its kanban card
/// alone say ([`TaskFacts::local`]), then its dependencies, resolved
/// against the whole board ([`TaskIndex::resolve_dependencies`](super::TaskIndex::resolve_dependencies)).
#[derive(Debug, Clone)]
pub(super) struct TaskFacts {
    pub(super) task: Arc<Task>,
    pub(super) review_state: ReviewState,
    pub(super) column: Option<KanbanColumn>,
    pub(super) needs_fix_actionable: bool,
    terminal: bool,
    /// A task waiting on this one may go ahead.
    pub(super) finished_for_dependency: bool,
    owner: Owner,
    /// `blockedBy`, tidied ([`tidy_ids`]).
    pub(super) blocked_by: Vec<String>,
    pub(super) blocks: Vec<String>,
    /// Dependencies that name no live task ([`TaskFacts::set_dependencies`]).
    broken: Vec<String>,
    /// Dependencies on tasks not finished yet.
    waiting: Vec<String>,
    /// Boxed: only tasks under review have one, and the facts of a whole
    /// board stay a third of the size.
    pub(super) cycle: Option<Box<ReviewCycle>>,
    /// The task's item on its owner's agenda when the owner is not the
    /// lead (`None` inside: the task is on no such agenda), made by the
    /// first agenda that asks and shared by every agenda after it while
    /// these facts hold. It is a function of the facts alone (the member
    /// is the owner, the lead's rules do not apply), and the facts never
    /// change under it: a changed task gets new facts, and a change to a
    /// task this one waits on sets its dependencies again
    /// ([`TaskFacts::set_dependencies`]), which empties it.
    owner_item: OnceLock<Option<Arc<ActionableWorkItem>>>,
}

/// A task's owner, normalized ([`normalize_member_name`]); a name written
/// normalized already (the usual one) is not copied.
#[derive(Debug, Clone)]
enum Owner {
    /// No owner, or one that normalizes to the empty name.
    None,
    /// The task's `owner` as written is its normalized form.
    AsWritten,
    /// The normalized form of the written owner.
    Normalized(Box<str>),
}

impl Owner {
    fn of(written: Option<&str>) -> Self {
        let Some(written) = written else {
            return Self::None;
        };
        // Printable ASCII without spaces or capitals: trimming and
        // lowercasing leave it as it is.
        let normalized_already = !written.is_empty()
            && written
                .bytes()
                .all(|b| b.is_ascii_graphic() && !b.is_ascii_uppercase());
        if normalized_already {
            return Self::AsWritten;
        }
        let normalized = normalize_member_name(written);
        if normalized.is_empty() {
            Self::None
        } else {
            Self::Normalized(normalized.into_boxed_str())
        }
    }
}

impl TaskFacts {
    /// What `task` and its kanban card say, without looking at other tasks
    /// (`broken` and `waiting` are left empty).
    pub(super) fn local(task: &Arc<Task>, kanban: &BTreeMap<String, KanbanEntry>) -> Self {
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
            .flatten()
            .map(Box::new);
        Self {
            task: task.clone(),
            review_state,
            column,
            needs_fix_actionable,
            terminal,
            finished_for_dependency,
            owner: Owner::of(task.owner.as_deref()),
            blocked_by: tidy_ids(&task.blocked_by),
            blocks: tidy_ids(&task.blocks),
            broken: Vec::new(),
            waiting: Vec::new(),
            cycle,
            owner_item: OnceLock::new(),
        }
    }

    /// Dependencies that name no live task.
    pub(super) fn broken(&self) -> &[String] {
        &self.broken
    }

    /// Dependencies on tasks not finished yet.
    pub(super) fn waiting(&self) -> &[String] {
        &self.waiting
    }

    /// Sets the dependencies as resolved against the board; the owner's
    /// item, made from the ones before, is made again when next asked.
    pub(super) fn set_dependencies(&mut self, broken: Vec<String>, waiting: Vec<String>) {
        self.broken = broken;
        self.waiting = waiting;
        self.owner_item = OnceLock::new();
    }

    /// The task's item on the agenda of its owner when the owner is not
    /// the lead: `make`'s, kept with the facts (see `owner_item`).
    pub(super) fn owner_item(
        &self,
        make: impl FnOnce() -> Option<ActionableWorkItem>,
    ) -> Option<Arc<ActionableWorkItem>> {
        self.owner_item.get_or_init(|| make().map(Arc::new)).clone()
    }

    /// The owner, normalized; `None` when the task has none (or a blank one).
    pub(super) fn owner(&self) -> Option<&str> {
        match &self.owner {
            Owner::None => None,
            Owner::AsWritten => self.task.owner.as_deref(),
            Owner::Normalized(name) => Some(name),
        }
    }

    /// The reviewer of the current review cycle, normalized.
    pub(super) fn cycle_reviewer(&self) -> Option<&str> {
        self.cycle.as_ref().map(|c| c.reviewer.as_str())
    }

    pub(super) fn is_self_review(&self) -> bool {
        self.column == Some(KanbanColumn::Review)
            && self.owner().is_some()
            && self.owner() == self.cycle_reviewer()
    }

    /// Whether the task can be on any agenda: it has an id and is not
    /// finished outside review.
    pub(super) fn listed(&self) -> bool {
        !(self.task.id.is_empty() || (self.terminal && self.column != Some(KanbanColumn::Review)))
    }

    /// Whether the lead oversees the task (a listed one).
    pub(super) fn lead_oversees(&self) -> bool {
        self.task.needs_clarification == Some(Clarification::Lead)
            || !self.broken.is_empty()
            || self.is_self_review()
    }

    /// The references other tasks name this one by (id, display id).
    pub(super) fn references(&self) -> impl Iterator<Item = &str> {
        [self.task.id.as_str(), self.task.display_id.as_str()]
            .into_iter()
            .map(task_reference)
            .filter(|r| !r.is_empty())
    }
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
