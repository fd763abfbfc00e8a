//! Shadow metrics and phase-2 readiness.

use std::collections::BTreeMap;
use std::sync::Arc;

use serde::{Deserialize, Serialize};
use serde_json::json;

use super::fingerprint::{canonical_json, sha256_hex};
use super::names::{member_key, normalize_member_name, TeamName};
use super::status::{MemberStatus, StatusState};
use super::team::ProviderId;
use super::time::{parse_iso, EpochMs};

/// Events kept in the team index.
const MAX_RECENT_EVENTS: usize = 200;

/// What a metric event counts.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
#[allow(missing_docs)]
#[cfg_attr(test, derive(ts_rs::TS))]
pub enum MetricKind {
    StatusEvaluated,
    WouldNudge,
    FingerprintChanged,
    ReportAccepted,
    ReportRejected,
}

/// One metric event. `Eq`, so that two `Arc`s of one event compare equal
/// by address before their fields are read.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
#[allow(missing_docs)]
#[cfg_attr(test, derive(ts_rs::TS), ts(optional_fields))]
pub struct MetricEvent {
    pub id: String,
    pub team_name: String,
    pub member_name: String,
    pub kind: MetricKind,
    pub state: StatusState,
    pub agenda_fingerprint: String,
    pub recorded_at: String,
    pub actionable_count: usize,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub rejection_code: Option<String>,
}

/// The latest status summary of a member in the team index.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
#[allow(missing_docs)]
pub struct MemberSummary {
    pub member_name: String,
    pub state: StatusState,
    pub agenda_fingerprint: String,
    pub actionable_count: usize,
    pub evaluated_at: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub provider_id: Option<ProviderId>,
}

/// The team index `indexes/metrics.json` (without its envelope).
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct MetricsIndex {
    /// Latest summary per member key.
    #[serde(default)]
    pub members: BTreeMap<String, MemberSummary>,
    /// Last [`MAX_RECENT_EVENTS`] events, oldest first, shared (`Arc`):
    /// an event never changes once recorded, and the index's copies and
    /// the fragments its file is rendered from hold the same one.
    #[serde(default)]
    pub recent_events: Vec<Arc<MetricEvent>>,
}

/// The metric events of one status write. The report is the status's own,
/// as the app counts it: every write of a status that carries an accepted
/// report (a report, or a later reconcile keeping its lease) is a
/// `report_accepted`, one that carries a rejected report a `report_rejected`.
pub(crate) fn events_for_write(status: &MemberStatus) -> Vec<MetricEvent> {
    let shadow = status.shadow.as_ref();
    let mut kinds = vec![MetricKind::StatusEvaluated];
    if shadow.is_some_and(|s| s.would_nudge) {
        kinds.push(MetricKind::WouldNudge);
    }
    if shadow.is_some_and(|s| s.fingerprint_changed) {
        kinds.push(MetricKind::FingerprintChanged);
    }
    let report = status.report.as_ref();
    let rejection_code = report.and_then(|r| r.rejection_code.clone());
    if report.is_some_and(|r| r.accepted) {
        kinds.push(MetricKind::ReportAccepted);
    } else if rejection_code.is_some() {
        kinds.push(MetricKind::ReportRejected);
    }
    let report_state = status
        .report
        .as_ref()
        .and_then(|r| serde_json::to_value(r.state).ok())
        .and_then(|v| v.as_str().map(str::to_string))
        .unwrap_or_default();
    kinds
        .into_iter()
        .map(|kind| {
            let identity = json!({
                "teamName": status.team_name,
                "memberName": normalize_member_name(&status.member_name),
                "kind": kind,
                "state": status.state,
                "agendaFingerprint": status.agenda.fingerprint,
                "evaluatedAt": status.evaluated_at,
                "reportState": report_state,
                "rejectionCode": rejection_code.clone().unwrap_or_default(),
            });
            MetricEvent {
                id: format!(
                    "member-work-sync-metric:{}",
                    sha256_hex(canonical_json(&identity).as_bytes())
                ),
                team_name: status.team_name.clone(),
                member_name: status.member_name.clone(),
                kind,
                state: status.state,
                agenda_fingerprint: status.agenda.fingerprint.clone(),
                recorded_at: status.evaluated_at.as_str().to_string(),
                actionable_count: status.agenda.items.len(),
                rejection_code: rejection_code.clone(),
            }
        })
        .collect()
}

impl MemberSummary {
    /// The summary the index keeps of a member's status.
    pub fn of(status: &MemberStatus) -> Self {
        Self {
            member_name: status.member_name.clone(),
            state: status.state,
            agenda_fingerprint: status.agenda.fingerprint.clone(),
            actionable_count: status.agenda.items.len(),
            evaluated_at: status.evaluated_at.as_str().to_string(),
            provider_id: status.provider_id,
        }
    }
}

impl MetricsIndex {
    /// Adds a status write: member summary replaced, events merged (dedupe by id,
    /// sorted by `recordedAt`, last [`MAX_RECENT_EVENTS`] kept). True when the
    /// index changed: a caller writes it back only then.
    pub fn record(&mut self, status: &MemberStatus, events: Vec<MetricEvent>) -> bool {
        let summary = MemberSummary::of(status);
        let key = member_key(&status.member_name);
        let mut changed = self.members.get(&key) != Some(&summary);
        if changed {
            self.members.insert(key, summary);
        }
        for event in events {
            if !self.recent_events.iter().any(|e| e.id == event.id) {
                self.recent_events.push(Arc::new(event));
                changed = true;
            }
        }
        let recorded_at = |e: &Arc<MetricEvent>| parse_iso(&e.recorded_at).unwrap_or(i64::MIN);
        // A stable sort of a list already in order moves nothing.
        if !self.recent_events.is_sorted_by_key(recorded_at) {
            self.recent_events.sort_by_key(recorded_at);
            changed = true;
        }
        let excess = self.recent_events.len().saturating_sub(MAX_RECENT_EVENTS);
        self.recent_events.drain(..excess);
        changed || excess > 0
    }

    fn count(&self, kind: MetricKind) -> usize {
        self.recent_events.iter().filter(|e| e.kind == kind).count()
    }
}

/// Readiness thresholds (defaults tuned in production).
#[derive(Debug, Clone, Copy, PartialEq, Serialize)]
#[serde(rename_all = "camelCase")]
#[allow(missing_docs)]
#[cfg_attr(test, derive(ts_rs::TS))]
pub struct Thresholds {
    pub min_observed_members: usize,
    pub min_status_events: usize,
    pub min_observation_hours: f64,
    pub max_would_nudges_per_member_hour: f64,
    pub max_fingerprint_changes_per_member_hour: f64,
    pub max_report_rejection_rate: f64,
}

impl Default for Thresholds {
    fn default() -> Self {
        Self {
            min_observed_members: 1,
            min_status_events: 20,
            min_observation_hours: 1.0,
            max_would_nudges_per_member_hour: 2.0,
            max_fingerprint_changes_per_member_hour: 1.0,
            max_report_rejection_rate: 0.2,
        }
    }
}

/// Where a team stands on the way to phase 2.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
#[cfg_attr(test, derive(ts_rs::TS))]
pub enum ReadinessState {
    /// Not enough shadow data yet.
    CollectingShadowData,
    /// Enough data and every rate within bounds.
    ShadowReady,
    /// A rate exceeds its bound.
    Blocked,
}

/// Why readiness is not `shadow_ready`: collecting reasons first, then blocking ones.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
#[cfg_attr(test, derive(ts_rs::TS))]
pub enum ReadinessReason {
    /// Fewer members observed than `minObservedMembers`.
    InsufficientMembers,
    /// Fewer status events than `minStatusEvents`.
    InsufficientStatusEvents,
    /// The events span less than `minObservationHours`.
    InsufficientObservationWindow,
    /// Would-nudges per member-hour above their bound.
    WouldNudgeRateHigh,
    /// Fingerprint changes per member-hour above their bound.
    FingerprintChurnHigh,
    /// Rejected share of reports above its bound.
    ReportRejectionRateHigh,
}

impl ReadinessReason {
    /// The spelling in the readiness `reasons` of `getMetrics`, and after
    /// `phase2_readiness:` in its diagnostics.
    pub fn as_str(self) -> &'static str {
        match self {
            Self::InsufficientMembers => "insufficient_members",
            Self::InsufficientStatusEvents => "insufficient_status_events",
            Self::InsufficientObservationWindow => "insufficient_observation_window",
            Self::WouldNudgeRateHigh => "would_nudge_rate_high",
            Self::FingerprintChurnHigh => "fingerprint_churn_high",
            Self::ReportRejectionRateHigh => "report_rejection_rate_high",
        }
    }
}

/// The rates readiness is assessed on, measured over the team's recent
/// metric events.
#[derive(Debug, Clone, Copy, PartialEq, Serialize)]
#[serde(rename_all = "camelCase")]
#[allow(missing_docs)]
#[cfg_attr(test, derive(ts_rs::TS))]
pub struct Rates {
    pub observation_hours: f64,
    pub status_event_count: usize,
    pub would_nudges_per_member_hour: f64,
    pub fingerprint_changes_per_member_hour: f64,
    pub report_rejection_rate: f64,
}

/// Phase-2 readiness assessment.
#[derive(Debug, Clone, PartialEq, Serialize)]
#[serde(rename_all = "camelCase")]
#[allow(missing_docs)]
#[cfg_attr(test, derive(ts_rs::TS))]
pub struct Readiness {
    pub state: ReadinessState,
    pub reasons: Vec<ReadinessReason>,
    pub thresholds: Thresholds,
    pub rates: Rates,
    pub diagnostics: Vec<String>,
}

fn round3(value: f64) -> f64 {
    (value * 1000.0).round() / 1000.0
}

/// Assesses readiness: collecting reasons first, then blocking reasons.
pub fn readiness(index: &MetricsIndex, thresholds: Thresholds) -> Readiness {
    let times: Vec<EpochMs> = index
        .recent_events
        .iter()
        .filter_map(|e| parse_iso(&e.recorded_at))
        .collect();
    let hours = match (times.iter().min(), times.iter().max()) {
        (Some(min), Some(max)) if times.len() >= 2 => (max - min) as f64 / 3.6e6,
        _ => 0.0,
    };
    let members = index.members.len();
    let denominator = members.max(1) as f64 * hours.max(1.0 / 60.0);
    let accepted = index.count(MetricKind::ReportAccepted);
    let rejected = index.count(MetricKind::ReportRejected);
    let rates = Rates {
        observation_hours: round3(hours),
        status_event_count: index.count(MetricKind::StatusEvaluated),
        would_nudges_per_member_hour: round3(
            index.count(MetricKind::WouldNudge) as f64 / denominator,
        ),
        fingerprint_changes_per_member_hour: round3(
            index.count(MetricKind::FingerprintChanged) as f64 / denominator,
        ),
        report_rejection_rate: if accepted + rejected == 0 {
            0.0
        } else {
            round3(rejected as f64 / (accepted + rejected) as f64)
        },
    };
    let mut collecting = Vec::new();
    if members < thresholds.min_observed_members {
        collecting.push(ReadinessReason::InsufficientMembers);
    }
    if rates.status_event_count < thresholds.min_status_events {
        collecting.push(ReadinessReason::InsufficientStatusEvents);
    }
    if hours < thresholds.min_observation_hours {
        collecting.push(ReadinessReason::InsufficientObservationWindow);
    }
    let mut blocking = Vec::new();
    if rates.would_nudges_per_member_hour > thresholds.max_would_nudges_per_member_hour {
        blocking.push(ReadinessReason::WouldNudgeRateHigh);
    }
    if rates.fingerprint_changes_per_member_hour
        > thresholds.max_fingerprint_changes_per_member_hour
    {
        blocking.push(ReadinessReason::FingerprintChurnHigh);
    }
    if rates.report_rejection_rate > thresholds.max_report_rejection_rate {
        blocking.push(ReadinessReason::ReportRejectionRateHigh);
    }
    let state = if !collecting.is_empty() {
        ReadinessState::CollectingShadowData
    } else if !blocking.is_empty() {
        ReadinessState::Blocked
    } else {
        ReadinessState::ShadowReady
    };
    let diagnostics = [&collecting, &blocking]
        .into_iter()
        .flatten()
        .map(|r| format!("phase2_readiness:{}", r.as_str()))
        .collect();
    let mut reasons = collecting;
    reasons.extend(blocking);
    Readiness {
        state,
        reasons,
        thresholds,
        rates,
        diagnostics,
    }
}

/// What `getMetrics` answers for a team: counts over its recent metric
/// events, the events themselves and the phase-2 readiness.
#[derive(Debug, Clone, PartialEq, Serialize)]
#[serde(rename_all = "camelCase")]
#[allow(missing_docs)]
#[cfg_attr(test, derive(ts_rs::TS))]
pub struct TeamMetrics {
    pub team_name: String,
    pub generated_at: String,
    pub member_count: usize,
    pub state_counts: BTreeMap<&'static str, usize>,
    pub actionable_item_count: usize,
    pub would_nudge_count: usize,
    pub fingerprint_change_count: usize,
    pub report_accepted_count: usize,
    pub report_rejected_count: usize,
    pub recent_events: Vec<Arc<MetricEvent>>,
    pub phase2_readiness: Readiness,
}

/// Summarizes the index for `getMetrics`.
pub(crate) fn team_metrics(
    team_name: &TeamName,
    generated_at: &str,
    index: &MetricsIndex,
) -> TeamMetrics {
    let mut state_counts: BTreeMap<&'static str, usize> = [
        "caught_up",
        "needs_sync",
        "still_working",
        "blocked",
        "inactive",
        "unknown",
    ]
    .into_iter()
    .map(|s| (s, 0))
    .collect();
    for summary in index.members.values() {
        let name = match summary.state {
            StatusState::CaughtUp => "caught_up",
            StatusState::NeedsSync => "needs_sync",
            StatusState::StillWorking => "still_working",
            StatusState::Blocked => "blocked",
            StatusState::Inactive => "inactive",
            StatusState::Unknown => "unknown",
        };
        *state_counts.entry(name).or_default() += 1;
    }
    TeamMetrics {
        team_name: team_name.to_string(),
        generated_at: generated_at.to_string(),
        member_count: index.members.len(),
        state_counts,
        actionable_item_count: index.members.values().map(|m| m.actionable_count).sum(),
        would_nudge_count: index.count(MetricKind::WouldNudge),
        fingerprint_change_count: index.count(MetricKind::FingerprintChanged),
        report_accepted_count: index.count(MetricKind::ReportAccepted),
        report_rejected_count: index.count(MetricKind::ReportRejected),
        recent_events: index.recent_events.clone(),
        phase2_readiness: readiness(index, Thresholds::default()),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::domain::time::format_iso;

    const HOUR: EpochMs = 3_600_000;

    fn event(member: &str, kind: MetricKind, at: EpochMs, n: usize) -> MetricEvent {
        MetricEvent {
            id: format!("{member}:{kind:?}:{at}:{n}"),
            team_name: "forge".into(),
            member_name: member.into(),
            kind,
            state: StatusState::NeedsSync,
            agenda_fingerprint: "fp".into(),
            recorded_at: format_iso(at),
            actionable_count: 1,
            rejection_code: None,
        }
    }

    fn summary(member: &str) -> MemberSummary {
        MemberSummary {
            member_name: member.into(),
            state: StatusState::NeedsSync,
            agenda_fingerprint: "fp".into(),
            actionable_count: 1,
            evaluated_at: format_iso(0),
            provider_id: None,
        }
    }

    /// `statuses` status events spread over `hours`, plus extra events.
    fn index(statuses: usize, hours: f64, extra: Vec<MetricEvent>) -> MetricsIndex {
        let span = (hours * HOUR as f64) as EpochMs;
        let mut events: Vec<MetricEvent> = (0..statuses)
            .map(|i| {
                let at = if statuses > 1 {
                    span * i as EpochMs / (statuses as EpochMs - 1)
                } else {
                    0
                };
                event("jack", MetricKind::StatusEvaluated, at, i)
            })
            .collect();
        events.extend(extra);
        MetricsIndex {
            members: [("jack".to_string(), summary("jack"))].into(),
            recent_events: events.into_iter().map(Arc::new).collect(),
        }
    }

    #[test]
    fn collecting_until_enough_events_and_hours() {
        let empty = readiness(&MetricsIndex::default(), Thresholds::default());
        assert_eq!(empty.state, ReadinessState::CollectingShadowData);
        assert_eq!(
            empty.reasons,
            [
                ReadinessReason::InsufficientMembers,
                ReadinessReason::InsufficientStatusEvents,
                ReadinessReason::InsufficientObservationWindow
            ]
        );
        let r = readiness(&index(19, 1.0, vec![]), Thresholds::default());
        assert_eq!(r.reasons, [ReadinessReason::InsufficientStatusEvents]);
        let r = readiness(&index(20, 0.999, vec![]), Thresholds::default());
        assert_eq!(r.reasons, [ReadinessReason::InsufficientObservationWindow]);
        let r = readiness(&index(20, 1.0, vec![]), Thresholds::default());
        assert_eq!(r.state, ReadinessState::ShadowReady);
        assert!(r.reasons.is_empty());
        assert_eq!(r.rates.observation_hours, 1.0);
    }

    #[test]
    fn blocking_at_the_rate_edges() {
        // 1 member over 1 hour: exactly 2 would-nudges is allowed, 3 blocks.
        let nudges = |n: usize| {
            (0..n)
                .map(|i| event("jack", MetricKind::WouldNudge, HOUR / 2, i))
                .collect()
        };
        assert_eq!(
            readiness(&index(20, 1.0, nudges(2)), Thresholds::default()).state,
            ReadinessState::ShadowReady
        );
        let blocked = readiness(&index(20, 1.0, nudges(3)), Thresholds::default());
        assert_eq!(blocked.state, ReadinessState::Blocked);
        assert_eq!(blocked.reasons, [ReadinessReason::WouldNudgeRateHigh]);
        assert_eq!(blocked.rates.would_nudges_per_member_hour, 3.0);
        let changes: Vec<_> = (0..2)
            .map(|i| event("jack", MetricKind::FingerprintChanged, HOUR / 2, i))
            .collect();
        assert_eq!(
            readiness(&index(20, 1.0, changes), Thresholds::default()).reasons,
            [ReadinessReason::FingerprintChurnHigh]
        );
        // Rejection rate: 1 of 5 is 0.2 (allowed), 2 of 6 is 0.333 (blocked).
        let reports = |accepted: usize, rejected: usize| {
            let mut v: Vec<_> = (0..accepted)
                .map(|i| event("jack", MetricKind::ReportAccepted, HOUR / 2, i))
                .collect();
            v.extend((0..rejected).map(|i| event("jack", MetricKind::ReportRejected, HOUR / 2, i)));
            v
        };
        assert_eq!(
            readiness(&index(20, 1.0, reports(4, 1)), Thresholds::default()).state,
            ReadinessState::ShadowReady
        );
        let r = readiness(&index(20, 1.0, reports(4, 2)), Thresholds::default());
        assert_eq!(r.reasons, [ReadinessReason::ReportRejectionRateHigh]);
        assert_eq!(r.rates.report_rejection_rate, 0.333);
        // Collecting reasons come before blocking ones.
        let r = readiness(&index(5, 1.0, reports(0, 1)), Thresholds::default());
        assert_eq!(r.state, ReadinessState::CollectingShadowData);
        assert_eq!(
            r.reasons,
            [
                ReadinessReason::InsufficientStatusEvents,
                ReadinessReason::ReportRejectionRateHigh
            ]
        );
    }

    #[test]
    fn reasons_and_diagnostics_use_the_reference_spelling() {
        let cases = [
            (ReadinessReason::InsufficientMembers, "insufficient_members"),
            (
                ReadinessReason::InsufficientStatusEvents,
                "insufficient_status_events",
            ),
            (
                ReadinessReason::InsufficientObservationWindow,
                "insufficient_observation_window",
            ),
            (ReadinessReason::WouldNudgeRateHigh, "would_nudge_rate_high"),
            (
                ReadinessReason::FingerprintChurnHigh,
                "fingerprint_churn_high",
            ),
            (
                ReadinessReason::ReportRejectionRateHigh,
                "report_rejection_rate_high",
            ),
        ];
        for (reason, wire) in cases {
            assert_eq!(reason.as_str(), wire);
            assert_eq!(serde_json::to_value(reason).unwrap(), wire);
        }
        let empty = readiness(&MetricsIndex::default(), Thresholds::default());
        assert_eq!(
            serde_json::to_value(&empty).unwrap()["reasons"],
            serde_json::json!([
                "insufficient_members",
                "insufficient_status_events",
                "insufficient_observation_window"
            ])
        );
        assert_eq!(
            empty.diagnostics,
            [
                "phase2_readiness:insufficient_members",
                "phase2_readiness:insufficient_status_events",
                "phase2_readiness:insufficient_observation_window"
            ]
        );
        let changes: Vec<_> = (0..2)
            .map(|i| event("jack", MetricKind::FingerprintChanged, HOUR / 2, i))
            .collect();
        let churn = readiness(&index(20, 1.0, changes), Thresholds::default());
        assert_eq!(
            churn.diagnostics,
            ["phase2_readiness:fingerprint_churn_high"]
        );
    }

    #[test]
    fn report_events_follow_the_report_the_status_carries() {
        use crate::domain::status::{MemberStatus, Report, ReportState};
        let report = |accepted: bool, code: Option<&str>| Report {
            state: ReportState::StillWorking,
            agenda_fingerprint: "fp".into(),
            member_name: "Jack".into(),
            team_name: "forge".into(),
            reported_at: crate::domain::time::IsoTime::at(0),
            expires_at: None,
            task_ids: None,
            note: None,
            source: None,
            accepted,
            rejection_code: code.map(str::to_string),
        };
        let cases = [
            (None, vec![MetricKind::StatusEvaluated], "no report"),
            (
                Some(report(true, None)),
                vec![MetricKind::StatusEvaluated, MetricKind::ReportAccepted],
                "an accepted report, also one a reconcile keeps",
            ),
            (
                Some(report(false, Some("stale_fingerprint"))),
                vec![MetricKind::StatusEvaluated, MetricKind::ReportRejected],
                "a rejected report",
            ),
        ];
        for (carried, kinds, why) in cases {
            let status = MemberStatus {
                team_name: "forge".into(),
                member_name: "Jack".into(),
                state: StatusState::StillWorking,
                agenda: crate::domain::agenda::Agenda {
                    team_name: "forge".into(),
                    member_name: "Jack".into(),
                    generated_at: format_iso(0),
                    fingerprint: "fp".into(),
                    items: vec![],
                    diagnostics: vec![],
                },
                report: carried,
                report_token: None,
                report_token_expires_at: None,
                shadow: None,
                evaluated_at: crate::domain::time::IsoTime::at(0),
                diagnostics: vec![],
                provider_id: None,
            };
            let got: Vec<MetricKind> = events_for_write(&status).iter().map(|e| e.kind).collect();
            assert_eq!(got, kinds, "{why}");
        }
    }

    /// Jack of forge in `state`, with an empty agenda `fp` evaluated at 0.
    fn jack(state: StatusState) -> crate::domain::status::MemberStatus {
        crate::domain::status::MemberStatus {
            team_name: "forge".into(),
            member_name: "Jack".into(),
            state,
            agenda: crate::domain::agenda::Agenda {
                team_name: "forge".into(),
                member_name: "Jack".into(),
                generated_at: format_iso(0),
                fingerprint: "fp".into(),
                items: vec![],
                diagnostics: vec![],
            },
            report: None,
            report_token: None,
            report_token_expires_at: None,
            shadow: None,
            evaluated_at: crate::domain::time::IsoTime::at(0),
            diagnostics: vec![],
            provider_id: None,
        }
    }

    /// `record` answers whether the index changed, which is what decides
    /// a write-back: each case's answer equals comparing the index before
    /// and after.
    #[test]
    fn record_says_whether_the_index_changed() {
        let needs_sync = jack(StatusState::NeedsSync);
        let recorded = {
            let mut index = MetricsIndex::default();
            index.record(&needs_sync, events_for_write(&needs_sync));
            index
        };
        let unsorted = {
            let mut index = recorded.clone();
            index.recent_events.insert(
                0,
                event("jack", MetricKind::StatusEvaluated, 5_000, 1).into(),
            );
            index
        };
        let overfull = {
            let mut index = recorded.clone();
            index.recent_events = (0..=MAX_RECENT_EVENTS as i64)
                .map(|i| event("jack", MetricKind::StatusEvaluated, i * 1000, 2).into())
                .collect();
            index
        };
        let later = event("jack", MetricKind::StatusEvaluated, 9_000, 3);
        // (what, index before, status, events, changed)
        let cases = [
            (
                "a first write",
                MetricsIndex::default(),
                &needs_sync,
                events_for_write(&needs_sync),
                true,
            ),
            (
                "the same write again",
                recorded.clone(),
                &needs_sync,
                events_for_write(&needs_sync),
                false,
            ),
            (
                "the same events, no events at all",
                recorded.clone(),
                &needs_sync,
                vec![],
                false,
            ),
            (
                "another state",
                recorded.clone(),
                &jack(StatusState::CaughtUp),
                vec![],
                true,
            ),
            (
                "a new event",
                recorded.clone(),
                &needs_sync,
                vec![later],
                true,
            ),
            (
                "a stored list out of order",
                unsorted,
                &needs_sync,
                vec![],
                true,
            ),
            (
                "a stored list over the bound",
                overfull,
                &needs_sync,
                vec![],
                true,
            ),
        ];
        for (what, before, status, events, changed) in cases {
            let mut index = before.clone();
            assert_eq!(index.record(status, events), changed, "{what}");
            assert_eq!(index != before, changed, "{what}");
        }
    }

    #[test]
    fn index_dedupes_sorts_and_keeps_the_last_200() {
        let mut index = MetricsIndex::default();
        let status = jack(StatusState::NeedsSync);
        let events = events_for_write(&status);
        assert_eq!(events.len(), 1);
        index.record(&status, events.clone());
        index.record(&status, events);
        assert_eq!(
            index.recent_events.len(),
            1,
            "same write twice is one event"
        );
        assert!(index.members.contains_key("jack"));
        for i in (0..250).rev() {
            index.record(
                &status,
                vec![event("jack", MetricKind::StatusEvaluated, i * 1000, 0)],
            );
        }
        assert_eq!(index.recent_events.len(), MAX_RECENT_EVENTS);
        assert_eq!(
            index.recent_events.last().unwrap().recorded_at,
            format_iso(249_000)
        );
    }
}
