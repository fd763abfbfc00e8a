//! Checks a candidate (team, member) of a turn-settled event against the
//! active roster: only an active, non-lead member of an active
//! team whose provider fits the runtime is a target.

use serde::Serialize;

use super::RuntimeProvider;
use crate::domain::names::{is_reserved_member_name, normalize_member_name, TeamName};
use crate::domain::team::{ProviderId, TeamSnapshot};

/// What verifying the target of a turn-settled event leads to.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[serde(tag = "outcome", rename_all = "camelCase")]
pub(crate) enum TargetOutcome {
    /// Reconcile this member.
    Resolved {
        /// Team dir name (the roster's checked name).
        team_name: TeamName,
        /// Normalized (trimmed, lowercase) member name.
        member_name: String,
    },
    /// No single active target could be proven.
    Unresolved {
        /// e.g. `unresolved_ambiguous_target`, `no_matching_member_session`.
        reason: String,
    },
}

impl TargetOutcome {
    /// An unresolved outcome.
    pub(crate) fn unresolved(reason: impl Into<String>) -> Self {
        Self::Unresolved {
            reason: reason.into(),
        }
    }
}

/// Verifies that `candidate` of `team` may receive a `turn_settled` reconcile for
/// an event from `provider`, as the app's target resolver does: the member
/// must be on the roster of an existing, undeleted team (lead included), not
/// a reserved name, and of the provider that sent the event when its
/// provider is known. Whether its runtime runs is the reconcile's business
/// (it records the member inactive), not the resolver's.
///
/// `candidate` is the member name a payload or a transcript gave, not yet
/// checked: it is only matched against the roster here, and the resolved
/// name is checked where it is queued.
pub(crate) fn verify_target(
    team: &TeamSnapshot,
    candidate: &str,
    provider: RuntimeProvider,
) -> TargetOutcome {
    let normalized = normalize_member_name(candidate);
    let on_roster = team.config_found && !team.deleted;
    let Some(entry) = team
        .member(&normalized)
        .filter(|m| on_roster && !m.is_removed())
    else {
        return TargetOutcome::unresolved("member_not_active");
    };
    if is_reserved_member_name(&normalize_member_name(&entry.name)) {
        return TargetOutcome::unresolved("reserved_member");
    }
    let expected = match provider {
        RuntimeProvider::Claude => ProviderId::Anthropic,
        RuntimeProvider::Codex => ProviderId::Codex,
        RuntimeProvider::Opencode => ProviderId::Opencode,
    };
    if entry.derived_provider().is_some_and(|p| p != expected) {
        return TargetOutcome::unresolved("provider_mismatch");
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

    fn team() -> TeamSnapshot {
        let member = |name: &str, model: Option<&str>, removed: Option<f64>| TeamMember {
            name: name.into(),
            model: model.map(str::to_string),
            removed_at: removed,
            ..TeamMember::default()
        };
        TeamSnapshot {
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
            ..TeamSnapshot::empty(TeamName::parse("forge").unwrap())
        }
    }

    #[test]
    fn outcomes_follow_the_apps_resolver() {
        let t = team();
        let claude = RuntimeProvider::Claude;
        let resolved = |member: &str| TargetOutcome::Resolved {
            team_name: TeamName::parse("forge").unwrap(),
            member_name: member.into(),
        };
        // (team, member, provider, outcome)
        let deleted = TeamSnapshot {
            deleted: true,
            ..team()
        };
        let missing = TeamSnapshot {
            config_found: false,
            ..team()
        };
        let cases = [
            (&t, " JACK ", claude, resolved("jack")),
            // A lead's turn is reconciled like any member's.
            (&t, "boss", claude, resolved("boss")),
            (&t, "boss", RuntimeProvider::Codex, resolved("boss")),
            (
                &t,
                "bob",
                claude,
                TargetOutcome::unresolved("member_not_active"),
            ),
            (
                &t,
                "ghost",
                claude,
                TargetOutcome::unresolved("member_not_active"),
            ),
            (
                &t,
                "jill",
                claude,
                TargetOutcome::unresolved("provider_mismatch"),
            ),
            (
                &t,
                "jack",
                RuntimeProvider::Codex,
                TargetOutcome::unresolved("provider_mismatch"),
            ),
            (&t, "jill", RuntimeProvider::Codex, resolved("jill")),
            (
                &deleted,
                "jack",
                claude,
                TargetOutcome::unresolved("member_not_active"),
            ),
            (
                &missing,
                "jack",
                claude,
                TargetOutcome::unresolved("member_not_active"),
            ),
        ];
        for (team, member, provider, outcome) in cases {
            assert_eq!(verify_target(team, member, provider), outcome, "{member}");
        }
        let with_reserved = TeamSnapshot {
            members: vec![TeamMember {
                name: "system".into(),
                ..TeamMember::default()
            }],
            ..team()
        };
        assert_eq!(
            verify_target(&with_reserved, "system", claude),
            TargetOutcome::unresolved("reserved_member")
        );
    }
}
