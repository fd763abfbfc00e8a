//! Provider payload → normalized turn-settled event.
//!
//! Only identity fields survive normalization: the assistant's message text
//! (`last_assistant_message` and the like) is never copied, so it can never be
//! logged or persisted by the app.

use crate::domain::js_semantics::js_trim;
use serde::Serialize;
use serde_json::Value;
use sha2::{Digest, Sha256};

use super::fields::{IdentityFields, IDENTITY_KEYS};
use super::RuntimeProvider;

/// Source tag the orchestrator's Codex runtime puts in its payloads.
pub(crate) const CODEX_SOURCE: &str = "agent-teams-orchestrator-codex-native";
/// Source tag the orchestrator's OpenCode runtime puts in its payloads.
const OPENCODE_SOURCE: &str = "agent-teams-orchestrator-opencode";
/// OpenCode outcomes that mean the turn did not really settle.
const OPENCODE_NON_TERMINAL_OUTCOMES: [&str; 5] = [
    "timeout",
    "stream_unavailable",
    "prompt_rejected",
    "idle_without_assistant_activity",
    "unknown",
];

/// Why a payload is not a turn-settled event.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum NormalizeFailure {
    /// The payload does not parse as JSON.
    InvalidJson,
    /// JSON, but not an object.
    PayloadNotObject,
    /// Claude payload whose hook event is not `Stop`.
    NotStopHook,
    /// The payload's `provider` is not the one its file name claims.
    ProviderMismatch,
    /// The payload's `source` is not the orchestrator runtime of that provider.
    SourceMismatch,
    /// Orchestrator payload that is not a turn-settled (or Stop) event.
    NotTurnSettledEvent,
    /// No session id (nor, for Claude, transcript path).
    MissingSessionIdentity,
    /// Orchestrator payload without team or member name.
    MissingTeamMemberIdentity,
    /// Cut by the spool bound, and its start names no usable turn.
    PayloadTooLarge,
}

impl NormalizeFailure {
    /// The documented reason string.
    pub(crate) fn as_str(self) -> &'static str {
        match self {
            Self::InvalidJson => "invalid_json",
            Self::PayloadNotObject => "payload_not_object",
            Self::NotStopHook => "not_stop_hook",
            Self::ProviderMismatch => "provider_mismatch",
            Self::SourceMismatch => "source_mismatch",
            Self::NotTurnSettledEvent => "not_turn_settled_event",
            Self::MissingSessionIdentity => "missing_session_identity",
            Self::MissingTeamMemberIdentity => "missing_team_member_identity",
            Self::PayloadTooLarge => "payload_too_large",
        }
    }
}

/// A normalized turn-settled event: identity hints only, never message text.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[serde(rename_all = "camelCase")]
pub(crate) struct TurnSettledEvent {
    /// Always 1: the version of this event's shape (`schemaVersion`).
    pub schema_version: u8,
    /// The runtime that emitted it.
    pub provider: RuntimeProvider,
    /// Always `Stop`: the provider-neutral name of "the turn ended".
    pub hook_event_name: &'static str,
    /// `runtime-turn-settled:<provider>:<session>:<turn>:<transcript>:<payloadHash>`.
    pub source_id: String,
    /// sha256 hex of the raw payload bytes.
    pub payload_hash: String,
    /// When the turn settled: the payload's own time, else the spool file's stamp.
    pub recorded_at: String,
    /// Runtime session id.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub session_id: Option<String>,
    /// Turn id (for orchestrator runtimes: falls back to the thread id).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub turn_id: Option<String>,
    /// Orchestrator thread / prompt message id.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub thread_id: Option<String>,
    /// Claude transcript path.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub transcript_path: Option<String>,
    /// Working dir; parsed for diagnostics, never used to resolve a target.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub cwd: Option<String>,
    /// Team the orchestrator says ran the turn (verified against the roster later).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub team_name: Option<String>,
    /// Member the orchestrator says ran the turn (verified against the roster later).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub member_name: Option<String>,
    /// Orchestrator agent / lane id.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub agent_id: Option<String>,
    /// Orchestrator turn outcome.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub outcome: Option<String>,
    /// Read from the start of a payload the spool bound cut: its identity
    /// fields came from that prefix and its hash is the prefix's.
    #[serde(skip_serializing_if = "std::ops::Not::not")]
    pub truncated: bool,
}

impl TurnSettledEvent {
    /// Why this event is deliberately ignored before resolution, if it is:
    /// an OpenCode turn without prompt identity did not settle a real prompt.
    pub(crate) fn ignore_reason(&self) -> Option<String> {
        if self.provider != RuntimeProvider::Opencode || self.thread_id.is_some() {
            return None;
        }
        match self.outcome.as_deref() {
            Some(o) if OPENCODE_NON_TERMINAL_OUTCOMES.contains(&o) => {
                Some(format!("opencode_non_terminal_outcome:{o}"))
            }
            _ => Some("opencode_missing_prompt_identity".to_string()),
        }
    }
}

/// sha256 hex of `raw`.
pub(crate) fn payload_hash(raw: &[u8]) -> String {
    const DIGITS: &[u8; 16] = b"0123456789abcdef";
    let digest = Sha256::digest(raw);
    let mut hex = String::with_capacity(64);
    // Two digits per byte from a table: a `format!` per byte cost a small
    // allocation each, 32 per drained event.
    for byte in digest {
        hex.push(char::from(DIGITS[usize::from(byte >> 4)]));
        hex.push(char::from(DIGITS[usize::from(byte & 0xf)]));
    }
    hex
}

/// Normalizes the raw bytes of a spool file written for `provider`.
/// `spooled_at` (ISO) is the recorded time when the payload carries none.
pub(crate) fn normalize(
    provider: RuntimeProvider,
    raw: &[u8],
    spooled_at: &str,
) -> Result<TurnSettledEvent, NormalizeFailure> {
    match IdentityFields::parse(raw) {
        Ok(Some(payload)) => normalize_object(provider, &payload, raw, spooled_at),
        Ok(None) => Err(NormalizeFailure::PayloadNotObject),
        // Not JSON, or a payload only a `Value` parse reads as it always
        // did (see `fields`): that parse decides. Rare, so its cost is too.
        Err(_) => {
            let value: Value =
                serde_json::from_slice(raw).map_err(|_| NormalizeFailure::InvalidJson)?;
            let Value::Object(payload) = value else {
                return Err(NormalizeFailure::PayloadNotObject);
            };
            normalize_object(provider, &IdentityFields::of_map(&payload), raw, spooled_at)
        }
    }
}

/// Normalizes the start of a payload the spool bound cut (no longer JSON):
/// the identity fields of its top-level object are recovered with a bounded
/// scan ([`super::prefix`]), the event is marked `truncated`, and no message
/// text is read. A prefix that yields no usable event is `payload_too_large`.
pub(crate) fn normalize_truncated(
    provider: RuntimeProvider,
    prefix: &[u8],
    spooled_at: &str,
) -> Result<TurnSettledEvent, NormalizeFailure> {
    let payload = super::prefix::identity_fields(prefix, &IDENTITY_KEYS)
        .ok_or(NormalizeFailure::PayloadTooLarge)?;
    let payload = IdentityFields::of_map(&payload);
    let mut event = normalize_object(provider, &payload, prefix, spooled_at)
        .map_err(|_| NormalizeFailure::PayloadTooLarge)?;
    event.truncated = true;
    Ok(event)
}

/// The event of a parsed payload object; `raw` is hashed into its source id.
fn normalize_object(
    provider: RuntimeProvider,
    payload: &IdentityFields<'_>,
    raw: &[u8],
    spooled_at: &str,
) -> Result<TurnSettledEvent, NormalizeFailure> {
    let hash = payload_hash(raw);
    let mut event = match provider {
        RuntimeProvider::Claude => claude(payload, spooled_at)?,
        RuntimeProvider::Codex if is_native_codex(payload) => native_codex(payload, spooled_at)?,
        RuntimeProvider::Codex | RuntimeProvider::Opencode => {
            orchestrator(provider, payload, spooled_at)?
        }
    };
    // `runtime-turn-settled:<provider>:<session>:<turn>:<transcript>:<hash>`,
    // its length known up front: a `format!` of it grew the string on the
    // way, three times for a usual Stop event.
    let parts = [
        "runtime-turn-settled",
        provider.as_str(),
        event.session_id.as_deref().unwrap_or("no-session"),
        event.turn_id.as_deref().unwrap_or("no-turn"),
        event.transcript_path.as_deref().unwrap_or("no-transcript"),
        &hash,
    ];
    event.source_id = parts.join(":");
    event.payload_hash = hash;
    Ok(event)
}

fn empty_event(provider: RuntimeProvider, recorded_at: String) -> TurnSettledEvent {
    TurnSettledEvent {
        schema_version: 1,
        provider,
        hook_event_name: "Stop",
        source_id: String::new(),
        payload_hash: String::new(),
        recorded_at,
        session_id: None,
        turn_id: None,
        thread_id: None,
        transcript_path: None,
        cwd: None,
        team_name: None,
        member_name: None,
        agent_id: None,
        outcome: None,
        truncated: false,
    }
}

fn claude(
    payload: &IdentityFields<'_>,
    spooled_at: &str,
) -> Result<TurnSettledEvent, NormalizeFailure> {
    if text(payload, &["hook_event_name", "hookEventName"]).as_deref() != Some("Stop") {
        return Err(NormalizeFailure::NotStopHook);
    }
    let mut event = empty_event(RuntimeProvider::Claude, spooled_at.to_string());
    event.session_id = text(payload, &["session_id", "sessionId"]);
    event.turn_id = text(payload, &["turn_id", "turnId"]);
    event.transcript_path = text(payload, &["transcript_path", "transcriptPath"]);
    event.cwd = text(payload, &["cwd"]);
    if event.session_id.is_none() && event.transcript_path.is_none() {
        return Err(NormalizeFailure::MissingSessionIdentity);
    }
    Ok(event)
}

/// A Stop payload of the Codex CLI itself: it names no `provider` and no
/// `source` (the orchestrator's payloads always name both) and says
/// `hook_event_name: "Stop"`.
fn is_native_codex(payload: &IdentityFields<'_>) -> bool {
    !payload.contains("provider")
        && !payload.contains("source")
        && text(payload, &["hook_event_name"]).as_deref() == Some("Stop")
}

/// A native Codex CLI Stop payload (`session_id`, `turn_id`,
/// `transcript_path`, `cwd`, ...): identity only, no team or member; the
/// member is resolved from the session later.
fn native_codex(
    payload: &IdentityFields<'_>,
    spooled_at: &str,
) -> Result<TurnSettledEvent, NormalizeFailure> {
    let mut event = empty_event(RuntimeProvider::Codex, spooled_at.to_string());
    event.session_id =
        Some(text(payload, &["session_id"]).ok_or(NormalizeFailure::MissingSessionIdentity)?);
    event.turn_id = text(payload, &["turn_id"]);
    event.transcript_path = text(payload, &["transcript_path"]);
    event.cwd = text(payload, &["cwd"]);
    Ok(event)
}

fn orchestrator(
    provider: RuntimeProvider,
    payload: &IdentityFields<'_>,
    spooled_at: &str,
) -> Result<TurnSettledEvent, NormalizeFailure> {
    let opencode = provider == RuntimeProvider::Opencode;
    if text(payload, &["provider"]).as_deref() != Some(provider.as_str()) {
        return Err(NormalizeFailure::ProviderMismatch);
    }
    let source = if opencode {
        OPENCODE_SOURCE
    } else {
        CODEX_SOURCE
    };
    if text(payload, &["source"]).as_deref() != Some(source) {
        return Err(NormalizeFailure::SourceMismatch);
    }
    let settled = text(payload, &["eventName", "event_name"]).as_deref()
        == Some("runtime_turn_settled")
        || text(payload, &["hookEventName", "hook_event_name"]).as_deref() == Some("Stop");
    if !settled {
        return Err(NormalizeFailure::NotTurnSettledEvent);
    }
    let pick = |plain: &[&str], extra: &[&str]| {
        text(payload, plain).or_else(|| if opencode { text(payload, extra) } else { None })
    };
    let session_id = pick(&["sessionId", "session_id"], &["opencodeSessionId"])
        .ok_or(NormalizeFailure::MissingSessionIdentity)?;
    let team_name = pick(&["teamName", "team_name"], &["teamId", "team_id"]);
    let member_name = text(
        payload,
        &["memberName", "member_name", "agentName", "agent_name"],
    );
    let (Some(team_name), Some(member_name)) = (team_name, member_name) else {
        return Err(NormalizeFailure::MissingTeamMemberIdentity);
    };
    let prompt_message_id = &[
        "runtimePromptMessageId",
        "runtime_prompt_message_id",
        "promptMessageId",
        "prompt_message_id",
    ];
    let thread_id = pick(&["threadId", "thread_id"], prompt_message_id);
    let recorded_at = pick(
        &["recordedAt", "recorded_at"],
        &["observedAt", "observed_at"],
    )
    .unwrap_or_else(|| spooled_at.to_string());
    let mut event = empty_event(provider, recorded_at);
    event.turn_id = text(payload, &["turnId", "turn_id"]).or_else(|| thread_id.clone());
    event.thread_id = thread_id;
    event.session_id = Some(session_id);
    event.team_name = Some(team_name);
    event.member_name = Some(member_name);
    event.cwd = pick(&["cwd"], &["projectPath", "project_path"]);
    event.agent_id = pick(&["agentId", "agent_id"], &["laneId", "lane_id"]);
    event.outcome = text(payload, &["outcome"]);
    Ok(event)
}

/// The first of `keys` holding a non-blank string, trimmed. Other types count as absent.
fn text(payload: &IdentityFields<'_>, keys: &[&str]) -> Option<String> {
    keys.iter().find_map(|key| {
        let text = js_trim(payload.text(key)?);
        (!text.is_empty()).then(|| text.to_string())
    })
}

#[cfg(test)]
mod tests;
