//! The project folders under `<claudeRoot>/projects/` that can hold a team's
//! transcripts (bounded scans), and the head lines of a transcript.

use std::collections::HashSet;
use std::io::{BufRead, BufReader, Read};

use serde_json::Value;

use crate::domain::turn_settled::transcript::{encode_project_dir, ProjectDirName, HEAD_LINES};
use crate::infrastructure::safe_fs::{Dir, FileKind};
use crate::infrastructure::team_config::TeamConfig;

use super::team_files::{is_plain_name, subfolder};
use super::MAX_HEAD_BYTES;

/// Project folders scanned for a team's lead session when none of the
/// folders its config names holds one.
const MAX_SCANNED_PROJECT_FOLDERS: usize = 2048;
/// Lead sessions looked for in each scanned folder (`leadSessionId`, then
/// `sessionHistory` newest first).
const MAX_SCANNED_SESSIONS: usize = 8;

/// The plain folder names right below the projects root, sorted (links and
/// files are left out when the listing says so; opening refuses them anyway).
pub(super) fn project_folders(projects: &Dir) -> Vec<String> {
    let Ok(entries) = projects.entries() else {
        return vec![];
    };
    let mut names: Vec<String> = entries
        .into_iter()
        .filter(|e| matches!(e.kind, Some(FileKind::Dir) | None))
        .map(|e| e.name)
        .filter(|name| is_plain_name(name))
        .collect();
    names.sort();
    names
}

/// The project folders whose transcripts may belong to a team: those its
/// project paths encode to, and,
/// when none of them holds one of the team's lead sessions, every folder
/// that does (a project that moved, or a path spelled in a way not derived
/// here).
pub(super) fn team_project_dirs(
    projects: &Dir,
    folders: &[String],
    config: &TeamConfig,
) -> Vec<String> {
    let listed: HashSet<&str> = folders.iter().map(String::as_str).collect();
    let mut dirs: Vec<String> = Vec::new();
    let mut push = |folder: &String| {
        if !dirs.contains(folder) {
            dirs.push(folder.clone());
        }
    };
    for project in &config.project_paths {
        for name in encode_project_dir(project) {
            match &name {
                ProjectDirName::Exact(exact) => {
                    if listed.contains(exact.as_str()) {
                        push(exact);
                    }
                }
                ProjectDirName::Hashed { .. } => {
                    folders
                        .iter()
                        .filter(|f| name.matches(f))
                        .for_each(&mut push);
                }
            }
        }
    }
    let sessions: Vec<String> = ordered_team_sessions(config)
        .into_iter()
        .map(|session| format!("{session}.jsonl"))
        .filter(|file| is_plain_name(file))
        .collect();
    let holds_session = |folder: &str| {
        subfolder(projects, folder).is_some_and(|dir| {
            sessions.iter().any(|file| {
                dir.meta(file)
                    .ok()
                    .flatten()
                    .is_some_and(|m| m.kind == FileKind::File)
            })
        })
    };
    if sessions.is_empty() || dirs.iter().any(|d| holds_session(d)) {
        return dirs;
    }
    for folder in folders.iter().take(MAX_SCANNED_PROJECT_FOLDERS) {
        if !dirs.contains(folder) && holds_session(folder) {
            dirs.push(folder.clone());
        }
    }
    dirs
}

/// The first [`HEAD_LINES`] non-empty lines of the regular file `name` in
/// `dir` that parse as JSON, from at most [`MAX_HEAD_BYTES`].
pub(crate) fn read_head(dir: &Dir, name: &str) -> Vec<Value> {
    let Ok(Some(file)) = dir.open_file(name) else {
        return vec![];
    };
    let reader = BufReader::with_capacity(64 * 1024, file.take(MAX_HEAD_BYTES));
    reader
        .split(b'\n')
        .map_while(Result::ok)
        .filter(|line| line.iter().any(|b| !b.is_ascii_whitespace()))
        .take(HEAD_LINES)
        .filter_map(|line| serde_json::from_slice(&line).ok())
        .collect()
}

/// A team's lead sessions in rank order: `leadSessionId`, then
/// `sessionHistory` newest first, without repeats.
fn ordered_team_sessions(config: &TeamConfig) -> Vec<String> {
    let history = config.session_history.iter().rev().map(String::as_str);
    let mut out: Vec<String> = Vec::new();
    for session in config.lead_session_id.as_deref().into_iter().chain(history) {
        if !out.iter().any(|s| s == session) {
            out.push(session.to_string());
        }
        if out.len() >= MAX_SCANNED_SESSIONS {
            break;
        }
    }
    out
}
