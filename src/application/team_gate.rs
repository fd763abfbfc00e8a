//! The team operation gate: which teams take new work, and when a team
//! being deleted is idle.
//!
//! The rule, as the app's team operation gate and deletion coordinator
//! apply it:
//! - `prepareTeamDeletion` quiesces the team: from then on no per-team
//!   operation is admitted (`TeamQuiesced`), none of its change events is
//!   routed and none of its queued items runs; the deletion waits until the
//!   operations admitted before are done ([`TeamGate::has_admitted`]).
//! - `completeTeamDeletion` leaves the team fenced (a tombstone, also
//!   without a prepare first) until `resumeTeam` lifts the fence, or until
//!   the team's `config.json` is written again, which resumes it once: the
//!   team is re-scanned then, and a later `resumeTeam` scans no more.
//! - A team is one team whatever its case or surrounding blanks
//!   ([`team_runtime_key`]): `Forge` and ` forge ` share one fence.
//!
//! Plain data: the engine keeps it under its state lock next to the queue
//! (deletion waits for both on one condition variable) and does the IO the
//! answers call for (the config probe, the re-scan).

use std::collections::{HashMap, HashSet};

use crate::domain::names::{team_runtime_key, TeamName};

/// The fences and admitted operations of every team.
#[derive(Debug, Default)]
pub(crate) struct TeamGate {
    /// Teams being deleted, or deleted: nothing is admitted.
    fenced: HashSet<String>,
    /// Of those, the deleted ones: fenced until their `config.json` is
    /// there again or the fence is lifted.
    deleted: HashSet<String>,
    /// Deleted teams that came back on their own (their `config.json`
    /// reappeared) and were re-scanned: lifting their fence owes no scan.
    auto_resumed: HashSet<String>,
    /// Deleted teams whose `config.json` is being looked for, with the
    /// ticket of that look: at most one per team; a new deletion or a
    /// resume takes the ticket away, so a late answer of an older
    /// generation changes nothing.
    config_probes: HashMap<String, u64>,
    /// The last ticket given out.
    last_probe: u64,
    /// Operations admitted per team and not yet released.
    admitted: HashMap<String, usize>,
}

/// One admitted per-team operation; hand it back to [`TeamGate::release`].
#[derive(Debug, PartialEq, Eq)]
pub(crate) struct Admission {
    key: String,
}

/// A look for a deleted team's `config.json`, given out by
/// [`TeamGate::start_config_probe`]; its answer goes to
/// [`TeamGate::finish_config_probe`].
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct ConfigProbe {
    key: String,
    ticket: u64,
}

impl TeamGate {
    /// True while `team` is being deleted or is deleted.
    pub(crate) fn is_fenced(&self, team: &TeamName) -> bool {
        self.fenced.contains(&team_runtime_key(team))
    }

    /// Admits one operation of `team`, or none while it is fenced.
    pub(crate) fn admit(&mut self, team: &TeamName) -> Option<Admission> {
        let key = team_runtime_key(team);
        if self.fenced.contains(&key) {
            return None;
        }
        *self.admitted.entry(key.clone()).or_default() += 1;
        Some(Admission { key })
    }

    /// Ends an admitted operation.
    pub(crate) fn release(&mut self, admission: &Admission) {
        if let Some(count) = self.admitted.get_mut(&admission.key) {
            *count = count.saturating_sub(1);
            if *count == 0 {
                self.admitted.remove(&admission.key);
            }
        }
    }

    /// True while an operation of `team` admitted before is not done.
    pub(crate) fn has_admitted(&self, team: &TeamName) -> bool {
        self.admitted
            .get(&team_runtime_key(team))
            .is_some_and(|n| *n > 0)
    }

    /// `prepareTeamDeletion`: fences the team; a deletion or a look for
    /// its config from before is forgotten.
    pub(crate) fn quiesce(&mut self, team: &TeamName) {
        let key = team_runtime_key(team);
        self.deleted.remove(&key);
        self.auto_resumed.remove(&key);
        self.config_probes.remove(&key);
        self.fenced.insert(key);
    }

    /// `completeTeamDeletion`: the team stays fenced as deleted, unless it
    /// already came back on its own.
    pub(crate) fn mark_deleted(&mut self, team: &TeamName) {
        let key = team_runtime_key(team);
        if !self.auto_resumed.contains(&key) {
            self.fenced.insert(key.clone());
            self.deleted.insert(key);
        }
    }

    /// `resumeTeam`: lifts the fence. True when the team is owed a
    /// re-scan; false when it already came back on its own (and was
    /// re-scanned then).
    pub(crate) fn lift_fence(&mut self, team: &TeamName) -> bool {
        let key = team_runtime_key(team);
        self.fenced.remove(&key);
        self.deleted.remove(&key);
        self.config_probes.remove(&key);
        !self.auto_resumed.remove(&key)
    }

    /// A `config.json` write announced for `team`: the look for the file
    /// to start, when the team is deleted and no look is under way.
    pub(crate) fn start_config_probe(&mut self, team: &TeamName) -> Option<ConfigProbe> {
        let key = team_runtime_key(team);
        if !self.deleted.contains(&key) || self.config_probes.contains_key(&key) {
            return None;
        }
        self.last_probe += 1;
        self.config_probes.insert(key.clone(), self.last_probe);
        Some(ConfigProbe {
            key,
            ticket: self.last_probe,
        })
    }

    /// The answer of a look: when the file was `found` and the look is
    /// still the team's current one, the team is resumed (true: re-scan
    /// it) and a later [`TeamGate::lift_fence`] owes no scan.
    pub(crate) fn finish_config_probe(&mut self, probe: ConfigProbe, found: bool) -> bool {
        if self.config_probes.get(&probe.key) != Some(&probe.ticket) {
            // A newer deletion or a resume came meanwhile.
            return false;
        }
        self.config_probes.remove(&probe.key);
        if !found || !self.deleted.remove(&probe.key) {
            return false;
        }
        self.fenced.remove(&probe.key);
        self.auto_resumed.insert(probe.key);
        true
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn team(name: &str) -> TeamName {
        TeamName::parse(name).unwrap()
    }

    /// One lifecycle call on the gate of team `forge`.
    #[derive(Debug, Clone, Copy)]
    enum Step {
        Quiesce,
        MarkDeleted,
        /// Lifts the fence; the answer must be this.
        Lift(bool),
        /// Starts a look and answers it (found or not); the resume answer
        /// must be this. A look that cannot start must answer false.
        Probe {
            found: bool,
            resumes: bool,
        },
    }

    fn run(steps: &[Step]) -> TeamGate {
        let mut gate = TeamGate::default();
        for step in steps {
            match *step {
                Step::Quiesce => gate.quiesce(&team("forge")),
                Step::MarkDeleted => gate.mark_deleted(&team("forge")),
                Step::Lift(owed) => assert_eq!(gate.lift_fence(&team("forge")), owed, "{steps:?}"),
                Step::Probe { found, resumes } => {
                    let resumed = gate
                        .start_config_probe(&team("forge"))
                        .is_some_and(|probe| gate.finish_config_probe(probe, found));
                    assert_eq!(resumed, resumes, "{steps:?}");
                }
            }
        }
        gate
    }

    #[test]
    fn a_team_is_fenced_from_quiesce_or_deletion_until_resumed() {
        use Step::*;
        // (steps, fenced after them)
        let cases: [(&[Step], bool); 10] = [
            (&[], false),
            (&[Quiesce], true),
            (&[Quiesce, Lift(true)], false),
            (&[MarkDeleted], true),
            (&[Quiesce, MarkDeleted], true),
            (&[Quiesce, MarkDeleted, Lift(true)], false),
            // Only a deleted team is looked for: a quiesced one stays fenced.
            (
                &[
                    Quiesce,
                    Probe {
                        found: true,
                        resumes: false,
                    },
                ],
                true,
            ),
            (
                &[
                    MarkDeleted,
                    Probe {
                        found: false,
                        resumes: false,
                    },
                ],
                true,
            ),
            // The config came back: resumed once, and resuming owes no scan.
            (
                &[
                    MarkDeleted,
                    Probe {
                        found: true,
                        resumes: true,
                    },
                    Lift(false),
                ],
                false,
            ),
            // Came back on its own: a late completion changes nothing.
            (
                &[
                    MarkDeleted,
                    Probe {
                        found: true,
                        resumes: true,
                    },
                    MarkDeleted,
                ],
                false,
            ),
        ];
        for (steps, fenced) in cases {
            let gate = run(steps);
            assert_eq!(gate.is_fenced(&team("forge")), fenced, "{steps:?}");
            assert_eq!(gate.is_fenced(&team(" FORGE ")), fenced, "{steps:?}");
        }
    }

    #[test]
    fn a_late_probe_answer_of_an_older_deletion_changes_nothing() {
        /// What comes between the start and the answer of the look.
        type Between = fn(&mut TeamGate);
        let cases: [(&str, Between); 2] = [
            ("a new deletion", |g| {
                g.quiesce(&team("forge"));
                g.mark_deleted(&team("forge"));
            }),
            ("a resume", |g| {
                g.lift_fence(&team("forge"));
                g.mark_deleted(&team("forge"));
            }),
        ];
        for (between, step) in cases {
            let mut gate = TeamGate::default();
            gate.mark_deleted(&team("forge"));
            let probe = gate.start_config_probe(&team("forge")).unwrap();
            assert_eq!(
                gate.start_config_probe(&team("forge")),
                None,
                "one look at a time"
            );
            step(&mut gate);
            assert!(!gate.finish_config_probe(probe, true), "{between}");
            assert!(gate.is_fenced(&team("forge")), "{between}");
        }
    }

    #[test]
    fn admission_is_refused_while_fenced_and_counted_until_released() {
        let mut gate = TeamGate::default();
        let first = gate.admit(&team("Forge")).unwrap();
        let second = gate.admit(&team("forge")).unwrap();
        gate.quiesce(&team("forge"));
        assert_eq!(gate.admit(&team("forge")), None);
        assert!(gate.has_admitted(&team("FORGE")));
        gate.release(&first);
        assert!(gate.has_admitted(&team("forge")));
        gate.release(&second);
        assert!(!gate.has_admitted(&team("forge")));
        assert!(!gate.has_admitted(&team("other")));
    }
}
