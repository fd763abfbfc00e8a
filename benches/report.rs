//! Report tokens (issue + verify) and `report()` end to end on a 20-member team.
//!
//! Run with `npm run bench`.

use criterion::{criterion_group, criterion_main, Criterion};
use member_work_sync::application::ports::ReportTokens;
use member_work_sync::application::queue::Trigger;
use member_work_sync::domain::names::{MemberName, TeamName};
use member_work_sync::domain::status::ReconciledBy;
use member_work_sync::infrastructure::report_token::HmacReportTokens;
use member_work_sync::runtime::composition::{RootPaths, Services};
use serde_json::json;

fn tokens(c: &mut Criterion) {
    let dir = tempfile::tempdir().unwrap();
    let tokens = HmacReportTokens::new(dir.path().to_path_buf());
    let fp = format!("agenda:v1:{}", "a".repeat(64));
    let (team, member) = (
        TeamName::parse("forge").unwrap(),
        MemberName::parse("jack").unwrap(),
    );
    let token = tokens.issue(&team, &member, &fp, i64::MAX / 2).unwrap();
    c.bench_function("token_issue", |b| {
        b.iter(|| tokens.issue(&team, &member, &fp, 1_000).unwrap())
    });
    c.bench_function("token_verify", |b| {
        b.iter(|| tokens.verify(Some(&token), &team, &member, &fp, 0).unwrap())
    });
}

fn write_team(root: &std::path::Path, members: usize, tasks: usize) {
    let team = root.join("teams/forge");
    let task_dir = root.join("tasks/forge");
    std::fs::create_dir_all(&team).unwrap();
    std::fs::create_dir_all(&task_dir).unwrap();
    let roster: Vec<_> = (0..members)
        .map(|i| {
            if i == 0 {
                json!({"name": "team-lead", "agentType": "team-lead"})
            } else {
                json!({"name": format!("m{i}")})
            }
        })
        .collect();
    std::fs::write(
        team.join("config.json"),
        json!({"name": "forge", "members": roster}).to_string(),
    )
    .unwrap();
    for i in 0..tasks {
        let owner = format!("m{}", 1 + i % (members - 1));
        let status = if i % 2 == 0 { "pending" } else { "in_progress" };
        let task = json!({"id": i.to_string(), "subject": format!("Task {i}"), "status": status, "owner": owner});
        std::fs::write(task_dir.join(format!("{i}.json")), task.to_string()).unwrap();
    }
}

fn report_end_to_end(c: &mut Criterion) {
    let dir = tempfile::tempdir().unwrap();
    write_team(dir.path(), 20, 1_000);
    let services = Services::new(
        RootPaths::resolve(Some(dir.path().to_path_buf()), None, None),
        None,
    );
    let status = services
        .reconciler
        .refresh_status(
            &TeamName::parse("forge").unwrap(),
            &MemberName::parse("m1").unwrap(),
            ReconciledBy::Request,
            &[Trigger::ManualRefresh],
        )
        .unwrap();
    let request = json!({
        "teamName": "forge", "memberName": "m1", "state": "still_working",
        "agendaFingerprint": status.agenda.fingerprint, "reportToken": status.report_token,
    });
    let mut group = c.benchmark_group("report_end_to_end");
    group.sample_size(30);
    group.bench_function("20x1000", |b| {
        b.iter(|| assert!(services.reconciler.report(&request).unwrap().accepted))
    });
    group.finish();
}

criterion_group!(benches, tokens, report_end_to_end);
criterion_main!(benches);
