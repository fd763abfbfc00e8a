//! `explain`: turns a member's journal lines, outbox items and stored status
//! into one timeline of short sentences an operator can read.
//!
//! Pure: every input is the JSON the stores hold (a journal line in the app
//! journal's shape, an outbox item, a status), so this works on whatever an
//! agent left in those files. The sentence of every known journal event kind
//! lives in [`sentence_for`]; an unknown kind passes through with its raw
//! fields.

use serde::{Deserialize, Serialize};
use serde_json::Value;

use super::audit::{AuditKind, AuditSource};
use super::nudge::{OutboxStatus, PlannerCode, MAX_RECOVERIES_PER_HOUR};
use super::nudge_suppression::SUPPRESS_AFTER_DELIVERIES;
use super::time::{format_iso, parse_iso, EpochMs};

/// Where an entry came from.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "camelCase")]
#[cfg_attr(test, derive(ts_rs::TS))]
pub(crate) enum EntryOrigin {
    /// A line of `journal.jsonl` (or a rotation).
    Journal,
    /// An item of the member's `outbox.json`.
    Outbox,
    /// The stored `status.json`.
    Status,
}

/// One timeline entry.
#[derive(Debug, Clone, PartialEq, Serialize)]
#[serde(rename_all = "camelCase")]
#[cfg_attr(test, derive(ts_rs::TS))]
pub(crate) struct ExplainEntry {
    /// When it happened (epoch ms; 0 when the source had no usable time).
    pub at_ms: EpochMs,
    /// `at_ms` as ISO-8601 UTC.
    pub at: String,
    /// Which file it came from.
    pub origin: EntryOrigin,
    /// The journal event kind, `outbox_<status>` or `status`.
    pub kind: String,
    /// What happened, in words and numbers.
    pub sentence: String,
    /// The raw record the sentence was made from.
    pub fields: Value,
}

/// A lifted field of a journal line, else one of its `metadata`.
fn field<'a>(line: &'a Value, key: &str) -> Option<&'a Value> {
    line.get(key)
        .or_else(|| line.get("metadata").and_then(|m| m.get(key)))
        .filter(|v| !v.is_null())
}

/// A field as display text (`?` when absent).
fn text(line: &Value, key: &str) -> String {
    match field(line, key) {
        Some(Value::String(s)) => s.clone(),
        Some(Value::Array(items)) => items
            .iter()
            .map(|i| match i {
                Value::String(s) => s.clone(),
                other => other.to_string(),
            })
            .collect::<Vec<_>>()
            .join(", "),
        Some(other) => other.to_string(),
        None => "?".into(),
    }
}

/// `; diagnostics: a, b` when the line has any.
fn diagnostics_suffix(line: &Value) -> String {
    match line.get("diagnostics").and_then(Value::as_array) {
        Some(d) if !d.is_empty() => format!("; diagnostics: {}", text(line, "diagnostics")),
        _ => String::new(),
    }
}

/// The readiness numbers a planner skip carries, against their thresholds.
fn readiness_words(line: &Value) -> Option<String> {
    let state = field(line, "phase2ReadinessState")?;
    let pair = |rate: &str, max: &str, what: &str| {
        format!("{what} {}/{}", text(line, rate), text(line, max))
    };
    let reasons = text(line, "phase2ReadinessReasons");
    Some(format!(
        "readiness {} ({}; {}, {}, {}; {} status events over {} h)",
        state.as_str().unwrap_or("?"),
        if reasons.is_empty() {
            "no reasons"
        } else {
            reasons.as_str()
        },
        pair(
            "wouldNudgesPerMemberHour",
            "maxWouldNudgesPerMemberHour",
            "would-nudges per member-hour"
        ),
        pair(
            "fingerprintChangesPerMemberHour",
            "maxFingerprintChangesPerMemberHour",
            "agenda changes per member-hour"
        ),
        pair(
            "reportRejectionRate",
            "maxReportRejectionRate",
            "report rejection rate"
        ),
        text(line, "statusEventCount"),
        text(line, "observationHours"),
    ))
}

/// A line's reason, and the tool the member was busy with when the journal
/// names one (busy skips and busy retries).
fn busy_words(line: &Value) -> String {
    match field(line, "toolName") {
        Some(_) => format!("{}, with {}", text(line, "reason"), text(line, "toolName")),
        None => text(line, "reason"),
    }
}

/// Why a nudge was not planned, in words.
fn skip_words(line: &Value) -> String {
    // The code is the line's `reason`; older addon lines kept it as `code`.
    let code = first_of(line, &["reason", "code"]);
    let detail = match PlannerCode::parse(&code) {
        Some(PlannerCode::MemberBusy) => format!("member busy ({})", busy_words(line)),
        Some(PlannerCode::TaskProtocolRepairRateLimited) => format!(
            "task-protocol repair rate limited ({MAX_RECOVERIES_PER_HOUR}/{MAX_RECOVERIES_PER_HOUR} per hour used)"
        ),
        Some(PlannerCode::Existing) => "the nudge for this agenda already went out".into(),
        Some(PlannerCode::ReviewPickupAlreadyDeliveredStillStuck) => {
            "the review pickup nudge already went out".into()
        }
        Some(PlannerCode::ReviewPickupDeliveryUnavailable) => {
            "no delivery path for a review pickup nudge".into()
        }
        Some(PlannerCode::StatusNotNudgeable) => "status needs no nudge".into(),
        Some(PlannerCode::Phase2NotReady) => "phase 2 is not ready".into(),
        Some(PlannerCode::BlockingMetrics) => "the report rejection rate blocks phase 2".into(),
        Some(PlannerCode::MetricsUnavailable) => "the team metrics could not be read".into(),
        Some(PlannerCode::OutboxUnavailable) => "the outbox could not be read or written".into(),
        _ => code.clone(),
    };
    match readiness_words(line) {
        Some(readiness) => format!("{detail}; {readiness}"),
        None => detail,
    }
}

/// Stall lines an older addon journaled under their reason as the event
/// kind, with the words for the runtime signal each names.
const LEGACY_STALL_KINDS: [(&str, &str); 3] = [
    (
        "same_agenda_still_needs_sync_after_turn_settled",
        "a settled turn",
    ),
    (
        "same_agenda_still_needs_sync_after_tool_finished",
        "a tool finished",
    ),
    (
        "same_agenda_still_needs_sync_after_runtime_activity",
        "runtime activity",
    ),
];

/// The sentence of one journal line (the table of known event kinds).
fn sentence_for(line: &Value) -> String {
    let kind = text(line, "event");
    let t = |key: &str| text(line, key);
    let diags = diagnostics_suffix(line);
    match AuditKind::parse(&kind) {
        Some(AuditKind::QueueEnqueued) => format!("reconcile queued ({})", first_of(line, &["reason", "trigger"])),
        Some(AuditKind::QueueCoalesced) => format!(
            "reconcile request merged into a queued one ({})",
            first_of(line, &["reason", "trigger"])
        ),
        Some(AuditKind::QueueDropped) => format!("queued reconcile dropped ({})", t("reason")),
        Some(AuditKind::QueueReconciled) => match field(line, "followUp").and_then(Value::as_bool) {
            Some(true) => "queued reconcile ran; another one follows".into(),
            _ => "queued reconcile ran".into(),
        },
        Some(AuditKind::QueueRetryScheduled) => format!("queued reconcile failed; retry at {}", t("runAt")),
        Some(AuditKind::ReconcileStarted) => format!("reconcile started (triggers: {})", t("triggerReasons")),
        Some(AuditKind::AgendaLoaded) => format!(
            "agenda loaded: {} actionable item(s){diags}",
            t("actionableCount")
        ),
        Some(AuditKind::DecisionMade) => format!(
            "decision: {} with {} actionable item(s){diags}",
            t("state"),
            t("actionableCount")
        ),
        Some(AuditKind::TeamInactive) => format!("decision: inactive (team not running){diags}"),
        Some(AuditKind::StatusWritten) => format!("status written: {}", t("state")),
        Some(AuditKind::LegacyFallbackUsed) => {
            format!("read the legacy {} store", first_of(line, &["reason", "store"]))
        }
        Some(AuditKind::RuntimeStallObserved) => match t("reason").rsplit_once("_after_") {
            Some((_, trigger)) => format!(
                "runtime stall: the agenda is unchanged and still needs sync after {}",
                trigger.replace('_', " ")
            ),
            None => format!("runtime stall observed ({})", t("reason")),
        },
        Some(AuditKind::NudgeSuppressed) => format!(
            "nudges suppressed: {} deliveries for this agenda without an accepted report (limit {SUPPRESS_AFTER_DELIVERIES})",
            t("deliveredCount")
        ),
        Some(AuditKind::MetricsUnavailable) => format!("metric events could not be recorded{diags}"),
        // The caller's `source` stays in `metadata` (the line's own names the reporter).
        Some(AuditKind::ReportReceived) => format!(
            "report received: {} (via {})",
            t("state"),
            line.get("metadata")
                .map_or_else(|| "?".into(), |m| text(m, "source"))
        ),
        Some(AuditKind::ReportAccepted) => "report accepted".into(),
        Some(AuditKind::ReportRejected) => format!(
            "report rejected: {}{diags}",
            first_of(line, &["reason", "code"])
        ),
        Some(AuditKind::ProofMissingRecoveryScheduled) => format!(
            "proof-missing recovery scheduled for message {} ({})",
            t("originalMessageId"),
            t("reason")
        ),
        Some(AuditKind::ProofMissingRecoveryCoalesced) => format!(
            "proof-missing recovery for message {} merged into outbox item {} ({})",
            t("originalMessageId"),
            t("existingOutboxId"),
            t("reason")
        ),
        Some(AuditKind::ProofMissingRecoverySuppressed) => format!(
            "proof-missing recovery for message {} not scheduled ({})",
            t("originalMessageId"),
            t("reason")
        ),
        Some(AuditKind::NudgePlanned) => format!("nudge planned ({})", first_of(line, &["reason", "code"])),
        Some(AuditKind::MemberBusy) => format!("member busy ({}): no nudge now", busy_words(line)),
        Some(AuditKind::NudgeSkipped)
            if line.get("source").and_then(Value::as_str).and_then(AuditSource::parse)
                == Some(AuditSource::NudgePlanner) =>
        {
            format!("nudge not planned: {}", skip_words(line))
        }
        // A hold found at dispatch is journaled as skipped too, with its retry time.
        Some(AuditKind::NudgeSkipped) if field(line, "nextAttemptAt").is_some() => format!(
            "nudge {} held back ({}); next attempt at {}",
            t("outboxId"),
            t("reason"),
            t("nextAttemptAt")
        ),
        Some(AuditKind::NudgeSkipped) => format!("nudge {} given up ({})", t("outboxId"), t("reason")),
        Some(AuditKind::NudgeDelivered) => format!(
            "nudge {} delivered to the inbox (attempt {}; tasks {})",
            t("outboxId"),
            t("attemptGeneration"),
            t("messagePreview")
        ),
        Some(AuditKind::NudgeRetryable) => format!(
            "nudge {} not delivered ({}); next attempt at {}",
            t("outboxId"),
            busy_words(line),
            t("nextAttemptAt")
        ),
        Some(AuditKind::WatchdogCooldownActive) => format!(
            "nudge {} held back: watchdog cooldown until {}",
            t("outboxId"),
            t("nextAttemptAt")
        ),
        Some(AuditKind::NudgeSuperseded) => format!("nudge {} superseded ({})", t("outboxId"), t("reason")),
        Some(AuditKind::ReviewPickupDeliveryUnavailable) => {
            format!("review pickup cannot be delivered ({})", t("reason"))
        }
        Some(AuditKind::ReviewPickupEscalated) => format!("review pickup escalated ({})", t("reason")),
        Some(AuditKind::OutboxUnavailable) => format!("outbox unavailable ({})", t("reason")),
        Some(AuditKind::TurnSettledClaimed) => format!(
            "settled turn picked up from the spool ({} {})",
            t("provider"),
            t("sourceId")
        ),
        Some(AuditKind::TurnSettledResolved) => "settled turn attributed to this member".into(),
        Some(AuditKind::TurnSettledIgnored) => format!("settled turn ignored ({})", t("reason")),
        Some(AuditKind::TurnSettledUnresolved) => format!("settled turn not attributed ({})", t("reason")),
        None => match LEGACY_STALL_KINDS.iter().find(|(spelling, _)| *spelling == kind) {
            Some((_, trigger)) => format!(
                "runtime stall: the agenda is unchanged and still needs sync after {trigger}"
            ),
            None => format!("{kind}{}", raw_suffix(line)),
        },
        // Known kinds without a sentence of their own read like unknown ones.
        Some(_) => format!("{kind}{}", raw_suffix(line)),
    }
}

/// The first present field of `keys`, as text.
fn first_of(line: &Value, keys: &[&str]) -> String {
    keys.iter()
        .find(|k| field(line, k).is_some())
        .map_or_else(|| "?".into(), |k| text(line, k))
}

/// An unknown kind's own fields, `key=value` joined.
fn raw_suffix(line: &Value) -> String {
    const SHAPE: [&str; 6] = [
        "event",
        "timestamp",
        "teamName",
        "memberName",
        "source",
        "schemaVersion",
    ];
    let mut parts = Vec::new();
    if let Some(map) = line.as_object() {
        for (key, value) in map.iter().filter(|(k, _)| !SHAPE.contains(&k.as_str())) {
            match (key.as_str(), value) {
                ("metadata", Value::Object(meta)) => {
                    parts.extend(meta.iter().map(|(k, v)| format!("{k}={v}")));
                }
                _ => parts.push(format!("{key}={value}")),
            }
        }
    }
    if parts.is_empty() {
        String::new()
    } else {
        format!(": {}", parts.join(" "))
    }
}

/// A time field as epoch ms (0 when absent or unparseable).
fn time_of(value: &Value, key: &str) -> EpochMs {
    value
        .get(key)
        .and_then(Value::as_str)
        .and_then(parse_iso)
        .unwrap_or(0)
}

/// The entry of one journal line; `None` for a line that is not an event
/// object (a torn or foreign line).
pub(crate) fn journal_entry(line: Value) -> Option<ExplainEntry> {
    let kind = line.get("event")?.as_str()?.to_string();
    let at_ms = time_of(&line, "timestamp");
    Some(ExplainEntry {
        at_ms,
        at: format_iso(at_ms),
        origin: EntryOrigin::Journal,
        kind,
        sentence: sentence_for(&line),
        fields: line,
    })
}

/// The entry of one outbox item (a serialized `OutboxItem`): where it stands now.
pub(crate) fn outbox_entry(item: Value) -> ExplainEntry {
    let t = |key: &str| text(&item, key);
    let status = t("status");
    let intent = item
        .get("payload")
        .and_then(|p| p.get("workSyncIntent"))
        .and_then(Value::as_str)
        .unwrap_or("?")
        .to_string();
    // A status outside the lifecycle (another writer's) is shown as read.
    let lifecycle = item
        .get("status")
        .and_then(|s| OutboxStatus::deserialize(s).ok());
    let (at_key, sentence) = match lifecycle {
        Some(OutboxStatus::Delivered) => (
            "deliveredAt",
            format!("outbox: nudge {} ({intent}) delivered", t("id")),
        ),
        Some(OutboxStatus::Pending) => (
            "updatedAt",
            format!("outbox: nudge {} ({intent}) waiting for dispatch", t("id")),
        ),
        Some(OutboxStatus::Claimed) => (
            "claimedAt",
            format!(
                "outbox: nudge {} ({intent}) claimed by {}",
                t("id"),
                t("claimedBy")
            ),
        ),
        Some(OutboxStatus::FailedRetryable) => (
            "updatedAt",
            format!(
                "outbox: nudge {} ({intent}) failed ({}); next attempt at {}",
                t("id"),
                t("lastError"),
                t("nextAttemptAt")
            ),
        ),
        Some(OutboxStatus::FailedTerminal) => (
            "updatedAt",
            format!(
                "outbox: nudge {} ({intent}) failed for good ({})",
                t("id"),
                t("lastError")
            ),
        ),
        Some(OutboxStatus::Superseded) => (
            "updatedAt",
            format!(
                "outbox: nudge {} ({intent}) superseded ({})",
                t("id"),
                t("lastError")
            ),
        ),
        None => (
            "updatedAt",
            format!("outbox: nudge {} ({intent}) is {status}", t("id")),
        ),
    };
    let at_ms = match time_of(&item, at_key) {
        0 => time_of(&item, "updatedAt"),
        at => at,
    };
    ExplainEntry {
        at_ms,
        at: format_iso(at_ms),
        origin: EntryOrigin::Outbox,
        kind: format!("outbox_{status}"),
        sentence,
        fields: item,
    }
}

/// The entry of the stored status (a serialized `MemberStatus`).
pub(crate) fn status_entry(status: Value) -> ExplainEntry {
    let t = |key: &str| text(&status, key);
    let items = status
        .get("agenda")
        .and_then(|a| a.get("items"))
        .and_then(Value::as_array)
        .map_or(0, Vec::len);
    let report = match status.get("report") {
        Some(r) if r.is_object() => match r.get("accepted").and_then(Value::as_bool) {
            Some(true) => format!("; last report {} accepted", text(r, "state")),
            _ => format!(
                "; last report {} rejected ({})",
                text(r, "state"),
                text(r, "rejectionCode")
            ),
        },
        _ => "; no report".into(),
    };
    let diags = diagnostics_suffix(&status);
    let at_ms = time_of(&status, "evaluatedAt");
    ExplainEntry {
        at_ms,
        at: format_iso(at_ms),
        origin: EntryOrigin::Status,
        kind: "status".into(),
        sentence: format!(
            "stored status: {} with {items} actionable item(s){report}{diags}",
            t("state")
        ),
        fields: status,
    }
}

/// Merges entries into one timeline, oldest first (stable for equal
/// times), keeps those at or after `since_ms` and at most the newest `max`.
pub(crate) fn timeline(
    mut entries: Vec<ExplainEntry>,
    since_ms: Option<EpochMs>,
    max: usize,
) -> Vec<ExplainEntry> {
    if let Some(since) = since_ms {
        entries.retain(|e| e.at_ms >= since);
    }
    entries.sort_by_key(|e| e.at_ms);
    let cut = entries.len().saturating_sub(max);
    entries.split_off(cut)
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn journal_lines_read_as_sentences() {
        let base = |event: &str, source: &str, extra: Value| {
            let mut line = json!({"event": event, "timestamp": "2026-01-01T00:00:00.000Z",
                "teamName": "t", "memberName": "m", "source": source, "schemaVersion": 1});
            for (k, v) in extra.as_object().unwrap() {
                line[k] = v.clone();
            }
            line
        };
        let cases = [
            (
                base("reconcile_started", "reconciler", json!({"triggerReasons": ["task_changed", "turn_settled"]})),
                "reconcile started (triggers: task_changed, turn_settled)",
            ),
            (
                base("decision_made", "reconciler", json!({"state": "needs_sync", "actionableCount": 2, "diagnostics": ["no_current_report"]})),
                "decision: needs_sync with 2 actionable item(s); diagnostics: no_current_report",
            ),
            (
                base("report_rejected", "reporter", json!({"metadata": {"code": "agenda_fingerprint_mismatch"}})),
                "report rejected: agenda_fingerprint_mismatch",
            ),
            (
                base("report_rejected", "reporter", json!({"reason": "stale_fingerprint"})),
                "report rejected: stale_fingerprint",
            ),
            (
                base("report_received", "reporter", json!({"state": "blocked", "metadata": {"source": "mcp"}})),
                "report received: blocked (via mcp)",
            ),
            (
                base("member_busy", "nudge_planner", json!({"reason": "active_tool_activity"})),
                "member busy (active_tool_activity): no nudge now",
            ),
            (
                base("member_busy", "nudge_planner", json!({"reason": "active_tool_activity", "toolName": "Bash"})),
                "member busy (active_tool_activity, with Bash): no nudge now",
            ),
            (
                base("nudge_retryable", "nudge_dispatcher", json!({"metadata": {"outboxId": "o1",
                    "reason": "member_busy:recent_tool_activity", "toolName": "Edit",
                    "nextAttemptAt": "2026-01-01T00:10:00.000Z"}})),
                "nudge o1 not delivered (member_busy:recent_tool_activity, with Edit); next attempt at 2026-01-01T00:10:00.000Z",
            ),
            (
                base("nudge_skipped", "nudge_planner", json!({"reason": "existing"})),
                "nudge not planned: the nudge for this agenda already went out",
            ),
            (
                base("nudge_planned", "nudge_planner", json!({"reason": "created"})),
                "nudge planned (created)",
            ),
            (
                base("runtime_stall_observed", "reconciler", json!({"reason": "same_agenda_still_needs_sync_after_turn_settled"})),
                "runtime stall: the agenda is unchanged and still needs sync after turn settled",
            ),
            (
                base("legacy_fallback_used", "json_store", json!({"reason": "status_v1"})),
                "read the legacy status_v1 store",
            ),
            (
                base("nudge_skipped", "nudge_planner", json!({"metadata": {"code": "task_protocol_repair_rate_limited"}})),
                "nudge not planned: task-protocol repair rate limited (2/2 per hour used)",
            ),
            (
                base("nudge_skipped", "nudge_planner", json!({"metadata": {"code": "phase2_not_ready",
                    "phase2ReadinessState": "collecting_shadow_data", "phase2ReadinessReasons": "observation_too_short",
                    "wouldNudgesPerMemberHour": 0.5, "maxWouldNudgesPerMemberHour": 2,
                    "fingerprintChangesPerMemberHour": 1, "maxFingerprintChangesPerMemberHour": 6,
                    "reportRejectionRate": 0.1, "maxReportRejectionRate": 0.3,
                    "statusEventCount": 4, "observationHours": 0.25}})),
                "nudge not planned: phase 2 is not ready; readiness collecting_shadow_data (observation_too_short; would-nudges per member-hour 0.5/2, agenda changes per member-hour 1/6, report rejection rate 0.1/0.3; 4 status events over 0.25 h)",
            ),
            (
                base("nudge_suppressed", "nudge_planner", json!({"metadata": {"deliveredCount": 4}})),
                "nudges suppressed: 4 deliveries for this agenda without an accepted report (limit 4)",
            ),
            (
                base("watchdog_cooldown_active", "nudge_dispatcher", json!({"metadata": {"outboxId": "o1", "nextAttemptAt": "2026-01-01T00:10:00.000Z"}})),
                "nudge o1 held back: watchdog cooldown until 2026-01-01T00:10:00.000Z",
            ),
            (
                base("nudge_skipped", "nudge_dispatcher", json!({"reason": "agenda_changed", "metadata": {"outboxId": "o2"}})),
                "nudge o2 given up (agenda_changed)",
            ),
            (
                base("nudge_skipped", "nudge_dispatcher", json!({"reason": "member_nudge_rate_limited", "metadata": {"outboxId": "o3", "nextAttemptAt": "2026-01-01T01:00:00.000Z"}})),
                "nudge o3 held back (member_nudge_rate_limited); next attempt at 2026-01-01T01:00:00.000Z",
            ),
            (
                base("queue_enqueued", "event_queue", json!({"metadata": {"trigger": "proof_missing_recovery"}})),
                "reconcile queued (proof_missing_recovery)",
            ),
            // Unknown kinds pass through with their raw fields.
            (
                base("brand_new_kind", "x", json!({"reason": "why", "metadata": {"n": 3}})),
                "brand_new_kind: reason=\"why\" n=3",
            ),
        ];
        for (line, sentence) in cases {
            let entry = journal_entry(line.clone()).unwrap();
            assert_eq!(entry.sentence, sentence, "{line}");
            assert_eq!(entry.fields, line);
            assert_eq!(entry.origin, EntryOrigin::Journal);
        }
    }

    #[test]
    fn lines_that_are_not_events_are_left_out() {
        for line in [
            json!(null),
            json!([1]),
            json!({"event": 5}),
            json!({"x": 1}),
        ] {
            assert!(journal_entry(line).is_none());
        }
    }

    #[test]
    fn outbox_items_and_status_say_where_they_stand() {
        let item = json!({"id": "o1", "status": "delivered", "deliveredMessageId": "msg",
            "deliveredAt": "2026-01-01T00:05:00.000Z", "updatedAt": "2026-01-01T00:06:00.000Z",
            "payload": {"workSyncIntent": "agenda_sync"}});
        let entry = outbox_entry(item);
        assert_eq!(entry.sentence, "outbox: nudge o1 (agenda_sync) delivered");
        assert_eq!(entry.at, "2026-01-01T00:05:00.000Z");
        assert_eq!(entry.kind, "outbox_delivered");
        let status = json!({"state": "needs_sync", "evaluatedAt": "2026-01-01T00:00:00.000Z",
            "agenda": {"items": [{}, {}]}, "report": {"state": "still_working", "accepted": false,
            "rejectionCode": "stale"}, "diagnostics": ["a"]});
        assert_eq!(
            status_entry(status).sentence,
            "stored status: needs_sync with 2 actionable item(s); last report still_working rejected (stale); diagnostics: a"
        );
    }

    #[test]
    fn an_outbox_status_outside_the_lifecycle_is_shown_as_read() {
        for (status, sentence) in [
            (
                json!("archived"),
                "outbox: nudge o1 (agenda_sync) is archived",
            ),
            (json!(3), "outbox: nudge o1 (agenda_sync) is 3"),
            (
                json!("failed_retryable"),
                "outbox: nudge o1 (agenda_sync) failed (?); next attempt at ?",
            ),
        ] {
            let item = json!({"id": "o1", "status": status, "updatedAt": "2026-01-01T00:06:00.000Z",
                "payload": {"workSyncIntent": "agenda_sync"}});
            assert_eq!(outbox_entry(item).sentence, sentence);
        }
    }

    #[test]
    fn timeline_is_oldest_first_filtered_and_capped() {
        let at = |ms: EpochMs| ExplainEntry {
            at_ms: ms,
            at: format_iso(ms),
            origin: EntryOrigin::Journal,
            kind: ms.to_string(),
            sentence: String::new(),
            fields: Value::Null,
        };
        let kinds = |entries: Vec<ExplainEntry>| -> Vec<String> {
            entries.into_iter().map(|e| e.kind).collect()
        };
        assert_eq!(
            kinds(timeline(vec![at(3), at(1), at(2)], None, 10)),
            ["1", "2", "3"]
        );
        assert_eq!(
            kinds(timeline(vec![at(3), at(1), at(2)], Some(2), 10)),
            ["2", "3"]
        );
        assert_eq!(
            kinds(timeline(vec![at(3), at(1), at(2)], None, 2)),
            ["2", "3"]
        );
    }
}
