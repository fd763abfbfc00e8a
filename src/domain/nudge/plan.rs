//! What a nudge says: the payload planned for a status that needs sync, its
//! id (keyed by the agenda fingerprint, the review requests of a clean
//! pickup, or a recovery intent key) and its hash.

use std::sync::Arc;

use serde::{Deserialize, Serialize};

use crate::domain::agenda::{ActionableWorkItem, Agenda, ItemKind};
use crate::domain::fingerprint::sha256_hex;
use crate::domain::json_text::ObjectText;
use crate::domain::names::{normalize_member_name, MemberName, TeamName};
use crate::domain::nudge_text::{agenda_preview, agenda_sync_text, display_id, review_pickup_text};
use crate::domain::review_cycle::ReviewObligation;
use crate::domain::status::{MemberStatus, StatusState};

/// Why a nudge is sent.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum NudgeIntent {
    /// General "your agenda needs attention".
    AgendaSync,
    /// A clean review pickup.
    ReviewPickup,
}

impl NudgeIntent {
    /// The wire spelling (`serde`'s).
    pub fn as_str(self) -> &'static str {
        match self {
            Self::AgendaSync => "agenda_sync",
            Self::ReviewPickup => "review_pickup",
        }
    }
}

/// A task reference in a nudge.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
#[allow(missing_docs)]
pub struct TaskRef {
    pub team_name: String,
    pub task_id: String,
    pub display_id: String,
}

/// The immutable content of a nudge (hashed into `payloadHash`). `Eq`, so
/// that two `Arc`s of one payload compare equal by address before their
/// fields are read.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
#[allow(missing_docs)]
pub struct NudgePayload {
    pub to: String,
    pub text: String,
    pub task_refs: Vec<TaskRef>,
    pub work_sync_intent: NudgeIntent,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub work_sync_intent_key: Option<String>,
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub work_sync_review_request_event_ids: Vec<String>,
    /// The app's payloads carry none (the item has it): empty when read
    /// from one, then filled in from the item
    /// ([`OutboxItem::with_payload_fingerprint`](super::OutboxItem::with_payload_fingerprint)).
    #[serde(default)]
    pub agenda_fingerprint: String,
}

impl NudgePayload {
    /// sha256 hex of the canonical JSON payload ([`NudgePayload::canonical_text`]).
    pub fn hash(&self) -> String {
        sha256_hex(&self.canonical_text())
    }

    /// The canonical JSON of the payload as `serde` serializes it: keys in
    /// code unit order at every depth, no whitespace, the optional intent key
    /// and an empty review id list left out, `JSON.stringify`'s escaping. The
    /// bytes of `canonical_json` over its `serde_json::to_value`, which the
    /// hashes of outboxes already on disk (and the app's) were taken over;
    /// the tests hold the two side by side. Every field is named in a pattern
    /// with no `..`: a new field does not compile until it is written here.
    fn canonical_text(&self) -> Vec<u8> {
        let NudgePayload {
            to,
            text,
            task_refs,
            work_sync_intent,
            work_sync_intent_key,
            work_sync_review_request_event_ids,
            agenda_fingerprint,
        } = self;
        let mut out = Vec::with_capacity(256 + text.len());
        let mut object = ObjectText::open(&mut out);
        object.string("agendaFingerprint", agenda_fingerprint);
        let refs = object.key("taskRefs");
        refs.push(b'[');
        for (i, task_ref) in task_refs.iter().enumerate() {
            if i > 0 {
                refs.push(b',');
            }
            let TaskRef {
                team_name,
                task_id,
                display_id,
            } = task_ref;
            let mut entry = ObjectText::open(refs);
            entry.string("displayId", display_id);
            entry.string("taskId", task_id);
            entry.string("teamName", team_name);
            entry.close();
        }
        refs.push(b']');
        object.string("text", text);
        object.string("to", to);
        object.string("workSyncIntent", work_sync_intent.as_str());
        object.optional_string("workSyncIntentKey", work_sync_intent_key.as_deref());
        if !work_sync_review_request_event_ids.is_empty() {
            let ids = work_sync_review_request_event_ids
                .iter()
                .map(String::as_str);
            object.strings("workSyncReviewRequestEventIds", ids);
        }
        object.close();
        out
    }
}

/// A nudge the planner wants in the outbox.
#[derive(Debug, Clone, PartialEq)]
pub struct PlannedNudge {
    /// `member-work-sync:<team>:<member lc>:<intentKey ?? fp>`.
    pub id: String,
    /// What the member's inbox message will say; its hash tells a changed
    /// nudge from the one already in the outbox.
    pub payload: Arc<NudgePayload>,
    /// `payload.hash()`.
    pub payload_hash: String,
    /// First three `"<displayId> <subject>"`, joined with `; `.
    pub preview: String,
}

impl PlannedNudge {
    /// The same nudge under a recovery intent key (`status-only:<fp>`,
    /// `agenda-sync-still-stuck:...`, `task-protocol-repair:...`): a new id, a
    /// lead line that says why, a new payload hash.
    pub fn keyed(
        &self,
        team: &TeamName,
        member: &MemberName,
        intent_key: &str,
        lead: &str,
    ) -> PlannedNudge {
        let mut payload = NudgePayload::clone(&self.payload);
        payload.work_sync_intent_key = Some(intent_key.to_string());
        payload.text = format!("{lead}\n\n{}", payload.text);
        PlannedNudge {
            id: format!(
                "member-work-sync:{team}:{}:{intent_key}",
                normalize_member_name(member)
            ),
            payload_hash: payload.hash(),
            payload: Arc::new(payload),
            preview: self.preview.clone(),
        }
    }
}

/// True when every item is a clean review pickup.
pub fn is_strict_pickup(agenda: &Agenda) -> bool {
    !agenda.items.is_empty() && agenda.items.iter().all(|item| is_strict_pickup_item(item))
}

/// A clean review pickup item.
pub(super) fn is_strict_pickup_item(item: &ActionableWorkItem) -> bool {
    let e = &item.evidence;
    item.kind == ItemKind::Review
        && e.review_obligation.as_deref() == Some(ReviewObligation::PickupRequired.as_str())
        && e.can_bypass_phase2 == Some(true)
        && e.review_request_event_id
            .as_deref()
            .is_some_and(|id| !id.is_empty())
        && e.review_diagnostics.as_ref().is_none_or(|d| d.is_empty())
}

/// The nudge for a status, if the status is nudgeable at all.
pub fn plan_nudge(status: &MemberStatus) -> Option<PlannedNudge> {
    let would_nudge = status.shadow.as_ref().is_some_and(|s| s.would_nudge);
    if status.state != StatusState::NeedsSync || !would_nudge || status.agenda.items.is_empty() {
        return None;
    }
    let agenda = &status.agenda;
    let task_refs: Vec<TaskRef> = agenda
        .items
        .iter()
        .map(|item| TaskRef {
            team_name: status.team_name.clone(),
            task_id: item.task_id.clone(),
            display_id: display_id(&item.task_id, item.display_id.as_deref()),
        })
        .collect();
    let recovery = status.shadow.as_ref().and_then(|s| s.recovery.as_ref());
    let (intent, intent_key, review_ids, text) = if is_strict_pickup(agenda) {
        let mut ids: Vec<String> = agenda
            .items
            .iter()
            .filter_map(|i| i.evidence.review_request_event_id.clone())
            .collect();
        ids.sort();
        ids.dedup();
        (
            NudgeIntent::ReviewPickup,
            Some(format!("review-pickup:{}", ids.join("+"))),
            ids,
            review_pickup_text(status),
        )
    } else {
        (
            NudgeIntent::AgendaSync,
            recovery.map(|r| r.intent_key.clone()),
            Vec::new(),
            agenda_sync_text(status, recovery),
        )
    };
    let payload = NudgePayload {
        to: status.member_name.clone(),
        text,
        task_refs,
        work_sync_intent: intent,
        work_sync_intent_key: intent_key.clone(),
        work_sync_review_request_event_ids: review_ids,
        agenda_fingerprint: agenda.fingerprint.clone(),
    };
    Some(PlannedNudge {
        id: format!(
            "member-work-sync:{}:{}:{}",
            status.team_name,
            normalize_member_name(&status.member_name),
            intent_key.as_deref().unwrap_or(&agenda.fingerprint)
        ),
        payload_hash: payload.hash(),
        payload: Arc::new(payload),
        preview: agenda_preview(status),
    })
}
