//! The record merge: how
//! two versions of a team's rows become one, for a replica merged into the
//! database and for a legacy JSON import. Both sides are first put under the
//! routing team; rows fold by identity, the canonical side first, then the
//! incoming one (duplicates inside one side fold in order too); the result
//! is sorted by identity.
//!
//! Proof never regresses: a processed intent beats a pending one, a
//! delivered (then terminally failed) outbox item beats any other; past
//! that the later time wins, a tie mostly going to the incoming row.

use std::cmp::Ordering;
use std::collections::HashMap;

use super::identity::normalize_team_records;
use super::mappers::BadColumn;
use super::records::TeamRecords;
use super::records::{OutboxRecord, ReportIntentRecord, StatusRecord};
use crate::domain::js_semantics::locale_compare;
use crate::domain::time::parse_iso;

/// Metric events kept per team.
const METRIC_EVENTS_CAP: usize = 200;

/// `canonical` and `incoming` merged under `team`.
pub fn merge_team_records(
    team: &str,
    canonical: &TeamRecords,
    incoming: &TeamRecords,
) -> Result<TeamRecords, BadColumn> {
    let (mut canonical, mut incoming) = (canonical.clone(), incoming.clone());
    normalize_team_records(team, &mut canonical)?;
    normalize_team_records(team, &mut incoming)?;
    let mut events = fold_by_identity(
        canonical.metric_events,
        incoming.metric_events,
        |r| r.id.clone(),
        |_, next| next,
    );
    events.sort_by(|a, b| match compare_iso(&a.recorded_at, &b.recorded_at) {
        Ordering::Equal => locale_compare(&a.id, &b.id),
        other => other,
    });
    let excess = events.len().saturating_sub(METRIC_EVENTS_CAP);
    events.drain(..excess);
    Ok(TeamRecords {
        statuses: fold_by_identity(
            canonical.statuses,
            incoming.statuses,
            |r| r.member_key.clone(),
            pick_status,
        ),
        report_intents: fold_by_identity(
            canonical.report_intents,
            incoming.report_intents,
            |r| r.id.clone(),
            pick_intent,
        ),
        outbox_items: fold_by_identity(
            canonical.outbox_items,
            incoming.outbox_items,
            |r| r.id.clone(),
            pick_outbox_item,
        ),
        metric_events: events,
    })
}

/// Folds `canonical` then `incoming` by identity with `pick(current,
/// next)`, sorted by identity (`localeCompare`).
fn fold_by_identity<T>(
    canonical: Vec<T>,
    incoming: Vec<T>,
    identity: impl Fn(&T) -> String,
    pick: impl Fn(T, T) -> T,
) -> Vec<T> {
    let mut slots: Vec<(String, Option<T>)> = Vec::new();
    let mut index: HashMap<String, usize> = HashMap::new();
    for row in canonical.into_iter().chain(incoming) {
        let key = identity(&row);
        match index.get(&key) {
            Some(&at) => {
                let current = slots[at].1.take().expect("every slot holds a row");
                slots[at].1 = Some(pick(current, row));
            }
            None => {
                index.insert(key.clone(), slots.len());
                slots.push((key, Some(row)));
            }
        }
    }
    slots.sort_by(|a, b| locale_compare(&a.0, &b.0));
    slots.into_iter().filter_map(|(_, row)| row).collect()
}

/// Times compared as instants: a valid one beats an invalid (or absent)
/// one, two invalid ones are equal.
fn compare_iso_opt(left: Option<&str>, right: Option<&str>) -> Ordering {
    let ms = |v: Option<&str>| v.filter(|v| !v.is_empty()).and_then(parse_iso);
    match (ms(left), ms(right)) {
        (Some(l), Some(r)) => l.cmp(&r),
        (Some(_), None) => Ordering::Greater,
        (None, Some(_)) => Ordering::Less,
        (None, None) => Ordering::Equal,
    }
}

fn compare_iso(left: &str, right: &str) -> Ordering {
    compare_iso_opt(Some(left), Some(right))
}

/// The later evaluation; a tie goes to the incoming row.
fn pick_status(canonical: StatusRecord, incoming: StatusRecord) -> StatusRecord {
    if compare_iso(&incoming.evaluated_at, &canonical.evaluated_at) == Ordering::Less {
        canonical
    } else {
        incoming
    }
}

fn is_processed(status: &str) -> bool {
    matches!(status, "accepted" | "rejected" | "superseded")
}

/// A processed intent beats a pending one; two processed: the later
/// processing (a tie keeps the canonical one); two pending: the later or
/// equal record time (a tie goes to incoming).
fn pick_intent(canonical: ReportIntentRecord, incoming: ReportIntentRecord) -> ReportIntentRecord {
    let (c, i) = (
        is_processed(&canonical.status),
        is_processed(&incoming.status),
    );
    let take_incoming = if c != i {
        i
    } else if c {
        compare_iso_opt(
            incoming.processed_at.as_deref(),
            canonical.processed_at.as_deref(),
        ) == Ordering::Greater
    } else {
        compare_iso(&incoming.recorded_at, &canonical.recorded_at) != Ordering::Less
    };
    if take_incoming {
        incoming
    } else {
        canonical
    }
}

fn proof_rank(status: &str) -> u8 {
    match status {
        "delivered" => 2,
        "failed_terminal" => 1,
        _ => 0,
    }
}

/// Delivery proof first, then the higher claim generation, then the later
/// or equal update (a tie goes to incoming).
fn pick_outbox_item(canonical: OutboxRecord, incoming: OutboxRecord) -> OutboxRecord {
    let (c, i) = (proof_rank(&canonical.status), proof_rank(&incoming.status));
    let take_incoming = if c != i && (c > 0 || i > 0) {
        i > c
    } else if canonical.attempt_generation != incoming.attempt_generation {
        incoming.attempt_generation > canonical.attempt_generation
    } else {
        compare_iso(&incoming.updated_at, &canonical.updated_at) != Ordering::Less
    };
    if take_incoming {
        incoming
    } else {
        canonical
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn fold_keeps_first_position_and_sorts_by_locale() {
        let rows = fold_by_identity(
            vec![("b", 1), ("a", 1)],
            vec![("b", 2), ("B", 3)],
            |r| r.0.to_string(),
            |_, next| next,
        );
        assert_eq!(rows, vec![("a", 1), ("b", 2), ("B", 3)]);
    }
}
