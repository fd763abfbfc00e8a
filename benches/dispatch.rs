//! Nudge dispatch with inbox writes: 1,000 due items across 50 members.
//!
//! Each member owns 20 tasks; the setup plans 20 distinct nudges per member
//! (one per agenda state, by completing tasks one at a time) so 1,000 items are
//! due. A dispatch pass claims 10 per call; the rate limit lets 2 per member
//! through in an hour and backs the rest off, so both paths are measured.
//! Run with `npm run bench`.

use member_work_sync::domain::names::{MemberName, TeamName};
use std::fs;
use std::path::Path;
use std::time::{Duration, Instant};

use criterion::{criterion_group, criterion_main, Criterion};
use member_work_sync::application::queue::Trigger;
use member_work_sync::domain::status::ReconciledBy;
use member_work_sync::runtime::composition::{RootPaths, Services};
use serde_json::json;

const MEMBERS: usize = 50;
const PER_MEMBER: usize = 20;
const NOW: i64 = 1_795_000_000_000;

fn setup(root: &Path) -> Services {
    let team = root.join("teams/forge");
    let tasks = root.join("tasks/forge");
    fs::create_dir_all(&team).unwrap();
    fs::create_dir_all(&tasks).unwrap();
    let roster: Vec<_> = (0..MEMBERS)
        .map(|i| json!({"name": format!("w{i}"), "model": "claude-sonnet-4-5"}))
        .collect();
    fs::write(
        team.join("config.json"),
        json!({"name": "forge", "members": roster}).to_string(),
    )
    .unwrap();
    let services = Services::new(
        RootPaths::resolve(Some(root.to_path_buf()), None, None),
        Some(NOW),
    );
    for member in 0..MEMBERS {
        for n in 0..PER_MEMBER {
            let id = format!("{member}-{n}");
            let task = json!({"id": id, "subject": format!("Task {id}"), "status": "pending", "owner": format!("w{member}")});
            fs::write(tasks.join(format!("{id}.json")), task.to_string()).unwrap();
        }
    }
    // Plan one nudge per agenda state: the outbox is filled directly from the
    // planner's output (readiness gating is not what is measured here).
    let outbox = &services.outbox;
    for member in 0..MEMBERS {
        let name = format!("w{member}");
        for n in 0..PER_MEMBER {
            let status = services
                .reconciler
                .refresh_status(
                    &TeamName::parse("forge").unwrap(),
                    &MemberName::parse(&name).unwrap(),
                    ReconciledBy::Queue,
                    &[Trigger::StartupScan],
                )
                .unwrap();
            let planned = member_work_sync::domain::nudge::plan_nudge(&status).unwrap();
            outbox
                .ensure(
                    &TeamName::parse("forge").unwrap(),
                    &MemberName::parse(&name).unwrap(),
                    &planned,
                    NOW,
                )
                .unwrap();
            let id = format!("{member}-{n}");
            let path = tasks.join(format!("{id}.json"));
            let done = json!({"id": id, "subject": format!("Task {id}"), "status": "completed", "owner": name});
            fs::write(path, done.to_string()).unwrap();
        }
    }
    services
}

fn dispatch(c: &mut Criterion) {
    let mut group = c.benchmark_group("dispatch");
    group.sample_size(10);
    group.bench_function("1000_items_50_members", |b| {
        b.iter_custom(|iterations| {
            let mut total = Duration::ZERO;
            for _ in 0..iterations {
                let dir = tempfile::tempdir().unwrap();
                let services = setup(dir.path());
                let started = Instant::now();
                let mut claimed = 0;
                loop {
                    let summary = services
                        .engine
                        .dispatch_due_nudges(&[TeamName::parse("forge").unwrap()], "bench")
                        .unwrap();
                    if summary.claimed == 0 {
                        break;
                    }
                    claimed += summary.claimed;
                }
                total += started.elapsed();
                assert_eq!(claimed, MEMBERS * PER_MEMBER);
            }
            total
        })
    });
    group.finish();
}

criterion_group!(benches, dispatch);
criterion_main!(benches);
