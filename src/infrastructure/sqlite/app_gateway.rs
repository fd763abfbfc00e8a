//! Gateway mode: the store's ops as calls to the app's own storage gateway
//! (its `MemberWorkSyncStorageGateway`, the worker client the app hands
//! `createMemberWorkSyncFeature` as `internalStorageBackend.gateway`). All
//! SQL then runs in the app's storage worker, the only SQLite copy with the
//! file open: inside Electron the addon must not open `app.db` itself
//!.
//!
//! Rows cross as the app's records (`MemberWorkSync*Record`: camelCase
//! fields, `null` for an absent column), the same values the direct mode
//! writes, so the worker stores what the reference's mappers would give it.
//! How a call reaches JS is the [`GatewayCaller`]'s business (the binding's
//! threadsafe functions); this module knows only method names, argument
//! shapes and answer shapes.

use serde::de::DeserializeOwned;
use serde_json::{json, Value};

use super::error::SqliteStoreError;
use super::gateway::{DbResult, MemberWorkSyncGateway};
use super::records::TeamRecords;
use super::records::{
    EnsureRecordResult, MetricEventRecord, OutboxMark, OutboxRecord, ProcessedIntent,
    ReportIntentRecord, StatusRecord,
};

/// A method of the app's `MemberWorkSyncStorageGateway` (its ports.ts).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub(crate) enum GatewayMethod {
    /// `ping()`: opens the database; answering means a SQLite session.
    Ping,
    /// `statusRead(teamName, memberKey)`.
    StatusRead,
    /// `statusWrite(record, events)`.
    StatusWrite,
    /// `statusList(teamName)`.
    StatusList,
    /// `metricEventsList(teamName)`.
    MetricEventsList,
    /// `reportsAppend(record)`.
    ReportsAppend,
    /// `reportsListPending(teamName)`.
    ReportsListPending,
    /// `reportsMarkProcessed(teamName, id, { status, resultCode, processedAt })`.
    ReportsMarkProcessed,
    /// `outboxEnsurePending({ record, nowIso, nextAttemptAt })`.
    OutboxEnsurePending,
    /// `outboxClaimDue({ teamName, claimedBy, nowIso, limit })`.
    OutboxClaimDue,
    /// `outboxMarkDelivered({ teamName, id, attemptGeneration, ... })`.
    OutboxMarkDelivered,
    /// `outboxMarkSuperseded({ teamName, id, reason, nowIso })`.
    OutboxMarkSuperseded,
    /// `outboxMarkFailed({ teamName, id, attemptGeneration, error, retryable, ... })`.
    OutboxMarkFailed,
    /// `outboxCountRecentDelivered({ teamName, memberKey, sinceIso, workSyncIntentKeyPrefix })`.
    OutboxCountRecentDelivered,
    /// `outboxCountDeliveredForAgenda({ teamName, memberKey, agendaFingerprint, sinceIso })`.
    OutboxCountDeliveredForAgenda,
    /// `outboxFindDeliveredReviewPickupEventIds({ teamName, memberKey, reviewRequestEventIds })`.
    OutboxFindDeliveredReviewPickupEventIds,
    /// `outboxFindRecentRecoveryByIntent({ teamName, memberKey, intentKey, sinceIso })`.
    OutboxFindRecentRecoveryByIntent,
    /// `listTeamSnapshot(teamName)`.
    ListTeamSnapshot,
    /// `importTeam(teamName, snapshot)`.
    ImportTeam,
    /// `recordStoreImport(storeId, teamName, entryCount)`.
    RecordStoreImport,
    /// `hasStoreImport(storeId, teamName)`.
    HasStoreImport,
}

impl GatewayMethod {
    /// Every method, in the order of the app's interface.
    pub(crate) const ALL: [Self; 21] = [
        Self::Ping,
        Self::StatusRead,
        Self::StatusWrite,
        Self::StatusList,
        Self::MetricEventsList,
        Self::ReportsAppend,
        Self::ReportsListPending,
        Self::ReportsMarkProcessed,
        Self::OutboxEnsurePending,
        Self::OutboxClaimDue,
        Self::OutboxMarkDelivered,
        Self::OutboxMarkSuperseded,
        Self::OutboxMarkFailed,
        Self::OutboxCountRecentDelivered,
        Self::OutboxCountDeliveredForAgenda,
        Self::OutboxFindDeliveredReviewPickupEventIds,
        Self::OutboxFindRecentRecoveryByIntent,
        Self::ListTeamSnapshot,
        Self::ImportTeam,
        Self::RecordStoreImport,
        Self::HasStoreImport,
    ];

    /// The JS method name.
    pub(crate) fn name(self) -> &'static str {
        match self {
            Self::Ping => "ping",
            Self::StatusRead => "statusRead",
            Self::StatusWrite => "statusWrite",
            Self::StatusList => "statusList",
            Self::MetricEventsList => "metricEventsList",
            Self::ReportsAppend => "reportsAppend",
            Self::ReportsListPending => "reportsListPending",
            Self::ReportsMarkProcessed => "reportsMarkProcessed",
            Self::OutboxEnsurePending => "outboxEnsurePending",
            Self::OutboxClaimDue => "outboxClaimDue",
            Self::OutboxMarkDelivered => "outboxMarkDelivered",
            Self::OutboxMarkSuperseded => "outboxMarkSuperseded",
            Self::OutboxMarkFailed => "outboxMarkFailed",
            Self::OutboxCountRecentDelivered => "outboxCountRecentDelivered",
            Self::OutboxCountDeliveredForAgenda => "outboxCountDeliveredForAgenda",
            Self::OutboxFindDeliveredReviewPickupEventIds => {
                "outboxFindDeliveredReviewPickupEventIds"
            }
            Self::OutboxFindRecentRecoveryByIntent => "outboxFindRecentRecoveryByIntent",
            Self::ListTeamSnapshot => "listTeamSnapshot",
            Self::ImportTeam => "importTeam",
            Self::RecordStoreImport => "recordStoreImport",
            Self::HasStoreImport => "hasStoreImport",
        }
    }

    /// The worker op the method runs (what errors name, as the app's client does).
    pub(crate) fn op(self) -> &'static str {
        match self {
            Self::Ping => "ping",
            Self::StatusRead => "mws.status.read",
            Self::StatusWrite => "mws.status.write",
            Self::StatusList => "mws.status.list",
            Self::MetricEventsList => "mws.metricEvents.list",
            Self::ReportsAppend => "mws.reports.append",
            Self::ReportsListPending => "mws.reports.listPending",
            Self::ReportsMarkProcessed => "mws.reports.markProcessed",
            Self::OutboxEnsurePending => "mws.outbox.ensurePending",
            Self::OutboxClaimDue => "mws.outbox.claimDue",
            Self::OutboxMarkDelivered => "mws.outbox.markDelivered",
            Self::OutboxMarkSuperseded => "mws.outbox.markSuperseded",
            Self::OutboxMarkFailed => "mws.outbox.markFailed",
            Self::OutboxCountRecentDelivered => "mws.outbox.countRecentDelivered",
            Self::OutboxCountDeliveredForAgenda => "mws.outbox.countDeliveredForAgenda",
            Self::OutboxFindDeliveredReviewPickupEventIds => {
                "mws.outbox.findDeliveredReviewPickupEventIds"
            }
            Self::OutboxFindRecentRecoveryByIntent => "mws.outbox.findRecentRecoveryByIntent",
            Self::ListTeamSnapshot => "mws.snapshot.list",
            Self::ImportTeam => "mws.importTeam",
            Self::RecordStoreImport => "storeImports.record",
            Self::HasStoreImport => "storeImports.has",
        }
    }
}

/// Calls one method of the app's gateway and waits, bounded, for what its
/// promise settles to.
pub(crate) trait GatewayCaller: Send + Sync {
    /// `gateway[method.name()](...args)`: the resolved value (`null` for
    /// `undefined`), or why there is none (thrown, rejected, timed out).
    fn call(&self, method: GatewayMethod, args: Vec<Value>) -> Result<Value, String>;
}

/// The store's gateway over the app's `MemberWorkSyncStorageGateway`.
pub(crate) struct AppGateway<C> {
    caller: C,
}

/// What the app's gateway answers to `outboxEnsurePending`: the outcome
/// (`created` or `existing` with `ok`, `payload_conflict` without), the item
/// as stored and, on a conflict, both payload hashes.
#[derive(serde::Deserialize)]
#[serde(rename_all = "camelCase")]
struct EnsureAnswer {
    ok: bool,
    outcome: String,
    item: OutboxRecord,
    existing_payload_hash: Option<String>,
    requested_payload_hash: Option<String>,
}

impl<C: GatewayCaller> AppGateway<C> {
    /// The gateway calling through `caller`.
    pub(crate) fn new(caller: C) -> Self {
        Self { caller }
    }

    /// Calls `method` and reads its answer as `T`.
    fn ask<T: DeserializeOwned>(&self, method: GatewayMethod, args: Vec<Value>) -> DbResult<T> {
        let failed = |detail: String| SqliteStoreError::Gateway {
            op: method.op(),
            method: method.name(),
            detail,
        };
        let answer = self.caller.call(method, args).map_err(failed)?;
        serde_json::from_value(answer)
            .map_err(|e| failed(format!("answered a value of the wrong shape: {e}")))
    }

    /// Calls a method whose promise settles to nothing worth reading.
    fn tell(&self, method: GatewayMethod, args: Vec<Value>) -> DbResult<()> {
        self.ask::<Value>(method, args).map(drop)
    }
}

impl<C: GatewayCaller> MemberWorkSyncGateway for AppGateway<C> {
    fn status_read(&self, team: &str, member_key: &str) -> DbResult<Option<StatusRecord>> {
        self.ask(
            GatewayMethod::StatusRead,
            vec![json!(team), json!(member_key)],
        )
    }

    fn status_write(&self, record: &StatusRecord, events: &[MetricEventRecord]) -> DbResult<()> {
        self.tell(
            GatewayMethod::StatusWrite,
            vec![json!(record), json!(events)],
        )
    }

    fn status_list(&self, team: &str) -> DbResult<Vec<StatusRecord>> {
        self.ask(GatewayMethod::StatusList, vec![json!(team)])
    }

    fn metric_events_list(&self, team: &str) -> DbResult<Vec<MetricEventRecord>> {
        self.ask(GatewayMethod::MetricEventsList, vec![json!(team)])
    }

    fn metric_events_record(&self, _team: &str, events: &[MetricEventRecord]) -> DbResult<()> {
        // The app writes metric events only inside `statusWrite`; the store
        // sends the events of a status with its write, so nothing is left.
        if events.is_empty() {
            return Ok(());
        }
        Err(SqliteStoreError::Gateway {
            op: "mws.status.write",
            method: "statusWrite",
            detail: "the app's gateway records metric events only with their status".into(),
        })
    }

    fn reports_append(&self, record: &ReportIntentRecord) -> DbResult<()> {
        self.tell(GatewayMethod::ReportsAppend, vec![json!(record)])
    }

    fn reports_list_pending(&self, team: &str) -> DbResult<Vec<ReportIntentRecord>> {
        self.ask(GatewayMethod::ReportsListPending, vec![json!(team)])
    }

    fn reports_mark_processed(
        &self,
        team: &str,
        id: &str,
        result: &ProcessedIntent,
    ) -> DbResult<()> {
        self.tell(
            GatewayMethod::ReportsMarkProcessed,
            vec![
                json!(team),
                json!(id),
                json!({
                    "status": result.status,
                    "resultCode": result.result_code,
                    "processedAt": result.processed_at,
                }),
            ],
        )
    }

    fn outbox_ensure_pending(
        &self,
        record: &OutboxRecord,
        now_iso: &str,
        next_attempt_at: Option<&str>,
    ) -> DbResult<EnsureRecordResult> {
        let method = GatewayMethod::OutboxEnsurePending;
        let answer: EnsureAnswer = self.ask(
            method,
            vec![json!({ "record": record, "nowIso": now_iso, "nextAttemptAt": next_attempt_at })],
        )?;
        let unknown = |outcome: &str| SqliteStoreError::Gateway {
            op: method.op(),
            method: method.name(),
            detail: format!("answered an unknown outcome {outcome:?}"),
        };
        match (answer.ok, answer.outcome.as_str()) {
            (true, "created") => Ok(EnsureRecordResult::Created(answer.item)),
            (true, "existing") => Ok(EnsureRecordResult::Existing(answer.item)),
            (false, "payload_conflict") => Ok(EnsureRecordResult::PayloadConflict {
                existing_payload_hash: answer
                    .existing_payload_hash
                    .unwrap_or_else(|| answer.item.payload_hash.clone()),
                requested_payload_hash: answer
                    .requested_payload_hash
                    .unwrap_or_else(|| record.payload_hash.clone()),
                item: answer.item,
            }),
            (_, outcome) => Err(unknown(outcome)),
        }
    }

    fn outbox_claim_due(
        &self,
        team: &str,
        claimed_by: &str,
        now_iso: &str,
        limit: usize,
    ) -> DbResult<Vec<OutboxRecord>> {
        self.ask(
            GatewayMethod::OutboxClaimDue,
            vec![json!({
                "teamName": team,
                "claimedBy": claimed_by,
                "nowIso": now_iso,
                "limit": limit,
            })],
        )
    }

    /// The app's mark ops answer nothing, and its dispatcher counts the
    /// outcome whether or not the row changed: `true`, as it does.
    fn outbox_mark(
        &self,
        team: &str,
        id: &str,
        mark: &OutboxMark,
        now_iso: &str,
    ) -> DbResult<bool> {
        let (method, input) = match mark {
            OutboxMark::Delivered {
                attempt_generation,
                delivered_message_id,
                delivery_state,
                delivery_diagnostics_json,
            } => (
                GatewayMethod::OutboxMarkDelivered,
                json!({
                    "teamName": team,
                    "id": id,
                    "attemptGeneration": attempt_generation,
                    "deliveredMessageId": delivered_message_id,
                    "deliveryState": delivery_state,
                    "deliveryDiagnosticsJson": delivery_diagnostics_json,
                    "nowIso": now_iso,
                }),
            ),
            OutboxMark::Superseded { reason } => (
                GatewayMethod::OutboxMarkSuperseded,
                json!({ "teamName": team, "id": id, "reason": reason, "nowIso": now_iso }),
            ),
            OutboxMark::Failed {
                attempt_generation,
                error,
                retry_at,
                retryable,
            } => (
                GatewayMethod::OutboxMarkFailed,
                json!({
                    "teamName": team,
                    "id": id,
                    "attemptGeneration": attempt_generation,
                    "error": error,
                    "retryable": retryable,
                    "nextAttemptAt": retry_at,
                    "nowIso": now_iso,
                }),
            ),
        };
        self.tell(method, vec![input]).map(|()| true)
    }

    fn outbox_count_recent_delivered(
        &self,
        team: &str,
        member_key: &str,
        since_iso: &str,
        intent_key_prefix: Option<&str>,
    ) -> DbResult<usize> {
        self.ask(
            GatewayMethod::OutboxCountRecentDelivered,
            vec![json!({
                "teamName": team,
                "memberKey": member_key,
                "sinceIso": since_iso,
                "workSyncIntentKeyPrefix": intent_key_prefix,
            })],
        )
    }

    fn outbox_count_delivered_for_agenda(
        &self,
        team: &str,
        member_key: &str,
        agenda_fingerprint: &str,
        since_iso: Option<&str>,
    ) -> DbResult<usize> {
        self.ask(
            GatewayMethod::OutboxCountDeliveredForAgenda,
            vec![json!({
                "teamName": team,
                "memberKey": member_key,
                "agendaFingerprint": agenda_fingerprint,
                "sinceIso": since_iso,
            })],
        )
    }

    fn outbox_find_delivered_review_pickup_event_ids(
        &self,
        team: &str,
        member_key: &str,
        requested: &[String],
    ) -> DbResult<Vec<String>> {
        self.ask(
            GatewayMethod::OutboxFindDeliveredReviewPickupEventIds,
            vec![json!({
                "teamName": team,
                "memberKey": member_key,
                "reviewRequestEventIds": requested,
            })],
        )
    }

    fn outbox_find_recent_recovery_by_intent(
        &self,
        team: &str,
        member_key: &str,
        intent_key: &str,
        since_iso: &str,
    ) -> DbResult<Option<OutboxRecord>> {
        self.ask(
            GatewayMethod::OutboxFindRecentRecoveryByIntent,
            vec![json!({
                "teamName": team,
                "memberKey": member_key,
                "intentKey": intent_key,
                "sinceIso": since_iso,
            })],
        )
    }

    /// The app has no per-member op: its team snapshot, the rows of exactly
    /// this team and member (as the direct mode selects them, by id).
    fn outbox_member_items(&self, team: &str, member_key: &str) -> DbResult<Vec<OutboxRecord>> {
        let snapshot = self.team_snapshot(team)?;
        let mut items: Vec<OutboxRecord> = snapshot
            .outbox_items
            .into_iter()
            .filter(|r| r.team_name == team && r.member_key == member_key)
            .collect();
        items.sort_by(|a, b| a.id.cmp(&b.id));
        Ok(items)
    }

    /// The app has no op listing teams: its scheduler takes them from
    /// `listLifecycleActiveTeamNames`, which the Electron entry passes on
    /// (without it, gateway mode dispatches only the teams asked for).
    fn outbox_open_teams(&self) -> DbResult<Vec<String>> {
        Ok(Vec::new())
    }

    fn team_snapshot(&self, team: &str) -> DbResult<TeamRecords> {
        self.ask(GatewayMethod::ListTeamSnapshot, vec![json!(team)])
    }

    fn import_team(&self, team: &str, records: &TeamRecords) -> DbResult<()> {
        self.tell(GatewayMethod::ImportTeam, vec![json!(team), json!(records)])
    }

    /// The app's worker stamps `imported_at` with its own clock.
    fn record_store_import(
        &self,
        store_id: &str,
        team: &str,
        entry_count: usize,
        _imported_at: &str,
    ) -> DbResult<()> {
        self.tell(
            GatewayMethod::RecordStoreImport,
            vec![json!(store_id), json!(team), json!(entry_count)],
        )
    }

    fn has_store_import(&self, store_id: &str, team: &str) -> DbResult<bool> {
        self.ask(
            GatewayMethod::HasStoreImport,
            vec![json!(store_id), json!(team)],
        )
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::Mutex;

    /// Answers each call with the next scripted value and keeps the calls.
    #[derive(Default)]
    struct Scripted {
        answers: Mutex<Vec<Result<Value, String>>>,
        calls: Mutex<Vec<(GatewayMethod, Vec<Value>)>>,
    }

    impl GatewayCaller for Scripted {
        fn call(&self, method: GatewayMethod, args: Vec<Value>) -> Result<Value, String> {
            self.calls.lock().unwrap().push((method, args));
            self.answers.lock().unwrap().remove(0)
        }
    }

    fn gateway(answers: Vec<Result<Value, String>>) -> AppGateway<Scripted> {
        AppGateway::new(Scripted {
            answers: Mutex::new(answers),
            ..Scripted::default()
        })
    }

    fn row(id: &str, member_key: &str, team: &str) -> Value {
        json!({
            "teamName": team, "id": id, "memberKey": member_key, "memberName": member_key,
            "agendaFingerprint": "agenda:v1:x", "payloadHash": "h", "status": "pending",
            "attemptGeneration": 0, "claimedBy": null, "claimedAt": null,
            "deliveredMessageId": null, "deliveryState": null, "lastError": null,
            "nextAttemptAt": null, "createdAt": "2026-11-22T10:00:00.000Z",
            "updatedAt": "2026-11-22T10:00:00.000Z", "workSyncIntent": "work_sync",
            "workSyncIntentKey": null, "reviewRequestEventIdsJson": null,
            "deliveryDiagnosticsJson": null, "payloadJson": "{}",
        })
    }

    #[test]
    fn names_and_ops_are_distinct() {
        let names: std::collections::HashSet<_> =
            GatewayMethod::ALL.iter().map(|m| m.name()).collect();
        let ops: std::collections::HashSet<_> = GatewayMethod::ALL.iter().map(|m| m.op()).collect();
        assert_eq!((names.len(), ops.len()), (21, 21));
    }

    #[test]
    fn ensure_answers_read_as_the_apps_outcomes() {
        let record: OutboxRecord = serde_json::from_value(row("a", "jack", "forge")).unwrap();
        // (answer, expected outcome or the error's text)
        let cases: Vec<(Value, Result<&str, &str>)> = vec![
            (
                json!({ "ok": true, "outcome": "created", "item": row("a", "jack", "forge") }),
                Ok("created"),
            ),
            (
                json!({ "ok": true, "outcome": "existing", "item": row("a", "jack", "forge") }),
                Ok("existing"),
            ),
            (
                json!({ "ok": false, "outcome": "payload_conflict", "item": row("a", "jack", "forge"),
                        "existingPayloadHash": "old", "requestedPayloadHash": "new" }),
                Ok("payload_conflict"),
            ),
            (
                json!({ "ok": true, "outcome": "revived", "item": row("a", "jack", "forge") }),
                Err("unknown outcome \"revived\""),
            ),
            (json!({ "ok": true }), Err("wrong shape")),
        ];
        for (answer, expected) in cases {
            let got = gateway(vec![Ok(answer.clone())]).outbox_ensure_pending(
                &record,
                "2026-11-22T10:00:00.000Z",
                None,
            );
            match (got, expected) {
                (Ok(EnsureRecordResult::Created(_)), Ok("created"))
                | (Ok(EnsureRecordResult::Existing(_)), Ok("existing")) => {}
                (
                    Ok(EnsureRecordResult::PayloadConflict {
                        existing_payload_hash,
                        requested_payload_hash,
                        ..
                    }),
                    Ok("payload_conflict"),
                ) => assert_eq!(
                    (
                        existing_payload_hash.as_str(),
                        requested_payload_hash.as_str()
                    ),
                    ("old", "new")
                ),
                (Err(e), Err(text)) => {
                    let message = e.to_string();
                    assert!(message.contains("mws.outbox.ensurePending"), "{message}");
                    assert!(message.contains(text), "{message}");
                }
                (got, expected) => panic!("{answer}: {got:?} vs {expected:?}"),
            }
        }
    }

    #[test]
    fn a_failed_call_names_the_op_and_the_method() {
        let error = gateway(vec![Err("worker exited".into())])
            .status_list("forge")
            .unwrap_err()
            .to_string();
        assert_eq!(
            error,
            "member-work-sync storage gateway: mws.status.list (statusList) failed: worker exited"
        );
    }

    #[test]
    fn member_items_are_the_exact_team_and_member_of_the_snapshot_by_id() {
        let snapshot = json!({
            "statuses": [], "reportIntents": [], "metricEvents": [],
            "outboxItems": [row("b", "jack", "forge"), row("a", "jack", "forge"),
                            row("c", "jill", "forge"), row("d", "jack", "Forge")],
        });
        let gateway = gateway(vec![Ok(snapshot)]);
        let items = gateway.outbox_member_items("forge", "jack").unwrap();
        assert_eq!(
            items.iter().map(|r| r.id.as_str()).collect::<Vec<_>>(),
            ["a", "b"]
        );
        let calls = gateway.caller.calls.lock().unwrap();
        assert_eq!(
            calls[0],
            (GatewayMethod::ListTeamSnapshot, vec![json!("forge")])
        );
    }

    #[test]
    fn marks_send_the_apps_inputs() {
        let gateway = gateway(vec![Ok(Value::Null), Ok(Value::Null)]);
        let failed = OutboxMark::Failed {
            attempt_generation: 2,
            error: "busy".into(),
            retry_at: Some("2026-11-22T10:05:00.000Z".into()),
            retryable: true,
        };
        assert!(gateway.outbox_mark("forge", "x", &failed, "now").unwrap());
        let delivered = OutboxMark::Delivered {
            attempt_generation: 3,
            delivered_message_id: "x".into(),
            delivery_state: None,
            delivery_diagnostics_json: None,
        };
        assert!(gateway
            .outbox_mark("forge", "x", &delivered, "now")
            .unwrap());
        let calls = gateway.caller.calls.lock().unwrap();
        assert_eq!(
            calls[0],
            (
                GatewayMethod::OutboxMarkFailed,
                vec![
                    json!({ "teamName": "forge", "id": "x", "attemptGeneration": 2, "error": "busy",
                             "retryable": true, "nextAttemptAt": "2026-11-22T10:05:00.000Z", "nowIso": "now" })
                ]
            )
        );
        assert_eq!(
            calls[1],
            (
                GatewayMethod::OutboxMarkDelivered,
                vec![
                    json!({ "teamName": "forge", "id": "x", "attemptGeneration": 3, "deliveredMessageId": "x",
                             "deliveryState": null, "deliveryDiagnosticsJson": null, "nowIso": "now" })
                ]
            )
        );
    }
}
