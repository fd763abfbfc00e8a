//! The addon's store as one process of a cross-process run: the ports the
//! use cases call (`SqliteStore` in direct mode, or the JSON store), driven
//! by a loop of status writes, report intents and outbox
//! ensure/claim/deliver cycles, every committed step printed as one JSON
//! line on stdout (the parent's log of what this process claimed and
//! delivered, and what a SIGKILL must not lose).
//!
//! Used by `tests/sqlite_two_process.rs` (re-executed as a child) and by
//! `examples/sqlite_peer.rs` (the load, crash and benchmark scripts under
//! `scripts/sqlite-reference/`). A line is written only after the store
//! call returned, so a line on the pipe is a commit.
#![allow(dead_code)] // each user takes the part it needs

use std::fs::OpenOptions;
use std::io::{BufRead, Write};
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::{Duration, Instant};

use serde_json::{json, Value};

use member_work_sync::application::ports::{
    Clock, IntentStatus, OutboxStore, ReportIntent, ReportIntentStore, StatusStore,
};
use member_work_sync::domain::nudge::{AttemptEnd, NudgePayload, OutboxItem, PlannedNudge};
use member_work_sync::domain::status::MemberStatus;
use member_work_sync::domain::time::{format_iso, EpochMs};
use member_work_sync::infrastructure::clock::ManualClock;
use member_work_sync::infrastructure::outbox_store::FsOutboxStore;
use member_work_sync::infrastructure::sqlite::gateway::MemberWorkSyncGateway;
use member_work_sync::infrastructure::sqlite::snapshot::records_to_domain;
use member_work_sync::infrastructure::sqlite::{DirectDatabase, OpenMode, SqliteStore};
use member_work_sync::infrastructure::status_store::{FsStatusStore, StorePaths};

/// The three stores a peer writes through.
pub struct Stores {
    pub status: Arc<dyn StatusStore>,
    pub outbox: Arc<dyn OutboxStore>,
    /// The JSON store's intents are not reachable from outside the crate
    /// (and not measured): SQLite only.
    pub intents: Option<Arc<dyn ReportIntentStore>>,
    /// The SQLite store itself, for `purge_team`: SQLite only.
    pub sqlite: Option<Arc<SqliteStore>>,
}

impl Stores {
    /// The addon's SQLite store on `db` (direct mode), opened at the first call.
    pub fn sqlite(db: &Path) -> Self {
        Self::over_sqlite(SqliteStore::open_lazily(
            db.to_path_buf(),
            OpenMode::ReadWrite,
        ))
    }

    /// The addon's SQLite store on `db` that also keeps the team files
    /// below `teams_base` in step (the JSON replica, the legacy import,
    /// purge markers), as a read-write instance does.
    pub fn sqlite_with_team_files(db: &Path, teams_base: &Path) -> Self {
        Self::over_sqlite(
            SqliteStore::open_lazily(db.to_path_buf(), OpenMode::ReadWrite)
                .with_team_files(teams_base.to_path_buf()),
        )
    }

    fn over_sqlite(store: SqliteStore) -> Self {
        let rows = Arc::new(store);
        Self {
            status: rows.clone(),
            outbox: rows.clone(),
            intents: Some(rows.clone()),
            sqlite: Some(rows),
        }
    }

    /// The JSON store under `teams_base` (`teams/`), clock at `now`.
    pub fn json(teams_base: &Path, now: EpochMs) -> Self {
        let clock: Arc<dyn Clock> = Arc::new(ManualClock::new(now));
        let paths = StorePaths::new(teams_base.to_path_buf());
        Self {
            status: Arc::new(FsStatusStore::new(paths.clone(), clock.clone())),
            outbox: Arc::new(FsOutboxStore::new(paths, clock)),
            intents: None,
            sqlite: None,
        }
    }
}

/// A status as the reconciler writes one: needs_sync with one item, a
/// would-nudge shadow (so `status_evaluated` and `would_nudge` events).
pub fn status(team: &str, member: &str, evaluated_at: &str, n: u64) -> MemberStatus {
    serde_json::from_value(json!({
        "teamName": team, "memberName": member, "state": "needs_sync",
        "agenda": {"teamName": team, "memberName": member, "generatedAt": evaluated_at,
                   "fingerprint": format!("agenda:v1:{member}-{}", n % 3),
                   "items": [{"taskId": format!("task-{}", n % 4), "displayId": format!("1111111{}", n % 4),
                              "subject": "Ship it", "kind": "work", "assignee": member, "priority": "normal",
                              "reason": "owned_pending_task", "evidence": {"status": "pending", "owner": member}}],
                   "diagnostics": []},
        "shadow": {"reconciledBy": "queue", "wouldNudge": true, "fingerprintChanged": n % 2 == 1},
        "evaluatedAt": evaluated_at, "diagnostics": [],
    }))
    .expect("a status")
}

/// A nudge for `member`, `id` its own.
pub fn planned(team: &str, member: &str, id: &str) -> PlannedNudge {
    let payload: NudgePayload = serde_json::from_value(json!({
        "to": member, "text": "Work sync check: continue the current task or report a blocker.",
        "taskRefs": [{"teamName": team, "taskId": "task-1", "displayId": "11111111"}],
        "workSyncIntent": "agenda_sync", "agendaFingerprint": format!("agenda:v1:{id}"),
    }))
    .expect("a payload");
    PlannedNudge {
        id: id.to_string(),
        payload_hash: payload.hash(),
        payload: std::sync::Arc::new(payload),
        preview: String::new(),
    }
}

/// A pending report intent of `member`.
pub fn intent(team: &str, member: &str, id: &str, recorded_at: &str) -> ReportIntent {
    serde_json::from_value(json!({
        "id": id, "teamName": team, "memberName": member,
        "request": {"teamName": team, "memberName": member, "state": "caught_up", "agendaFingerprint": "agenda:v1:abc"},
        "reason": "control_api_unavailable", "status": "pending", "recordedAt": recorded_at,
    }))
    .expect("an intent")
}

/// True when the error is SQLite's "busy" (a lock not had in time), as
/// the addon would surface it.
pub fn is_busy(error: &dyn std::fmt::Debug) -> bool {
    let text = format!("{error:?}");
    text.contains("DatabaseBusy")
        || text.contains("database is locked")
        || text.contains("SQLITE_BUSY")
}

/// Writes one JSON line to `out` and flushes it (a line on the pipe is a commit).
pub fn say(out: &mut impl Write, line: Value) {
    let _ = writeln!(out, "{line}");
    let _ = out.flush();
}

/// What one loop does (the load run, the crash child, the restart).
pub struct Spec {
    pub team: String,
    /// `claimed_by`, and the prefix of the ids this peer creates.
    pub name: String,
    pub members: Vec<String>,
    /// The outbox clock: fixed, the same in both processes (the app takes a
    /// `claimedAt` in the future for stale, so two clocks apart would both
    /// claim one item legitimately).
    pub now: EpochMs,
    /// Stop after this long, or after `rounds` rounds, whichever first.
    pub run_for: Duration,
    pub rounds: u64,
    /// Items this peer creates per round (0: claims only).
    pub ensure_per_round: u64,
    pub claim_limit: usize,
    /// A status write and read per round.
    pub statuses: bool,
    /// Report intents per round (appended, then every other one marked processed).
    pub intents: bool,
    /// A delivery log standing in for the member inboxes: a claimed item's
    /// message is appended before `markDelivered`, once per id.
    pub inbox: Option<PathBuf>,
    /// Statuses get `evaluatedAt` = now - (rounds left) s, each one new.
    pub first_round: u64,
    /// The round (counted from `first_round`) that begins with
    /// `purge_team` of the team (SQLite with team files only).
    pub purge_at_round: Option<u64>,
}

/// Counters of a loop.
#[derive(Debug, Default, Clone, Copy)]
pub struct Tally {
    pub rounds: u64,
    pub statuses: u64,
    pub ensured: u64,
    pub claimed: u64,
    pub delivered: u64,
    pub lost_claims: u64,
    pub errors: u64,
    pub busy: u64,
}

/// A team name the peer was told to use, checked.
fn checked(team: &str) -> member_work_sync::domain::names::TeamName {
    member_work_sync::domain::names::TeamName::parse(team).unwrap()
}

fn checked_member(member: &str) -> member_work_sync::domain::names::MemberName {
    member_work_sync::domain::names::MemberName::parse(member).unwrap()
}

fn inbox_ids(path: &Path) -> std::collections::BTreeSet<String> {
    let Ok(file) = std::fs::File::open(path) else {
        return Default::default();
    };
    std::io::BufReader::new(file)
        .lines()
        .map_while(Result::ok)
        .filter_map(|l| serde_json::from_str::<Value>(&l).ok())
        .filter_map(|v| v["messageId"].as_str().map(str::to_string))
        .collect()
}

/// One `write` of a whole line: a SIGKILL (not a power cut) keeps what was
/// written, so no fsync, and the kills land in the store's transactions
/// rather than in a disk flush.
fn append_inbox(path: &Path, id: &str, by: &str) -> std::io::Result<()> {
    let mut file = OpenOptions::new().create(true).append(true).open(path)?;
    file.write_all(format!("{}\n", json!({"messageId": id, "by": by})).as_bytes())
}

/// Runs the loop of `spec` on `stores`, a line per commit on `out`.
pub fn run(stores: &Stores, spec: &Spec, out: &mut impl Write) -> Tally {
    let mut tally = Tally::default();
    let started = Instant::now();
    let team = spec.team.as_str();
    let fail = |tally: &mut Tally, out: &mut dyn Write, op: &str, error: &dyn std::fmt::Debug| {
        tally.errors += 1;
        let busy = is_busy(error);
        if busy {
            tally.busy += 1;
        }
        let mut out = out;
        say(
            &mut out,
            json!({"error": op, "busy": busy, "detail": format!("{error:?}")}),
        );
    };
    for round in spec.first_round..spec.first_round + spec.rounds {
        if started.elapsed() >= spec.run_for {
            break;
        }
        tally.rounds += 1;
        if let (Some(at), Some(store)) = (spec.purge_at_round, &stores.sqlite) {
            if round == spec.first_round + at {
                say(out, json!({"purging": team}));
                match store.purge_team(&checked(team), None) {
                    Ok(()) => say(out, json!({"purged": team})),
                    Err(e) => fail(&mut tally, out, "purge", &e),
                }
            }
        }
        let member = spec.members[(round as usize) % spec.members.len()].as_str();
        // A status write (with its metric events) and a read back.
        let evaluated_at = format_iso(spec.now - 3_600_000 + (round as i64 % 3_000_000));
        if spec.statuses {
            let written = status(team, member, &evaluated_at, round);
            match stores.status.update(
                &checked(team),
                &checked_member(member),
                Box::new(|_| written.clone()),
            ) {
                Ok(_) => {
                    tally.statuses += 1;
                    say(out, json!({"status": member, "evaluatedAt": evaluated_at}));
                }
                Err(e) => fail(&mut tally, out, "status", &e),
            }
            if let Err(e) = stores.status.read(&checked(team), &checked_member(member)) {
                fail(&mut tally, out, "status_read", &e);
            }
        }
        if let (true, Some(intents)) = (spec.intents, &stores.intents) {
            let id = format!("{}-intent-{round}", spec.name);
            match intents.record(&intent(team, member, &id, &evaluated_at)) {
                Ok(()) => say(out, json!({"intent": id})),
                Err(e) => fail(&mut tally, out, "intent", &e),
            }
            if round % 2 == 0 {
                let mut done = intent(team, member, &id, &evaluated_at);
                done.status = IntentStatus::Accepted;
                done.processed_at = Some(format_iso(spec.now));
                done.result_code = Some("accepted".into());
                match intents.finish(&done) {
                    Ok(()) => say(out, json!({"processed": id})),
                    Err(e) => fail(&mut tally, out, "processed", &e),
                }
            }
        }
        for k in 0..spec.ensure_per_round {
            let id = format!("{}-{round}-{k}", spec.name);
            match stores.outbox.ensure(
                &checked(team),
                &checked_member(member),
                &planned(team, member, &id),
                spec.now,
            ) {
                Ok(_) => {
                    tally.ensured += 1;
                    say(out, json!({"ensured": id}));
                }
                Err(e) => fail(&mut tally, out, "ensure", &e),
            }
        }
        let claimed: Vec<OutboxItem> =
            match stores
                .outbox
                .claim_due(&checked(team), &spec.name, spec.claim_limit, spec.now)
            {
                Ok(c) => c.items,
                Err(e) => {
                    fail(&mut tally, out, "claim", &e);
                    Vec::new()
                }
            };
        for item in claimed {
            tally.claimed += 1;
            say(
                out,
                json!({"claimed": item.id, "gen": item.attempt_generation}),
            );
            if let Some(inbox) = &spec.inbox {
                if !inbox_ids(inbox).contains(&item.id) {
                    if let Err(e) = append_inbox(inbox, &item.id, &spec.name) {
                        fail(&mut tally, out, "inbox", &e);
                        continue;
                    }
                }
                say(out, json!({"inbox": item.id}));
            }
            match stores
                .outbox
                .finish(&checked(team), &item, &AttemptEnd::Delivered, spec.now)
            {
                Ok(true) => {
                    tally.delivered += 1;
                    say(
                        out,
                        json!({"delivered": item.id, "gen": item.attempt_generation}),
                    );
                }
                Ok(false) => {
                    tally.lost_claims += 1;
                    say(
                        out,
                        json!({"lostClaim": item.id, "gen": item.attempt_generation}),
                    );
                }
                Err(e) => fail(&mut tally, out, "deliver", &e),
            }
        }
    }
    tally
}

impl Spec {
    /// From the JSON the scripts and the test pass (camelCase; defaults:
    /// statuses on, one item per round, claims of 2, no intents, no inbox).
    pub fn from_json(v: &Value) -> Self {
        let text = |k: &str| v[k].as_str().unwrap_or_default().to_string();
        let number = |k: &str, default: u64| v[k].as_u64().unwrap_or(default);
        Self {
            team: text("team"),
            name: text("name"),
            members: v["members"]
                .as_array()
                .map(|a| {
                    a.iter()
                        .filter_map(|m| m.as_str().map(str::to_string))
                        .collect()
                })
                .filter(|m: &Vec<String>| !m.is_empty())
                .unwrap_or_else(|| vec!["alice".into(), "bob".into(), "carol".into()]),
            now: v["now"].as_i64().expect("spec.now"),
            run_for: Duration::from_millis(number("runMs", 3_600_000)),
            rounds: number("rounds", u64::MAX / 4),
            ensure_per_round: number("ensurePerRound", 1),
            claim_limit: number("claimLimit", 2) as usize,
            statuses: v["statuses"].as_bool().unwrap_or(true),
            intents: v["intents"].as_bool().unwrap_or(false),
            inbox: v["inbox"].as_str().map(PathBuf::from),
            first_round: number("firstRound", 0),
            purge_at_round: v["purgeAtRound"].as_u64(),
        }
    }
}

/// Another writer holding the write lock: `BEGIN IMMEDIATE`, makes the
/// item `id` (held back as `failed_retryable` until far in the future)
/// due, says `holding`, keeps the lock `ms`, commits, says `released`.
/// A claim that waited for the lock sees the item; one that read before
/// the commit could not.
pub fn hold(db: &Path, id: &str, ms: u64, out: &mut impl Write) -> rusqlite::Result<()> {
    let connection = rusqlite::Connection::open(db)?;
    connection.busy_timeout(Duration::from_secs(30))?;
    connection.execute_batch("BEGIN IMMEDIATE")?;
    connection.execute(
        "UPDATE member_work_sync_outbox SET next_attempt_at = NULL WHERE id = ?1",
        [id],
    )?;
    say(out, json!({"holding": id}));
    std::thread::sleep(Duration::from_millis(ms));
    connection.execute_batch("COMMIT")?;
    say(out, json!({"released": id}));
    Ok(())
}

/// Holds `id` back: `failed_retryable` due in a year (the setup of [`hold`]).
pub fn hold_back(db: &Path, id: &str, now: EpochMs) -> rusqlite::Result<usize> {
    let connection = rusqlite::Connection::open(db)?;
    connection.busy_timeout(Duration::from_secs(30))?;
    connection.execute(
        "UPDATE member_work_sync_outbox SET status = 'failed_retryable', next_attempt_at = ?2 WHERE id = ?1",
        rusqlite::params![id, format_iso(now + 365 * 86_400_000)],
    )
}

/// The tables of the team-file checks, each with its listing order.
pub const TEAM_TABLES: [(&str, &str); 5] = [
    ("member_work_sync_status", "team_name, member_key"),
    ("member_work_sync_report_intents", "team_name, id"),
    ("member_work_sync_outbox", "team_name, id"),
    ("member_work_sync_metric_events", "team_name, id"),
    ("store_imports", "store_id, team_name"),
];

fn rows_as_json(connection: &rusqlite::Connection, sql: &str) -> rusqlite::Result<Vec<Value>> {
    let mut statement = connection.prepare(sql)?;
    let names: Vec<String> = statement.column_names().map(|s| s.to_string()).collect();
    let rows = statement.query_map([], |row| {
        let mut object = serde_json::Map::new();
        for (i, name) in names.iter().enumerate() {
            let value = match row.get_ref(i)? {
                rusqlite::types::ValueRef::Integer(n) => json!(n),
                rusqlite::types::ValueRef::Text(t) => json!(String::from_utf8_lossy(t)),
                rusqlite::types::ValueRef::Null => Value::Null,
                other => json!(format!("{other:?}")),
            };
            object.insert(name.clone(), value);
        }
        Ok(Value::Object(object))
    })?;
    rows.collect()
}

/// Creates `db` with the app's schema (the store's own migrations) and
/// inserts `rows` (`{table: [{column: value}]}`, as the team-files
/// recording lists a seed).
pub fn seed(db: &Path, rows: &Value) -> Result<(), String> {
    drop(DirectDatabase::open(db, OpenMode::ReadWrite).map_err(|e| e.to_string())?);
    let connection = rusqlite::Connection::open(db).map_err(|e| e.to_string())?;
    for (table, _) in TEAM_TABLES {
        for row in rows[table].as_array().into_iter().flatten() {
            let row = row.as_object().ok_or("a seed row is not an object")?;
            let columns: Vec<&str> = row.keys().map(String::as_str).collect();
            let values: Vec<rusqlite::types::Value> = row
                .values()
                .map(|v| match v {
                    Value::Null => rusqlite::types::Value::Null,
                    Value::Number(n) => rusqlite::types::Value::Integer(n.as_i64().unwrap_or(0)),
                    Value::String(s) => rusqlite::types::Value::Text(s.clone()),
                    other => rusqlite::types::Value::Text(other.to_string()),
                })
                .collect();
            connection
                .execute(
                    &format!(
                        "INSERT INTO {table} ({}) VALUES ({})",
                        columns.join(", "),
                        vec!["?"; columns.len()].join(", ")
                    ),
                    rusqlite::params_from_iter(values),
                )
                .map_err(|e| format!("{table}: {e}"))?;
        }
    }
    Ok(())
}

/// What a team's files and rows are after a kill: `PRAGMA
/// integrity_check`, every row of the five tables, and the replica of
/// `team` below `teams_base`: `absent`, `dirty`, `clean` (with whether its
/// snapshot is exactly the team's rows as the store would publish them),
/// or `unreadable`.
pub fn dump_team(db: &Path, teams_base: &Path, team: &str) -> Result<Value, String> {
    let connection = rusqlite::Connection::open(db).map_err(|e| e.to_string())?;
    connection
        .busy_timeout(Duration::from_secs(30))
        .map_err(|e| e.to_string())?;
    let integrity: Vec<String> = connection
        .prepare("PRAGMA integrity_check")
        .and_then(|mut s| s.query_map([], |r| r.get(0))?.collect())
        .map_err(|e| e.to_string())?;
    let mut rows = serde_json::Map::new();
    for (table, key) in TEAM_TABLES {
        let listed = rows_as_json(
            &connection,
            &format!("SELECT * FROM {table} ORDER BY {key}"),
        )
        .map_err(|e| format!("{table}: {e}"))?;
        rows.insert(table.to_string(), Value::Array(listed));
    }
    let replica_path = teams_base
        .join(team)
        .join(".member-work-sync")
        .join("sqlite-fallback-replica.json");
    let replica = match std::fs::read(&replica_path) {
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => json!({"state": "absent"}),
        Err(e) => json!({"state": "unreadable", "detail": e.to_string()}),
        Ok(bytes) => match serde_json::from_slice::<Value>(&bytes) {
            Err(e) => json!({"state": "unreadable", "detail": e.to_string()}),
            Ok(envelope) if envelope["state"] == "clean" => {
                let database =
                    DirectDatabase::open(db, OpenMode::ReadOnly).map_err(|e| e.to_string())?;
                let records = database.team_snapshot(team).map_err(|e| e.to_string())?;
                let published = records_to_domain(team, &records).map_err(|e| e.detail)?;
                json!({"state": "clean", "equalsRows": envelope["snapshot"] == published})
            }
            Ok(envelope) => json!({"state": envelope["state"].clone()}),
        },
    };
    Ok(json!({"integrity": integrity.join("; "), "rows": rows, "replica": replica}))
}

/// `PRAGMA integrity_check` and the rows the checks read, as JSON.
pub fn dump(db: &Path) -> rusqlite::Result<Value> {
    let connection = rusqlite::Connection::open(db)?;
    connection.busy_timeout(Duration::from_secs(30))?;
    let integrity: Vec<String> = connection
        .prepare("PRAGMA integrity_check")?
        .query_map([], |r| r.get(0))?
        .collect::<Result<_, _>>()?;
    let table = |sql: &str| -> rusqlite::Result<Vec<Value>> {
        let mut statement = connection.prepare(sql)?;
        let names: Vec<String> = statement.column_names().map(|s| s.to_string()).collect();
        let rows = statement.query_map([], |row| {
            let mut object = serde_json::Map::new();
            for (i, name) in names.iter().enumerate() {
                let value = match row.get_ref(i)? {
                    rusqlite::types::ValueRef::Integer(n) => json!(n),
                    rusqlite::types::ValueRef::Text(t) => json!(String::from_utf8_lossy(t)),
                    rusqlite::types::ValueRef::Null => Value::Null,
                    other => json!(format!("{other:?}")),
                };
                object.insert(name.clone(), value);
            }
            Ok(Value::Object(object))
        })?;
        rows.collect()
    };
    Ok(json!({
        "integrity": integrity.join("; "),
        "outbox": table("SELECT id, member_key, status, attempt_generation, claimed_by, delivered_message_id FROM member_work_sync_outbox ORDER BY id")?,
        "statuses": table("SELECT team_name, member_key, evaluated_at, json_extract(status_json, '$.evaluatedAt') AS json_evaluated_at FROM member_work_sync_status ORDER BY member_key")?,
        "events": table("SELECT member_key, kind, recorded_at FROM member_work_sync_metric_events")?,
        "intents": table("SELECT id, status, result_code FROM member_work_sync_report_intents ORDER BY id")?,
    }))
}
