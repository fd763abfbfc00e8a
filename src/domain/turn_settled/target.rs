//! Checks a candidate (team, member) of a turn-settled event against the
//! active roster (seed 000 §9): only an active, non-lead member of an active
//! team whose provider fits the runtime is a target.

use serde::Serialize;

use super::RuntimeProvider;
use crate::domain::decision::RuntimeActivity;
use crate::domain::names::{is_reserved_member_name, normalize_member_name};
use crate::domain::team::{ProviderId, TeamSnapshot};

/// What a turn-settled event leads to.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[serde(tag = "outcome", rename_all = "camelCase")]
pub enum TargetOutcome {
    /// Reconcile this member.
    Resolved {
        /// Team dir name.
        team_name: String,
        /// Normalized (trimmed, lowercase) member name.
        member_name: String,
    },
    /// A proven target that must not be acted on (lead, inactive team or member).
    Ignored {
        /// Seed 000 §9 metric name, e.g. `ignored_lead_turn_settled`.
        reason: String,
    },
    /// No single active target could be proven.
    Unresolved {
        /// e.g. `unresolved_ambiguous_target`, `no_matching_member_session`.
        reason: String,
    },
}

impl TargetOutcome {
    /// An ignored outcome.
    pub fn ignored(reason: impl Into<String>) -> Self {
        Self::Ignored {
            reason: reason.into(),
        }
    }

    /// An unresolved outcome.
    pub fn unresolved(reason: impl Into<String>) -> Self {
        Self::Unresolved {
            reason: reason.into(),
        }
    }
}

/// Verifies that `member` of `team` may receive a `turn_settled` reconcile for
/// an event from `provider`.
pub fn verify_target(
    team: &TeamSnapshot,
    member: &str,
    provider: RuntimeProvider,
    runtime: RuntimeActivity,
) -> TargetOutcome {
    if !team.is_active() || !runtime.team_active {
        return TargetOutcome::ignored("ignored_inactive_team");
    }
    let normalized = normalize_member_name(member);
    if is_reserved_member_name(&normalized) {
        return TargetOutcome::unresolved("reserved_member");
    }
    let Some(entry) = team.member(&normalized).filter(|m| !m.is_removed()) else {
        return TargetOutcome::ignored("ignored_inactive_member");
    };
    if team
        .lead()
        .is_some_and(|lead| normalize_member_name(&lead.name) == normalized)
    {
        return TargetOutcome::ignored("ignored_lead_turn_settled");
    }
    let expected = match provider {
        RuntimeProvider::Claude => ProviderId::Anthropic,
        RuntimeProvider::Codex => ProviderId::Codex,
        RuntimeProvider::Opencode => ProviderId::Opencode,
    };
    if entry.derived_provider().is_some_and(|p| p != expected) {
        return TargetOutcome::unresolved("provider_mismatch");
    }
    if !runtime.member_active {
        return TargetOutcome::ignored("ignored_inactive_member");
    }
    TargetOutcome::Resolved {
        team_name: team.team_name.clone(),
        member_name: normalized,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::domain::team::TeamMember;

    const ACTIVE: RuntimeActivity = RuntimeActivity {
        team_active: true,
        member_active: true,
    };

    fn team() -> TeamSnapshot {
        let member = |name: &str, model: Option<&str>, removed: Option<f64>| TeamMember {
            name: name.into(),
            model: model.map(str::to_string),
            removed_at: removed,
            ..TeamMember::default()
        };
        TeamSnapshot {
            team_name: "forge".into(),
            config_found: true,
            members: vec![
                TeamMember {
                    agent_type: Some("team-lead".into()),
                    ..member("boss", None, None)
                },
                member("Jack", Some("claude-sonnet-4-5"), None),
                member("jill", Some("gpt-5"), None),
                member("bob", None, Some(1.0)),
            ],
            ..TeamSnapshot::default()
        }
    }

    #[test]
    fn outcomes_follow_the_roster() {
        let t = team();
        let claude = RuntimeProvider::Claude;
        assert_eq!(
            verify_target(&t, " JACK ", claude, ACTIVE),
            TargetOutcome::Resolved {
                team_name: "forge".into(),
                member_name: "jack".into()
            }
        );
        assert_eq!(
            verify_target(&t, "boss", claude, ACTIVE),
            TargetOutcome::ignored("ignored_lead_turn_settled")
        );
        assert_eq!(
            verify_target(&t, "bob", claude, ACTIVE),
            TargetOutcome::ignored("ignored_inactive_member")
        );
        assert_eq!(
            verify_target(&t, "ghost", claude, ACTIVE),
            TargetOutcome::ignored("ignored_inactive_member")
        );
        assert_eq!(
            verify_target(&t, "system", claude, ACTIVE),
            TargetOutcome::unresolved("reserved_member")
        );
        assert_eq!(
            verify_target(&t, "jill", claude, ACTIVE),
            TargetOutcome::unresolved("provider_mismatch")
        );
        assert!(matches!(
            verify_target(&t, "jill", RuntimeProvider::Codex, ACTIVE),
            TargetOutcome::Resolved { .. }
        ));
        let stopped = RuntimeActivity {
            team_active: false,
            member_active: true,
        };
        assert_eq!(
            verify_target(&t, "jack", claude, stopped),
            TargetOutcome::ignored("ignored_inactive_team")
        );
        let deleted = TeamSnapshot {
            deleted: true,
            ..team()
        };
        assert_eq!(
            verify_target(&deleted, "jack", claude, ACTIVE),
            TargetOutcome::ignored("ignored_inactive_team")
        );
        let down = RuntimeActivity {
            team_active: true,
            member_active: false,
        };
        assert_eq!(
            verify_target(&t, "jack", claude, down),
            TargetOutcome::ignored("ignored_inactive_member")
        );
    }
}
