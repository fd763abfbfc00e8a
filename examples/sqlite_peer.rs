//! The addon's store in a process of its own, for the cross-process scripts
//! under `scripts/sqlite-reference/` (load, crash campaign, benchmark):
//!
//!   sqlite_peer run '<spec json>'        a loop of store writes, a JSON line per commit
//!   sqlite_peer hold DB ID MS            BEGIN IMMEDIATE, make ID due, keep the lock MS ms
//!   sqlite_peer hold-back DB ID NOW_MS   ID becomes failed_retryable, due in a year
//!   sqlite_peer dump DB                  integrity_check and the rows the checks read
//!   sqlite_peer seed DB FILE             the schema, then the rows of FILE ({table: [row]})
//!   sqlite_peer dump-team DB TEAMS TEAM  integrity_check, every row, TEAM's replica state
//!   sqlite_peer bench '<spec json>'      status write+read and outbox claim+deliver per second
//!
//! `run` and `bench` take `"store": "sqlite"` with `"db"`, or `"json"` with
//! `"teams"` (a `teams/` folder). `"sqlite"` with `"teams"` too keeps the
//! team files in step (replica, legacy import, purge markers), and `run`
//! then takes `"purgeAtRound"`. Built with
//! `cargo build --profile dev-release --example sqlite_peer`.

#[path = "../tests/sqlite_peer/mod.rs"]
mod sqlite_peer;

use std::io::Write;
use std::path::{Path, PathBuf};
use std::process::ExitCode;
use std::time::Instant;

use serde_json::{json, Value};

use member_work_sync::domain::names::{MemberName, TeamName};
use member_work_sync::domain::nudge::AttemptEnd;
use member_work_sync::domain::time::format_iso;
use sqlite_peer::{dump, dump_team, hold, hold_back, planned, say, seed, status, Spec, Stores};

fn stores(spec: &Value) -> Stores {
    match spec["store"].as_str() {
        Some("json") => Stores::json(
            Path::new(spec["teams"].as_str().expect("spec.teams")),
            spec["now"].as_i64().expect("spec.now"),
        ),
        _ => {
            let db = Path::new(spec["db"].as_str().expect("spec.db"));
            match spec["teams"].as_str() {
                Some(teams) => Stores::sqlite_with_team_files(db, Path::new(teams)),
                None => Stores::sqlite(db),
            }
        }
    }
}

/// Times `n` status write+read pairs and `n` outbox claim+deliver cycles
/// (the `n` items ensured first, untimed) on one team of five members.
fn bench(spec: &Value, out: &mut impl Write) -> Result<(), String> {
    let stores = stores(spec);
    let team = spec["team"].as_str().unwrap_or("bench");
    let now = spec["now"].as_i64().expect("spec.now");
    let n = spec["n"].as_u64().unwrap_or(200);
    let members = ["alice", "bob", "carol", "dave", "erin"];
    let team_name = TeamName::parse(team).map_err(|e| format!("spec.team: {e}"))?;
    let member_names = members.map(|m| MemberName::parse(m).expect("a fixed safe name"));
    let started = Instant::now();
    for i in 0..n {
        let member = members[(i % 5) as usize];
        let member_name = &member_names[(i % 5) as usize];
        let written = status(team, member, &format_iso(now - 3_600_000 + i as i64), i);
        stores
            .status
            .update(&team_name, member_name, Box::new(|_| written.clone()))
            .map_err(|e| format!("status write: {e}"))?;
        stores
            .status
            .read(&team_name, member_name)
            .map_err(|e| format!("status read: {e}"))?;
    }
    let status_secs = started.elapsed().as_secs_f64();
    for i in 0..n {
        let member = members[(i % 5) as usize];
        let id = format!("bench-{i}");
        stores
            .outbox
            .ensure(
                &team_name,
                &member_names[(i % 5) as usize],
                &planned(team, member, &id),
                now,
            )
            .map_err(|e| format!("ensure: {e}"))?;
    }
    let started = Instant::now();
    let mut cycles = 0u64;
    let checked_team =
        member_work_sync::domain::names::TeamName::parse(team).map_err(|e| format!("team: {e}"))?;
    loop {
        let claimed = stores
            .outbox
            .claim_due(&checked_team, "bench", 1, now)
            .map_err(|e| format!("claim: {e}"))?;
        let Some(item) = claimed.items.into_iter().next() else {
            break;
        };
        if !stores
            .outbox
            .finish(&checked_team, &item, &AttemptEnd::Delivered, now)
            .map_err(|e| format!("deliver: {e}"))?
        {
            return Err(format!("claim of {} lost", item.id));
        }
        cycles += 1;
    }
    let outbox_secs = started.elapsed().as_secs_f64();
    if cycles != n {
        return Err(format!("{cycles} of {n} items claimed and delivered"));
    }
    say(
        out,
        json!({"n": n, "statusPerSec": n as f64 / status_secs, "outboxPerSec": n as f64 / outbox_secs}),
    );
    Ok(())
}

fn main() -> ExitCode {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let stdout = std::io::stdout();
    let mut out = stdout.lock();
    let arg = |i: usize| args.get(i).map(String::as_str).unwrap_or_default();
    let result: Result<(), String> = match arg(0) {
        "run" => {
            let spec: Value = serde_json::from_str(arg(1))
                .map_err(|e| e.to_string())
                .unwrap();
            let stores = stores(&spec);
            say(&mut out, json!({"ready": true}));
            let tally = sqlite_peer::run(&stores, &Spec::from_json(&spec), &mut out);
            say(
                &mut out,
                json!({"done": {"rounds": tally.rounds, "statuses": tally.statuses, "ensured": tally.ensured,
                                "claimed": tally.claimed, "delivered": tally.delivered, "lostClaims": tally.lost_claims,
                                "errors": tally.errors, "busy": tally.busy}}),
            );
            Ok(())
        }
        "hold" => hold(
            Path::new(arg(1)),
            arg(2),
            arg(3).parse().unwrap_or(1000),
            &mut out,
        )
        .map_err(|e| e.to_string()),
        "hold-back" => hold_back(Path::new(arg(1)), arg(2), arg(3).parse().unwrap_or(0))
            .map(|_| ())
            .map_err(|e| e.to_string()),
        "dump" => dump(&PathBuf::from(arg(1)))
            .map(|v| say(&mut out, v))
            .map_err(|e| e.to_string()),
        "seed" => std::fs::read_to_string(arg(2))
            .map_err(|e| format!("{}: {e}", arg(2)))
            .and_then(|text| serde_json::from_str::<Value>(&text).map_err(|e| e.to_string()))
            .and_then(|rows| seed(Path::new(arg(1)), &rows)),
        "dump-team" => {
            dump_team(Path::new(arg(1)), Path::new(arg(2)), arg(3)).map(|v| say(&mut out, v))
        }
        "bench" => {
            let spec: Value = serde_json::from_str(arg(1))
                .map_err(|e| e.to_string())
                .unwrap();
            bench(&spec, &mut out)
        }
        other => Err(format!(
            "unknown command {other:?} (run, hold, hold-back, dump, seed, dump-team, bench)"
        )),
    };
    match result {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("sqlite_peer: {e}");
            ExitCode::FAILURE
        }
    }
}
