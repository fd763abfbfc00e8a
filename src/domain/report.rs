//! Member reports: request shape, the validator and lease rules.
//!
//! `validate` is pure: it decides, the reporter use case persists.

use crate::domain::js_semantics::js_trim;
use serde_json::Value;

use super::agenda::{Agenda, ItemKind, Priority};
use super::fingerprint::FINGERPRINT_PREFIX;
use super::names::{is_reserved_member_name, normalize_member_name};
use super::review_cycle::ReviewObligation;
use super::status::ReportState;
use super::time::EpochMs;
use super::token::TokenCheck;

/// Longest note accepted, in characters.
const MAX_NOTE_CHARS: usize = 1000;
/// Most task ids in one report.
const MAX_TASK_IDS: usize = 20;
/// Longest task id accepted.
const MAX_TASK_ID_CHARS: usize = 128;
/// Longest `agendaFingerprint` accepted: the real format's length
/// (`agenda:v1:` and 64 hex digits). A longer one can match no agenda and
/// would only grow the stored status.
const MAX_FINGERPRINT_CHARS: usize = FINGERPRINT_PREFIX.len() + 64;
/// Longest `reportToken` accepted: a real token (claims for two 128-byte
/// names and a fingerprint, base64url) stays far below it.
const MAX_REPORT_TOKEN_CHARS: usize = 2048;
/// Longest `reportedAt` accepted (an ISO timestamp is 24 characters).
const MAX_REPORTED_AT_CHARS: usize = 64;

const MINUTE_MS: EpochMs = 60 * 1000;
/// Default `blocked` lease.
const BLOCKED_LEASE_MS: EpochMs = 30 * MINUTE_MS;
/// Default `still_working` lease.
const STILL_WORKING_LEASE_MS: EpochMs = 15 * MINUTE_MS;
/// Default lease while only review pickups are pending.
const PICKUP_LEASE_MS: EpochMs = 3 * MINUTE_MS;
/// Longest lease while only review pickups are pending.
const PICKUP_MAX_LEASE_MS: EpochMs = 10 * MINUTE_MS;
/// Shortest requested lease.
const MIN_LEASE_MS: EpochMs = MINUTE_MS;
/// Longest requested lease.
pub(crate) const MAX_LEASE_MS: EpochMs = 60 * MINUTE_MS;

/// Who sent the report.
#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
#[serde(rename_all = "lowercase")]
pub(crate) enum ReportSource {
    /// The member's MCP tool.
    Mcp,
    /// The app itself, on the member's behalf.
    App,
    /// A test harness; recorded like any other report.
    Test,
}

impl ReportSource {
    /// The spelling in a report request and in stored reports (`mcp`, `app`,
    /// `test`).
    pub(crate) fn as_str(self) -> &'static str {
        match self {
            Self::Mcp => "mcp",
            Self::App => "app",
            Self::Test => "test",
        }
    }
}

/// A well-formed report request.
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct ReportRequest {
    /// The team the report is for, as given (checked against the roster when
    /// the report is handled).
    pub team_name: String,
    /// Reporting member.
    pub member_name: String,
    /// Reported state.
    pub state: ReportState,
    /// Fingerprint the member saw.
    pub agenda_fingerprint: String,
    /// Token from the status the member saw.
    pub report_token: Option<String>,
    /// Task refs the report covers (as given).
    pub task_ids: Option<Vec<String>>,
    /// The member's free-text note, stored with the report; no rule
    /// reads it.
    pub note: Option<String>,
    /// Ignored for leases; kept for the record.
    pub reported_at: Option<String>,
    /// Requested lease length.
    pub lease_ttl_ms: Option<f64>,
    /// Who sent it (`source`), when the request says; `None` when absent.
    pub source: Option<ReportSource>,
}

/// Why a request is malformed (code `invalid_payload`).
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{0}")]
pub(crate) struct InvalidPayload(pub String);

fn optional_string(request: &Value, field: &str) -> Result<Option<String>, InvalidPayload> {
    match request.get(field) {
        None | Some(Value::Null) => Ok(None),
        Some(Value::String(s)) => Ok(Some(s.clone())),
        Some(_) => Err(InvalidPayload(format!("{field} must be a string"))),
    }
}

/// `optional_string` of at most `max` characters.
fn bounded_string(
    request: &Value,
    field: &str,
    max: usize,
) -> Result<Option<String>, InvalidPayload> {
    let value = optional_string(request, field)?;
    if value.as_ref().is_some_and(|v| v.chars().count() > max) {
        return Err(InvalidPayload(format!(
            "{field} is longer than {max} characters"
        )));
    }
    Ok(value)
}

fn required_string(request: &Value, field: &str) -> Result<String, InvalidPayload> {
    optional_string(request, field)?.ok_or_else(|| InvalidPayload(format!("{field} is required")))
}

impl ReportRequest {
    /// Parses a JS request object, rejecting malformed ones.
    pub(crate) fn parse(request: &Value) -> Result<Self, InvalidPayload> {
        if !request.is_object() {
            return Err(InvalidPayload("request must be an object".into()));
        }
        let state = match required_string(request, "state")?.as_str() {
            "still_working" => ReportState::StillWorking,
            "blocked" => ReportState::Blocked,
            "caught_up" => ReportState::CaughtUp,
            other => return Err(InvalidPayload(format!("unknown state {other:?}"))),
        };
        let note = bounded_string(request, "note", MAX_NOTE_CHARS)?;
        let task_ids = match request.get("taskIds") {
            None | Some(Value::Null) => None,
            Some(Value::Array(items)) => {
                if items.len() > MAX_TASK_IDS {
                    return Err(InvalidPayload(format!("more than {MAX_TASK_IDS} taskIds")));
                }
                let ids = items
                    .iter()
                    .map(|v| match v {
                        Value::String(s) if s.chars().count() <= MAX_TASK_ID_CHARS => Ok(s.clone()),
                        Value::String(_) => Err(InvalidPayload(format!(
                            "taskId longer than {MAX_TASK_ID_CHARS}"
                        ))),
                        _ => Err(InvalidPayload("taskIds must be strings".into())),
                    })
                    .collect::<Result<Vec<_>, _>>()?;
                Some(ids)
            }
            Some(_) => return Err(InvalidPayload("taskIds must be an array".into())),
        };
        let lease_ttl_ms = match request.get("leaseTtlMs") {
            None | Some(Value::Null) => None,
            Some(Value::Number(n)) => Some(
                n.as_f64()
                    .filter(|v| v.is_finite())
                    .ok_or_else(|| InvalidPayload("leaseTtlMs must be finite".into()))?,
            ),
            Some(_) => return Err(InvalidPayload("leaseTtlMs must be a number".into())),
        };
        let source = match optional_string(request, "source")?.as_deref() {
            None => None,
            Some("mcp") => Some(ReportSource::Mcp),
            Some("app") => Some(ReportSource::App),
            Some("test") => Some(ReportSource::Test),
            Some(other) => return Err(InvalidPayload(format!("unknown source {other:?}"))),
        };
        Ok(Self {
            team_name: required_string(request, "teamName")?,
            member_name: required_string(request, "memberName")?,
            state,
            agenda_fingerprint: bounded_string(
                request,
                "agendaFingerprint",
                MAX_FINGERPRINT_CHARS,
            )?
            .ok_or_else(|| InvalidPayload("agendaFingerprint is required".into()))?,
            report_token: bounded_string(request, "reportToken", MAX_REPORT_TOKEN_CHARS)?,
            task_ids,
            note,
            reported_at: bounded_string(request, "reportedAt", MAX_REPORTED_AT_CHARS)?,
            lease_ttl_ms,
            source,
        })
    }
}

/// Why a report was refused, in check order.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[allow(missing_docs)]
pub enum Rejection {
    InvalidPayload,
    TeamRuntimeInactive,
    MemberRuntimeInactive,
    ReservedOrInvalidMember,
    IdentityMismatch,
    MemberInactive,
    StaleFingerprint,
    IdentityUntrusted,
    InvalidReportToken,
    ForeignTaskId,
    CaughtUpRejectedActionableItemsExist,
    StillWorkingRejectedAgendaEmpty,
    BlockedWithoutEvidence,
}

impl Rejection {
    /// The stable code.
    pub fn code(self) -> &'static str {
        match self {
            Self::InvalidPayload => "invalid_payload",
            Self::TeamRuntimeInactive => "team_runtime_inactive",
            Self::MemberRuntimeInactive => "member_runtime_inactive",
            Self::ReservedOrInvalidMember => "reserved_or_invalid_member",
            Self::IdentityMismatch => "identity_mismatch",
            Self::MemberInactive => "member_inactive",
            Self::StaleFingerprint => "stale_fingerprint",
            Self::IdentityUntrusted => "identity_untrusted",
            Self::InvalidReportToken => "invalid_report_token",
            Self::ForeignTaskId => "foreign_task_id",
            Self::CaughtUpRejectedActionableItemsExist => {
                "caught_up_rejected_actionable_items_exist"
            }
            Self::StillWorkingRejectedAgendaEmpty => "still_working_rejected_agenda_empty",
            Self::BlockedWithoutEvidence => "blocked_without_evidence",
        }
    }

    /// A corrective message for the member.
    pub fn message(self) -> &'static str {
        match self {
            Self::InvalidPayload => "The report request is malformed.",
            Self::TeamRuntimeInactive => "The team is not running; reports are not accepted.",
            Self::MemberRuntimeInactive => "The member is not running; reports are not accepted.",
            Self::ReservedOrInvalidMember => "This name cannot report work.",
            Self::IdentityMismatch => "The reporting member is not the member of this agenda.",
            Self::MemberInactive => "The member is not on the team's active roster.",
            Self::StaleFingerprint => {
                "The agenda changed; read the current agenda and report again."
            }
            Self::IdentityUntrusted => "A report token from the current status is required.",
            Self::InvalidReportToken => {
                "The report token is invalid or expired; read the current status and report again."
            }
            Self::ForeignTaskId => "A task id is not on the member's current agenda.",
            Self::CaughtUpRejectedActionableItemsExist => {
                "The agenda still has actionable items; caught_up is not valid."
            }
            Self::StillWorkingRejectedAgendaEmpty => {
                "The agenda is empty; report caught_up instead."
            }
            Self::BlockedWithoutEvidence => "blocked needs a blocked item on the board.",
        }
    }

    /// True for rejections that only say "not now" (replay marks them superseded).
    pub(crate) fn is_lifecycle(self) -> bool {
        matches!(
            self,
            Self::MemberInactive | Self::TeamRuntimeInactive | Self::MemberRuntimeInactive
        )
    }
}

/// What the validator looks at besides the request.
#[derive(Debug, Clone, Copy)]
pub(crate) struct ValidationContext<'a> {
    /// The member's current agenda.
    pub agenda: &'a Agenda,
    /// Team runtime up.
    pub team_runtime_active: bool,
    /// Member runtime up.
    pub member_runtime_active: bool,
    /// Team exists and member is on the active roster.
    pub on_active_roster: bool,
    /// Outcome of verifying the request's token.
    pub token: TokenCheck,
}

/// Runs the checks in the documented order; `Ok` means accepted.
pub(crate) fn validate(
    request: &ReportRequest,
    ctx: &ValidationContext<'_>,
) -> Result<(), Rejection> {
    if !ctx.team_runtime_active {
        return Err(Rejection::TeamRuntimeInactive);
    }
    if !ctx.member_runtime_active {
        return Err(Rejection::MemberRuntimeInactive);
    }
    let member = normalize_member_name(&request.member_name);
    // Only the app's reserved names (empty, `user`, `system`): a provider id
    // or a lead alias is a member name like any other there.
    if is_reserved_member_name(&member) {
        return Err(Rejection::ReservedOrInvalidMember);
    }
    if member != normalize_member_name(&ctx.agenda.member_name) {
        return Err(Rejection::IdentityMismatch);
    }
    if !ctx.on_active_roster {
        return Err(Rejection::MemberInactive);
    }
    if request.agenda_fingerprint != ctx.agenda.fingerprint {
        return Err(Rejection::StaleFingerprint);
    }
    match ctx.token {
        TokenCheck::Valid => {}
        TokenCheck::Missing => return Err(Rejection::IdentityUntrusted),
        TokenCheck::Invalid | TokenCheck::Expired => return Err(Rejection::InvalidReportToken),
    }
    let items = &ctx.agenda.items;
    let covered: Vec<usize> = match &request.task_ids {
        None => (0..items.len()).collect(),
        Some(ids) => {
            let mut covered = Vec::new();
            for id in ids {
                let id = js_trim(id).trim_start_matches('#');
                let matches: Vec<usize> = (0..items.len())
                    .filter(|&i| {
                        items[i].task_id == id
                            || items[i]
                                .display_id
                                .as_deref()
                                .map(|d| d.trim_start_matches('#'))
                                == Some(id)
                    })
                    .collect();
                if matches.is_empty() {
                    return Err(Rejection::ForeignTaskId);
                }
                covered.extend(matches);
            }
            covered
        }
    };
    match request.state {
        ReportState::CaughtUp if !items.is_empty() => {
            Err(Rejection::CaughtUpRejectedActionableItemsExist)
        }
        ReportState::StillWorking if items.is_empty() => {
            Err(Rejection::StillWorkingRejectedAgendaEmpty)
        }
        ReportState::Blocked
            if !covered.iter().any(|&i| {
                items[i].kind == ItemKind::BlockedDependency
                    || items[i].priority == Priority::Blocked
            }) =>
        {
            Err(Rejection::BlockedWithoutEvidence)
        }
        _ => Ok(()),
    }
}

/// Lease length for an accepted report; `None` for `caught_up`.
pub(crate) fn lease_ms(
    state: ReportState,
    agenda: &Agenda,
    requested_ms: Option<f64>,
) -> Option<EpochMs> {
    let only_pickups = !agenda.items.is_empty()
        && agenda.items.iter().all(|item| {
            item.kind == ItemKind::Review
                && item.evidence.review_obligation.as_deref()
                    == Some(ReviewObligation::PickupRequired.as_str())
                && item.evidence.can_bypass_phase2 == Some(true)
        });
    let (default, max) = match state {
        ReportState::CaughtUp => return None,
        ReportState::Blocked => (BLOCKED_LEASE_MS, MAX_LEASE_MS),
        ReportState::StillWorking if only_pickups => (PICKUP_LEASE_MS, PICKUP_MAX_LEASE_MS),
        ReportState::StillWorking => (STILL_WORKING_LEASE_MS, MAX_LEASE_MS),
    };
    Some(match requested_ms {
        None => default,
        Some(ms) => (ms.floor() as EpochMs).clamp(MIN_LEASE_MS, max),
    })
}

#[cfg(test)]
mod tests;
