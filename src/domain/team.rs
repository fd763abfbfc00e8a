//! The team as read from disk: roster, tasks and kanban state.

use crate::domain::js_semantics::js_trim;
use std::collections::{BTreeMap, BTreeSet};

use super::js_semantics::locale_compare;
use super::names::{is_reserved_member_name, normalize_member_name, TeamName};

/// The runtime a member runs on.
#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
#[serde(rename_all = "lowercase")]
#[cfg_attr(test, derive(ts_rs::TS))]
pub enum ProviderId {
    /// Claude Code.
    Anthropic,
    /// OpenAI Codex.
    Codex,
    /// Google Gemini.
    Gemini,
    /// The OpenCode CLI.
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

/// The `providerBackendId` the app's members-meta reader keeps for an entry
/// with provider `provider` (its `migrateProviderBackendId` rule): none
/// without a provider or for Anthropic; Codex always runs `codex-native`
/// (also for a missing or legacy `auto` / `adapter` / `api` backend, but
/// never another one); Gemini keeps `auto`, `api` or `cli-sdk`, OpenCode
/// `adapter` or `opencode-cli`. Anything else is dropped, so it never
/// decides a provider.
pub(crate) fn meta_backend_id(
    provider: Option<ProviderId>,
    backend: Option<&str>,
) -> Option<String> {
    let backend = backend
        .map(crate::domain::js_semantics::js_trim)
        .filter(|b| !b.is_empty());
    let kept = match (provider?, backend) {
        (ProviderId::Anthropic, _) => None,
        (ProviderId::Codex, None | Some("auto" | "adapter" | "api" | "codex-native")) => {
            Some("codex-native")
        }
        (ProviderId::Codex, Some(_)) => None,
        (ProviderId::Gemini, Some(b @ ("auto" | "api" | "cli-sdk"))) => Some(b),
        (ProviderId::Opencode, Some(b @ ("adapter" | "opencode-cli"))) => Some(b),
        (ProviderId::Gemini | ProviderId::Opencode, _) => None,
    };
    kept.map(str::to_string)
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
    /// The model the member runs (`model`), as written; names the provider
    /// when neither the provider nor the backend id does.
    pub model: Option<String>,
    /// Reasoning effort, kept only to honour the merge rules.
    pub effort: Option<String>,
    /// Fast mode, kept only to honour the merge rules.
    pub fast_mode: Option<bool>,
    /// Removal time in epoch ms; any non-zero value means removed.
    pub removed_at: Option<f64>,
}

impl TeamMember {
    /// The roster name as a [`MemberName`](super::names::MemberName), when it
    /// is safe as a store folder: `config.json` is untrusted, so an unsafe
    /// name stays on the board (it may own tasks) but never gets a store.
    pub(crate) fn store_name(&self) -> Option<super::names::MemberName> {
        super::names::MemberName::parse(&self.name).ok()
    }

    /// True when the member was removed from the team.
    pub(crate) fn is_removed(&self) -> bool {
        self.removed_at.is_some_and(|at| at != 0.0 && !at.is_nan())
    }

    /// The provider: explicit id, else backend id, else model name.
    pub(crate) fn derived_provider(&self) -> Option<ProviderId> {
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
    let lower = js_trim(model).to_lowercase();
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

/// One `members.meta.json` entry, as an overlay on the config roster.
#[derive(Debug, Clone, Default, PartialEq)]
pub(crate) struct MemberOverlay {
    /// Display name, trimmed, non-empty.
    pub name: String,
    /// `agentType`, trimmed; replaces the config's when set.
    pub agent_type: Option<String>,
    /// Valid provider id.
    pub provider_id: Option<ProviderId>,
    /// `providerBackendId`, kept only when it belongs to `provider_id`;
    /// replaces the config's unless the config's runtime is kept.
    pub provider_backend_id: Option<String>,
    /// `model`; replaces the config's unless the config's runtime is kept.
    pub model: Option<String>,
    /// `effort`; replaces the config's only when this entry names a provider
    /// or the config has none.
    pub effort: Option<String>,
    /// `fastMode`; replaces the config's on the same terms as `effort`.
    pub fast_mode: Option<bool>,
    /// `removedAt` when it is a number. Every entry states it: `None` (no
    /// number) clears a removal the config recorded, as the reference's
    /// members-meta reader and merge do.
    pub removed_at: Option<f64>,
}

/// Merges the config roster with `members.meta.json`.
///
/// Keys are `trim().toLowerCase()`; config comes first (a later duplicate wins),
/// then each meta entry overlays the member with the same key or adds one.
pub(crate) fn merge_team_members(config: &[TeamMember], meta: &[MemberOverlay]) -> Vec<TeamMember> {
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
    base.removed_at = overlay.removed_at;
}

/// The `members.meta.json` reader rules of the reference: entries deduped by
/// exact (trimmed) name, the last one winning in the first one's place; CLI
/// auto-suffix duplicates (`alice-2`, suffix 2 or more) dropped while their base
/// name is an active entry (case-insensitively); then sorted by name with
/// `localeCompare`, which decides the merge order and so the lead.
pub(crate) fn tidy_meta_members(members: Vec<MemberOverlay>) -> Vec<MemberOverlay> {
    let mut deduped: Vec<MemberOverlay> = Vec::with_capacity(members.len());
    for member in members {
        if member.name.is_empty() {
            continue;
        }
        match deduped.iter_mut().find(|m| m.name == member.name) {
            Some(slot) => *slot = member,
            None => deduped.push(member),
        }
    }
    let active: BTreeSet<String> = deduped
        .iter()
        .filter(|m| m.removed_at.is_none_or(|at| at == 0.0))
        .map(|m| m.name.to_lowercase())
        .collect();
    deduped.retain(|m| match cli_auto_suffix_base(&m.name) {
        Some(base) => !active.contains(&base.to_lowercase()),
        None => true,
    });
    deduped.sort_by(|a, b| locale_compare(&a.name, &b.name));
    deduped
}

/// The base of a CLI auto-suffixed name (`alice-2` → `alice`): the name
/// ends in `-<ASCII digits>` with a value of 2 or more (`dev-1` is a real name).
fn cli_auto_suffix_base(name: &str) -> Option<&str> {
    let (base, suffix) = name.rsplit_once('-')?;
    if base.is_empty() || suffix.is_empty() || !suffix.bytes().all(|b| b.is_ascii_digit()) {
        return None;
    }
    // JavaScript's Number(): a digit string too long for a finite number is kept.
    let value: f64 = suffix.parse().ok()?;
    (value.is_finite() && value >= 2.0).then_some(base)
}

/// `normalize_member_name(name) == normalized`, without allocating for the
/// usual ASCII name (roster lookups run once per member of a refresh).
fn normalizes_to(name: &str, normalized: &str) -> bool {
    let trimmed = js_trim(name);
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

/// True when the member's name or agent type marks it as the team lead. The
/// agent type is compared as read (the reference trims it only in
/// `members.meta.json`, at read time).
fn is_lead_candidate(member: &TeamMember) -> bool {
    normalize_member_name(&member.name) == "team-lead"
        || matches!(
            member.agent_type.as_deref(),
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
    /// Deleted: never on an agenda, and terminal for the tasks it blocks.
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
    /// The reviewer approved it: its review is over.
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
    /// Event id as written.
    pub id: String,
    /// Timestamp as written.
    pub timestamp: String,
    /// Parsed timestamp, when it parses.
    pub at_ms: Option<i64>,
    /// `task_created`, `status_changed`, `review_requested`, ...
    pub kind: String,
    /// `from` field (previous status, review state or owner).
    pub from: Option<String>,
    /// `to` field (status or review state) when it is a string.
    pub to: Option<String>,
    /// `reviewer` of a review request.
    pub reviewer: Option<String>,
    /// Who did it.
    pub actor: Option<String>,
}

/// A task file, reduced to what the agenda needs.
///
/// There is no `deletedAt`: the reference's task reader drops it, so a task
/// with `deletedAt` but a live status is live work (only `status: deleted`
/// removes a task, and the reader skips those).
#[derive(Debug, Clone, PartialEq)]
pub struct Task {
    /// Canonical id as written (a number in its JavaScript spelling); empty
    /// when the file has none: such a task never gets an item but can still be
    /// a dependency through its display id.
    pub id: String,
    /// Human id (`#12`, or the first 8 chars of a UUID); may be empty.
    pub display_id: String,
    /// Subject as written (empty when missing).
    pub subject: String,
    /// Status as written (`pending` when missing or unknown).
    pub status: TaskStatus,
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
    /// History entries with a string `id`, `timestamp` and `type`, in file order.
    pub history: Vec<HistoryEvent>,
}

#[cfg(test)]
impl Task {
    /// A pending task with only its ids set.
    pub(crate) fn with_ids(id: &str, display_id: &str) -> Self {
        Self {
            id: id.into(),
            display_id: display_id.into(),
            subject: String::new(),
            status: TaskStatus::Pending,
            owner: None,
            blocked_by: vec![],
            blocks: vec![],
            needs_clarification: None,
            review_state: ReviewState::None,
            history: vec![],
        }
    }
}

/// Kanban column a task was moved to.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum KanbanColumn {
    /// The card sits in the review column: the task is under review.
    Review,
    /// The card sits in the approved column: the review is over.
    Approved,
}

/// One `kanban-state.json` task entry.
#[derive(Debug, Clone, PartialEq)]
pub struct KanbanEntry {
    /// The column the card was moved to (entries in any other column are
    /// not read).
    pub column: KanbanColumn,
    /// When the card moved, parsed.
    pub moved_at_ms: Option<i64>,
    /// Reviewer shown on the card.
    pub reviewer: Option<String>,
}

/// Everything the agenda reads about one team, from one consistent read.
#[derive(Debug, Clone)]
pub struct TeamSnapshot {
    /// Team name as requested.
    pub team_name: TeamName,
    /// True when `teams/<team>/` is a real folder (a link is not).
    pub folder_found: bool,
    /// False when `config.json` is missing or has no name.
    pub config_found: bool,
    /// True when the config has `deletedAt`.
    pub deleted: bool,
    /// Merged roster (config + meta).
    pub members: Vec<TeamMember>,
    /// Non-deleted tasks, shared with the reader's cache: neither the list
    /// nor a task is copied per read (a board of 10,000 tasks would cost
    /// 10,000 reference counts up and down on every reconcile).
    pub tasks: std::sync::Arc<Vec<std::sync::Arc<Task>>>,
    /// Kanban entries by task id.
    pub kanban: BTreeMap<String, KanbanEntry>,
    /// What the reader refused at the file boundary or had to cut
    /// (`kanban_state_not_a_file`, `task_file_too_large:<name>`,
    /// `roster_truncated`, ...): carried on every agenda of the team.
    pub diagnostics: Vec<String>,
    /// Files read past because their content does not parse
    /// (`task_file_invalid:<name>`, `kanban_state_invalid`, ...). The app
    /// reads past them silently, so agendas do not carry them; team
    /// previews list them.
    pub content_diagnostics: Vec<String>,
}

impl TeamSnapshot {
    /// A snapshot of `team_name` where nothing was found (no folder, no
    /// config, no roster, no tasks): what a reader fills in.
    pub fn empty(team_name: TeamName) -> Self {
        Self {
            team_name,
            folder_found: false,
            config_found: false,
            deleted: false,
            members: Vec::new(),
            tasks: std::sync::Arc::default(),
            kanban: BTreeMap::new(),
            diagnostics: Vec::new(),
            content_diagnostics: Vec::new(),
        }
    }

    /// The team lead: first non-removed member named `team-lead` or typed lead.
    pub fn lead(&self) -> Option<&TeamMember> {
        self.members
            .iter()
            .find(|m| !m.is_removed() && is_lead_candidate(m))
    }

    /// Normalized names of active members, sorted, reserved names removed.
    pub(crate) fn active_member_names(&self) -> Vec<String> {
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
    pub(crate) fn is_active_member(&self, normalized: &str) -> bool {
        !is_reserved_member_name(normalized)
            && self
                .members
                .iter()
                .any(|m| !m.is_removed() && normalizes_to(&m.name, normalized))
    }

    /// Active when the config exists and the team is not deleted.
    pub(crate) fn is_active(&self) -> bool {
        self.config_found && !self.deleted
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_meta_backend_id_is_kept_only_for_its_provider() {
        use ProviderId::*;
        let cases: [(Option<ProviderId>, Option<&str>, Option<&str>); 14] = [
            (None, Some("codex-native"), None),
            (None, Some("opencode-cli"), None),
            (Some(Anthropic), Some("codex-native"), None),
            (Some(Codex), None, Some("codex-native")),
            (Some(Codex), Some(" "), Some("codex-native")),
            (Some(Codex), Some("api"), Some("codex-native")),
            (Some(Codex), Some(" codex-native "), Some("codex-native")),
            (Some(Codex), Some("opencode-cli"), None),
            (Some(Gemini), Some("cli-sdk"), Some("cli-sdk")),
            (Some(Gemini), Some("codex-native"), None),
            (Some(Gemini), None, None),
            (Some(Opencode), Some("opencode-cli"), Some("opencode-cli")),
            (Some(Opencode), Some("adapter"), Some("adapter")),
            (Some(Opencode), Some("bogus"), None),
        ];
        for (provider, backend, kept) in cases {
            assert_eq!(
                meta_backend_id(provider, backend).as_deref(),
                kept,
                "{provider:?} {backend:?}"
            );
        }
    }
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
            removed_at: Some(1_746_500_000_000.0),
            ..MemberOverlay::default()
        };
        let merged = merge_team_members(&[member("bob")], &[removed]);
        assert!(merged[0].is_removed());
        let mut gone = member("bob");
        gone.removed_at = Some(5.0);
        let restored = MemberOverlay {
            name: "bob".into(),
            removed_at: None,
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
        let removed = |name: &str| MemberOverlay {
            removed_at: Some(1.0),
            ..m(name)
        };
        // (entries, names kept in order): exact-name dedupe, suffix 2+ only,
        // base must be active, then `localeCompare` order.
        let cases: [(Vec<MemberOverlay>, &[&str]); 4] = [
            (
                vec![m("alice-2"), m("alice"), m("bob-2"), m("Alice")],
                &["alice", "Alice", "bob-2"],
            ),
            (vec![m("dev-1"), m("dev"), m("Dev-3")], &["dev", "dev-1"]),
            (vec![removed("carl"), m("carl-2")], &["carl", "carl-2"]),
            (vec![m("Zed"), m("amy"), m("Bea")], &["amy", "Bea", "Zed"]),
        ];
        for (entries, want) in cases {
            let tidy = tidy_meta_members(entries);
            let names: Vec<_> = tidy.iter().map(|m| m.name.as_str()).collect();
            assert_eq!(names, want);
        }
        // The last entry of a name wins, in the first one's place.
        let tidy = tidy_meta_members(vec![m("x"), removed("x")]);
        assert_eq!(tidy.len(), 1);
        assert_eq!(tidy[0].removed_at, Some(1.0));
    }

    #[test]
    fn a_meta_entry_without_numeric_removed_at_restores_a_removed_member() {
        let mut gone = member("bob");
        gone.removed_at = Some(1_746_500_000_000.0);
        let plain = MemberOverlay {
            name: "Bob".into(),
            ..MemberOverlay::default()
        };
        let merged = merge_team_members(&[gone], &[plain]);
        assert!(!merged[0].is_removed());
    }

    #[test]
    fn agent_type_is_compared_as_read() {
        let mut padded = member("boss");
        padded.agent_type = Some(" lead ".into());
        let snapshot = TeamSnapshot {
            members: vec![padded],
            ..TeamSnapshot::empty(TeamName::parse("forge").unwrap())
        };
        assert_eq!(snapshot.lead(), None);
    }

    #[test]
    fn lead_is_first_active_lead_candidate() {
        let mut lead = member("boss");
        lead.agent_type = Some("orchestrator".into());
        let mut old = member("team-lead");
        old.removed_at = Some(1.0);
        let snapshot = TeamSnapshot {
            members: vec![member("a"), old, lead, member("user")],
            ..TeamSnapshot::empty(TeamName::parse("forge").unwrap())
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
                // JavaScript's trim removes U+FEFF and keeps U+0085.
                member("\u{feff}Kim\u{feff}"),
                member("Lou\u{85}"),
            ],
            ..TeamSnapshot::empty(TeamName::parse("forge").unwrap())
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
            ("kim", true, true),
            ("lou\u{85}", true, true),
            ("lou", false, false),
        ];
        for (name, on_roster, is_active) in cases {
            assert_eq!(snapshot.member(name).is_some(), on_roster, "{name}");
            assert_eq!(snapshot.is_active_member(name), is_active, "{name}");
            assert_eq!(active.contains(&name.to_string()), is_active, "{name}");
        }
    }
}
