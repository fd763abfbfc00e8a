//! Finds the team member behind a native Codex CLI session (a Stop payload
//! with `session_id` and `transcript_path`, no team or member):
//!
//! 1. a member whose `runtimeSessionId` in `<team>/launch-state.json` is the
//!    session (as for Claude; one distinct member, else ambiguous), looked up
//!    in an incremental [`LaunchIndex`] over every team folder;
//! 2. else the session log the payload names: only when it lies lexically
//!    below the configured Codex sessions root (`<CODEX_HOME>/sessions`,
//!    without `.`/`..`), is a regular file reached without following a link,
//!    is named `rollout-…-<session>.jsonl` and its `session_meta` line is
//!    that session. Its first lines give the cwd and the team and member the
//!    app's launch prompt names (`domain::turn_settled::codex_log`);
//!    that team must be an active team here and the member one of its known
//!    members. The cwd alone never attributes a session (every member of a
//!    team may share it).
//!
//! Any other session matches nobody. Reads are bounded (a capped head of the
//! log, capped JSON files) and go through [`safe_fs`](super::safe_fs).

use std::collections::HashSet;
use std::path::{Path, PathBuf};

use super::launch_index::LaunchIndex;
use super::safe_fs::TrustedRoot;
use super::transcripts::{active_teams_named, known_members, read_head};
use crate::application::turn_settled::{ClaudeMatch, CodexSessionLocator};
use crate::domain::turn_settled::codex_log::codex_session_head;

/// File-backed [`CodexSessionLocator`].
pub struct FsCodexSessionLocator {
    teams: TrustedRoot,
    sessions: TrustedRoot,
    launched: LaunchIndex,
}

impl FsCodexSessionLocator {
    /// A locator over `<teamsBase>` and `<CODEX_HOME>/sessions`.
    pub fn new(teams_base: PathBuf, sessions_dir: PathBuf) -> Self {
        let teams = TrustedRoot::new(teams_base);
        Self {
            launched: LaunchIndex::new(teams.clone()),
            teams,
            sessions: TrustedRoot::new(sessions_dir),
        }
    }

    /// The team and member the session log at `path` names, when the log
    /// is one this locator may read and belongs to `session_id`.
    fn member_in_session_log(&self, session_id: &str, path: &str) -> ClaudeMatch {
        let Some(log) = self.sessions.entry_below(Path::new(path)) else {
            return ClaudeMatch::NoMatch;
        };
        let (Some(parent), Some(name)) = (log.parent(), log.file_name().and_then(|n| n.to_str()))
        else {
            return ClaudeMatch::NoMatch;
        };
        let named_for_session = name.starts_with("rollout-")
            && name
                .strip_suffix(".jsonl")
                .and_then(|stem| stem.strip_suffix(session_id))
                .is_some_and(|rest| rest.ends_with('-'));
        if !named_for_session {
            return ClaudeMatch::NoMatch;
        }
        let Some(dir) = self.sessions.open_dir(parent).ok().flatten() else {
            return ClaudeMatch::NoMatch;
        };
        let head = codex_session_head(&read_head(&dir, name));
        if head.session_id.as_deref() != Some(session_id) {
            return ClaudeMatch::NoMatch;
        }
        let Some((team, member)) = head.launch else {
            return ClaudeMatch::NoMatch;
        };
        let team_lc = team.to_lowercase();
        let member_lc = member.to_lowercase();
        let found: HashSet<(String, String)> = active_teams_named(&self.teams, &team_lc)
            .into_iter()
            .filter(|(_, dir, config)| known_members(dir, config).contains(&member_lc))
            .map(|(name, _, _)| (name, member_lc.clone()))
            .collect();
        single(found)
    }
}

/// One distinct (team, member) → a match; several → ambiguous.
fn single(found: HashSet<(String, String)>) -> ClaudeMatch {
    match found.len() {
        0 => ClaudeMatch::NoMatch,
        1 => {
            let (team_name, member_name) = found.into_iter().next().unwrap_or_default();
            ClaudeMatch::Member {
                team_name,
                member_name,
            }
        }
        _ => ClaudeMatch::Ambiguous,
    }
}

impl CodexSessionLocator for FsCodexSessionLocator {
    fn locate(&self, session_id: &str, transcript_path: Option<&str>) -> ClaudeMatch {
        let launched = self.launched.launched(session_id);
        if !launched.is_empty() {
            return single(launched);
        }
        transcript_path.map_or(ClaudeMatch::NoMatch, |path| {
            self.member_in_session_log(session_id, path)
        })
    }
}

#[cfg(test)]
mod tests;
