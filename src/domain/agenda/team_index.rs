//! A team's agendas: the [`TaskIndex`] paired with the roster of one
//! snapshot, building each member's items in the app's order and the
//! agenda's fingerprint.

use std::borrow::Cow;
use std::collections::BTreeSet;
use std::ops::Range;
use std::sync::Arc;

use crate::domain::diagnostic::Diagnostic;
use crate::domain::fingerprint::agenda_fingerprint;
use crate::domain::js_semantics::{
    js_trim, locale_compare, locale_compare_numeric_base, push_locale_key, push_numeric_base_key,
};
use crate::domain::names::{is_reserved_member_name, normalize_member_name, MemberName, TeamName};
use crate::domain::team::{Clarification, KanbanColumn, Task, TaskStatus, TeamSnapshot};
/// A team's snapshot with its [`TaskIndex`]; builds agendas for any member
/// of the team.
#[derive(Debug)]
pub struct TeamIndex<'a> {
    snapshot: &'a TeamSnapshot,
    pub(super) tasks: Cow<'a, TaskIndex>,
    lead: Option<String>,
    active: BTreeSet<String>,
}

use super::item::{ActionableWorkItem, Agenda, Evidence, ItemKind, ItemReason, Priority};
use super::task_facts::TaskFacts;
use super::task_index::TaskIndex;

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
    pub fn agenda_for(&self, member_name: &MemberName, generated_at: &str) -> Agenda {
        let normalized = member_name.normalized();
        let mut diagnostics = self.snapshot.diagnostics.clone();
        let mut items = Vec::new();
        if !self.snapshot.config_found {
            diagnostics.push(Diagnostic::TeamConfigMissing.as_str().into());
        } else if self.snapshot.deleted {
            diagnostics.push(Diagnostic::TeamDeleted.as_str().into());
        } else if is_reserved_member_name(&normalized) {
            diagnostics.push(Diagnostic::MemberInvalidOrReserved.as_str().into());
        } else if !self.active.contains(normalized.as_str()) {
            diagnostics.push(Diagnostic::MemberNotActive.as_str().into());
        } else {
            let is_lead = self.lead.as_deref() == Some(normalized.as_str());
            let tasks = &*self.tasks;
            let mut relevant: Vec<usize> = tasks
                .by_member
                .get(normalized.as_str())
                .cloned()
                .unwrap_or_default();
            if is_lead {
                relevant.extend_from_slice(&tasks.lead_oversight);
            }
            relevant.sort_unstable();
            relevant.dedup();
            items = in_app_order(relevant, |i| &tasks.facts[i].task)
                .into_iter()
                .filter_map(|i| {
                    let f = &tasks.facts[i];
                    if !is_lead && f.owner() == Some(normalized.as_str()) {
                        f.owner_item(|| item_for(f, &normalized, false))
                    } else {
                        item_for(f, &normalized, is_lead).map(Arc::new)
                    }
                })
                .collect();
        }
        let fingerprint = fingerprint_of(&self.snapshot.team_name, &normalized, &items);
        Agenda {
            team_name: self.snapshot.team_name.to_string(),
            member_name: normalized.to_string(),
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
fn item_for(f: &TaskFacts, member: &MemberName, is_lead: bool) -> Option<ActionableWorkItem> {
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
            owner: f.owner().map(str::to_string),
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
    if is_lead && !f.broken().is_empty() {
        let evidence = Evidence {
            status,
            owner: f.owner().map(str::to_string),
            review_state,
            blocked_by_task_ids: Some(f.broken().to_vec()),
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
                owner: f.owner().map(str::to_string),
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
        if cycle.reviewer == member.as_str() && !f.is_self_review() {
            let evidence = Evidence {
                status,
                owner: f.owner().map(str::to_string),
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
    if f.owner() != Some(member.as_str())
        || task.needs_clarification.is_some()
        || !f.waiting().is_empty()
        || !f.broken().is_empty()
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

/// A task's place in the order the app's task reader lists tasks in, which
/// its agendas keep: by display label, numeric labels first by value, then
/// the others by `localeCompare` with numeric collation and case ignored,
/// ties by id the same way. The label's value is parsed once per task, not
/// at every comparison of a sort.
struct AppTaskOrder<'a> {
    /// The label's value when it is all ASCII digits.
    numeric: Option<f64>,
    display_id: &'a str,
    id: &'a str,
}

impl<'a> AppTaskOrder<'a> {
    fn of(task: &'a Task) -> Self {
        let label = task.display_id.as_str();
        Self {
            numeric: (!label.is_empty() && label.bytes().all(|b| b.is_ascii_digit()))
                .then(|| label.parse::<f64>().unwrap_or(f64::INFINITY)),
            display_id: label,
            id: &task.id,
        }
    }

    /// Appends to `out` a key whose byte order is [`AppTaskOrder::cmp`]'s
    /// among every task that has one, and returns where it lies: a numeric
    /// label as `0` and its value's bits (a label's value is never
    /// negative, and the bits of such values order as the values do),
    /// any other as `1`, the label's and the id's keys
    /// ([`push_numeric_base_key`]) with a `0` between them, which sorts
    /// before every byte either key can hold where the other key goes on.
    /// `None`, with `out` as it was, when the label or the id has no key.
    fn push_key(&self, out: &mut Vec<u8>) -> Option<Range<usize>> {
        let start = out.len();
        match self.numeric {
            Some(value) => {
                out.push(0);
                out.extend_from_slice(&value.to_bits().to_be_bytes());
            }
            None => {
                out.push(1);
                let keyed = push_numeric_base_key(self.display_id, out) && {
                    out.push(0);
                    push_numeric_base_key(self.id, out)
                };
                if !keyed {
                    out.truncate(start);
                    return None;
                }
            }
        }
        Some(start..out.len())
    }

    fn cmp(&self, other: &Self) -> std::cmp::Ordering {
        use std::cmp::Ordering;
        match (self.numeric, other.numeric) {
            (Some(a), Some(b)) => a.partial_cmp(&b).unwrap_or(Ordering::Equal),
            (Some(_), None) => Ordering::Less,
            (None, Some(_)) => Ordering::Greater,
            (None, None) => locale_compare_numeric_base(self.display_id, other.display_id)
                .then_with(|| locale_compare_numeric_base(self.id, other.id)),
        }
    }
}

/// `positions` in the app's task list order (stable: equal labels keep the
/// order of the task files), `task` giving each position's task: by sort
/// keys where the labels have them ([`AppTaskOrder::push_key`]).
fn in_app_order<'t>(positions: Vec<usize>, task: impl Fn(usize) -> &'t Task) -> Vec<usize> {
    let mut keys = Vec::with_capacity(positions.len() * 24);
    let mut ordered: Vec<Keyed<(AppTaskOrder<'t>, usize)>> = positions
        .into_iter()
        .map(|i| {
            let order = AppTaskOrder::of(task(i));
            (order.push_key(&mut keys), (order, i))
        })
        .collect();
    sort_keyed(&mut ordered, &keys, |(left, _), (right, _)| left.cmp(right));
    ordered.into_iter().map(|(_, (_, i))| i).collect()
}

/// An entry to sort with where its byte key lies in a key buffer, when it
/// has one.
type Keyed<T> = (Option<Range<usize>>, T);

/// Sorts `entries` stably: two that both have a byte key (a range of
/// `keys`) by their keys, any other two by `compare`, which orders keyed
/// entries as their keys do, so the two make one total order.
fn sort_keyed<T>(
    entries: &mut [Keyed<T>],
    keys: &[u8],
    compare: impl Fn(&T, &T) -> std::cmp::Ordering,
) {
    entries.sort_by(
        |(left_key, left), (right_key, right)| match (left_key, right_key) {
            (Some(l), Some(r)) => keys[l.clone()].cmp(&keys[r.clone()]),
            _ => compare(left, right),
        },
    );
}

/// The fingerprint of `items`, which hashes them in `kind:taskId:displayId`
/// order ([`ActionableWorkItem::write_sort_key`] under `localeCompare`), whatever
/// order the agenda lists them in.
fn fingerprint_of(
    team_name: &TeamName,
    member_name: &MemberName,
    items: &[Arc<ActionableWorkItem>],
) -> String {
    // Every key's text in one buffer, not a string each, with its byte sort
    // key ([`push_locale_key`]) where it has one.
    let mut text = String::with_capacity(items.len() * 32);
    let mut bytes = Vec::with_capacity(items.len() * 32);
    let mut keyed: Vec<Keyed<(Range<usize>, &ActionableWorkItem)>> =
        Vec::with_capacity(items.len());
    for item in items {
        let start = text.len();
        item.write_sort_key(&mut text);
        let bytes_start = bytes.len();
        let ranked = push_locale_key(&text[start..], &mut bytes);
        keyed.push((
            ranked.then_some(bytes_start..bytes.len()),
            (start..text.len(), &**item),
        ));
    }
    // Stable: equal keys (tasks sharing an id) keep agenda order.
    sort_keyed(&mut keyed, &bytes, |(left, _), (right, _)| {
        locale_compare(&text[left.clone()], &text[right.clone()])
    });
    agenda_fingerprint(
        team_name,
        member_name,
        keyed.iter().map(|(_, (_, item))| *item),
    )
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    /// Labels and ids as boards have them: numbers (leading zeros, equal
    /// values, runs longer than the keys take), `#n`, hex prefixes, case,
    /// and characters no key covers.
    fn a_label() -> impl Strategy<Value = String> {
        prop_oneof![
            "0{0,2}[0-9]{0,3}",
            "#?0{0,2}[0-9]{1,3}[a-cA-C]?",
            "[0-9a-fA-F]{0,8}",
            "[a-zA-Z0-9 _.#/é-]{0,6}",
            "[0-9]{30,36}",
        ]
    }

    /// Tasks of these (label, id) pairs sort by [`in_app_order`] as by
    /// [`AppTaskOrder::cmp`], and every two with keys compare by them as by it.
    fn assert_keys_order_as_the_app_order(labels: &[(String, String)]) {
        let tasks: Vec<Task> = labels.iter().map(|(d, i)| Task::with_ids(i, d)).collect();
        let orders: Vec<AppTaskOrder<'_>> = tasks.iter().map(AppTaskOrder::of).collect();
        let mut by_cmp: Vec<usize> = (0..tasks.len()).collect();
        by_cmp.sort_by(|&a, &b| orders[a].cmp(&orders[b]));
        let by_keys = in_app_order((0..tasks.len()).collect(), |i| &tasks[i]);
        assert_eq!(by_keys, by_cmp, "{labels:?}");
        let mut keys = Vec::new();
        let ranges: Vec<Option<Range<usize>>> = orders
            .iter()
            .map(|order| order.push_key(&mut keys))
            .collect();
        // Every pair of keyed tasks on its own, not only as a sort sees them.
        for a in 0..tasks.len() {
            for b in 0..tasks.len() {
                if let (Some(l), Some(r)) = (&ranges[a], &ranges[b]) {
                    assert_eq!(
                        keys[l.clone()].cmp(&keys[r.clone()]),
                        orders[a].cmp(&orders[b]),
                        "{:?} vs {:?}",
                        labels[a],
                        labels[b]
                    );
                }
            }
        }
    }

    #[test]
    fn labels_that_end_where_the_other_goes_on_sort_as_the_app_order() {
        // (label, id): an empty label against one, a label a prefix of
        // another, a number against a label that starts with one.
        let boards: [&[(&str, &str)]; 3] = [
            &[("#0", ""), ("", "")],
            &[("a", "2"), ("a0", "1"), ("a", "10")],
            &[("12", "x"), ("12a", "y"), ("012", "z")],
        ];
        for board in boards {
            let labels: Vec<(String, String)> = board
                .iter()
                .map(|(d, i)| (d.to_string(), i.to_string()))
                .collect();
            assert_keys_order_as_the_app_order(&labels);
        }
    }

    proptest! {
        #[test]
        fn tasks_sort_by_their_keys_as_by_the_app_order(
            labels in prop::collection::vec((a_label(), a_label()), 0..24),
        ) {
            assert_keys_order_as_the_app_order(&labels);
        }
    }
}
