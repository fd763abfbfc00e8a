//! Attribution of a claimed turn-settled event: judging the claim, then
//! resolving the member it belongs to (transcripts, the app's resolver, rosters).

use std::collections::{HashMap, HashSet};

use super::super::host::{SettledQuestion, SettledTarget};
use super::super::reconcile::may_store_member;
use super::{
    Attributed, ClaimContent, ClaudeMatch, Decision, HostFailed, Judged, SpoolClaim,
    TurnSettledIngestor,
};
use crate::domain::names::{normalize_member_name, MemberName, TeamName};
use crate::domain::team::TeamSnapshot;
use crate::domain::time::format_iso;
use crate::domain::turn_settled::normalize::{normalize, normalize_truncated, TurnSettledEvent};
use crate::domain::turn_settled::target::{verify_target, TargetOutcome};
use crate::domain::turn_settled::RuntimeProvider;

/// Why an attributed event is unresolved: the member the app's resolver
/// named, or the roster entry a payload or session matched, is no member
/// the addon may store anything for or queue (a normalized name
/// [`MemberName::parse`] refuses: too long, or unsafe as a folder).
const TARGET_UNKNOWN: &str = "resolver_target_unknown";

impl TurnSettledIngestor {
    /// What to do with one claim: release it for later, file it as invalid,
    /// or file the event it holds with its decision (a source id resolved
    /// earlier in the batch makes it a duplicate).
    pub(super) fn judge(
        &self,
        claim: &SpoolClaim,
        rosters: &mut HashMap<String, TeamSnapshot>,
        resolved_ids: &HashSet<String>,
        resolver_failed: &mut bool,
    ) -> Judged {
        let payload = match &claim.content {
            ClaimContent::Transient(_) => return Judged::Later,
            ClaimContent::Invalid(reason) => return Judged::Invalid(reason),
            ClaimContent::Payload(bytes) => (bytes, false),
            ClaimContent::Truncated(bytes) => (bytes, true),
        };
        let Some(provider) = claim.provider else {
            return Judged::Invalid("unsupported_provider");
        };
        let spooled_at = format_iso(claim.spooled_at_ms);
        let normalized = match payload {
            (bytes, false) => normalize(provider, bytes, &spooled_at),
            (bytes, true) => normalize_truncated(provider, bytes, &spooled_at),
        };
        match normalized {
            Ok(event) => {
                let mut attributed = match self.decide_by_host(&event, rosters, *resolver_failed) {
                    Some(Ok(attributed)) => attributed,
                    Some(Err(HostFailed)) => {
                        *resolver_failed = true;
                        return Judged::Later;
                    }
                    None => self.decide(&event, rosters),
                };
                if matches!(attributed.decision, Decision::Resolved { .. })
                    && resolved_ids.contains(&event.source_id)
                {
                    attributed.decision = Decision::Duplicate;
                }
                Judged::Event(Box::new(event), attributed)
            }
            Err(failure) => Judged::Invalid(failure.as_str()),
        }
    }

    fn decide(
        &self,
        event: &TurnSettledEvent,
        rosters: &mut HashMap<String, TeamSnapshot>,
    ) -> Attributed {
        let unattributed = |decision| Attributed {
            decision,
            target: None,
        };
        if let Some(reason) = event.ignore_reason() {
            return unattributed(Decision::Ignored(reason));
        }
        let session = event.session_id.as_deref();
        let transcript = event.transcript_path.as_deref();
        let located = match (event.provider, &event.team_name, &event.member_name) {
            (RuntimeProvider::Claude, _, _) => self.claude.locate(session, transcript),
            (_, Some(team), Some(member)) => ClaudeMatch::Member {
                team_name: team.clone(),
                member_name: member.clone(),
            },
            // A native Codex Stop: its session names the member.
            (RuntimeProvider::Codex, None, None) => match (&self.codex, session) {
                (Some(codex), Some(session)) => codex.locate(session, transcript),
                _ => ClaudeMatch::NoMatch,
            },
            _ => ClaudeMatch::NoMatch,
        };
        let (team, member) = match located {
            ClaudeMatch::Member {
                team_name,
                member_name,
            } => (team_name, member_name),
            ClaudeMatch::Ambiguous => {
                return unattributed(Decision::Unresolved("unresolved_ambiguous_target".into()))
            }
            ClaudeMatch::NoMatch => {
                return unattributed(Decision::Unresolved("no_matching_member_session".into()))
            }
            ClaudeMatch::Lead { team_name } => return self.lead_turn(team_name, rosters),
        };
        // The located team is a candidate from a payload or a session
        // file: checked here, once; a name that could leave the teams dir
        // never names a team.
        let roster = TeamName::parse(&team)
            .ok()
            .map(|team_name| self.roster(&team_name, rosters));
        let Some(roster) = roster else {
            return unattributed(Decision::Unresolved("member_not_active".into()));
        };
        let decision = match verify_target(roster, &member, event.provider) {
            TargetOutcome::Resolved {
                team_name,
                member_name,
            } => match MemberName::parse(&member_name) {
                // A roster entry no reconcile can be queued for (a name too
                // long once normalized, or unsafe as a folder): filed and
                // counted as what happens to it, never as `enqueued`.
                Err(_) => Decision::Unresolved(TARGET_UNKNOWN.into()),
                Ok(_) if self.recent.contains(&event.source_id) => Decision::Duplicate,
                Ok(member) => Decision::Resolved {
                    team: team_name,
                    member,
                },
            },
            TargetOutcome::Unresolved { reason } => Decision::Unresolved(reason),
        };
        Attributed {
            decision,
            target: Some((team, member)),
        }
    }

    /// The app's resolver's decision, when it has one (`None`: no resolver,
    /// or an event ignored before resolution, which the app never asks
    /// about). A resolved member gets its reconcile as the app's
    /// ingestor queues it, without the addon's roster checks, provided the
    /// names are safe on disk and the member may have a store folder
    /// ([`may_store_member`]); otherwise the event is unresolved. A call
    /// that threw, was late or answered something unusable leaves the claim
    /// for a later drain, as the app's ingestor leaves a claim whose
    /// resolution threw (counted `failed`).
    fn decide_by_host(
        &self,
        event: &TurnSettledEvent,
        rosters: &mut HashMap<String, TeamSnapshot>,
        failed_before: bool,
    ) -> Option<Result<Attributed, HostFailed>> {
        let host = self.host.as_ref()?;
        if event.ignore_reason().is_some() {
            return None;
        }
        // Only a host with the resolver ever failed it.
        if failed_before {
            return Some(Err(HostFailed));
        }
        let answer = match host.turn_settled_target(&SettledQuestion::new(event))? {
            Ok(answer) => answer,
            Err(_) => return Some(Err(HostFailed)),
        };
        let decision = match answer {
            SettledTarget::Unresolved(reason) => {
                return Some(Ok(Attributed {
                    decision: Decision::Unresolved(reason),
                    target: None,
                }))
            }
            // Names unsafe as a folder name are no member the addon may store for.
            SettledTarget::UnsafeName => Decision::Unresolved(TARGET_UNKNOWN.into()),
            SettledTarget::Member {
                team_name,
                member_name,
            } => {
                let roster = self.roster(&team_name, rosters);
                let storable =
                    may_store_member(self.store.as_ref(), &team_name, roster, &member_name)
                        .unwrap_or(false);
                if !storable {
                    Decision::Unresolved(TARGET_UNKNOWN.into())
                } else if self.recent.contains(&event.source_id) {
                    Decision::Duplicate
                } else {
                    Decision::Resolved {
                        team: team_name,
                        member: member_name,
                    }
                }
            }
        };
        Some(Ok(Attributed {
            decision,
            target: None,
        }))
    }

    /// A lead's own turn: ignored, journaled for the lead.
    fn lead_turn(&self, team: String, rosters: &mut HashMap<String, TeamSnapshot>) -> Attributed {
        let lead = TeamName::parse(&team)
            .ok()
            .map(|team_name| self.roster(&team_name, rosters))
            .and_then(TeamSnapshot::lead)
            .map(|m| normalize_member_name(&m.name));
        Attributed {
            decision: Decision::Ignored("ignored_lead_turn_settled".into()),
            target: lead.map(|lead| (team, lead)),
        }
    }

    /// The roster of `team`, read once per drain (kept under the name as
    /// given, which `audit_unqueued` looks it up by).
    fn roster<'r>(
        &self,
        team: &TeamName,
        rosters: &'r mut HashMap<String, TeamSnapshot>,
    ) -> &'r TeamSnapshot {
        // Looked up by name first: an owned key only for a team not read yet.
        if !rosters.contains_key(team.as_str()) {
            rosters.insert(team.to_string(), self.teams.load_roster(team));
        }
        &rosters[team.as_str()]
    }
}
