//! Attribution of Claude transcripts to team members:
//! project dir names, and which member a transcript head belongs to.
//! Pure functions over already-parsed JSON lines.

use crate::domain::js_semantics::{is_js_whitespace, js_trim};
use std::collections::HashSet;

use serde_json::Value;

/// Lines of a transcript head that attribution looks at.
pub(crate) const HEAD_LINES: usize = 50;

/// Longest project folder name Claude writes as is; a longer one is cut here
/// and gets a `-<hash>` suffix (Claude Code's `sanitizePath`).
const MAX_PROJECT_DIR_CHARS: usize = 200;

/// A folder name under `<claudeRoot>/projects/` that may hold a project's transcripts.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum ProjectDirName {
    /// Exactly this name.
    Exact(String),
    /// A path whose name is over [`MAX_PROJECT_DIR_CHARS`]: `<prefix>-<hash>`,
    /// the hash in base 36. Claude on Node hashes the path's UTF-16 units
    /// with the 32-bit `h * 31 + unit` string hash (absolute value); the
    /// Bun-built binary uses `Bun.hash` (64-bit wyhash). Either suffix matches.
    Hashed {
        /// The first [`MAX_PROJECT_DIR_CHARS`] characters of the encoded path.
        prefix: String,
    },
}

impl ProjectDirName {
    /// True when the folder `name` is this one.
    pub(crate) fn matches(&self, name: &str) -> bool {
        match self {
            ProjectDirName::Exact(exact) => exact == name,
            ProjectDirName::Hashed { prefix } => name
                .strip_prefix(prefix.as_str())
                .and_then(|rest| rest.strip_prefix('-'))
                .is_some_and(|hash| {
                    !hash.is_empty()
                        && hash
                            .bytes()
                            .all(|b| b.is_ascii_digit() || b.is_ascii_lowercase())
                }),
        }
    }
}

/// The folder names Claude may have used for a project path, most likely
/// first: Claude's own (every UTF-16 unit that is not an ASCII letter or
/// digit becomes `-`: `/Users/jane.doe/my app` → `-Users-jane.doe-my-app`
/// with the dot too, cut with a hash suffix over [`MAX_PROJECT_DIR_CHARS`]),
/// then the app's older spelling (only `/` and `\` replaced, a leading `-`,
/// `C:\x` → `C--x`) and its `_` → `-` variant. Trailing separators are ignored.
pub(crate) fn encode_project_dir(project_path: &str) -> Vec<ProjectDirName> {
    let trimmed = js_trim(project_path).trim_end_matches(['/', '\\']);
    if trimmed.is_empty() {
        return vec![];
    }
    let mut claude = String::with_capacity(trimmed.len());
    for c in trimmed.chars() {
        if c.is_ascii_alphanumeric() {
            claude.push(c);
        } else {
            // JavaScript replaces each UTF-16 unit: a char beyond the BMP is two.
            claude.extend(std::iter::repeat_n('-', c.len_utf16()));
        }
    }
    let mut names = vec![if claude.len() <= MAX_PROJECT_DIR_CHARS {
        ProjectDirName::Exact(claude)
    } else {
        claude.truncate(MAX_PROJECT_DIR_CHARS);
        ProjectDirName::Hashed { prefix: claude }
    }];
    let mut legacy: String = trimmed
        .chars()
        .map(|c| if matches!(c, '/' | '\\') { '-' } else { c })
        .collect();
    let windows_drive = trimmed.as_bytes().get(1) == Some(&b':');
    if windows_drive {
        legacy.replace_range(1..2, "-");
    } else if !legacy.starts_with('-') {
        legacy.insert(0, '-');
    }
    let underscores = legacy.replace('_', "-");
    for name in [legacy, underscores] {
        let name = ProjectDirName::Exact(name);
        if !names.contains(&name) {
            names.push(name);
        }
    }
    names
}

/// Most distinct `projectPathHistory` entries looked up (newest first): each
/// is a folder lookup per transcript index build, and a project rarely moves
/// more than a few times.
const MAX_PROJECT_PATH_HISTORY: usize = 32;

/// Project paths of a team config, in lookup order: `projectPath`,
/// `projectPathHistory` newest first (at most [`MAX_PROJECT_PATH_HISTORY`]
/// distinct ones), the lead's `cwd`, the one distinct member `cwd`. Linear in
/// the config's size, whatever an agent wrote into it.
pub(crate) fn project_path_candidates(config: &Value) -> Vec<String> {
    let mut out: Vec<String> = Vec::new();
    let mut seen: HashSet<String> = HashSet::new();
    let mut push = |value: Option<&str>| -> bool {
        let Some(path) = value
            .map(|p| js_trim(p).trim_end_matches(['/', '\\']))
            .filter(|p| !p.is_empty())
        else {
            return false;
        };
        let new = seen.insert(path.to_string());
        if new {
            out.push(path.to_string());
        }
        new
    };
    push(config.get("projectPath").and_then(Value::as_str));
    if let Some(history) = config.get("projectPathHistory").and_then(Value::as_array) {
        let mut taken = 0;
        for path in history.iter().rev() {
            if taken == MAX_PROJECT_PATH_HISTORY {
                break;
            }
            if push(path.as_str()) {
                taken += 1;
            }
        }
    }
    let members = config
        .get("members")
        .and_then(Value::as_array)
        .cloned()
        .unwrap_or_default();
    let lead_cwd = members.iter().find_map(|m| {
        let name = m.get("name").and_then(Value::as_str).unwrap_or("");
        let agent_type = m.get("agentType").and_then(Value::as_str).unwrap_or("");
        let lead = js_trim(name).eq_ignore_ascii_case("team-lead")
            || matches!(js_trim(agent_type), "team-lead" | "lead" | "orchestrator");
        lead.then(|| m.get("cwd").and_then(Value::as_str)).flatten()
    });
    push(lead_cwd);
    let cwds: HashSet<&str> = members
        .iter()
        .filter_map(|m| m.get("cwd").and_then(Value::as_str))
        .map(|c| js_trim(c).trim_end_matches(['/', '\\']))
        .filter(|c| !c.is_empty())
        .collect();
    if cwds.len() == 1 {
        push(cwds.into_iter().next());
    }
    out
}

/// True when `value` is a string that trims and lowercases to `lowercase`.
fn lower_eq(value: Option<&Value>, lowercase: &str) -> bool {
    value
        .and_then(Value::as_str)
        .is_some_and(|v| js_trim(v).to_lowercase() == lowercase)
}

fn path<'a>(value: &'a Value, keys: &[&str]) -> Option<&'a Value> {
    keys.iter().try_fold(value, |v, k| v.get(*k))
}

/// The text of an authored user turn, if `line` is one.
fn authored_user_text(line: &Value) -> Option<String> {
    let message = line.get("message")?;
    let role = message
        .get("role")
        .and_then(Value::as_str)
        .or_else(|| line.get("type").and_then(Value::as_str));
    if role != Some("user")
        || line.get("toolUseResult").is_some()
        || line.get("sourceToolUseID").is_some()
        || line.get("isMeta").and_then(Value::as_bool) == Some(true)
        || line.get("isSynthetic").and_then(Value::as_bool) == Some(true)
    {
        return None;
    }
    let text = match message.get("content")? {
        Value::String(s) => s.clone(),
        Value::Array(blocks) => {
            if blocks
                .iter()
                .any(|b| b.get("type").and_then(Value::as_str) == Some("tool_result"))
            {
                return None;
            }
            blocks
                .iter()
                .filter_map(|b| b.get("text").and_then(Value::as_str))
                .collect::<Vec<_>>()
                .join("\n")
        }
        _ => return None,
    };
    let head = text.trim_start_matches(is_js_whitespace);
    if head.starts_with("<local-command-") || head.starts_with("<bash-") {
        return None;
    }
    Some(text)
}

/// Most team names taken from one transcript head ([`named_teams`]).
const MAX_NAMED_TEAMS: usize = 4;

/// The teams a transcript head names in its `teamName` or
/// `process.team.teamName` fields, trimmed and lowercased, first named first,
/// at most [`MAX_NAMED_TEAMS`]: the teams a Stop of that transcript is looked
/// up in first, before any other team is indexed.
pub(crate) fn named_teams(lines: &[Value]) -> Vec<String> {
    let mut out: Vec<String> = Vec::new();
    for line in lines.iter().take(HEAD_LINES) {
        let names = [
            line.get("teamName"),
            path(line, &["process", "team", "teamName"]),
        ];
        for name in names.into_iter().flatten().filter_map(Value::as_str) {
            let name = js_trim(name).to_lowercase();
            if !name.is_empty() && !out.contains(&name) {
                out.push(name);
                if out.len() >= MAX_NAMED_TEAMS {
                    return out;
                }
            }
        }
    }
    out
}

/// The member a root (member-session) transcript belongs to: it must name the
/// team and a known member within its head. `team_lowercase` (the team's
/// trimmed, lowercased comparison form, not a folder name) and `known` are
/// lowercase; the member comes back trimmed, in its original case.
pub(crate) fn attribute_root(
    lines: &[Value],
    team_lowercase: &str,
    known: &HashSet<String>,
) -> Option<String> {
    let mut team_matched = false;
    let mut member: Option<String> = None;
    let mentions = [
        format!("on team \"{team_lowercase}\""),
        format!("on team '{team_lowercase}'"),
        format!("({team_lowercase})"),
    ];
    for line in lines.iter().take(HEAD_LINES) {
        if !team_matched {
            team_matched = lower_eq(line.get("teamName"), team_lowercase)
                || lower_eq(path(line, &["process", "team", "teamName"]), team_lowercase)
                || authored_user_text(line).is_some_and(|t| {
                    let t = t.to_lowercase();
                    mentions.iter().any(|m| t.contains(m.as_str()))
                });
        }
        if member.is_none() {
            member = [
                line.get("agentName"),
                path(line, &["process", "team", "memberName"]),
            ]
            .into_iter()
            .flatten()
            .filter_map(Value::as_str)
            .map(js_trim)
            .find(|name| known.contains(&name.to_lowercase()))
            .map(str::to_string);
        }
        if team_matched && member.is_some() {
            break;
        }
    }
    if team_matched {
        member
    } else {
        None
    }
}

/// The member a subagent transcript belongs to: the
/// strongest signal wins, the earliest within a level.
pub(crate) fn attribute_subagent(lines: &[Value], known: &HashSet<String>) -> Option<String> {
    let is_known = |name: &str| known.contains(&js_trim(name).to_lowercase());
    let mut best: [Option<String>; 4] = [None, None, None, None];
    for line in lines.iter().take(HEAD_LINES) {
        let authored = authored_user_text(line);
        if authored.as_deref().map(js_trim) == Some("Warmup") {
            return None;
        }
        let level1 = [
            path(line, &["process", "team", "memberName"]),
            path(line, &["init", "process", "team", "memberName"]),
        ]
        .into_iter()
        .flatten()
        .filter_map(Value::as_str)
        .find(|n| is_known(n));
        let level2 = path(line, &["toolUseResult", "routing", "sender"])
            .and_then(Value::as_str)
            .filter(|n| is_known(n));
        let (level3, level4) = match &authored {
            Some(text) => (
                teammate_sender(text).filter(|n| is_known(n)),
                single_mention(text, known),
            ),
            None => (None, None),
        };
        for (slot, found) in best.iter_mut().zip([
            level1.map(str::to_string),
            level2.map(str::to_string),
            level3,
            level4,
        ]) {
            if slot.is_none() {
                *slot = found.map(|n| js_trim(&n).to_string());
            }
        }
    }
    best.into_iter().flatten().next()
}

/// `teammate_id="…"` of a leading `<teammate-message …>` tag (the sender).
fn teammate_sender(text: &str) -> Option<String> {
    let rest = text
        .trim_start_matches(is_js_whitespace)
        .strip_prefix("<teammate-message")?;
    let tag = &rest[..rest.find('>')?];
    let start = tag.find("teammate_id=\"")? + "teammate_id=\"".len();
    let end = tag[start..].find('"')? + start;
    Some(tag[start..end].to_string())
}

/// The one known member name the text mentions as a whole word, if exactly one.
fn single_mention(text: &str, known: &HashSet<String>) -> Option<String> {
    let lower = text.to_lowercase();
    let mut found = known.iter().filter(|name| {
        !name.is_empty()
            && lower.match_indices(name.as_str()).any(|(at, m)| {
                let before = lower[..at].chars().next_back();
                let after = lower[at + m.len()..].chars().next();
                !before.is_some_and(is_word_char) && !after.is_some_and(is_word_char)
            })
    });
    let first = found.next()?;
    found.next().is_none().then(|| first.clone())
}

fn is_word_char(c: char) -> bool {
    c.is_alphanumeric() || c == '_'
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn a_head_names_its_teams_first_named_first() {
        // (head lines, teams named)
        let cases: [(Vec<Value>, Vec<&str>); 4] = [
            (
                vec![json!({"teamName": " Forge ", "agentName": "jack"})],
                vec!["forge"],
            ),
            (
                vec![
                    json!({"process": {"team": {"teamName": "atlas"}}}),
                    json!({"teamName": "forge"}),
                    json!({"teamName": "ATLAS"}),
                ],
                vec!["atlas", "forge"],
            ),
            (
                vec![
                    json!({"teamName": 5}),
                    json!({"teamName": "  "}),
                    json!("x"),
                ],
                vec![],
            ),
            (
                (0..10)
                    .map(|n| json!({"teamName": format!("t{n}")}))
                    .collect(),
                vec!["t0", "t1", "t2", "t3"],
            ),
        ];
        for (lines, expected) in cases {
            assert_eq!(named_teams(&lines), expected, "{lines:?}");
        }
    }

    fn known(names: &[&str]) -> HashSet<String> {
        names.iter().map(|n| n.to_string()).collect()
    }

    fn exact(names: &[&str]) -> Vec<ProjectDirName> {
        names
            .iter()
            .map(|n| ProjectDirName::Exact(n.to_string()))
            .collect()
    }

    #[test]
    fn encodes_project_dirs_like_claude() {
        // (project path, folder names, most likely first)
        let cases = [
            ("/home/u/proj/", exact(&["-home-u-proj"])),
            ("C:\\x", exact(&["C--x"])),
            ("/a/my_app", exact(&["-a-my-app", "-a-my_app"])),
            (
                "/Users/jane.doe/my app",
                exact(&["-Users-jane-doe-my-app", "-Users-jane.doe-my app"]),
            ),
            ("/p/café", exact(&["-p-caf-", "-p-café"])),
            // A char beyond the BMP is two UTF-16 units, so two dashes.
            ("/p/🦀", exact(&["-p---", "-p-🦀"])),
            ("  ", vec![]),
        ];
        for (path, names) in cases {
            assert_eq!(encode_project_dir(path), names, "{path}");
        }
    }

    #[test]
    fn a_long_path_is_cut_and_matched_with_any_hash_suffix() {
        let path = format!("/{}", "d".repeat(250));
        let names = encode_project_dir(&path);
        let prefix = format!("-{}", "d".repeat(MAX_PROJECT_DIR_CHARS - 1));
        assert_eq!(
            names[0],
            ProjectDirName::Hashed {
                prefix: prefix.clone()
            }
        );
        // A path of exactly the limit is not cut.
        let at_limit = format!("/{}", "d".repeat(MAX_PROJECT_DIR_CHARS - 1));
        assert!(
            matches!(&encode_project_dir(&at_limit)[0], ProjectDirName::Exact(n) if n.len() == MAX_PROJECT_DIR_CHARS)
        );
        // (folder name, matches)
        let cases = [
            (format!("{prefix}-1x9k2"), true),
            (format!("{prefix}-3f8w0q1j4pz7m"), true),
            (format!("{prefix}-"), false),
            (format!("{prefix}-AB"), false),
            (format!("{prefix}-ab-c"), false),
            (format!("{prefix}x-ab"), false),
            (prefix.clone(), false),
        ];
        for (folder, matches) in cases {
            assert_eq!(names[0].matches(&folder), matches, "{folder}");
        }
    }

    #[test]
    fn candidates_in_documented_order() {
        let config = json!({
            "projectPath": "/p/", "projectPathHistory": ["/old", "/older-but-newer"],
            "members": [{"name": "team-lead", "cwd": "/lead"}, {"name": "jack", "cwd": "/lead"}]
        });
        assert_eq!(
            project_path_candidates(&config),
            vec!["/p", "/older-but-newer", "/old", "/lead"]
        );
    }

    /// 120,000 history entries (1.2 MiB of config, most of them repeats):
    /// the first-seen order is kept and only the newest distinct ones are.
    /// (Duplicates were removed by a scan of the list so far: quadratic, a
    /// drain stalled for over 30 s.)
    #[test]
    fn a_huge_history_keeps_the_newest_distinct_paths_only() {
        let history: Vec<String> = (0..120_000).map(|i| format!("/p{}", i % 60_000)).collect();
        let config = json!({
            "projectPath": "/p59999", "projectPathHistory": history,
            "members": [{"name": "team-lead", "cwd": "/lead"}]
        });
        let mut expected = vec!["/p59999".to_string()];
        // Newest first; /p59999 is already the project path.
        expected.extend(
            (59_999 - MAX_PROJECT_PATH_HISTORY..59_999)
                .rev()
                .map(|i| format!("/p{i}")),
        );
        expected.push("/lead".into());
        assert_eq!(project_path_candidates(&config), expected);
    }

    #[test]
    fn root_attribution_needs_team_and_member() {
        let line = json!({"type": "user", "sessionId": "J7", "teamName": "Forge", "agentName": "Jack",
                          "message": {"role": "user", "content": "Start task 3"}});
        assert_eq!(
            attribute_root(std::slice::from_ref(&line), "forge", &known(&["jack"])),
            Some("Jack".into())
        );
        assert_eq!(attribute_root(&[line], "atlas", &known(&["jack"])), None);
        let by_text = [
            json!({"message": {"role": "user", "content": "You are jack on team \"forge\""}}),
            json!({"process": {"team": {"memberName": "jack"}}}),
        ];
        assert_eq!(
            attribute_root(&by_text, "forge", &known(&["jack"])),
            Some("jack".into())
        );
        let unknown = json!({"teamName": "forge", "agentName": "ghost"});
        assert_eq!(attribute_root(&[unknown], "forge", &known(&["jack"])), None);
    }

    #[test]
    fn subagent_signals_by_precedence() {
        let names = known(&["jack", "jill"]);
        let lines = [
            json!({"message": {"role": "user", "content": "<teammate-message teammate_id=\"jill\">hi</teammate-message>"}}),
            json!({"process": {"team": {"teamName": "forge", "memberName": "jack"}}}),
        ];
        assert_eq!(attribute_subagent(&lines, &names), Some("jack".into()));
        let mention =
            [json!({"message": {"role": "user", "content": "Please help Jill with task 4"}})];
        assert_eq!(attribute_subagent(&mention, &names), Some("jill".into()));
        let both = [json!({"message": {"role": "user", "content": "jack and jill"}})];
        assert_eq!(attribute_subagent(&both, &names), None);
        let warmup = [
            json!({"message": {"role": "user", "content": "Warmup"}}),
            lines[1].clone(),
        ];
        assert_eq!(attribute_subagent(&warmup, &names), None);
    }
}
