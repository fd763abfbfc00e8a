//! Full-team agenda + fingerprint passes, in memory and from disk; one
//! member's agenda from a kept task index after a one-task change; the board
//! read and a one-member reconcile after a one-task change, cold (a fresh
//! reader: what every read cost before the task cache) and warm, in one run.
//!
//! Run with `npm run bench` (or `cargo bench --bench agenda`).

use std::cell::RefCell;
use std::path::Path;
use std::time::{Duration, Instant};

use criterion::{criterion_group, criterion_main, BenchmarkId, Criterion};
use member_work_sync::application::ports::TeamSource;
use member_work_sync::application::queue::Trigger;
use member_work_sync::domain::agenda::{TaskIndex, TeamIndex};
use member_work_sync::domain::names::{MemberName, TeamName};
use member_work_sync::domain::status::{MemberStatus, ReconciledBy};
use member_work_sync::domain::team::{
    Clarification, HistoryEvent, ReviewState, Task, TaskStatus, TeamMember, TeamSnapshot,
};
use member_work_sync::domain::time::parse_iso;
use member_work_sync::infrastructure::team_reader::FsTeamSource;
use member_work_sync::runtime::composition::{RootPaths, Services};

const NOW: &str = "2026-11-22T10:00:00.000Z";

fn member_name(i: usize) -> String {
    if i == 0 {
        "team-lead".to_string()
    } else {
        format!("member-{i}")
    }
}

/// A board with every agenda rule represented: pending, in-progress, reviews,
/// needsFix, lead clarifications, waiting and broken dependencies, done work.
fn synthetic_team(members: usize, tasks: usize) -> TeamSnapshot {
    let roster = (0..members)
        .map(|i| TeamMember {
            name: member_name(i),
            agent_type: (i == 0).then(|| "team-lead".to_string()),
            model: Some("claude-sonnet-4-5".into()),
            ..TeamMember::default()
        })
        .collect();
    let tasks = (0..tasks)
        .map(|i| {
            let owner = member_name(1 + i % (members - 1).max(1));
            let reviewer = member_name(1 + (i + 1) % (members - 1).max(1));
            let status = match i % 5 {
                0 => TaskStatus::Pending,
                1 => TaskStatus::InProgress,
                _ => TaskStatus::Completed,
            };
            let history = match i % 5 {
                2 => vec![HistoryEvent {
                    id: format!("r{i}"),
                    timestamp: "2026-11-20T09:00:00Z".into(),
                    at_ms: parse_iso("2026-11-20T09:00:00Z"),
                    kind: "review_requested".into(),
                    from: None,
                    to: Some("review".into()),
                    reviewer: Some(reviewer),
                    actor: Some(owner.clone()),
                }],
                _ => vec![],
            };
            Task {
                id: i.to_string(),
                display_id: format!("#{i}"),
                subject: format!("Task number {i}"),
                status,
                owner: Some(owner),
                blocked_by: match i % 7 {
                    3 => vec![(i - 1).to_string()],
                    5 => vec!["missing".to_string()],
                    _ => vec![],
                },
                blocks: vec![],
                needs_clarification: (i % 11 == 4).then_some(Clarification::Lead),
                review_state: if i % 5 == 3 {
                    ReviewState::NeedsFix
                } else {
                    ReviewState::None
                },
                history,
            }
        })
        .map(std::sync::Arc::new)
        .collect::<Vec<_>>();
    TeamSnapshot {
        config_found: true,
        members: roster,
        tasks: std::sync::Arc::new(tasks),
        ..TeamSnapshot::empty(TeamName::parse("bench").unwrap())
    }
}

fn full_pass(snapshot: &TeamSnapshot) -> usize {
    let index = TeamIndex::build(snapshot);
    snapshot
        .members
        .iter()
        .map(|m| {
            index
                .agenda_for(&MemberName::parse(&m.name).unwrap(), NOW)
                .items
                .len()
        })
        .sum()
}

fn in_memory(c: &mut Criterion) {
    let mut group = c.benchmark_group("agenda_full_team_in_memory");
    for (members, tasks) in [(5, 100), (20, 1_000), (50, 10_000)] {
        let snapshot = synthetic_team(members, tasks);
        assert!(full_pass(&snapshot) > 0);
        group.bench_with_input(
            BenchmarkId::from_parameter(format!("{members}x{tasks}")),
            &snapshot,
            |b, s| b.iter(|| full_pass(s)),
        );
    }
    group.finish();
    // The kept index after one task changed: what a warm reconcile pays
    // instead of a full build.
    let mut snapshot = synthetic_team(50, 10_000);
    let mut kept = TaskIndex::default();
    kept.refresh(&snapshot.tasks, &snapshot.kanban);
    let variants = [snapshot.tasks[0].clone(), {
        let mut task = (*snapshot.tasks[0]).clone();
        task.subject.push_str(" (edited)");
        std::sync::Arc::new(task)
    }];
    let mut round = 0;
    c.bench_function("task_index_refresh_one_task_50x10000", |b| {
        b.iter(|| {
            round += 1;
            std::sync::Arc::make_mut(&mut snapshot.tasks)[0] = variants[round % 2].clone();
            let index = TeamIndex::cached(&snapshot, &mut kept);
            index
                .agenda_for(&MemberName::parse("member-1").unwrap(), NOW)
                .items
                .len()
        })
    });
}

fn write_team_to_disk(root: &Path, snapshot: &TeamSnapshot) {
    let team_dir = root.join("teams").join(snapshot.team_name.as_str());
    let task_dir = root.join("tasks").join(snapshot.team_name.as_str());
    std::fs::create_dir_all(&team_dir).unwrap();
    std::fs::create_dir_all(&task_dir).unwrap();
    let members: Vec<_> = snapshot
        .members
        .iter()
        .map(|m| serde_json::json!({"name": m.name, "agentType": m.agent_type, "model": m.model}))
        .collect();
    let config = serde_json::json!({"name": snapshot.team_name, "members": members});
    std::fs::write(team_dir.join("config.json"), config.to_string()).unwrap();
    for task in snapshot.tasks.iter() {
        let history: Vec<_> = task
            .history
            .iter()
            .map(|e| serde_json::json!({"id": e.id, "timestamp": e.timestamp, "type": e.kind, "to": e.to, "reviewer": e.reviewer, "actor": e.actor}))
            .collect();
        let json = serde_json::json!({
            "id": task.id, "displayId": task.display_id, "subject": task.subject,
            "status": task.status.as_str(), "owner": task.owner, "blockedBy": task.blocked_by,
            "needsClarification": task.needs_clarification.map(|c| c.as_str()),
            "reviewState": task.review_state.as_str(), "historyEvents": history,
        });
        std::fs::write(task_dir.join(format!("{}.json", task.id)), json.to_string()).unwrap();
    }
}

fn from_disk(c: &mut Criterion) {
    let root = tempfile::tempdir().unwrap();
    write_team_to_disk(root.path(), &synthetic_team(20, 1_000));
    let services = Services::new(
        RootPaths::resolve(Some(root.path().to_path_buf()), None, None),
        None,
    );
    let mut group = c.benchmark_group("refresh_team_from_disk");
    group.sample_size(20);
    let team = TeamName::parse("bench").unwrap();
    group.bench_function("20x1000", |b| {
        b.iter(|| services.reconciler.refresh_team(&team).unwrap().len())
    });
    group.finish();
}

/// Rewrites task 0 with a new subject of the same length: the one-task
/// change a board event announces.
fn change_one_task(root: &Path, round: u64) {
    let path = root.join("tasks/bench/0.json");
    let text = std::fs::read_to_string(&path).unwrap();
    let subject = format!("Task number {:01}", round % 10);
    let start = text.find("Task number ").unwrap();
    let text = format!(
        "{}{subject}{}",
        &text[..start],
        &text[start + subject.len()..]
    );
    std::fs::write(&path, text).unwrap();
}

fn one_task_change(c: &mut Criterion) {
    let root = tempfile::tempdir().unwrap();
    write_team_to_disk(root.path(), &synthetic_team(50, 10_000));
    let paths = || RootPaths::resolve(Some(root.path().to_path_buf()), None, None);
    let mut round = 0u64;
    let mut group = c.benchmark_group("board_after_one_task_change_50x10000");
    group.sample_size(10);
    group.bench_function("board_read_cold", |b| {
        b.iter(|| {
            round += 1;
            change_one_task(root.path(), round);
            let source = FsTeamSource::new(root.path().join("teams"), root.path().join("tasks"));
            source.load(&TeamName::parse("bench").unwrap()).tasks.len()
        })
    });
    let source = FsTeamSource::new(root.path().join("teams"), root.path().join("tasks"));
    source.load(&TeamName::parse("bench").unwrap());
    group.bench_function("board_read_warm", |b| {
        b.iter(|| {
            round += 1;
            change_one_task(root.path(), round);
            source.load(&TeamName::parse("bench").unwrap()).tasks.len()
        })
    });
    group.bench_function("reconcile_member_cold", |b| {
        b.iter(|| {
            round += 1;
            change_one_task(root.path(), round);
            reconcile_member_1(&Services::new(paths(), None))
        })
    });
    let services = Services::new(paths(), None);
    reconcile_member_1(&services);
    group.bench_function("reconcile_member_warm", |b| {
        b.iter(|| {
            round += 1;
            change_one_task(root.path(), round);
            reconcile_member_1(&services)
        })
    });
    group.finish();
}

/// The floor of a cold agenda: every task file of the folder listed, read
/// and parsed by serde into a JSON value, in name order, and nothing else.
fn read_and_parse_floor(task_dir: &Path) -> usize {
    let mut names: Vec<_> = std::fs::read_dir(task_dir)
        .unwrap()
        .map(|e| e.unwrap().file_name())
        .filter(|n| n.to_str().is_some_and(|n| n.ends_with(".json")))
        .collect();
    names.sort();
    names
        .iter()
        .map(|name| {
            let bytes = std::fs::read(task_dir.join(name)).unwrap();
            serde_json::from_slice::<serde_json::Value>(&bytes)
                .unwrap()
                .as_object()
                .map_or(0, serde_json::Map::len)
        })
        .sum()
}

/// One member's agenda from disk with nothing kept: a fresh reader loads
/// the board (config, kanban, every task file), the index is built and the
/// agenda computed.
fn agenda_from_disk_cold(root: &Path) -> usize {
    let source = FsTeamSource::new(root.join("teams"), root.join("tasks"));
    let snapshot = source.load(&TeamName::parse("bench").unwrap());
    TeamIndex::build(&snapshot)
        .agenda_for(&MemberName::parse("member-1").unwrap(), NOW)
        .items
        .len()
}

/// Wall-clock and process CPU time of one call.
#[derive(Debug, Clone, Copy)]
struct Cost {
    wall: Duration,
    cpu: Option<Duration>,
}

/// Runs `work` once and what it cost.
fn cost_of(work: impl FnOnce() -> usize) -> Cost {
    let cpu_before = process_cpu_time();
    let started = Instant::now();
    std::hint::black_box(work());
    let wall = started.elapsed();
    let cpu = process_cpu_time()
        .zip(cpu_before)
        .map(|(after, before)| after.saturating_sub(before));
    Cost { wall, cpu }
}

/// CPU time of the whole process (every thread), where the platform says.
#[cfg(unix)]
fn process_cpu_time() -> Option<Duration> {
    let mut now = libc::timespec {
        tv_sec: 0,
        tv_nsec: 0,
    };
    // SAFETY: `now` is a valid timespec for the call to fill.
    let failed = unsafe { libc::clock_gettime(libc::CLOCK_PROCESS_CPUTIME_ID, &mut now) } != 0;
    (!failed).then(|| Duration::new(now.tv_sec as u64, now.tv_nsec as u32))
}

#[cfg(not(unix))]
fn process_cpu_time() -> Option<Duration> {
    None
}

/// One floor and one cold agenda, run back to back.
#[derive(Debug, Clone, Copy)]
struct Pair {
    floor: Cost,
    agenda: Cost,
}

/// Runs the floor and the cold agenda once each, the floor first or
/// second as `floor_first` says.
fn run_pair(root: &Path, floor_first: bool) -> Pair {
    let task_dir = root.join("tasks/bench");
    let floor = || cost_of(|| read_and_parse_floor(&task_dir));
    let agenda = || cost_of(|| agenda_from_disk_cold(root));
    if floor_first {
        let floor = floor();
        Pair {
            floor,
            agenda: agenda(),
        }
    } else {
        let agenda = agenda();
        Pair {
            floor: floor(),
            agenda,
        }
    }
}

/// The value below which `fraction` of `sorted` lies (nearest rank).
fn percentile(sorted: &[f64], fraction: f64) -> f64 {
    let rank = ((sorted.len() - 1) as f64 * fraction).round() as usize;
    sorted[rank]
}

/// `median [p10 – p90]` of `values`.
fn spread(mut values: Vec<f64>) -> String {
    values.sort_by(f64::total_cmp);
    format!(
        "{:.3} [p10 {:.3} – p90 {:.3}]",
        percentile(&values, 0.5),
        percentile(&values, 0.1),
        percentile(&values, 0.9)
    )
}

/// Prints the per-pair ratios of `pairs`, wall clock and CPU time.
fn report_pairs(pairs: &[Pair]) {
    if pairs.is_empty() {
        return;
    }
    let ms = |d: Duration| d.as_secs_f64() * 1e3;
    let wall_floor = pairs.iter().map(|p| ms(p.floor.wall)).collect();
    let wall_agenda = pairs.iter().map(|p| ms(p.agenda.wall)).collect();
    let wall_ratio = pairs
        .iter()
        .map(|p| ms(p.agenda.wall) / ms(p.floor.wall))
        .collect();
    println!(
        "agenda_from_disk_cold_50x10000: {} alternated pairs (floor first in every other pair)",
        pairs.len()
    );
    println!("  wall ms  floor  {}", spread(wall_floor));
    println!("  wall ms  agenda {}", spread(wall_agenda));
    println!("  agenda/floor per pair, wall {}", spread(wall_ratio));
    let cpu: Option<Vec<(f64, f64)>> = pairs
        .iter()
        .map(|p| Some((ms(p.floor.cpu?), ms(p.agenda.cpu?))))
        .collect();
    if let Some(cpu) = cpu {
        println!(
            "  cpu ms   floor  {}",
            spread(cpu.iter().map(|c| c.0).collect())
        );
        println!(
            "  cpu ms   agenda {}",
            spread(cpu.iter().map(|c| c.1).collect())
        );
        println!(
            "  agenda/floor per pair, cpu  {}",
            spread(cpu.iter().map(|c| c.1 / c.0).collect())
        );
    }
}

/// A cold agenda against its floor (the same files read and parsed by
/// serde alone): `npm run bench -- agenda_from_disk`.
///
/// The two run in alternated pairs (the floor first in every other pair)
/// and the figure is the median of the per-pair ratios: a pair is a
/// fraction of a second, so load from other processes, CPU frequency and
/// the page cache are nearly the same for both halves, where two criterion
/// blocks of several seconds each let a change of load between them move
/// the ratio by itself. Criterion times the agenda half of each pair; the
/// ratios, the floor and process CPU time are printed after it.
fn cold_agenda_against_floor(c: &mut Criterion) {
    let root = tempfile::tempdir().unwrap();
    write_team_to_disk(root.path(), &synthetic_team(50, 10_000));
    assert!(agenda_from_disk_cold(root.path()) > 0);
    let pairs = RefCell::new(Vec::<Pair>::new());
    let mut group = c.benchmark_group("agenda_from_disk_cold_50x10000");
    // About 55 pairs of a quarter second each after the warm-up.
    group
        .sample_size(10)
        .measurement_time(Duration::from_secs(15));
    group.bench_function("agenda_paired_with_floor", |b| {
        b.iter_custom(|iters| {
            let mut agenda = Duration::ZERO;
            for _ in 0..iters {
                let floor_first = pairs.borrow().len().is_multiple_of(2);
                let pair = run_pair(root.path(), floor_first);
                agenda += pair.agenda.wall;
                pairs.borrow_mut().push(pair);
            }
            agenda
        })
    });
    group.finish();
    report_pairs(&pairs.borrow());
}

/// One requested reconcile of `member-1` after a task change.
fn reconcile_member_1(services: &Services) -> MemberStatus {
    services
        .reconciler
        .refresh_status(
            &TeamName::parse("bench").unwrap(),
            &MemberName::parse("member-1").unwrap(),
            ReconciledBy::Request,
            &[Trigger::TaskChanged],
        )
        .unwrap()
}

criterion_group!(
    benches,
    in_memory,
    from_disk,
    one_task_change,
    cold_agenda_against_floor
);
criterion_main!(benches);
