//! [`InboxSink`] over [`InboxWriter`]: the outbox id is the inbox
//! `messageId`, so a retried write finds its own row.

use std::time::SystemTime;

use super::{with_control_url_line, DeliveryOutcome, InboxWriter, NudgeRow, NudgeTaskRef};
use crate::application::host::{ControlUrl, Host};
use crate::application::ports::{InboxFailure, InboxOutcome, InboxSink};
use crate::domain::names::{MemberName, TeamName};
use crate::domain::nudge::OutboxItem;
use crate::domain::time::{format_iso, EpochMs};
use crate::infrastructure::clock::epoch_ms;

impl InboxSink for InboxWriter {
    fn deliver(
        &self,
        team: &TeamName,
        member: &MemberName,
        item: &OutboxItem,
        now: EpochMs,
    ) -> Result<InboxOutcome, InboxFailure> {
        let mut row = row_of(item, now);
        let resolved = match self.host.as_deref().map(Host::control_url) {
            None | Some(ControlUrl::NotResolved) => self.control_url.clone(),
            Some(ControlUrl::Url(url)) => Some(url),
            // The app's sink requires the URL once it has a resolver: the
            // delivery fails retryably and waits for the next attempt.
            Some(ControlUrl::Unavailable(why)) => {
                return Err(InboxFailure {
                    retryable: true,
                    reason: format!("member work sync control URL unavailable: {why}"),
                })
            }
        };
        if let Some(url) = &resolved {
            row.text = with_control_url_line(&row.text, url);
        }
        // The lock file carries wall-clock time (other processes judge its age),
        // even when the app runs on a test clock; the row keeps the app time.
        let wall_ms = epoch_ms(SystemTime::now()).unwrap_or(now);
        match InboxWriter::deliver(self, team, member, &row, wall_ms) {
            Ok(DeliveryOutcome::Inserted) => Ok(InboxOutcome::Inserted),
            Ok(DeliveryOutcome::AlreadyPresent) => Ok(InboxOutcome::AlreadyPresent),
            Ok(DeliveryOutcome::PayloadConflict { .. }) => Ok(InboxOutcome::PayloadConflict),
            Err(e) => Err(InboxFailure {
                retryable: e.is_retryable(),
                reason: e.to_string(),
            }),
        }
    }
}

/// The inbox row of an outbox item dispatched at `now`.
fn row_of(item: &OutboxItem, now: EpochMs) -> NudgeRow {
    let payload = &item.payload;
    NudgeRow {
        to: payload.to.clone(),
        text: payload.text.clone(),
        timestamp: format_iso(now),
        task_refs: payload
            .task_refs
            .iter()
            .map(|r| NudgeTaskRef {
                team_name: r.team_name.clone(),
                task_id: r.task_id.clone(),
                display_id: r.display_id.clone(),
            })
            .collect(),
        message_id: item.id.clone(),
        work_sync_intent: payload.work_sync_intent.as_str().into(),
        work_sync_intent_key: payload.work_sync_intent_key.clone(),
        work_sync_review_request_event_ids: payload.work_sync_review_request_event_ids.clone(),
        work_sync_payload_hash: item.payload_hash.clone(),
    }
}
