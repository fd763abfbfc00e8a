//! A JSON session's hydration from the replica (the app's JSON
//! store's `restoreReplicaSnapshot`): the last clean replica (canonical)
//! merged with the team's live JSON (incoming) by the domain rules
//! (`mergeDomainSnapshots`), then written back as the v2 per-member
//! files and the three team indexes. Live JSON a previous JSON session
//! wrote is merged, not overwritten, so an older replica rolls nothing back.
//!
//! The domain merge differs from the record merge ([`super::merge`]) in two
//! rules: an intent is processed whenever it is not pending, and a tie of
//! two processed intents goes to incoming; metric events are not capped by
//! the merge (the restore keeps the last 200 by time, then id).
//!
//! The files lie under the Claude root: written atomically through
//! [`TrustedRoot`] (no link followed), as the JSON stores write them.

use std::collections::HashMap;
use std::io;
use std::path::{Path, PathBuf};

use serde_json::{json, Map, Value};

use super::js_json;
use super::legacy_json::{
    compare_iso, member_of, pick_domain_intent, pick_domain_outbox, str_of, LegacyFileError,
    LegacyFiles, LegacySnapshot,
};
use crate::domain::js_semantics::{js_trim, locale_compare};
use crate::domain::names::{member_key, normalize_member_name};
use crate::domain::time::format_iso;
use crate::infrastructure::json_store::MAX_STORE_FILE_BYTES;
use crate::infrastructure::safe_fs::{FileRead, TrustedRoot};

/// Metric events the restored metrics index keeps (the newest by time, then id).
const RESTORED_METRIC_EVENTS: usize = 200;
/// A `member.meta.json` larger than this is rewritten unread.
const MAX_MEMBER_META_BYTES: u64 = 64 * 1024;

/// A restore that failed.
#[derive(Debug, thiserror::Error)]
pub enum RestoreError {
    /// The live JSON could not be read.
    #[error(transparent)]
    Live(#[from] LegacyFileError),
    /// A file could not be written.
    #[error("member-work-sync replica restore: cannot write {path}: {source}")]
    Write {
        /// The JSON store file being written.
        path: PathBuf,
        /// What the file system said.
        source: io::Error,
    },
}

/// A team's rows in the domain form, as the merge produces them.
#[derive(Debug, Clone, Default, PartialEq)]
struct DomainRows {
    /// Member statuses, merged by member.
    pub statuses: Vec<Value>,
    /// Report intents, merged by id.
    pub report_intents: Vec<Value>,
    /// Outbox items, merged by id.
    pub outbox_items: Vec<Value>,
    /// Metric events, merged by id.
    pub metric_events: Vec<Value>,
}

fn rows(snapshot: &Value, field: &str) -> Vec<Value> {
    snapshot
        .get(field)
        .and_then(Value::as_array)
        .cloned()
        .unwrap_or_default()
}

fn id_of(row: &Value) -> String {
    str_of(row, "id").unwrap_or_default().to_string()
}

/// The later evaluation; a tie goes to incoming.
fn pick_domain_status(canonical: Value, incoming: Value) -> Value {
    if compare_iso(
        str_of(&incoming, "evaluatedAt"),
        str_of(&canonical, "evaluatedAt"),
    )
    .is_ge()
    {
        incoming
    } else {
        canonical
    }
}

/// Rows folded by identity, canonical first, sorted by identity
/// (`localeCompare`).
fn merge_rows(
    canonical: Vec<Value>,
    incoming: Vec<Value>,
    identity: fn(&Value) -> String,
    pick: fn(Value, Value) -> Value,
) -> Vec<Value> {
    let mut merged: Vec<(String, Value)> = Vec::new();
    let mut index: HashMap<String, usize> = HashMap::new();
    for (row, from_incoming) in canonical
        .into_iter()
        .map(|r| (r, false))
        .chain(incoming.into_iter().map(|r| (r, true)))
    {
        let key = identity(&row);
        match index.get(&key) {
            // Canonical duplicates replace (a `Map.set`); incoming ones pick.
            Some(&at) if from_incoming => {
                let current = std::mem::take(&mut merged[at].1);
                merged[at].1 = pick(current, row);
            }
            Some(&at) => merged[at].1 = row,
            None => {
                index.insert(key.clone(), merged.len());
                merged.push((key, row));
            }
        }
    }
    merged.sort_by(|a, b| locale_compare(&a.0, &b.0));
    merged.into_iter().map(|(_, row)| row).collect()
}

/// `replica` (canonical, a domain snapshot already under the routing team)
/// merged with the live JSON (`mergeDomainSnapshots`); without live JSON,
/// the replica's rows as they are.
fn merge_domain_snapshots(replica: &Value, live: Option<&LegacySnapshot>) -> DomainRows {
    let (statuses, intents, outbox, events) = (
        rows(replica, "statuses"),
        rows(replica, "reportIntents"),
        rows(replica, "outboxItems"),
        rows(replica, "metricEvents"),
    );
    let Some(live) = live else {
        return DomainRows {
            statuses,
            report_intents: intents,
            outbox_items: outbox,
            metric_events: events,
        };
    };
    DomainRows {
        statuses: merge_rows(
            statuses,
            live.statuses.clone(),
            member_of,
            pick_domain_status,
        ),
        report_intents: merge_rows(
            intents,
            live.report_intents.clone(),
            id_of,
            pick_domain_intent,
        ),
        outbox_items: merge_rows(outbox, live.outbox_items.clone(), id_of, pick_domain_outbox),
        metric_events: merge_rows(events, live.metric_events.clone(), id_of, |_, next| next),
    }
}

/// The events the restored index keeps: sorted by `recordedAt`, then id
/// (both compared as strings, `localeCompare`), the last
/// [`RESTORED_METRIC_EVENTS`].
fn newest_events(events: &[Value]) -> Vec<Value> {
    let mut events = events.to_vec();
    events.sort_by(|a, b| {
        let (left, right) = (
            str_of(a, "recordedAt").unwrap_or_default(),
            str_of(b, "recordedAt").unwrap_or_default(),
        );
        match left == right {
            true => locale_compare(&id_of(a), &id_of(b)),
            false => locale_compare(left, right),
        }
    });
    let excess = events.len().saturating_sub(RESTORED_METRIC_EVENTS);
    events.drain(..excess);
    events
}

/// Rows grouped by member key, groups in order of first appearance.
fn group_by_member(rows: &[Value]) -> Vec<Vec<&Value>> {
    let mut groups: Vec<Vec<&Value>> = Vec::new();
    let mut index: HashMap<String, usize> = HashMap::new();
    for row in rows {
        let key = member_of(row);
        match index.get(&key) {
            Some(&at) => groups[at].push(row),
            None => {
                index.insert(key, groups.len());
                groups.push(vec![row]);
            }
        }
    }
    groups
}

/// Copies `field` of `row` into `out` when it is truthy (a non-empty string).
fn put_present(out: &mut Map<String, Value>, row: &Value, field: &str, to: &str) {
    if let Some(value) = row.get(field).filter(|v| match v {
        Value::String(s) => !s.is_empty(),
        Value::Null | Value::Bool(false) => false,
        _ => true,
    }) {
        out.insert(to.into(), value.clone());
    }
}

fn field(row: &Value, name: &str) -> Value {
    row.get(name).cloned().unwrap_or(Value::Null)
}

/// Writes the team's files from a clean replica merged with its live JSON.
pub(crate) struct Restore<'a> {
    /// The teams folder.
    pub root: &'a TrustedRoot,
    /// The live JSON reader.
    pub files: &'a LegacyFiles,
    /// The wall clock (quarantine names, `member.meta.json`'s `updatedAt`).
    pub now_ms: i64,
}

impl Restore<'_> {
    fn write(&self, path: &Path, value: &Value) -> Result<(), RestoreError> {
        let error = |source| RestoreError::Write {
            path: path.to_path_buf(),
            source,
        };
        let mut text = js_json::stringify_pretty(value).map_err(|e| error(io::Error::other(e)))?;
        text.push('\n');
        if text.len() as u64 > MAX_STORE_FILE_BYTES {
            return Err(error(io::Error::new(
                io::ErrorKind::InvalidData,
                format!("{} bytes is more than a store file may hold", text.len()),
            )));
        }
        self.root.write_atomic(path, text.as_bytes()).map_err(error)
    }

    fn member_dir(&self, team: &str, member: &str) -> PathBuf {
        self.root
            .join(team)
            .join("members")
            .join(member_key(js_trim(member)))
    }

    fn member_file(&self, team: &str, member: &str, name: &str) -> PathBuf {
        self.member_dir(team, member)
            .join(".member-work-sync")
            .join(name)
    }

    fn index(&self, team: &str, name: &str) -> PathBuf {
        self.root
            .join(team)
            .join(".member-work-sync")
            .join("indexes")
            .join(name)
    }

    /// `member.meta.json` naming the member, unless a valid one already does
    /// (`ensureMemberMeta`: version 1, this name and key, an `updatedAt`).
    fn ensure_member_meta(&self, team: &str, member: &str) -> Result<(), RestoreError> {
        let name = js_trim(member);
        let key = member_key(name);
        let path = self.member_dir(team, member).join("member.meta.json");
        if let Ok(FileRead::Bytes(bytes)) = self.root.read(&path, MAX_MEMBER_META_BYTES) {
            if let Ok(meta) = serde_json::from_slice::<Value>(&bytes) {
                let current = meta.get("schemaVersion").and_then(Value::as_f64) == Some(1.0)
                    && str_of(&meta, "memberName") == Some(name)
                    && str_of(&meta, "memberKey") == Some(&key)
                    && str_of(&meta, "updatedAt").is_some();
                if current {
                    return Ok(());
                }
            }
        }
        let meta = json!({
            "schemaVersion": 1,
            "memberName": name,
            "memberKey": key,
            "updatedAt": format_iso(self.now_ms),
        });
        self.write(&path, &meta)
    }

    /// Hydrates `team`'s live JSON from `replica` (a clean replica snapshot
    /// already under `team`): merged with the live files, written back as
    /// member status, reports and outbox files and the metrics, pending
    /// reports and outbox indexes. Nothing is deleted: live files the merge
    /// does not rewrite (the v1 team files) stay as they are.
    pub(crate) fn run(&self, team: &str, replica: &Value) -> Result<(), RestoreError> {
        let live = self.files.read_active(team, self.now_ms)?;
        let merged = merge_domain_snapshots(replica, live.as_ref());

        let mut members = Map::new();
        for status in &merged.statuses {
            let member = str_of(status, "memberName").unwrap_or_default();
            self.ensure_member_meta(team, member)?;
            let file = json!({ "schemaVersion": 2, "status": status });
            self.write(&self.member_file(team, member, "status.json"), &file)?;
            let agenda = status.get("agenda");
            let mut summary = Map::new();
            summary.insert("memberName".into(), field(status, "memberName"));
            summary.insert("state".into(), field(status, "state"));
            summary.insert(
                "agendaFingerprint".into(),
                agenda
                    .and_then(|a| a.get("fingerprint"))
                    .cloned()
                    .unwrap_or(Value::Null),
            );
            summary.insert(
                "actionableCount".into(),
                Value::from(
                    agenda
                        .and_then(|a| a.get("items"))
                        .and_then(Value::as_array)
                        .map_or(0, Vec::len),
                ),
            );
            summary.insert("evaluatedAt".into(), field(status, "evaluatedAt"));
            put_present(&mut summary, status, "providerId", "providerId");
            members.insert(normalize_member_name(member), Value::Object(summary));
        }
        let metrics = json!({
            "schemaVersion": 2,
            "members": members,
            "recentEvents": newest_events(&merged.metric_events),
        });
        self.write(&self.index(team, "metrics.json"), &metrics)?;

        let mut report_index = Map::new();
        for group in group_by_member(&merged.report_intents) {
            let member = str_of(group[0], "memberName").unwrap_or_default();
            let key = normalize_member_name(member);
            let mut intents = Map::new();
            for intent in group {
                intents.insert(id_of(intent), intent.clone());
                let mut entry = Map::new();
                entry.insert("memberKey".into(), Value::from(key.clone()));
                entry.insert("memberName".into(), field(intent, "memberName"));
                entry.insert("status".into(), field(intent, "status"));
                entry.insert("recordedAt".into(), field(intent, "recordedAt"));
                put_present(&mut entry, intent, "processedAt", "processedAt");
                report_index.insert(id_of(intent), Value::Object(entry));
            }
            self.ensure_member_meta(team, member)?;
            let file = json!({ "schemaVersion": 2, "intents": intents });
            self.write(&self.member_file(team, member, "reports.json"), &file)?;
        }
        let file = json!({ "schemaVersion": 2, "items": report_index });
        self.write(&self.index(team, "pending-reports-index.json"), &file)?;

        let mut outbox_index = Map::new();
        for group in group_by_member(&merged.outbox_items) {
            let member = str_of(group[0], "memberName").unwrap_or_default();
            let key = normalize_member_name(member);
            let mut items = Map::new();
            for item in group {
                items.insert(id_of(item), item.clone());
                let mut entry = Map::new();
                entry.insert("memberKey".into(), Value::from(key.clone()));
                entry.insert("memberName".into(), field(item, "memberName"));
                entry.insert("status".into(), field(item, "status"));
                put_present(&mut entry, item, "nextAttemptAt", "nextAttemptAt");
                entry.insert("updatedAt".into(), field(item, "updatedAt"));
                entry.insert("createdAt".into(), field(item, "createdAt"));
                outbox_index.insert(id_of(item), Value::Object(entry));
            }
            self.ensure_member_meta(team, member)?;
            let file = json!({ "schemaVersion": 2, "items": items });
            self.write(&self.member_file(team, member, "outbox.json"), &file)?;
        }
        let file = json!({ "schemaVersion": 2, "items": outbox_index });
        self.write(&self.index(team, "outbox-index.json"), &file)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn live(rows: DomainRows) -> LegacySnapshot {
        LegacySnapshot {
            statuses: rows.statuses,
            report_intents: rows.report_intents,
            outbox_items: rows.outbox_items,
            metric_events: rows.metric_events,
            files_to_archive: Vec::new(),
        }
    }

    fn snapshot(rows: &DomainRows) -> Value {
        json!({
            "statuses": rows.statuses,
            "reportIntents": rows.report_intents,
            "outboxItems": rows.outbox_items,
            "metricEvents": rows.metric_events,
            "filesToArchive": [],
        })
    }

    fn status(member: &str, at: &str, state: &str) -> Value {
        json!({"memberName": member, "evaluatedAt": at, "state": state})
    }

    fn intent(id: &str, status: &str, recorded: &str, processed: Option<&str>) -> Value {
        let mut row =
            json!({"id": id, "memberName": "bob", "status": status, "recordedAt": recorded});
        if let Some(at) = processed {
            row["processedAt"] = json!(at);
        }
        row
    }

    fn item(id: &str, status: &str, generation: u64, updated: &str) -> Value {
        json!({"id": id, "memberName": "bob", "status": status, "attemptGeneration": generation, "updatedAt": updated})
    }

    const T1: &str = "2026-07-07T10:01:00.000Z";
    const T2: &str = "2026-07-07T10:02:00.000Z";

    /// The domain rules (`mergeDomainSnapshots`), one row pair per rule:
    /// (what, replica row, live row, which wins).
    #[test]
    fn the_domain_merge_picks_as_the_app_does() {
        enum Side {
            Replica,
            Live,
        }
        let cases: Vec<(&str, &str, Value, Value, Side)> = vec![
            (
                "status: later wins",
                "statuses",
                status("bob", T2, "blocked"),
                status("bob", T1, "caught_up"),
                Side::Replica,
            ),
            (
                "status: a tie goes to live",
                "statuses",
                status("bob", T1, "blocked"),
                status("Bob ", T1, "caught_up"),
                Side::Live,
            ),
            (
                "status: a valid time beats an invalid one",
                "statuses",
                status("bob", T1, "blocked"),
                status("bob", "never", "caught_up"),
                Side::Replica,
            ),
            (
                "status: two invalid times tie",
                "statuses",
                status("bob", "x", "blocked"),
                status("bob", "y", "caught_up"),
                Side::Live,
            ),
            (
                "intent: processed beats pending",
                "reportIntents",
                intent("i1", "rejected", T1, Some(T1)),
                intent("i1", "pending", T2, None),
                Side::Replica,
            ),
            (
                "intent: two processed, a tie goes to live",
                "reportIntents",
                intent("i1", "accepted", T1, Some(T2)),
                intent("i1", "rejected", T1, Some(T2)),
                Side::Live,
            ),
            (
                "intent: two processed, the later wins",
                "reportIntents",
                intent("i1", "accepted", T1, Some(T2)),
                intent("i1", "rejected", T1, Some(T1)),
                Side::Replica,
            ),
            (
                "intent: two pending, the later record wins",
                "reportIntents",
                intent("i1", "pending", T2, None),
                intent("i1", "pending", T1, None),
                Side::Replica,
            ),
            (
                "outbox: delivered beats generation 99",
                "outboxItems",
                item("o1", "delivered", 1, T1),
                item("o1", "pending", 99, T2),
                Side::Replica,
            ),
            (
                "outbox: failed_terminal beats claimed",
                "outboxItems",
                item("o1", "claimed", 5, T2),
                item("o1", "failed_terminal", 1, T1),
                Side::Live,
            ),
            (
                "outbox: then the higher generation",
                "outboxItems",
                item("o1", "claimed", 3, T1),
                item("o1", "pending", 2, T2),
                Side::Replica,
            ),
            (
                "outbox: then the later or equal update",
                "outboxItems",
                item("o1", "pending", 2, T1),
                item("o1", "superseded", 2, T1),
                Side::Live,
            ),
            (
                "event: live replaces",
                "metricEvents",
                json!({"id": "e1", "kind": "would_nudge"}),
                json!({"id": "e1", "kind": "status_evaluated"}),
                Side::Live,
            ),
        ];
        for (what, field, replica_row, live_row, winner) in cases {
            let mut replica = DomainRows::default();
            let mut incoming = DomainRows::default();
            let (r, l) = match field {
                "statuses" => (&mut replica.statuses, &mut incoming.statuses),
                "reportIntents" => (&mut replica.report_intents, &mut incoming.report_intents),
                "outboxItems" => (&mut replica.outbox_items, &mut incoming.outbox_items),
                _ => (&mut replica.metric_events, &mut incoming.metric_events),
            };
            r.push(replica_row.clone());
            l.push(live_row.clone());
            let merged = merge_domain_snapshots(&snapshot(&replica), Some(&live(incoming)));
            let got = match field {
                "statuses" => merged.statuses,
                "reportIntents" => merged.report_intents,
                "outboxItems" => merged.outbox_items,
                _ => merged.metric_events,
            };
            let want = match winner {
                Side::Replica => replica_row,
                Side::Live => live_row,
            };
            assert_eq!(got, vec![want], "{what}");
        }
    }

    #[test]
    fn the_merge_sorts_by_identity_and_without_live_json_keeps_the_replica_order() {
        let replica = DomainRows {
            report_intents: vec![
                intent("b", "pending", T1, None),
                intent("a", "pending", T1, None),
            ],
            ..DomainRows::default()
        };
        let ids =
            |rows: &DomainRows| -> Vec<String> { rows.report_intents.iter().map(id_of).collect() };
        let alone = merge_domain_snapshots(&snapshot(&replica), None);
        assert_eq!(ids(&alone), ["b", "a"]);
        let merged =
            merge_domain_snapshots(&snapshot(&replica), Some(&live(DomainRows::default())));
        assert_eq!(ids(&merged), ["a", "b"]);
    }

    /// The restored index keeps the 200 newest events by (recordedAt, id),
    /// compared as strings.
    #[test]
    fn the_restored_index_keeps_the_200_newest_events() {
        let event = |id: String, at: String| json!({"id": id, "recordedAt": at});
        let mut events: Vec<Value> = (0..250)
            .rev()
            .map(|i| {
                event(
                    format!("ev-{i:03}"),
                    format!("2026-07-07T10:{:02}:00.000Z", i / 10),
                )
            })
            .collect();
        // Same time as ev-249: ordered by id.
        events.push(event("ev-248b".into(), "2026-07-07T10:24:00.000Z".into()));
        let kept = newest_events(&events);
        assert_eq!(kept.len(), RESTORED_METRIC_EVENTS);
        let ids: Vec<String> = kept.iter().map(id_of).collect();
        assert_eq!(ids.first().map(String::as_str), Some("ev-051"));
        assert_eq!(&ids[ids.len() - 3..], ["ev-248", "ev-248b", "ev-249"]);
    }
}
