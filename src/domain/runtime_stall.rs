//! Runtime stall: the member's runtime did something (a turn settled, a
//! tool call finished, other runtime activity), yet its agenda is the same
//! and still needs sync: the runtime is busy but not with the work.
//!
//! The rule, as the app observes it at every reconcile:
//! - a stall is observed when the reconcile carries a runtime signal among
//!   its triggers (the first in [`StallTrigger::PRIORITY`] names it), the
//!   member needed sync before and still does with a non-empty agenda, and
//!   the agenda's fingerprint is the one it had then;
//! - the status then carries [`Diagnostic::RuntimeStall`] and the trigger's
//!   [`Diagnostic::StallTrigger`], and the reconcile journals
//!   `runtime_stall_observed` with [`RuntimeStall::reason`];
//! - a nudge dispatch that decides a stored status again keeps its stall
//!   diagnostics while the same agenda still needs sync ([`carried`]).

use super::diagnostic::{has, parsed, Diagnostic, StallTrigger};
use super::status::{MemberStatus, StatusState};

/// What a reconcile knows when it looks for a stall.
#[derive(Debug, Clone, Copy)]
pub(crate) struct StallCheck<'a> {
    /// The runtime signals among the reconcile's triggers, in any order.
    pub signals: &'a [StallTrigger],
    /// The stored status needed sync.
    pub previous_needs_sync: bool,
    /// The stored status's agenda fingerprint (none without one).
    pub previous_fingerprint: Option<&'a str>,
    /// The state decided now.
    pub state: StatusState,
    /// The agenda's fingerprint now.
    pub fingerprint: &'a str,
    /// Items on the agenda now.
    pub item_count: usize,
}

/// A runtime stall, named by the runtime signal behind it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct RuntimeStall {
    /// The signal that came without the agenda moving.
    pub trigger: StallTrigger,
}

impl RuntimeStall {
    /// The stall a reconcile observes, if any (see the module doc).
    pub(crate) fn observe(check: &StallCheck<'_>) -> Option<Self> {
        let trigger = StallTrigger::PRIORITY
            .into_iter()
            .find(|t| check.signals.contains(t))?;
        let stalled = check.previous_needs_sync
            && check.state == StatusState::NeedsSync
            && check.item_count > 0
            && check.previous_fingerprint == Some(check.fingerprint);
        stalled.then_some(Self { trigger })
    }

    /// The stall a status records (both of its diagnostics present).
    pub(crate) fn recorded_in(diagnostics: &[String]) -> Option<Self> {
        let trigger = parsed(diagnostics).find_map(|d| match d {
            Diagnostic::StallTrigger(trigger) => Some(trigger),
            _ => None,
        })?;
        has(diagnostics, Diagnostic::RuntimeStall).then_some(Self { trigger })
    }

    /// The status diagnostics of the stall, wire spelling, in order.
    pub(crate) fn diagnostics(self) -> Vec<String> {
        [
            Diagnostic::RuntimeStall,
            Diagnostic::StallTrigger(self.trigger),
        ]
        .into_iter()
        .map(|d| d.as_str().to_string())
        .collect()
    }

    /// The `reason` of its `runtime_stall_observed` journal line.
    pub(crate) fn reason(self) -> String {
        format!(
            "same_agenda_still_needs_sync_after_{}",
            self.trigger.as_str()
        )
    }
}

/// The stall diagnostics of `stored` a status decided again keeps: all of
/// them while it still needs sync on the stored agenda, else none.
pub(crate) fn carried<'a>(
    stored: &'a MemberStatus,
    state: StatusState,
    fingerprint: &str,
) -> impl Iterator<Item = &'a String> {
    let same_agenda_needs_sync =
        state == StatusState::NeedsSync && stored.agenda.fingerprint == fingerprint;
    stored.diagnostics.iter().filter(move |d| {
        same_agenda_needs_sync && Diagnostic::parse(d).is_some_and(Diagnostic::is_runtime_stall)
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    const FP: &str = "agenda:v1:abc";

    fn check(signals: &[StallTrigger]) -> StallCheck<'_> {
        StallCheck {
            signals,
            previous_needs_sync: true,
            previous_fingerprint: Some(FP),
            state: StatusState::NeedsSync,
            fingerprint: FP,
            item_count: 1,
        }
    }

    #[test]
    fn a_stall_is_a_runtime_signal_on_the_same_agenda_still_needing_sync() {
        use StallTrigger::*;
        let all = [RuntimeActivity, ToolFinished, TurnSettled];
        // (why, the check, the stall's trigger)
        let cases: Vec<(&str, StallCheck<'_>, Option<StallTrigger>)> = vec![
            (
                "all three signals: turn settled first",
                check(&all),
                Some(TurnSettled),
            ),
            (
                "tool finished before runtime activity",
                check(&all[..2]),
                Some(ToolFinished),
            ),
            ("no runtime signal", check(&[]), None),
            (
                "needed no sync before",
                StallCheck {
                    previous_needs_sync: false,
                    ..check(&all)
                },
                None,
            ),
            (
                "needs no sync now",
                StallCheck {
                    state: StatusState::StillWorking,
                    ..check(&all)
                },
                None,
            ),
            (
                "empty agenda",
                StallCheck {
                    item_count: 0,
                    ..check(&all)
                },
                None,
            ),
            (
                "the agenda moved",
                StallCheck {
                    previous_fingerprint: Some("agenda:v1:old"),
                    ..check(&all)
                },
                None,
            ),
            (
                "nothing stored",
                StallCheck {
                    previous_fingerprint: None,
                    ..check(&all)
                },
                None,
            ),
        ];
        for (why, check, expected) in cases {
            let stall = RuntimeStall::observe(&check);
            assert_eq!(stall.map(|s| s.trigger), expected, "{why}");
            if let Some(stall) = stall {
                assert_eq!(RuntimeStall::recorded_in(&stall.diagnostics()), Some(stall));
            }
        }
    }

    #[test]
    fn a_stall_is_recorded_only_with_both_of_its_diagnostics() {
        let spelled = |d: &[&str]| d.iter().map(|s| s.to_string()).collect::<Vec<_>>();
        let stall = "runtime_stall:same_agenda_still_needs_sync";
        let trigger = "runtime_stall:trigger=tool_finished";
        let cases = [
            (spelled(&[stall, trigger]), Some(StallTrigger::ToolFinished)),
            (
                spelled(&["no_current_report", trigger, stall]),
                Some(StallTrigger::ToolFinished),
            ),
            (spelled(&[stall]), None),
            (spelled(&[trigger]), None),
            (spelled(&[]), None),
        ];
        for (diagnostics, expected) in cases {
            assert_eq!(
                RuntimeStall::recorded_in(&diagnostics).map(|s| s.trigger),
                expected,
                "{diagnostics:?}"
            );
        }
        assert_eq!(
            RuntimeStall {
                trigger: StallTrigger::TurnSettled
            }
            .reason(),
            "same_agenda_still_needs_sync_after_turn_settled"
        );
    }
}
