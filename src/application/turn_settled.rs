//! Drains the runtime turn-settled spool: claim a
//! bounded batch, normalize, resolve the member, record the outcome, and hand
//! every resolved member to the queue once.
//!
//! A Stop event is only a wake-up: it never counts as progress or as a report,
//! it only asks for a `turn_settled` reconcile, which recomputes everything.

use std::collections::{BTreeSet, HashMap, HashSet};
use std::sync::{Arc, Mutex};

use serde::Serialize;

use super::host::Host;
use super::ports::{AuditJournal, Clock, PortError, SettledTurnLines, StatusStore, TeamSource};
use super::reconcile::may_store_member;
use crate::domain::audit::AuditKind;
use crate::domain::json_text::write_str;
use crate::domain::names::{MemberName, TeamName};
use crate::domain::team::TeamSnapshot;
use crate::domain::time::{format_iso, EpochMs};
use crate::domain::turn_settled::normalize::TurnSettledEvent;
use crate::domain::turn_settled::RuntimeProvider;

mod attribution;
mod handover;
mod pretty;

use handover::Handover;

/// Most files claimed per drain. Each batch costs three syncs however many
/// files it holds (see the spool's group commit), so a larger batch costs
/// fewer syncs per event; the batch's payloads are held in memory together,
/// at most `DRAIN_BATCH` × 256 KiB (the hook's cap, `MAX_PAYLOAD_BYTES`):
/// 25 MiB for a batch of truncated payloads, about 200 KiB for usual Stop
/// payloads of a few KiB.
pub const DRAIN_BATCH: usize = 100;
/// Source ids remembered to mark repeated deliveries of one payload as duplicates.
const RECENT_SOURCE_IDS: usize = 4096;

/// What a claimed spool file holds.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum ClaimContent {
    /// The raw payload (≤ 256 KiB, non-empty).
    Payload(Vec<u8>),
    /// The first bytes of a payload over 256 KiB, as the hook kept them:
    /// no longer JSON; only its identity fields are recovered.
    Truncated(Vec<u8>),
    /// Unusable before parsing: `payload_too_large`, `unsupported_provider`, ...
    Invalid(&'static str),
    /// Could not be read this time; the claim is released for a later drain.
    Transient(String),
}

/// One claimed spool file.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SpoolClaim {
    /// The file name in `incoming/`.
    pub id: String,
    /// When it was claimed.
    pub claimed_at_ms: EpochMs,
    /// The stamp in its name (the hook's clock), else the claim time.
    pub spooled_at_ms: EpochMs,
    /// The provider its name declares.
    pub provider: Option<RuntimeProvider>,
    /// What reading the claimed file gave: the payload, or why it could not
    /// be read.
    pub content: ClaimContent,
}

/// Where a claim is filed.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Disposition {
    /// `processed/`: a valid event, whatever its outcome.
    Processed,
    /// `invalid/`: a payload that could not be used.
    Invalid,
}

/// A claim and the outcome (`meta`) it is filed with.
#[derive(Debug, Clone)]
pub struct Filing<'a> {
    /// The claimed spool file being filed.
    pub claim: &'a SpoolClaim,
    /// The folder it is filed into (`processed/` or `invalid/`).
    pub disposition: Disposition,
    /// The outcome, stored beside the payload.
    pub meta: FilingMeta,
}

/// A filing's outcome, serialized once, when its claim is judged, in both
/// forms the spool stores it in: compact (its batch's outcome record) and
/// pretty (the result's meta file, laid out from the compact text rather
/// than serialized again, see `pretty`, or, for a processed event's meta,
/// written beside it, see `pretty::JsonPair`). Serialized from the
/// outcome's own types: building a `Value` of it first, to serialize twice,
/// cost an allocation per field and their drop, about a tenth of the CPU
/// time a drained Stop event took beyond the file system's work.
#[derive(Debug, Clone)]
pub struct FilingMeta {
    /// JSON text, as `serde_json` writes it compact. Kept as text, not as
    /// a `RawValue`: one built from text is parsed again to check it, which
    /// cost more than writing it.
    compact: String,
    /// The pretty form and a newline: the meta file is written from it
    /// as it is, with no copy of its own to add the newline to.
    pretty_line: Vec<u8>,
}

impl FilingMeta {
    /// `meta` serialized; an error only for what JSON cannot hold (a map
    /// with keys that are not strings). `meta` holds no `RawValue` (no
    /// outcome does), so its compact text has no whitespace to lay out.
    pub fn of(meta: &impl Serialize) -> serde_json::Result<Self> {
        let compact = serde_json::to_string(meta)?;
        let mut pretty_line = pretty::pretty_from_compact(compact.as_bytes());
        pretty_line.push(b'\n');
        Ok(Self {
            compact,
            pretty_line,
        })
    }

    /// The meta written in both forms by `json`, which wrote nothing but
    /// one JSON object (so its compact text has no whitespace to lay out).
    fn written(json: pretty::JsonPair) -> serde_json::Result<Self> {
        let (compact, mut pretty_line) = json.finish();
        let compact = String::from_utf8(compact).map_err(serde::ser::Error::custom)?;
        pretty_line.push(b'\n');
        Ok(Self {
            compact,
            pretty_line,
        })
    }

    /// The outcome as compact JSON text.
    pub fn compact(&self) -> &str {
        &self.compact
    }

    /// The outcome as pretty JSON (two-space indent) and a final newline.
    pub fn pretty_line(&self) -> &[u8] {
        &self.pretty_line
    }
}

/// The spool of hook payloads.
pub trait TurnSettledSpool: Send + Sync {
    /// Recovers stale claims, then claims up to `limit` pending files in
    /// name order, handing each to `each` as soon as it is claimed and read
    /// (the drain judges one while the next is claimed); says how many.
    /// When claiming fails, the claims already handed on are given back
    /// before the error returns, and the caller drops them.
    fn claim(&self, limit: usize, each: &mut dyn FnMut(SpoolClaim)) -> Result<usize, PortError>;
    /// May begin filing `claim`, judged to be filed into `disposition`
    /// with `meta`, ahead of [`TurnSettledSpool::file`]: write what can be
    /// written before the commit (its meta file), as the next claims are
    /// claimed. Nothing is committed: `file` commits, and does what this
    /// did not; a claim staged and then given back is left as a crash
    /// between the two would leave it.
    fn stage(&self, _claim: &SpoolClaim, _disposition: Disposition, _meta: &FilingMeta) {}
    /// Files a batch of claims with their outcomes, durably: every outcome
    /// is on disk before its claim leaves `processing/`, and every move is
    /// before this returns. One result per filing, in order: `true` filed,
    /// `false` lost to another drainer's recovery, an error when it could
    /// not be filed (the claim stays claimed; release it).
    fn file(&self, filings: &[Filing<'_>]) -> Vec<Result<bool, PortError>>;
    /// Gives the claim back for a later drain.
    fn release(&self, claim: &SpoolClaim) -> Result<(), PortError>;
    /// Once per drain, also one that claimed nothing: prunes old results,
    /// sweeps abandoned hook temp files and keeps the spool's helper files
    /// current. A failure (a spool folder that is a link, say) is reported
    /// after the drain's events were handed on.
    fn after_drain(&self) -> Result<(), PortError>;
    /// Waits for work a drain left running in the background (retention's
    /// removals while a backlog drains), so that none outlives `dispose`.
    fn settle(&self) {}
}

/// What the Claude transcripts (or, for a native Codex Stop, the Codex
/// launch state and session log) say about a session.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum ClaudeMatch {
    /// No attributed transcript or launch state matches.
    NoMatch,
    /// Exactly one member.
    Member {
        /// Team dir name.
        team_name: String,
        /// Member name as attributed.
        member_name: String,
    },
    /// Different members match equally well.
    Ambiguous,
    /// The session is a team's lead session: the lead's own turn.
    Lead {
        /// Team dir name.
        team_name: String,
    },
}

/// Finds the team member a Claude session belongs to.
pub trait ClaudeSessionLocator: Send + Sync {
    /// Looks up by exact transcript path and by session id.
    fn locate(&self, session_id: Option<&str>, transcript_path: Option<&str>) -> ClaudeMatch;
}

/// Finds the team member a native Codex CLI session belongs to.
pub trait CodexSessionLocator: Send + Sync {
    /// Looks up by the member's launch-state session id, then by the session
    /// log the payload names.
    fn locate(&self, session_id: &str, transcript_path: Option<&str>) -> ClaudeMatch;
}

/// Where resolved members go: the event queue (a later issue), or for now a
/// direct reconcile.
pub trait TurnSettledQueue {
    /// Asks for a `turn_settled` reconcile of one member; `Err` when none
    /// was queued or run.
    fn enqueue(&self, team_name: &TeamName, member_name: &MemberName) -> Result<(), String>;
}

/// An event the addon reports to the app.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct TeamChangeEvent {
    /// e.g. `member-turn-settled`.
    #[serde(rename = "type")]
    pub kind: String,
    /// Team dir name.
    pub team_name: String,
    /// JSON string detail.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub detail: Option<String>,
}

/// Receives the addon's team change events. Must not block and must not fail.
pub trait TeamChangeSink: Send + Sync {
    /// Delivers one event.
    fn emit(&self, event: TeamChangeEvent);
}

/// What one drain did, counted per outcome; `drainRuntimeTurnSettledEvents`
/// answers it (the app's `RuntimeTurnSettledDrainSummary`).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize)]
#[cfg_attr(test, derive(ts_rs::TS))]
pub struct DrainSummary {
    /// Spool files this drain claimed (at most [`DRAIN_BATCH`]).
    pub claimed: u32,
    /// Events that asked for a reconcile.
    pub enqueued: u32,
    /// Valid events without a provable active target.
    pub unresolved: u32,
    /// Events deliberately dropped (lead, inactive team or member, duplicate, ...).
    pub ignored: u32,
    /// Payloads filed under `invalid/`.
    pub invalid: u32,
    /// Claims released after a transient error, or lost to another drainer,
    /// plus members whose `turn_settled` reconcile could not run (without a
    /// queue driver the drain reconciles at once, and that can fail) or
    /// could not be queued (their team is being deleted). Such an event was
    /// already filed and counted `enqueued`.
    pub failed: u32,
}

/// The drain use case.
pub struct TurnSettledIngestor {
    clock: Arc<dyn Clock>,
    spool: Arc<dyn TurnSettledSpool>,
    teams: Arc<dyn TeamSource>,
    claude: Arc<dyn ClaudeSessionLocator>,
    /// Native Codex sessions; without one, they stay unresolved.
    codex: Option<Arc<dyn CodexSessionLocator>>,
    journal: Arc<dyn AuditJournal>,
    /// Asked whether a name off the roster may still get a journal.
    store: Arc<dyn StatusStore>,
    recent: Arc<SettledTurns>,
    /// The app's `runtimeTurnSettledTargetResolver`, when it gave one.
    host: Option<Arc<dyn Host>>,
    /// Held for a whole drain: the drains of one instance (the worker's and
    /// `drainRuntimeTurnSettledEvents`) take turns, so a drain that returns
    /// has seen every event spooled before it started filed, even one a
    /// running drain had claimed.
    one_at_a_time: Mutex<()>,
}

/// The `sourceId`s of the newest 4096 turns the drain
/// resolved, handed to the queue and announced as `member-turn-settled`.
///
/// Shared by the drain and `noteTeamChange`: the drain skips a payload of a
/// turn it already handled, and `noteTeamChange` skips the announcement when
/// an app forwards it back, so one settled turn causes one reconcile.
#[derive(Default)]
pub struct SettledTurns {
    ids: Mutex<RecentIds>,
}

impl SettledTurns {
    /// True when the drain handled the turn with this `sourceId`.
    pub fn contains(&self, source_id: &str) -> bool {
        self.ids().contains(source_id)
    }

    /// Records a handled turn, forgetting the oldest beyond the bound.
    pub(crate) fn remember(&self, source_id: &str) {
        self.ids().remember(source_id);
    }

    fn ids(&self) -> std::sync::MutexGuard<'_, RecentIds> {
        self.ids.lock().unwrap_or_else(|p| p.into_inner())
    }
}

/// Each id is stored once and shared by the set and the order (a copy
/// for each was two allocations per resolved event).
#[derive(Default)]
struct RecentIds {
    set: HashSet<Arc<str>>,
    order: std::collections::VecDeque<Arc<str>>,
}

impl RecentIds {
    /// True when `id` was seen before; remembers it either way.
    fn contains(&self, id: &str) -> bool {
        self.set.contains(id)
    }

    /// Remembers an id once its event is committed (never before: a claim
    /// released after a failed commit must not look like a duplicate later).
    fn remember(&mut self, id: &str) {
        if self.set.contains(id) {
            return;
        }
        if self.order.len() >= RECENT_SOURCE_IDS {
            if let Some(old) = self.order.pop_front() {
                self.set.remove(&*old);
            }
        }
        let id: Arc<str> = Arc::from(id);
        self.set.insert(Arc::clone(&id));
        self.order.push_back(id);
    }
}

enum Decision {
    /// Reconcile `member` of `team`: the team a roster or the app's resolver
    /// named and the member as matched, both checked before the event is
    /// filed, so an event filed `enqueued` is one the queue is handed.
    Resolved {
        team: TeamName,
        member: MemberName,
    },
    Duplicate,
    Ignored(String),
    Unresolved(String),
}

/// A decision and the member the event was attributed to before it was
/// verified, when one was (a Claude session match, or a Codex / OpenCode
/// payload's team and member): whose journal records the outcome.
struct Attributed {
    decision: Decision,
    target: Option<(String, String)>,
}

impl TurnSettledIngestor {
    /// Wires the use case.
    pub fn new(
        clock: Arc<dyn Clock>,
        spool: Arc<dyn TurnSettledSpool>,
        teams: Arc<dyn TeamSource>,
        claude: Arc<dyn ClaudeSessionLocator>,
        journal: Arc<dyn AuditJournal>,
        store: Arc<dyn StatusStore>,
    ) -> Self {
        Self {
            clock,
            spool,
            teams,
            claude,
            codex: None,
            journal,
            store,
            recent: Arc::default(),
            host: None,
            one_at_a_time: Mutex::new(()),
        }
    }

    /// Asks `host` for each event's target (the app's
    /// `runtimeTurnSettledTargetResolver`) in place of the addon's own
    /// attribution, when the host has that callback.
    pub(crate) fn with_host(mut self, host: Arc<dyn Host>) -> Self {
        self.host = Some(host);
        self
    }

    /// Records handled turns in `turns`, shared with the engine so that a
    /// forwarded `member-turn-settled` announcement is not routed again.
    pub(crate) fn with_settled_turns(mut self, turns: Arc<SettledTurns>) -> Self {
        self.recent = turns;
        self
    }

    /// Resolves native Codex Stop events (no team or member in the payload)
    /// through `codex`.
    pub fn with_codex_sessions(mut self, codex: Arc<dyn CodexSessionLocator>) -> Self {
        self.codex = Some(codex);
        self
    }

    /// Waits for work the spool left running after a drain (see
    /// [`TurnSettledSpool::settle`]).
    pub fn settle(&self) {
        self.spool.settle();
    }

    /// One drain: at most [`DRAIN_BATCH`] files. Every claim is judged
    /// first (in claim order, mostly on a thread of its own while the spool
    /// claims the next, the last ones on this thread), then the batch is
    /// filed at once (its outcomes made durable together), then the filed
    /// events are acted on: each resolved event is reported to `changes` and
    /// journaled, and each resolved member is handed to `queue` once per
    /// drain.
    pub fn drain(
        &self,
        queue: &dyn TurnSettledQueue,
        changes: &dyn TeamChangeSink,
    ) -> Result<DrainSummary, PortError> {
        // A drain that panicked left nothing half-done in memory: the spool's
        // claims are its state, and they are on disk.
        let _turn = self
            .one_at_a_time
            .lock()
            .unwrap_or_else(|poisoned| poisoned.into_inner());
        let handover = Handover::new(BatchJudging::new());
        // The scope spans the whole drain: the judging thread, once the
        // claiming thread took its work over, stops while the batch is filed,
        // and is joined only at the end, by when it has stopped.
        std::thread::scope(|scope| {
            let judged = self.claim_and_judge(scope, &handover)?;
            self.file_and_act(judged, queue, changes)
        })
    }

    /// Files a judged batch and acts on what was filed (see
    /// [`TurnSettledIngestor::drain`]).
    fn file_and_act(
        &self,
        (
            claimed,
            BatchJudging {
                judged, rosters, ..
            },
        ): (usize, BatchJudging),
        queue: &dyn TurnSettledQueue,
        changes: &dyn TeamChangeSink,
    ) -> Result<DrainSummary, PortError> {
        let mut summary = DrainSummary {
            claimed: claimed as u32,
            ..DrainSummary::default()
        };
        // Claims given back only now, once the spool claims no more: one
        // given back while claiming could be claimed again by this drain.
        let mut claims = Vec::with_capacity(judged.len());
        let mut filed_as = Vec::with_capacity(judged.len());
        for (claim, judgment) in judged {
            match judgment {
                Judgment::Later => {
                    summary.failed += 1;
                    let _ = self.spool.release(&claim);
                }
                Judgment::File {
                    disposition,
                    meta,
                    verdict,
                } => {
                    claims.push(claim);
                    filed_as.push((disposition, meta, verdict));
                }
            }
        }
        let mut filings = Vec::with_capacity(claims.len());
        let mut verdicts = Vec::with_capacity(claims.len());
        for (claim, (disposition, meta, verdict)) in claims.iter().zip(filed_as) {
            filings.push(Filing {
                claim,
                disposition,
                meta,
            });
            verdicts.push(verdict);
        }
        let filed = self.spool.file(&filings);
        let mut targets: BTreeSet<(TeamName, MemberName)> = BTreeSet::new();
        let mut journal = JournalBatch::default();
        for ((filing, verdict), result) in filings.iter().zip(verdicts).zip(filed) {
            match result {
                Ok(true) => {}
                Ok(false) => {
                    // Another drainer recovered and owns it now.
                    summary.failed += 1;
                    continue;
                }
                Err(_) => {
                    summary.failed += 1;
                    let _ = self.spool.release(filing.claim);
                    continue;
                }
            }
            let claim = filing.claim;
            let (event, Attributed { decision, target }, now) = match verdict {
                Verdict::Invalid => {
                    summary.invalid += 1;
                    continue;
                }
                Verdict::Event {
                    event,
                    attributed,
                    now,
                } => (event, attributed, now),
            };
            match decision {
                Decision::Resolved { team, member } => {
                    self.recent.remember(&event.source_id);
                    summary.enqueued += 1;
                    let detail = SettledDetail {
                        member_name: &member,
                        provider: event.provider,
                        source_id: &event.source_id,
                    };
                    changes.emit(TeamChangeEvent {
                        kind: "member-turn-settled".into(),
                        team_name: team.to_string(),
                        detail: detail.to_json().ok(),
                    });
                    let outcome = (AuditKind::TurnSettledResolved, None);
                    journal.add(outcome, claim, &team, &member, *event, now);
                    targets.insert((team, member));
                }
                Decision::Duplicate => summary.ignored += 1,
                Decision::Ignored(reason) => {
                    summary.ignored += 1;
                    let outcome = (AuditKind::TurnSettledIgnored, Some(reason));
                    self.audit_unqueued(
                        outcome,
                        claim,
                        *event,
                        target,
                        &rosters,
                        now,
                        &mut journal,
                    );
                }
                Decision::Unresolved(reason) => {
                    summary.unresolved += 1;
                    let outcome = (AuditKind::TurnSettledUnresolved, Some(reason));
                    self.audit_unqueued(
                        outcome,
                        claim,
                        *event,
                        target,
                        &rosters,
                        now,
                        &mut journal,
                    );
                }
            }
        }
        // One append per member journal for the whole batch.
        for ((team, member), turns) in &journal.members {
            self.journal.record_settled_turns(team, member, turns);
        }
        // Committed first, acted on after: a file is never acted on twice. A
        // crash in between loses only the wake-up, as a crash just after it
        // would (the queue lives in memory); the app's startup scan
        // (`enqueueStartupScan`) reconciles every member again. A failed
        // reconcile is not retried here; the next trigger catches up, and
        // the failure is counted so the app sees it.
        for (team, member) in targets {
            if queue.enqueue(&team, &member).is_err() {
                summary.failed += 1;
            }
        }
        // Every drain tidies, also one that claimed nothing (a killed hook's
        // temp file must not wait for the next event to be swept), once its
        // events were handed on: retention never delays them.
        self.spool.after_drain()?;
        Ok(summary)
    }

    /// Claims a batch and judges each claim, in claim order, on a thread of
    /// its own while the spool claims the next: a claim's renames, opens and
    /// reads are the kernel's work, its judging (parsing, hashing,
    /// attribution, the meta's text) the CPU's, and the two overlap. Once
    /// the spool claims no more, this thread takes the judging over (see
    /// [`Handover`]) and judges what is left itself; where no thread can be
    /// started, that is the whole batch. Says how many were claimed; a
    /// failed claim is an error, the claims not judged yet dropped unjudged
    /// (the spool gave them back; only the app's resolver, if asked about
    /// one judged already, saw it).
    fn claim_and_judge<'scope, 'env>(
        &'env self,
        scope: &'scope std::thread::Scope<'scope, 'env>,
        handover: &'env Handover<SpoolClaim, BatchJudging>,
    ) -> Result<(usize, BatchJudging), PortError> {
        let judge = |judging: &mut BatchJudging, claim| self.judge_next(judging, claim);
        // (Without a thread, the chunks wait in the handover for the
        // take-over below.)
        let judging = std::thread::Builder::new()
            .name("mws-drain-judge".into())
            .spawn_scoped(scope, move || handover.work_handed(judge))
            .ok();
        // Closed however this returns, also by a panic: the scope joins the
        // judging thread, which must not wait for chunks for ever.
        let _closing = handover.closing();
        // Handed over a few at a time: the judging thread would otherwise
        // wait and be woken (two futex calls) once per claim. The first
        // claim goes alone: the judging thread sleeps from its start until
        // it is handed something, and on two busy cores (the last drain's
        // removals run beside this one) it took 0.6–0.7 ms to wake, a wait
        // that now overlaps the next nine claims instead of following them.
        let mut chunk = Vec::with_capacity(JUDGED_TOGETHER);
        let mut first = true;
        let claimed = self.spool.claim(DRAIN_BATCH, &mut |claim| {
            chunk.push(claim);
            if std::mem::take(&mut first) || chunk.len() == JUDGED_TOGETHER {
                handover.hand(std::mem::replace(
                    &mut chunk,
                    Vec::with_capacity(JUDGED_TOGETHER),
                ));
            }
        })?;
        match handover.take_over(chunk, judge) {
            Some(judged) => Ok((claimed, judged)),
            // The judging thread panicked: its panic goes on from here.
            None => match judging.map(|thread| thread.join()) {
                Some(Err(panic)) => std::panic::resume_unwind(panic),
                _ => unreachable!("only a panicked judging thread leaves no judging"),
            },
        }
    }

    /// Judges `claim`, the next in claim order, with the state of the
    /// claims judged before it: the event, its attribution and its meta, or
    /// a later drain (see [`Judgment`]).
    fn judge_next(&self, judging: &mut BatchJudging, claim: SpoolClaim) {
        let BatchJudging {
            rosters,
            resolved_ids,
            resolver_failed,
            judged,
        } = judging;
        let now = self.clock.now_ms();
        let judgment = match self.judge(&claim, rosters, resolved_ids, resolver_failed) {
            Judged::Later => Judgment::Later,
            Judged::Invalid(reason) => {
                let meta = InvalidMeta {
                    reason,
                    processed_at: format_iso(now),
                };
                Judgment::filed(
                    Disposition::Invalid,
                    FilingMeta::of(&meta),
                    Verdict::Invalid,
                )
            }
            Judged::Event(event, attributed) => {
                let meta = ProcessedMeta::of(&event, &attributed.decision, now).filing_meta();
                if matches!(attributed.decision, Decision::Resolved { .. }) && meta.is_ok() {
                    resolved_ids.insert(event.source_id.clone());
                }
                let verdict = Verdict::Event {
                    event,
                    attributed,
                    now,
                };
                Judgment::filed(Disposition::Processed, meta, verdict)
            }
        };
        // Its filing begun at once, beside the next claims (see
        // `TurnSettledSpool::stage`).
        if let Judgment::File {
            disposition, meta, ..
        } = &judgment
        {
            self.spool.stage(&claim, *disposition, meta);
        }
        judged.push((claim, judgment));
    }

    /// Journals an event that was not queued (`outcome` = kind and reason) in
    /// the journal of the member it was attributed to, or else the member its
    /// payload names, as the app does, when that member may have a store
    /// folder ([`may_store_member`]: an existing team, a name safe on disk,
    /// off the roster only below the cap). Otherwise the spool's
    /// `.meta.json` is the only record: a journal line must never create a
    /// team directory, nor grow the store without bound.
    #[allow(clippy::too_many_arguments)]
    fn audit_unqueued<'a>(
        &self,
        outcome: (AuditKind, Option<String>),
        claim: &'a SpoolClaim,
        mut event: TurnSettledEvent,
        target: Option<(String, String)>,
        rosters: &HashMap<String, TeamSnapshot>,
        now: EpochMs,
        journal: &mut JournalBatch<'a>,
    ) {
        let named = (event.team_name.take(), event.member_name.take());
        let named = || Some((named.0?, named.1?));
        let Some((team, member)) = target.or_else(named) else {
            return;
        };
        let (Ok(team_name), Ok(member_name)) = (TeamName::parse(&team), MemberName::parse(&member))
        else {
            // A name that could leave its folder never gets a journal line
            // (nor a roster: `roster` refuses the same team names).
            return;
        };
        let may_store = rosters.get(&team).is_some_and(|roster| {
            // A store that cannot be read is no place for a journal line.
            may_store_member(self.store.as_ref(), &team_name, roster, &member_name).unwrap_or(false)
        });
        if may_store {
            journal.add(outcome, claim, &team_name, &member, event, now);
        }
    }
}

/// The app's resolver was asked and gave no usable answer.
struct HostFailed;

/// A claim, judged.
enum Judged {
    /// Unreadable this time: released for a later drain.
    Later,
    /// Filed under `invalid/` with this reason.
    Invalid(&'static str),
    /// A valid event and what it was attributed to.
    Event(Box<TurnSettledEvent>, Attributed),
}

/// The detail of a `member-turn-settled` event: whose turn settled, on
/// which runtime, and its `sourceId`.
struct SettledDetail<'a> {
    member_name: &'a MemberName,
    provider: RuntimeProvider,
    source_id: &'a str,
}

impl SettledDetail<'_> {
    /// As compact JSON (`memberName`, `provider`, `sourceId`), written as
    /// `serde_json` writes it: through `serde_json` each of its strings was
    /// escaped byte by byte, once per resolved event.
    fn to_json(&self) -> serde_json::Result<String> {
        let mut out = Vec::with_capacity(64 + self.source_id.len());
        out.extend_from_slice(b"{\"memberName\":");
        write_str(&mut out, self.member_name.as_str())?;
        out.extend_from_slice(b",\"provider\":");
        write_str(&mut out, self.provider.as_str())?;
        out.extend_from_slice(b",\"sourceId\":");
        write_str(&mut out, self.source_id)?;
        out.push(b'}');
        String::from_utf8(out).map_err(serde::ser::Error::custom)
    }
}

/// Claims handed to the judging thread at once (see
/// [`TurnSettledIngestor::claim_and_judge`]): a tenth of a batch.
const JUDGED_TOGETHER: usize = DRAIN_BATCH / 10;

/// A batch's judging: what [`TurnSettledIngestor::judge_next`] carries
/// from each claim to the next, and, once every claim is judged, the
/// judgments and the rosters read for them.
struct BatchJudging {
    /// The rosters read so far, by team.
    rosters: HashMap<String, TeamSnapshot>,
    /// Source ids resolved earlier in this batch: a second delivery of one
    /// payload is a duplicate before the first is even filed.
    resolved_ids: HashSet<String>,
    /// Once the app's resolver failed, the rest of the batch waits for a
    /// later drain without asking it again: one stuck callback costs a
    /// drain one wait, not one per file.
    resolver_failed: bool,
    /// The claims judged, in claim order.
    judged: Vec<(SpoolClaim, Judgment)>,
}

impl BatchJudging {
    fn new() -> Self {
        Self {
            rosters: HashMap::new(),
            // Room for a whole batch at once: grown from empty, the set was
            // rehashed about twice per event while a backlog drains.
            resolved_ids: HashSet::with_capacity(DRAIN_BATCH),
            resolver_failed: false,
            judged: Vec::with_capacity(DRAIN_BATCH),
        }
    }
}

/// What becomes of a claim once judged.
enum Judgment {
    /// Unreadable this time, or an outcome JSON cannot hold: released for
    /// a later drain.
    Later,
    /// Filed into `disposition` with `meta`, then acted on as `verdict`
    /// says.
    File {
        disposition: Disposition,
        meta: FilingMeta,
        verdict: Verdict,
    },
}

impl Judgment {
    /// Filed with `meta`; [`Judgment::Later`] when it could not be
    /// serialized (strings and numbers only: never).
    fn filed(
        disposition: Disposition,
        meta: Result<FilingMeta, serde_json::Error>,
        verdict: Verdict,
    ) -> Self {
        match meta {
            Ok(meta) => Self::File {
                disposition,
                meta,
                verdict,
            },
            Err(_) => Self::Later,
        }
    }
}

/// What to do once a filing is on disk.
enum Verdict {
    /// Count it as invalid.
    Invalid,
    /// Act on the event's decision.
    Event {
        event: Box<TurnSettledEvent>,
        attributed: Attributed,
        now: EpochMs,
    },
}

/// A drain's journal lines, per member, written with one append each.
#[derive(Default)]
struct JournalBatch<'a> {
    /// Per (team, member), in that order: a member found by comparing
    /// names, not by building an owned key to look it up with (two
    /// allocations per event).
    members: Vec<((TeamName, String), Vec<SettledTurnLines<'a>>)>,
}

impl<'a> JournalBatch<'a> {
    /// `turn_settled_claimed` at the time of the claim (with the spool file),
    /// then the outcome (`turn_settled_resolved|ignored|unresolved`, with the
    /// reason): the member's journal shows when the drain took the file and
    /// what became of it. The event's source id and time move into the
    /// lines (the event is done with), the claim's name is borrowed.
    fn add(
        &mut self,
        (outcome, reason): (AuditKind, Option<String>),
        claim: &'a SpoolClaim,
        team: &TeamName,
        member: &str,
        event: TurnSettledEvent,
        now: EpochMs,
    ) {
        let turn = SettledTurnLines {
            outcome,
            reason,
            claimed_at_ms: claim.claimed_at_ms,
            at_ms: now,
            provider: event.provider.as_str(),
            source_id: event.source_id,
            spool_file: &claim.id,
            recorded_at: event.recorded_at,
        };
        let key = (team.as_str(), member);
        let found = self
            .members
            .binary_search_by(|((t, m), _)| (t.as_str(), m.as_str()).cmp(&key));
        let at = found.unwrap_or_else(|at| {
            let key = (team.clone(), member.to_string());
            self.members.insert(at, (key, Vec::new()));
            at
        });
        self.members[at].1.push(turn);
    }
}

/// The meta of a payload filed under `invalid/`.
#[derive(Serialize)]
#[serde(rename_all = "camelCase")]
struct InvalidMeta {
    reason: &'static str,
    processed_at: String,
}

/// The meta of an event filed under `processed/`: the normalized event,
/// when, what became of it and why, and the member it was handed to.
struct ProcessedMeta<'a> {
    event: &'a TurnSettledEvent,
    processed_at: String,
    outcome: &'static str,
    reason: Option<&'a str>,
    team_name: Option<&'a TeamName>,
    member_name: Option<&'a MemberName>,
}

impl<'a> ProcessedMeta<'a> {
    fn of(event: &'a TurnSettledEvent, decision: &'a Decision, now: EpochMs) -> Self {
        let (outcome, reason, target) = match decision {
            Decision::Resolved { team, member } => ("enqueued", None, Some((team, member))),
            Decision::Duplicate => ("duplicate", None, None),
            Decision::Ignored(reason) => ("ignored", Some(reason.as_str()), None),
            Decision::Unresolved(reason) => ("unresolved", Some(reason.as_str()), None),
        };
        Self {
            event,
            processed_at: format_iso(now),
            outcome,
            reason,
            team_name: target.map(|(team, _)| team),
            member_name: target.map(|(_, member)| member),
        }
    }

    /// The meta in both forms, written straight from its fields as
    /// `serde_json` would serialize them (the event's as its `Serialize`
    /// derives them: absent options and a `false` `truncated` left out).
    fn filing_meta(&self) -> serde_json::Result<FilingMeta> {
        let mut json = pretty::JsonPair::new();
        json.begin();
        json.key("event");
        write_event(&mut json, self.event)?;
        json.text("processedAt", &self.processed_at)?;
        json.text("outcome", self.outcome)?;
        if let Some(reason) = self.reason {
            json.text("reason", reason)?;
        }
        if let Some(team) = self.team_name {
            json.text("teamName", team.as_str())?;
        }
        if let Some(member) = self.member_name {
            json.text("memberName", member.as_str())?;
        }
        json.end();
        FilingMeta::written(json)
    }
}

/// `event` as an object, its fields in the order of its `Serialize`.
fn write_event(json: &mut pretty::JsonPair, event: &TurnSettledEvent) -> serde_json::Result<()> {
    json.begin();
    json.literal("schemaVersion", &event.schema_version.to_string());
    json.text("provider", event.provider.as_str())?;
    json.text("hookEventName", event.hook_event_name)?;
    json.text("sourceId", &event.source_id)?;
    json.text("payloadHash", &event.payload_hash)?;
    json.text("recordedAt", &event.recorded_at)?;
    let optional = [
        ("sessionId", &event.session_id),
        ("turnId", &event.turn_id),
        ("threadId", &event.thread_id),
        ("transcriptPath", &event.transcript_path),
        ("cwd", &event.cwd),
        ("teamName", &event.team_name),
        ("memberName", &event.member_name),
        ("agentId", &event.agent_id),
        ("outcome", &event.outcome),
    ];
    for (key, value) in optional {
        if let Some(value) = value {
            json.text(key, value)?;
        }
    }
    if event.truncated {
        json.literal("truncated", "true");
    }
    json.end();
    Ok(())
}

/// Forwards team change events to a sink connected later (the JS callback is
/// only known after the instance is built); drops them while none is connected.
#[derive(Default)]
pub struct TeamChangeRelay {
    sink: std::sync::RwLock<Option<Box<dyn TeamChangeSink>>>,
}

impl TeamChangeRelay {
    /// Connects (or replaces) the sink.
    pub fn connect(&self, sink: Box<dyn TeamChangeSink>) {
        *self.sink.write().unwrap_or_else(|p| p.into_inner()) = Some(sink);
    }

    /// Disconnects the sink, releasing it.
    pub(crate) fn disconnect(&self) {
        *self.sink.write().unwrap_or_else(|p| p.into_inner()) = None;
    }
}

impl TeamChangeSink for TeamChangeRelay {
    fn emit(&self, event: TeamChangeEvent) {
        if let Some(sink) = self.sink.read().unwrap_or_else(|p| p.into_inner()).as_ref() {
            sink.emit(event);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::domain::audit::AuditSource;
    use serde_json::{json, Value};

    /// A processed meta as it was built before it was serialized from its
    /// own types: a `Value`, key by key.
    fn meta_value(event: &TurnSettledEvent, decision: &Decision, now: EpochMs) -> Value {
        let mut meta = json!({ "event": event, "processedAt": format_iso(now) });
        let (outcome, reason, target) = match decision {
            Decision::Resolved { team, member } => ("enqueued", None, Some((team, member))),
            Decision::Duplicate => ("duplicate", None, None),
            Decision::Ignored(reason) => ("ignored", Some(reason), None),
            Decision::Unresolved(reason) => ("unresolved", Some(reason), None),
        };
        meta["outcome"] = json!(outcome);
        if let Some(reason) = reason {
            meta["reason"] = json!(reason);
        }
        if let Some((team, member)) = target {
            meta["teamName"] = json!(team);
            meta["memberName"] = json!(member);
        }
        meta
    }

    fn event(every_field: bool) -> TurnSettledEvent {
        let text = |s: &str| every_field.then(|| s.to_string());
        TurnSettledEvent {
            schema_version: 1,
            provider: RuntimeProvider::Claude,
            hook_event_name: "Stop",
            source_id: "runtime-turn-settled:claude:s:t:-:abc".into(),
            payload_hash: "abc".into(),
            recorded_at: "2026-11-28T15:00:00.000Z".into(),
            session_id: Some("s \"quoted\" é".into()),
            turn_id: text("t"),
            thread_id: text("th"),
            transcript_path: text("/p/s.jsonl"),
            cwd: text("/bench/project"),
            team_name: text("Team"),
            member_name: text("ann"),
            agent_id: text("a\n1"),
            outcome: text("done"),
            truncated: every_field,
        }
    }

    /// A Claude claim of an invalid payload, claimed at 5 ms.
    fn claim() -> SpoolClaim {
        SpoolClaim {
            id: "20261128T150000Z-1-a.claude.json".into(),
            claimed_at_ms: 5,
            spooled_at_ms: 4,
            provider: Some(RuntimeProvider::Claude),
            content: ClaimContent::Invalid("x"),
        }
    }

    /// A meta serialized from its own types is, byte for byte, the meta
    /// built as a value: its meta file's pretty JSON and its record's
    /// compact JSON alike, for every outcome and for an invalid payload.
    #[test]
    fn a_meta_is_serialized_byte_for_byte_as_its_value_was() {
        let now = 1_779_000_000_123;
        let decisions = [
            Decision::Resolved {
                team: TeamName::parse("team").unwrap(),
                member: MemberName::parse("ann").unwrap(),
            },
            Decision::Duplicate,
            Decision::Ignored("ignored_lead_turn_settled".into()),
            Decision::Unresolved("no_matching_member_session".into()),
        ];
        let mut metas = vec![(
            FilingMeta::of(&InvalidMeta {
                reason: "invalid_json",
                processed_at: format_iso(now),
            })
            .unwrap(),
            json!({ "reason": "invalid_json", "processedAt": format_iso(now) }),
        )];
        for every_field in [false, true] {
            let event = event(every_field);
            for decision in &decisions {
                let meta = ProcessedMeta::of(&event, decision, now)
                    .filing_meta()
                    .unwrap();
                metas.push((meta, meta_value(&event, decision, now)));
            }
        }
        for (meta, value) in metas {
            assert_eq!(
                String::from_utf8(meta.pretty_line().to_vec()).unwrap(),
                serde_json::to_string_pretty(&value).unwrap() + "\n"
            );
            assert_eq!(meta.compact(), value.to_string());
        }
    }

    /// A claim's line and its outcome's carry the provider, the source id
    /// and, in this order, the claim's spool file or the outcome's time and
    /// reason (the provider, for a resolved one), as the app's lines do.
    #[test]
    fn a_batch_journals_the_claim_and_its_outcome() {
        let event = event(false);
        let claim = claim();
        let team = TeamName::parse("team").unwrap();
        let mut batch = JournalBatch::default();
        let resolved = (AuditKind::TurnSettledResolved, None);
        batch.add(resolved, &claim, &team, "ann", event.clone(), 9);
        let unresolved = (AuditKind::TurnSettledUnresolved, Some("no_match".into()));
        batch.add(unresolved, &claim, &team, "ann", event.clone(), 9);
        let [((team, member), turns)] = &batch.members[..] else {
            panic!("one member's lines")
        };
        assert_eq!((team.as_str(), member.as_str()), ("team", "ann"));
        let got: Vec<(AuditKind, EpochMs, Value)> = turns
            .iter()
            .flat_map(|turn| turn.events(team, member))
            .map(|line| {
                assert_eq!(line.source, AuditSource::RuntimeTurnSettledIngestor);
                assert_eq!(
                    (line.team_name.as_str(), line.member_name.as_str()),
                    ("team", "ann")
                );
                (line.kind, line.at_ms, Value::Object(line.metadata))
            })
            .collect();
        let claimed = json!({"provider": "claude", "sourceId": event.source_id,
                             "reason": "claude", "spoolFile": claim.id});
        let outcome = |reason: &str| {
            json!({"provider": "claude", "sourceId": event.source_id,
                   "recordedAt": event.recorded_at, "reason": reason})
        };
        let want = vec![
            (AuditKind::TurnSettledClaimed, 5, claimed.clone()),
            (AuditKind::TurnSettledResolved, 9, outcome("claude")),
            (AuditKind::TurnSettledClaimed, 5, claimed),
            (AuditKind::TurnSettledUnresolved, 9, outcome("no_match")),
        ];
        assert_eq!(got.len(), want.len());
        for (got, want) in got.iter().zip(&want) {
            assert_eq!((got.0, got.1), (want.0, want.1));
            // In order: the line's metadata keys as the app writes them.
            assert_eq!(got.2.to_string(), want.2.to_string());
        }
    }

    /// The newest 4096 source ids are remembered, the oldest forgotten
    /// first, and an id remembered again is not kept twice.
    #[test]
    fn settled_turns_remember_the_newest_ids() {
        let turns = SettledTurns::default();
        for i in 0..RECENT_SOURCE_IDS {
            turns.remember(&format!("s{i}"));
        }
        turns.remember("s1");
        assert_eq!(turns.ids().order.len(), RECENT_SOURCE_IDS);
        turns.remember("new");
        assert!(!turns.contains("s0"));
        assert!(turns.contains("s1") && turns.contains("new"));
        assert!(turns.contains(&format!("s{}", RECENT_SOURCE_IDS - 1)));
        assert_eq!(turns.ids().set.len(), RECENT_SOURCE_IDS);
    }

    /// A batch keeps each member's lines together, in the order added, and
    /// its members in (team, member) order, as the map it replaced did:
    /// one append per member, journals written in that order.
    #[test]
    fn a_batch_groups_lines_per_member_in_name_order() {
        let event = event(false);
        let claim = claim();
        let mut batch = JournalBatch::default();
        let adds = [
            ("team", "ben", 1),
            ("team", "ann", 2),
            ("alpha", "zed", 3),
            ("team", "ann", 4),
        ];
        for (team, member, at) in adds {
            let team = TeamName::parse(team).unwrap();
            let outcome = (AuditKind::TurnSettledResolved, None);
            batch.add(outcome, &claim, &team, member, event.clone(), at);
        }
        let got: Vec<(&str, &str, Vec<EpochMs>)> = batch
            .members
            .iter()
            .map(|((team, member), turns)| {
                let outcome_times = turns.iter().map(|turn| turn.at_ms).collect();
                (team.as_str(), member.as_str(), outcome_times)
            })
            .collect();
        let want = vec![
            ("alpha", "zed", vec![3]),
            ("team", "ann", vec![2, 4]),
            ("team", "ben", vec![1]),
        ];
        assert_eq!(got, want);
    }

    /// A settled turn's detail is the member, the provider and the source
    /// id, byte for byte as `serde_json` writes it built as a value, for
    /// every provider and with source ids JSON escapes.
    #[test]
    fn a_settled_turn_detail_names_member_provider_and_source() {
        let member = MemberName::parse("ann").unwrap();
        let providers = [
            RuntimeProvider::Claude,
            RuntimeProvider::Codex,
            RuntimeProvider::Opencode,
        ];
        for provider in providers {
            for source_id in [
                "s\"1",
                "runtime-turn-settled:claude:s:t:-:abc",
                "a\\b\n\u{1}é",
            ] {
                let detail = SettledDetail {
                    member_name: &member,
                    provider,
                    source_id,
                };
                let was =
                    json!({"memberName": member, "provider": provider, "sourceId": source_id});
                assert_eq!(detail.to_json().unwrap(), was.to_string());
            }
        }
    }
}
