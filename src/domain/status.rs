//! The persisted status of a member and the reports it carries.

use serde::{Deserialize, Serialize};

use super::agenda::Agenda;
use super::recovery::Recovery;
use super::team::ProviderId;
use super::time::IsoTime;

/// What the reconciler concluded about a member.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
#[cfg_attr(test, derive(ts_rs::TS))]
pub enum StatusState {
    /// Nothing actionable.
    CaughtUp,
    /// Work exists and no valid report covers it.
    NeedsSync,
    /// A valid `still_working` lease covers the agenda.
    StillWorking,
    /// A valid `blocked` lease covers the agenda.
    Blocked,
    /// Team or member is not running / not on the roster.
    Inactive,
    /// Not evaluated.
    Unknown,
}

/// What a member said about its agenda.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
#[cfg_attr(test, derive(ts_rs::TS))]
pub enum ReportState {
    /// Working on the agenda.
    StillWorking,
    /// Blocked by board evidence.
    Blocked,
    /// Nothing left to do.
    CaughtUp,
}

/// A report as recorded on the status.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
#[allow(missing_docs)]
#[cfg_attr(test, derive(ts_rs::TS), ts(optional_fields))]
pub struct Report {
    pub state: ReportState,
    pub agenda_fingerprint: String,
    pub member_name: String,
    pub team_name: String,
    pub reported_at: IsoTime,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub expires_at: Option<IsoTime>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub task_ids: Option<Vec<String>>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub note: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub source: Option<String>,
    pub accepted: bool,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub rejection_code: Option<String>,
}

/// Who triggered the evaluation.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
#[cfg_attr(test, derive(ts_rs::TS))]
pub enum ReconciledBy {
    /// A direct API call.
    Request,
    /// The event queue.
    Queue,
    /// A member report.
    Report,
}

/// Shadow-mode observations: what phase 2 would do.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
#[allow(missing_docs)]
#[cfg_attr(test, derive(ts_rs::TS), ts(optional_fields))]
pub struct Shadow {
    pub reconciled_by: ReconciledBy,
    pub would_nudge: bool,
    pub fingerprint_changed: bool,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub previous_fingerprint: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub trigger_reasons: Option<Vec<String>>,
    /// The targeted recovery this reconcile was queued for
    /// (`scheduleProofMissingRecovery`); its nudge carries the recovery's intent key.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub recovery: Option<Recovery>,
    /// Deliveries before this time no longer count towards nudge suppression
    /// (set only on a suppression candidate, see `nudge::suppression_reset_at`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub nudge_suppression_reset_at: Option<IsoTime>,
    /// Why this status stopped would-nudging (absent unless suppressed).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub nudge_suppression: Option<NudgeSuppression>,
}

impl Shadow {
    /// The shadow of a status that was not decided against a previous one
    /// (a report's own status, an unpersisted snapshot): it would not nudge
    /// and compares, carries and suppresses nothing.
    pub fn quiet(reconciled_by: ReconciledBy) -> Self {
        Self {
            reconciled_by,
            would_nudge: false,
            fingerprint_changed: false,
            previous_fingerprint: None,
            trigger_reasons: None,
            recovery: None,
            nudge_suppression_reset_at: None,
            nudge_suppression: None,
        }
    }
}

/// A suppressed nudge: enough deliveries for one agenda fingerprint without
/// an accepted report.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
#[cfg_attr(test, derive(ts_rs::TS), ts(optional_fields))]
pub struct NudgeSuppression {
    /// Always `no_accepted_report` (the only suppression there is).
    pub reason: String,
    /// The fingerprint the deliveries were for.
    pub agenda_fingerprint: String,
    /// Deliveries counted since the reset time.
    pub delivered_count: usize,
    /// The evaluation that suppressed.
    pub suppressed_at: IsoTime,
    /// Deliveries before this time were not counted.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub reset_at: Option<IsoTime>,
}

/// The status of one member.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
#[allow(missing_docs)]
#[cfg_attr(test, derive(ts_rs::TS), ts(optional_fields))]
pub struct MemberStatus {
    pub team_name: String,
    pub member_name: String,
    pub state: StatusState,
    pub agenda: Agenda,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub report: Option<Report>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub report_token: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub report_token_expires_at: Option<IsoTime>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub shadow: Option<Shadow>,
    pub evaluated_at: IsoTime,
    pub diagnostics: Vec<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub provider_id: Option<ProviderId>,
}
