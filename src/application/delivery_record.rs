//! The monotonic times of the nudges this process delivered, per member.
//!
//! Stored `deliveredAt` times are wall-clock times: after the clock steps
//! forward they all look old and the hourly limit would let more nudges
//! through. The dispatcher also keeps, in memory, when by the monotonic clock
//! it made each member's latest deliveries, so within one process the limit
//! holds whichever way the wall clock moves (`domain::nudge::rate_limit`).
//! Nothing of it survives a restart.

use std::collections::{HashMap, VecDeque};
use std::sync::Mutex;

use crate::domain::names::{normalize_member_name, MemberName, TeamName};
use crate::domain::nudge::{DELIVERY_WINDOW_MS, MAX_DELIVERIES_PER_HOUR};
use crate::domain::time::MonotonicMs;

/// Members remembered at most; past it the one delivered to longest ago is
/// forgotten (only members nudged within the last hour are worth keeping).
const MAX_MEMBERS: usize = 4096;

/// One delivery this process made.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct RecordedDelivery {
    /// The outbox item delivered.
    pub outbox_id: String,
    /// When, by the process's monotonic clock.
    pub at: MonotonicMs,
}

/// A member's latest deliveries, oldest first; at most
/// [`MAX_DELIVERIES_PER_HOUR`] (older ones cannot decide the limit).
type Latest = VecDeque<RecordedDelivery>;

/// Per (team, normalized member) the latest deliveries this process made,
/// bounded to [`MAX_MEMBERS`] members.
#[derive(Debug, Default)]
pub(crate) struct DeliveryRecord {
    members: Mutex<HashMap<(String, String), Latest>>,
}

impl DeliveryRecord {
    /// Records that `outbox_id` was delivered to `member` of `team` at `at`
    /// (an item delivered again, as when its inbox row was already there,
    /// keeps its first time). Drops members whose latest delivery has left
    /// the window, then the stalest members past [`MAX_MEMBERS`].
    pub(crate) fn record(
        &self,
        team: &TeamName,
        member: &MemberName,
        outbox_id: &str,
        at: MonotonicMs,
    ) {
        let mut members = self.members.lock().unwrap_or_else(|e| e.into_inner());
        let latest = members.entry(key(team, member)).or_default();
        if !latest.iter().any(|d| d.outbox_id == outbox_id) {
            latest.push_back(RecordedDelivery {
                outbox_id: outbox_id.to_string(),
                at,
            });
            while latest.len() > MAX_DELIVERIES_PER_HOUR {
                latest.pop_front();
            }
        }
        members.retain(|_, latest| newest(latest) > at.saturating_sub(DELIVERY_WINDOW_MS));
        while members.len() > MAX_MEMBERS {
            let Some(stalest) = members
                .iter()
                .min_by_key(|(_, latest)| newest(latest))
                .map(|(key, _)| key.clone())
            else {
                break;
            };
            members.remove(&stalest);
        }
    }

    /// The latest deliveries this process made to `member` of `team`.
    pub(crate) fn of(&self, team: &TeamName, member: &MemberName) -> Vec<RecordedDelivery> {
        let members = self.members.lock().unwrap_or_else(|e| e.into_inner());
        members
            .get(&key(team, member))
            .map(|latest| latest.iter().cloned().collect())
            .unwrap_or_default()
    }
}

fn key(team: &TeamName, member: &MemberName) -> (String, String) {
    (team.to_string(), normalize_member_name(member))
}

fn newest(latest: &Latest) -> MonotonicMs {
    latest
        .iter()
        .map(|d| d.at)
        .max()
        .unwrap_or(MonotonicMs::MIN)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn team(name: &str) -> TeamName {
        TeamName::parse(name).unwrap()
    }

    fn member(name: &str) -> MemberName {
        MemberName::parse(name).unwrap()
    }

    const MINUTE: MonotonicMs = 60_000;

    fn ids(record: &DeliveryRecord, name: &str) -> Vec<(String, MonotonicMs)> {
        record
            .of(&team("forge"), &member(name))
            .into_iter()
            .map(|d| (d.outbox_id, d.at))
            .collect()
    }

    #[test]
    fn keeps_the_latest_deliveries_per_member() {
        let record = DeliveryRecord::default();
        record.record(&team("forge"), &member("jack"), "a", MINUTE);
        record.record(&team("forge"), &member(" Jack"), "b", 2 * MINUTE);
        record.record(&team("forge"), &member("jack"), "b", 3 * MINUTE);
        assert_eq!(
            ids(&record, "JACK"),
            [("a".into(), MINUTE), ("b".into(), 2 * MINUTE)],
            "one member however spelled; a repeated item keeps its first time"
        );
        record.record(&team("forge"), &member("jack"), "c", 4 * MINUTE);
        assert_eq!(
            ids(&record, "jack"),
            [("b".into(), 2 * MINUTE), ("c".into(), 4 * MINUTE)]
        );
        assert!(record.of(&team("other"), &member("jack")).is_empty());
        assert!(ids(&record, "jill").is_empty());
    }

    #[test]
    fn forgets_members_out_of_the_window_and_past_the_bound() {
        let record = DeliveryRecord::default();
        record.record(&team("forge"), &member("jack"), "a", 0);
        record.record(&team("forge"), &member("jill"), "b", DELIVERY_WINDOW_MS);
        assert!(ids(&record, "jack").is_empty(), "an hour old");
        assert_eq!(ids(&record, "jill").len(), 1);
        for i in 0..MAX_MEMBERS {
            record.record(
                &team("forge"),
                &member(&format!("m{i}")),
                "x",
                DELIVERY_WINDOW_MS + 1,
            );
        }
        assert!(ids(&record, "jill").is_empty(), "the stalest goes first");
        assert_eq!(ids(&record, "m0").len(), 1);
        let members = record.members.lock().unwrap().len();
        assert_eq!(members, MAX_MEMBERS);
    }
}
