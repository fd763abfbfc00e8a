//! The current review cycle of a task in the review column.
//!
//! Only the reviewer of the *current* cycle owes a review: older requests and
//! `review_started` events from closed cycles do not count.

use super::js_semantics::{js_trim, sort_like_v8};
use super::names::normalize_member_name;
use super::team::HistoryEvent;

/// What the reviewer of the current cycle has to do.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum ReviewObligation {
    /// A review was requested and nobody started it yet.
    PickupRequired,
    /// The reviewer started, or only the kanban card names a reviewer.
    InProgress,
}

impl ReviewObligation {
    /// The spelling in an item's `evidence.reviewObligation`.
    pub(crate) fn as_str(self) -> &'static str {
        match self {
            Self::PickupRequired => "review_pickup_required",
            Self::InProgress => "review_in_progress",
        }
    }
}

/// The open review cycle of a task, if any.
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct ReviewCycle {
    /// Reviewer, normalized: the requested one, else the kanban card's, else the starter.
    pub reviewer: String,
    /// `requestEventId`, else `startedEventId`, else `kanban:<reviewer>`.
    pub id: String,
    /// What the reviewer owes.
    pub obligation: ReviewObligation,
    /// True for a clean pickup that may be nudged before phase 2 is ready.
    pub can_bypass_phase2: bool,
    /// The `review_requested` event that opened the cycle.
    pub request: Option<CycleEvent>,
    /// The `review_started` event of the cycle.
    pub started: Option<CycleEvent>,
    /// Ids of the request and start events, in that order, without repeats.
    pub history_event_ids: Vec<String>,
    /// Inconsistencies between history and kanban, sorted.
    pub diagnostics: Vec<&'static str>,
}

/// The parts of a history event the cycle keeps.
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct CycleEvent {
    /// Event id, trimmed; `None` when blank.
    pub id: Option<String>,
    /// Timestamp as written, trimmed; `None` when blank.
    pub timestamp: Option<String>,
    /// Requested reviewer or starting actor, normalized; `None` when blank.
    pub who: Option<String>,
}

const CYCLE_EVENT_KINDS: [&str; 6] = [
    "review_requested",
    "review_started",
    "review_approved",
    "review_changes_requested",
    "task_created",
    "status_changed",
];

/// `Some(trimmed)` unless blank.
fn non_blank(value: &str) -> Option<String> {
    let value = js_trim(value);
    (!value.is_empty()).then(|| value.to_string())
}

/// Finds the open review cycle from a task's history and its kanban reviewer.
///
/// Events are ordered by time where both timestamps parse and differ, else by
/// file position. That is not a total order once a timestamp does not parse,
/// so the order is the one V8's sort produces from it (the reference's rule).
/// Without a reviewer from any source there is no cycle.
pub(crate) fn current_review_cycle(
    history: &[HistoryEvent],
    kanban_reviewer: Option<&str>,
) -> Option<ReviewCycle> {
    let mut events: Vec<(usize, &HistoryEvent)> = history
        .iter()
        .filter(|e| CYCLE_EVENT_KINDS.contains(&e.kind.as_str()))
        .enumerate()
        .collect();
    sort_like_v8(
        &mut events,
        |(left_index, left), (right_index, right)| match (left.at_ms, right.at_ms) {
            (Some(l), Some(r)) if l != r => l.cmp(&r),
            _ => left_index.cmp(right_index),
        },
    );

    let mut request: Option<&HistoryEvent> = None;
    let mut started: Option<&HistoryEvent> = None;
    let mut open = false;
    for (_, event) in events {
        match event.kind.as_str() {
            "task_created" | "review_approved" | "review_changes_requested" => open = false,
            "status_changed" => {
                if matches!(
                    event.to.as_deref(),
                    Some("in_progress" | "pending" | "deleted")
                ) {
                    open = false;
                }
            }
            "review_requested" => {
                open = true;
                request = Some(event);
                started = None;
            }
            "review_started" => {
                if !open {
                    open = true;
                    request = None;
                }
                started = Some(event);
            }
            _ => {}
        }
    }
    let kanban_reviewer = kanban_reviewer
        .map(normalize_member_name)
        .filter(|r| !r.is_empty());

    if !open {
        let reviewer = kanban_reviewer?;
        return Some(ReviewCycle {
            id: format!("kanban:{reviewer}"),
            reviewer,
            obligation: ReviewObligation::InProgress,
            can_bypass_phase2: false,
            request: None,
            started: None,
            history_event_ids: Vec::new(),
            diagnostics: vec!["legacy_kanban_reviewer_without_current_review_cycle"],
        });
    }

    let cycle_event = |e: &HistoryEvent, who: &Option<String>| CycleEvent {
        id: non_blank(&e.id),
        timestamp: non_blank(&e.timestamp),
        who: who
            .as_deref()
            .map(normalize_member_name)
            .filter(|w| !w.is_empty()),
    };
    let request = request.map(|e| cycle_event(e, &e.reviewer));
    let started = started.map(|e| cycle_event(e, &e.actor));
    let requested = request.as_ref().and_then(|r| r.who.as_deref());
    let starter = started.as_ref().and_then(|s| s.who.as_deref());

    let mut diagnostics = Vec::new();
    match &request {
        None => diagnostics.push("review_started_without_review_request"),
        Some(r) => {
            if r.id.is_none() {
                diagnostics.push("review_request_event_id_missing");
            }
            if r.who.is_none() {
                diagnostics.push("review_request_reviewer_missing");
            }
        }
    }
    if let Some(s) = &started {
        match (s.who.as_deref(), requested) {
            (None, _) => diagnostics.push("review_started_actor_missing"),
            (Some(actor), Some(req)) if actor != req => {
                diagnostics.push("review_started_actor_differs_from_requested_reviewer")
            }
            _ => {}
        }
    }
    if let Some(kanban) = kanban_reviewer.as_deref() {
        if requested.is_some_and(|r| r != kanban) {
            diagnostics.push("kanban_reviewer_differs_from_review_request");
        }
        if starter.is_some_and(|s| s != kanban) {
            diagnostics.push("kanban_reviewer_differs_from_review_started_actor");
        }
    }
    diagnostics.sort_unstable();
    diagnostics.dedup();

    let reviewer = requested
        .or(kanban_reviewer.as_deref())
        .or(starter)?
        .to_string();
    let request_id = request.as_ref().and_then(|r| r.id.clone());
    let started_id = started.as_ref().and_then(|s| s.id.clone());
    let id = request_id
        .clone()
        .or_else(|| started_id.clone())
        .unwrap_or_else(|| format!("kanban:{reviewer}"));
    let mut history_event_ids: Vec<String> = request_id.iter().cloned().collect();
    if let Some(started_id) = started_id {
        if !history_event_ids.contains(&started_id) {
            history_event_ids.push(started_id);
        }
    }
    let obligation = if started.is_some() {
        ReviewObligation::InProgress
    } else {
        ReviewObligation::PickupRequired
    };
    let can_bypass_phase2 = obligation == ReviewObligation::PickupRequired
        && request_id.is_some()
        && diagnostics.is_empty();
    Some(ReviewCycle {
        reviewer,
        id,
        obligation,
        can_bypass_phase2,
        request,
        started,
        history_event_ids,
        diagnostics,
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::domain::time::parse_iso;

    pub(crate) fn event(id: &str, ts: &str, kind: &str) -> HistoryEvent {
        HistoryEvent {
            id: id.into(),
            timestamp: ts.into(),
            at_ms: parse_iso(ts),
            kind: kind.into(),
            ..HistoryEvent::default()
        }
    }

    fn requested(id: &str, ts: &str, reviewer: &str) -> HistoryEvent {
        HistoryEvent {
            to: Some("review".into()),
            reviewer: Some(reviewer.into()),
            ..event(id, ts, "review_requested")
        }
    }

    fn started(id: &str, ts: &str, actor: &str) -> HistoryEvent {
        HistoryEvent {
            to: Some("review".into()),
            actor: Some(actor.into()),
            ..event(id, ts, "review_started")
        }
    }

    #[test]
    fn clean_request_is_a_pickup_that_can_bypass_phase2() {
        let cycle =
            current_review_cycle(&[requested("r1", "2026-05-06T11:00:00Z", "jill")], None).unwrap();
        assert_eq!(cycle.reviewer, "jill");
        assert_eq!(cycle.id, "r1");
        assert_eq!(cycle.obligation, ReviewObligation::PickupRequired);
        assert!(cycle.can_bypass_phase2);
        assert!(cycle.diagnostics.is_empty());
    }

    #[test]
    fn started_review_is_in_progress() {
        let history = [
            requested("r1", "2026-05-06T11:00:00Z", "jill"),
            started("s1", "2026-05-06T11:05:00Z", "jill"),
        ];
        let cycle = current_review_cycle(&history, None).unwrap();
        assert_eq!(cycle.obligation, ReviewObligation::InProgress);
        assert_eq!(cycle.id, "r1");
        assert!(!cycle.can_bypass_phase2);
    }

    #[test]
    fn started_events_of_older_cycles_do_not_count() {
        let history = [
            requested("r1", "2026-05-06T10:00:00Z", "jill"),
            started("s1", "2026-05-06T10:05:00Z", "jill"),
            HistoryEvent {
                to: Some("needsFix".into()),
                ..event("c1", "2026-05-06T10:10:00Z", "review_changes_requested")
            },
            requested("r2", "2026-05-06T11:00:00Z", "bob"),
        ];
        let cycle = current_review_cycle(&history, None).unwrap();
        assert_eq!(cycle.reviewer, "bob");
        assert_eq!(cycle.id, "r2");
        assert_eq!(cycle.obligation, ReviewObligation::PickupRequired);
        assert!(cycle.started.is_none());
    }

    #[test]
    fn a_newer_request_moves_the_cycle_to_the_new_reviewer() {
        let history = [
            requested("r1", "2026-05-06T10:00:00Z", "jill"),
            requested("r2", "2026-05-06T11:00:00Z", "bob"),
        ];
        assert_eq!(
            current_review_cycle(&history, None).unwrap().reviewer,
            "bob"
        );
    }

    #[test]
    fn events_are_ordered_by_timestamp_not_file_order() {
        let history = [
            requested("r2", "2026-05-06T11:00:00Z", "bob"),
            requested("r1", "2026-05-06T10:00:00Z", "jill"),
        ];
        assert_eq!(current_review_cycle(&history, None).unwrap().id, "r2");
    }

    #[test]
    fn reopening_closes_the_cycle() {
        let history = [
            requested("r1", "2026-05-06T10:00:00Z", "jill"),
            HistoryEvent {
                to: Some("in_progress".into()),
                ..event("s", "2026-05-06T10:30:00Z", "status_changed")
            },
        ];
        assert_eq!(current_review_cycle(&history, None), None);
    }

    #[test]
    fn legacy_kanban_reviewer_without_cycle() {
        let cycle = current_review_cycle(&[], Some("jill")).unwrap();
        assert_eq!(cycle.id, "kanban:jill");
        assert_eq!(cycle.obligation, ReviewObligation::InProgress);
        assert_eq!(
            cycle.diagnostics,
            ["legacy_kanban_reviewer_without_current_review_cycle"]
        );
        assert!(!cycle.can_bypass_phase2);
    }

    #[test]
    fn started_without_request() {
        let cycle =
            current_review_cycle(&[started("s1", "2026-05-06T10:00:00Z", "jill")], None).unwrap();
        assert_eq!(cycle.id, "s1");
        assert_eq!(cycle.reviewer, "jill");
        assert_eq!(cycle.diagnostics, ["review_started_without_review_request"]);
    }

    #[test]
    fn request_without_reviewer_or_id() {
        let mut request = requested("", "2026-05-06T10:00:00Z", "x");
        request.reviewer = None;
        let cycle = current_review_cycle(&[request], Some("kim")).unwrap();
        assert_eq!(cycle.reviewer, "kim");
        assert_eq!(cycle.id, "kanban:kim");
        assert_eq!(
            cycle.diagnostics,
            [
                "review_request_event_id_missing",
                "review_request_reviewer_missing"
            ]
        );
    }

    #[test]
    fn started_actor_missing_or_different() {
        let mut start = started("s1", "2026-05-06T10:05:00Z", "x");
        start.actor = None;
        let history = [requested("r1", "2026-05-06T10:00:00Z", "jill"), start];
        assert_eq!(
            current_review_cycle(&history, None).unwrap().diagnostics,
            ["review_started_actor_missing"]
        );
        let history = [
            requested("r1", "2026-05-06T10:00:00Z", "jill"),
            started("s1", "2026-05-06T10:05:00Z", "bob"),
        ];
        let cycle = current_review_cycle(&history, None).unwrap();
        assert_eq!(cycle.reviewer, "jill");
        assert_eq!(
            cycle.diagnostics,
            ["review_started_actor_differs_from_requested_reviewer"]
        );
    }

    #[test]
    fn kanban_reviewer_disagreements() {
        let history = [
            requested("r1", "2026-05-06T10:00:00Z", "jill"),
            started("s1", "2026-05-06T10:05:00Z", "jill"),
        ];
        let cycle = current_review_cycle(&history, Some("bob")).unwrap();
        assert_eq!(
            cycle.diagnostics,
            [
                "kanban_reviewer_differs_from_review_request",
                "kanban_reviewer_differs_from_review_started_actor"
            ]
        );
        assert_eq!(cycle.reviewer, "jill");
    }
}
