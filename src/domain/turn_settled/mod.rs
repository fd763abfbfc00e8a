//! The runtime turn-settled signal: a provider's Stop hook says "a
//! turn ended"; the app turns that into a reconcile of the member who ran it.
//!
//! Pure parts only: provider names, payload normalizers, the managed hook
//! command and the hook-aware settings merge, and the roster check of a target.

pub(crate) mod codex_log;
pub(crate) mod fields;
pub(crate) mod normalize;
pub(crate) mod prefix;
pub mod settings;
pub(crate) mod shell_path;
pub(crate) mod target;
pub(crate) mod transcript;

/// Marker at the end of the managed hook command; finds our hook among the user's.
pub(crate) const TURN_SETTLED_HOOK_MARKER: &str = "agent-teams:member-work-sync-turn-settled:v1";

/// Largest payload the hook keeps and the drainer accepts (256 KiB).
pub const MAX_PAYLOAD_BYTES: u64 = 262_144;

/// A runtime whose turn-settled hook payloads the addon understands.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, serde::Serialize)]
#[serde(rename_all = "lowercase")]
pub enum RuntimeProvider {
    /// Claude Code Stop hook.
    Claude,
    /// Codex: the CLI's own Stop hook, or the orchestrator's Codex native runtime.
    Codex,
    /// The orchestrator's OpenCode runtime.
    Opencode,
}

impl RuntimeProvider {
    /// The provider named `value` (`claude`, `codex`, `opencode`), exact spelling only.
    pub fn parse(value: &str) -> Option<Self> {
        match value {
            "claude" => Some(Self::Claude),
            "codex" => Some(Self::Codex),
            "opencode" => Some(Self::Opencode),
            _ => None,
        }
    }

    /// The wire name, as used in spool file names and events.
    pub fn as_str(self) -> &'static str {
        match self {
            Self::Claude => "claude",
            Self::Codex => "codex",
            Self::Opencode => "opencode",
        }
    }
}
