//! Golden agenda corpus: every agenda of `tests/fixtures/agenda-corpus` must match the
//! reference implementation byte for byte (items and fingerprint).
//!
//! The corpus (its README describes it) holds 120 generated Claude roots with
//! deliberately odd inputs and, per member, the items and fingerprint the
//! reference TypeScript implementation computed from them. The test reads each
//! root through the production reader and builds every agenda with the
//! production index; nothing is written, so the fixtures are read in place.

use std::fs;
use std::path::{Path, PathBuf};

use member_work_sync::application::ports::TeamSource;
use member_work_sync::domain::agenda::TeamIndex;
use member_work_sync::domain::time::format_iso;
use member_work_sync::infrastructure::team_reader::FsTeamSource;
use serde_json::Value;

fn corpus_dir() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/agenda-corpus")
}

/// `kind:taskId:displayId`, the order the corpus lists items in (plain byte
/// order), then the whole item: tasks sharing an id give items with equal keys,
/// which the corpus lists in no defined order. Their real order is pinned by
/// the fingerprint, which hashes the items in the addon's order.
fn corpus_order_key(item: &Value) -> (String, String) {
    let field = |name: &str| item.get(name).and_then(Value::as_str).unwrap_or_default();
    (
        format!(
            "{}:{}:{}",
            field("kind"),
            field("taskId"),
            field("displayId")
        ),
        item.to_string(),
    )
}

/// One agenda that differs from the reference.
struct Mismatch {
    case: String,
    member: String,
    what: String,
}

fn check_case(case_dir: &Path, mismatches: &mut Vec<Mismatch>) -> usize {
    let case = case_dir.file_name().unwrap().to_string_lossy().to_string();
    let expected: Value =
        serde_json::from_slice(&fs::read(case_dir.join("expected.json")).unwrap()).unwrap();
    let now_ms = expected["nowMs"].as_i64().unwrap();
    let claude = case_dir.join("claude");
    let source = FsTeamSource::new(claude.join("teams"), claude.join("tasks"));
    let mut agendas = 0;
    for (team, members) in expected["teams"].as_object().unwrap() {
        let snapshot =
            source.load(&member_work_sync::domain::names::TeamName::parse(team).unwrap());
        let index = TeamIndex::build(&snapshot);
        for (member, want) in members.as_object().unwrap() {
            agendas += 1;
            let member_name = member_work_sync::domain::names::MemberName::parse(member).unwrap();
            let agenda = index.agenda_for(&member_name, &format_iso(now_ms));
            let mut items: Vec<Value> = agenda
                .items
                .iter()
                .map(|item| serde_json::to_value(item).unwrap())
                .collect();
            items.sort_by_cached_key(corpus_order_key);
            let mut want_items = want["items"].as_array().unwrap().clone();
            want_items.sort_by_cached_key(corpus_order_key);
            let mut problems = Vec::new();
            if items != want_items {
                problems.push(format!(
                    "items differ\n  got:  {}\n  want: {}",
                    Value::Array(items),
                    Value::Array(want_items)
                ));
            }
            // `null`: the reference gives a deleted team's agenda no fingerprint.
            if let Some(fingerprint) = want["fingerprint"].as_str() {
                if agenda.fingerprint != fingerprint {
                    problems.push(format!(
                        "fingerprint differs: got {}, want {fingerprint}",
                        agenda.fingerprint
                    ));
                }
            }
            if !problems.is_empty() {
                mismatches.push(Mismatch {
                    case: case.clone(),
                    member: member.clone(),
                    what: problems.join("\n  "),
                });
            }
        }
    }
    agendas
}

#[test]
fn every_corpus_agenda_matches_the_reference() {
    let mut cases: Vec<PathBuf> = fs::read_dir(corpus_dir())
        .unwrap()
        .map(|e| e.unwrap().path())
        .filter(|p| p.join("expected.json").is_file())
        .collect();
    cases.sort();
    assert_eq!(cases.len(), 120, "the corpus has 120 cases");
    let mut mismatches = Vec::new();
    let agendas: usize = cases
        .iter()
        .map(|case| check_case(case, &mut mismatches))
        .sum();
    assert_eq!(agendas, 830, "the corpus has 830 agendas");
    let failed_cases: std::collections::BTreeSet<&str> =
        mismatches.iter().map(|m| m.case.as_str()).collect();
    let report: Vec<String> = mismatches
        .iter()
        .take(20)
        .map(|m| format!("{} {}:\n  {}", m.case, m.member, m.what))
        .collect();
    assert!(
        mismatches.is_empty(),
        "{} of {agendas} agendas ({} of {} cases) differ from the reference; first ones:\n{}",
        mismatches.len(),
        failed_cases.len(),
        cases.len(),
        report.join("\n")
    );
}
