//! The team as read from disk: roster, tasks and kanban state (DATA.md §3).

use std::collections::BTreeMap;

use super::names::{is_reserved_member_name, normalize_member_name};

/// The runtime a member runs on.
#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum ProviderId {
    /// Claude Code.
    Anthropic,
    /// OpenAI Codex.
    Codex,
    /// Google Gemini.
    Gemini,
    /// OpenCode.
    Opencode,
}

impl ProviderId {
    /// Parses one of the four valid provider ids (exact, lowercase).
    pub fn parse(value: &str) -> Option<Self> {
        match value {
            "anthropic" => Some(Self::Anthropic),
            "codex" => Some(Self::Codex),
            "gemini" => Some(Self::Gemini),
            "opencode" => Some(Self::Opencode),
            _ => None,
        }
    }
}

/// One roster entry after reading `config.json` or `members.meta.json`.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct TeamMember {
    /// Display name, trimmed.
    pub name: String,
    /// `agentType` from config (`team-lead`, `lead`, `orchestrator`, ...).
    pub agent_type: Option<String>,
    /// Explicit, valid provider id.
    pub provider_id: Option<ProviderId>,
    /// Backend hint (`codex-native`, `opencode-cli`, ...).
    pub provider_backend_id: Option<String>,
    /// Model name.
    pub model: Option<String>,
    /// Reasoning effort, kept only to honour the merge rules.
    pub effort: Option<String>,
    /// Fast mode, kept only to honour the merge rules.
    pub fast_mode: Option<bool>,
    /// Removal time in epoch ms; any non-zero value means removed.
    pub removed_at: Option<f64>,
}

impl TeamMember {
    /// True when the member was removed from the team.
    pub fn is_removed(&self) -> bool {
        self.removed_at.is_some_and(|at| at != 0.0 && !at.is_nan())
    }

    /// The provider: explicit id, else backend id, else model name (DATA.md §3 "Provider").
    pub fn derived_provider(&self) -> Option<ProviderId> {
        if let Some(id) = self.provider_id {
            return Some(id);
        }
        match self.provider_backend_id.as_deref() {
            Some("codex-native") => return Some(ProviderId::Codex),
            Some("opencode-cli") => return Some(ProviderId::Opencode),
            _ => {}
        }
        provider_from_model(self.model.as_deref()?)
    }
}

fn provider_from_model(model: &str) -> Option<ProviderId> {
    let lower = model.trim().to_lowercase();
    let model = lower.strip_suffix("[1m]").unwrap_or(&lower);
    if model.starts_with("opencode/") {
        Some(ProviderId::Opencode)
    } else if model.starts_with("gpt-") || model.contains("codex") {
        Some(ProviderId::Codex)
    } else if model.contains("gemini") {
        Some(ProviderId::Gemini)
    } else if model.starts_with("claude") || matches!(model, "opus" | "sonnet" | "haiku") {
        Some(ProviderId::Anthropic)
    } else if model.contains('/') {
        // OpenCode addresses models as `provider/model`.
        Some(ProviderId::Opencode)
    } else {
        None
    }
}

/// A field of a `members.meta.json` overlay: absent, explicitly cleared, or set.
#[derive(Debug, Clone, Default, PartialEq)]
pub enum Overlay<T> {
    /// The key is not in the JSON object: keep the base value.
    #[default]
    Absent,
    /// The key is present with no usable value: clear the base value.
    Cleared,
    /// The key is present with a value.
    Set(T),
}

/// One `members.meta.json` entry, as an overlay on the config roster.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct MemberOverlay {
    /// Display name, trimmed, non-empty.
    pub name: String,
    /// `agentType`.
    pub agent_type: Option<String>,
    /// Valid provider id.
    pub provider_id: Option<ProviderId>,
    /// `providerBackendId`.
    pub provider_backend_id: Option<String>,
    /// `model`.
    pub model: Option<String>,
    /// `effort`.
    pub effort: Option<String>,
    /// `fastMode`.
    pub fast_mode: Option<bool>,
    /// `removedAt`: only a number sets it; a present non-number clears it.
    pub removed_at: Overlay<f64>,
}

/// Merges the config roster with `members.meta.json` (DATA.md §3 `mergeTeamMembers`).
///
/// Keys are `trim().toLowerCase()`; config comes first (a later duplicate wins),
/// then each meta entry overlays the member with the same key or adds one.
pub fn merge_team_members(config: &[TeamMember], meta: &[MemberOverlay]) -> Vec<TeamMember> {
    let mut order: Vec<String> = Vec::new();
    let mut by_key: BTreeMap<String, TeamMember> = BTreeMap::new();
    for member in config {
        let key = normalize_member_name(&member.name);
        if key.is_empty() {
            continue;
        }
        if by_key.insert(key.clone(), member.clone()).is_none() {
            order.push(key);
        }
    }
    for overlay in meta {
        let key = normalize_member_name(&overlay.name);
        if key.is_empty() {
            continue;
        }
        let base = by_key.entry(key.clone()).or_insert_with(|| {
            order.push(key.clone());
            TeamMember {
                name: overlay.name.clone(),
                ..TeamMember::default()
            }
        });
        apply_overlay(base, overlay);
    }
    order
        .into_iter()
        .filter_map(|key| by_key.remove(&key))
        .collect()
}

fn apply_overlay(base: &mut TeamMember, overlay: &MemberOverlay) {
    let base_provider = base.derived_provider();
    let keep_base_runtime = overlay.provider_id.is_none() && base_provider.is_some();
    if let (Some(new), Some(old)) = (overlay.provider_id, base_provider) {
        if new != old {
            base.provider_id = None;
            base.provider_backend_id = None;
            base.model = None;
            base.effort = None;
            base.fast_mode = None;
        }
    }
    if overlay.agent_type.is_some() {
        base.agent_type.clone_from(&overlay.agent_type);
    }
    if !keep_base_runtime {
        if overlay.provider_id.is_some() {
            base.provider_id = overlay.provider_id;
        }
        if overlay.provider_backend_id.is_some() {
            base.provider_backend_id
                .clone_from(&overlay.provider_backend_id);
        }
        if overlay.model.is_some() {
            base.model.clone_from(&overlay.model);
        }
    }
    // A set effort / fastMode on the base survives an overlay without a provider.
    if overlay.effort.is_some()
        && !(keep_base_runtime || base.effort.is_some() && overlay.provider_id.is_none())
    {
        base.effort.clone_from(&overlay.effort);
    }
    if overlay.fast_mode.is_some()
        && !(keep_base_runtime || base.fast_mode.is_some() && overlay.provider_id.is_none())
    {
        base.fast_mode = overlay.fast_mode;
    }
    match &overlay.removed_at {
        Overlay::Absent => {}
        Overlay::Cleared => base.removed_at = None,
        Overlay::Set(at) => base.removed_at = Some(*at),
    }
}

/// Drops CLI auto-suffix duplicates (`alice-2`) while the base name is active,
/// dedupes by normalized name and sorts by name (the `members.meta.json` reader rules).
pub fn tidy_meta_members(mut members: Vec<MemberOverlay>) -> Vec<MemberOverlay> {
    let mut seen = std::collections::BTreeSet::new();
    members.retain(|m| !m.name.is_empty() && seen.insert(normalize_member_name(&m.name)));
    let active: std::collections::BTreeSet<String> = members
        .iter()
        .filter(|m| !matches!(m.removed_at, Overlay::Set(at) if at != 0.0))
        .map(|m| normalize_member_name(&m.name))
        .collect();
    members.retain(|m| {
        let name = normalize_member_name(&m.name);
        match name.rsplit_once('-') {
            Some((base, suffix))
                if !base.is_empty()
                    && !suffix.is_empty()
                    && suffix.bytes().all(|b| b.is_ascii_digit()) =>
            {
                !active.contains(base)
            }
            _ => true,
        }
    });
    members.sort_by(|a, b| a.name.cmp(&b.name));
    members
}

/// `normalize_member_name(name) == normalized`, without allocating for the
/// usual ASCII name (roster lookups run once per member of a refresh).
fn normalizes_to(name: &str, normalized: &str) -> bool {
    let trimmed = name.trim();
    if trimmed.is_ascii() {
        trimmed.len() == normalized.len()
            && trimmed
                .bytes()
                .zip(normalized.bytes())
                .all(|(a, b)| a.to_ascii_lowercase() == b)
    } else {
        normalize_member_name(name) == normalized
    }
}

/// True when the member's name or agent type marks it as the team lead.
fn is_lead_candidate(member: &TeamMember) -> bool {
    normalize_member_name(&member.name) == "team-lead"
        || matches!(
            member.agent_type.as_deref().map(str::trim),
            Some("team-lead" | "lead" | "orchestrator")
        )
}

/// Task status (`pending` when missing or unknown).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum TaskStatus {
    /// Not started.
    Pending,
    /// Being worked on.
    InProgress,
    /// Done by its owner (may still be in review).
    Completed,
    /// Deleted.
    Deleted,
}

impl TaskStatus {
    /// Parses the on-disk status; anything unknown is `pending`.
    pub fn parse(value: Option<&str>) -> Self {
        match value {
            Some("in_progress") => Self::InProgress,
            Some("completed") => Self::Completed,
            Some("deleted") => Self::Deleted,
            _ => Self::Pending,
        }
    }

    /// The on-disk spelling.
    pub fn as_str(self) -> &'static str {
        match self {
            Self::Pending => "pending",
            Self::InProgress => "in_progress",
            Self::Completed => "completed",
            Self::Deleted => "deleted",
        }
    }
}

/// Review state of a task.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ReviewState {
    /// No review going on.
    None,
    /// Waiting for or under review.
    Review,
    /// The reviewer asked for changes.
    NeedsFix,
    /// Approved.
    Approved,
}

impl ReviewState {
    /// Parses `review` / `needsFix` / `approved`; anything else is `None`.
    pub fn parse(value: &str) -> Self {
        match value {
            "review" => Self::Review,
            "needsFix" => Self::NeedsFix,
            "approved" => Self::Approved,
            _ => Self::None,
        }
    }

    /// The on-disk spelling.
    pub fn as_str(self) -> &'static str {
        match self {
            Self::None => "none",
            Self::Review => "review",
            Self::NeedsFix => "needsFix",
            Self::Approved => "approved",
        }
    }
}

/// Who a task waits on for clarification.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Clarification {
    /// The team lead.
    Lead,
    /// The human user.
    User,
}

impl Clarification {
    /// The on-disk spelling.
    pub fn as_str(self) -> &'static str {
        match self {
            Self::Lead => "lead",
            Self::User => "user",
        }
    }
}

/// One entry of a task's `historyEvents`.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct HistoryEvent {
    /// Event id.
    pub id: String,
    /// ISO timestamp as written.
    pub timestamp: String,
    /// Parsed timestamp, when it parses.
    pub at_ms: Option<i64>,
    /// `task_created`, `status_changed`, `review_requested`, ...
    pub kind: String,
    /// `from` field (previous status, review state or owner).
    pub from: Option<String>,
    /// `to` field (status or review state).
    pub to: Option<String>,
    /// `reviewer` of a review request.
    pub reviewer: Option<String>,
    /// Who did it.
    pub actor: Option<String>,
}

/// A task file, reduced to what the agenda needs.
#[derive(Debug, Clone, PartialEq)]
pub struct Task {
    /// Canonical id.
    pub id: String,
    /// Human id (`#12`, or the first 8 chars of a UUID).
    pub display_id: String,
    /// Subject, trimmed (empty when missing).
    pub subject: String,
    /// Status.
    pub status: TaskStatus,
    /// True when `deletedAt` is set.
    pub deleted_at: bool,
    /// Owner name as written.
    pub owner: Option<String>,
    /// Ids this task waits on.
    pub blocked_by: Vec<String>,
    /// Ids waiting on this task.
    pub blocks: Vec<String>,
    /// Open clarification request.
    pub needs_clarification: Option<Clarification>,
    /// Explicit `reviewState` field.
    pub review_state: ReviewState,
    /// History, in file order.
    pub history: Vec<HistoryEvent>,
}

/// Kanban column a task was moved to.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum KanbanColumn {
    /// In review.
    Review,
    /// Approved.
    Approved,
}

/// One `kanban-state.json` task entry.
#[derive(Debug, Clone, PartialEq)]
pub struct KanbanEntry {
    /// Column.
    pub column: KanbanColumn,
    /// When the card moved, parsed.
    pub moved_at_ms: Option<i64>,
    /// Reviewer shown on the card.
    pub reviewer: Option<String>,
}

/// Everything the agenda reads about one team, from one consistent read.
#[derive(Debug, Clone, Default)]
pub struct TeamSnapshot {
    /// Team name as requested.
    pub team_name: String,
    /// False when `config.json` is missing or has no name.
    pub config_found: bool,
    /// True when the config has `deletedAt`.
    pub deleted: bool,
    /// Merged roster (config + meta).
    pub members: Vec<TeamMember>,
    /// Non-deleted tasks.
    pub tasks: Vec<Task>,
    /// Kanban entries by task id.
    pub kanban: BTreeMap<String, KanbanEntry>,
    /// What the reader had to degrade (`kanban_state_invalid`, ...).
    pub diagnostics: Vec<String>,
}

impl TeamSnapshot {
    /// The team lead: first non-removed member named `team-lead` or typed lead.
    pub fn lead(&self) -> Option<&TeamMember> {
        self.members
            .iter()
            .find(|m| !m.is_removed() && is_lead_candidate(m))
    }

    /// Normalized names of active members, sorted, reserved names removed.
    pub fn active_member_names(&self) -> Vec<String> {
        let mut names: Vec<String> = self
            .members
            .iter()
            .filter(|m| !m.is_removed() && !is_reserved_member_name(&m.name))
            .map(|m| normalize_member_name(&m.name))
            .collect();
        names.sort();
        names.dedup();
        names
    }

    /// The roster entry for a (normalized) member name.
    pub fn member(&self, normalized: &str) -> Option<&TeamMember> {
        self.members
            .iter()
            .find(|m| normalizes_to(&m.name, normalized))
    }

    /// Whether the (normalized) name is in [`TeamSnapshot::active_member_names`],
    /// without building that list: the reconciler asks once per member.
    pub fn is_active_member(&self, normalized: &str) -> bool {
        !is_reserved_member_name(normalized)
            && self
                .members
                .iter()
                .any(|m| !m.is_removed() && normalizes_to(&m.name, normalized))
    }

    /// Active when the config exists and the team is not deleted.
    pub fn is_active(&self) -> bool {
        self.config_found && !self.deleted
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn member(name: &str) -> TeamMember {
        TeamMember {
            name: name.into(),
            ..TeamMember::default()
        }
    }

    #[test]
    fn provider_is_derived_in_documented_order() {
        let mut m = member("a");
        m.model = Some("claude-opus-4[1m]".into());
        assert_eq!(m.derived_provider(), Some(ProviderId::Anthropic));
        m.model = Some("gpt-5".into());
        assert_eq!(m.derived_provider(), Some(ProviderId::Codex));
        m.model = Some("opencode/grok".into());
        assert_eq!(m.derived_provider(), Some(ProviderId::Opencode));
        m.model = Some("gemini-2.5-pro".into());
        assert_eq!(m.derived_provider(), Some(ProviderId::Gemini));
        m.model = Some("Sonnet".into());
        assert_eq!(m.derived_provider(), Some(ProviderId::Anthropic));
        m.provider_backend_id = Some("opencode-cli".into());
        assert_eq!(m.derived_provider(), Some(ProviderId::Opencode));
        m.provider_id = Some(ProviderId::Gemini);
        assert_eq!(m.derived_provider(), Some(ProviderId::Gemini));
        assert_eq!(member("b").derived_provider(), None);
    }

    #[test]
    fn meta_overlay_keeps_base_runtime_without_provider() {
        let mut base = member("Jack");
        base.model = Some("gpt-5".into());
        let overlay = MemberOverlay {
            name: "jack".into(),
            model: Some("claude-opus".into()),
            ..MemberOverlay::default()
        };
        let merged = merge_team_members(&[base], &[overlay]);
        assert_eq!(merged.len(), 1);
        assert_eq!(merged[0].model.as_deref(), Some("gpt-5"));
    }

    #[test]
    fn meta_overlay_with_other_provider_clears_runtime_fields() {
        let mut base = member("jill");
        base.model = Some("gpt-5".into());
        base.effort = Some("high".into());
        let overlay = MemberOverlay {
            name: "jill".into(),
            provider_id: Some(ProviderId::Opencode),
            ..MemberOverlay::default()
        };
        let merged = merge_team_members(&[base], &[overlay]);
        assert_eq!(merged[0].model, None);
        assert_eq!(merged[0].effort, None);
        assert_eq!(merged[0].derived_provider(), Some(ProviderId::Opencode));
    }

    #[test]
    fn meta_overlay_removes_and_restores_members() {
        let removed = MemberOverlay {
            name: "bob".into(),
            removed_at: Overlay::Set(1_746_500_000_000.0),
            ..MemberOverlay::default()
        };
        let merged = merge_team_members(&[member("bob")], &[removed]);
        assert!(merged[0].is_removed());
        let mut gone = member("bob");
        gone.removed_at = Some(5.0);
        let restored = MemberOverlay {
            name: "bob".into(),
            removed_at: Overlay::Cleared,
            ..MemberOverlay::default()
        };
        assert!(!merge_team_members(&[gone], &[restored])[0].is_removed());
    }

    #[test]
    fn auto_suffix_duplicates_are_dropped_while_base_is_active() {
        let m = |name: &str| MemberOverlay {
            name: name.into(),
            ..MemberOverlay::default()
        };
        let tidy = tidy_meta_members(vec![m("alice-2"), m("alice"), m("bob-2"), m("Alice")]);
        let names: Vec<_> = tidy.iter().map(|m| m.name.as_str()).collect();
        assert_eq!(names, ["alice", "bob-2"]);
    }

    #[test]
    fn lead_is_first_active_lead_candidate() {
        let mut lead = member("boss");
        lead.agent_type = Some("orchestrator".into());
        let mut old = member("team-lead");
        old.removed_at = Some(1.0);
        let snapshot = TeamSnapshot {
            members: vec![member("a"), old, lead, member("user")],
            ..TeamSnapshot::default()
        };
        assert_eq!(snapshot.lead().map(|m| m.name.as_str()), Some("boss"));
        assert_eq!(snapshot.active_member_names(), ["a", "boss"]);
    }

    #[test]
    fn roster_lookups_agree_with_normalized_names() {
        let mut gone = member("Gone");
        gone.removed_at = Some(1.0);
        let snapshot = TeamSnapshot {
            members: vec![
                member(" Jack "),
                gone,
                member("User"),
                member("ΟΔΟΣ"),
                member("Émile"),
            ],
            ..TeamSnapshot::default()
        };
        let active = snapshot.active_member_names();
        // (normalized name, on the roster, active)
        let cases = [
            ("jack", true, true),
            ("gone", true, false),
            ("user", true, false),
            ("οδος", true, true),
            ("émile", true, true),
            ("jac", false, false),
            ("jack ", false, false),
            ("nobody", false, false),
        ];
        for (name, on_roster, is_active) in cases {
            assert_eq!(snapshot.member(name).is_some(), on_roster, "{name}");
            assert_eq!(snapshot.is_active_member(name), is_active, "{name}");
            assert_eq!(active.contains(&name.to_string()), is_active, "{name}");
        }
    }
}
