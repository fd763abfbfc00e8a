// The scripted store operations both implementations run (record.mjs on the reference's own
// store, tests/sqlite_conformance.rs on the addon's): every outbox transition of the app's state
// machine, report intents, statuses with their metric events past the 200-event cap, and the
// count and find queries at their time bounds. Inputs are in the addon's serialization (field
// order included), so the same JSON is one domain value on both sides.
const TEAM = 'team-a';
const BASE = Date.parse('2026-07-07T10:00:00.000Z');
const at = (ms) => new Date(BASE + ms).toISOString();
const MIN = 60_000;

function status(memberName, n, extra = {}) {
  const evaluatedAt = extra.evaluatedAt ?? at(n * 1000);
  const fingerprint = extra.fingerprint ?? `agenda:v1:${memberName.trim().toLowerCase()}-${n % 3}`;
  const value = {
    teamName: TEAM,
    memberName,
    state: extra.state ?? 'needs_sync',
    agenda: {
      teamName: TEAM,
      memberName: memberName.trim().toLowerCase(),
      generatedAt: evaluatedAt,
      fingerprint,
      items: [
        {
          taskId: `task-${n % 4}`,
          displayId: `1111111${n % 4}`,
          subject: 'Ship "UI" ✓ \u2028 tab\t',
          kind: 'work',
          assignee: memberName.trim().toLowerCase(),
          priority: 'normal',
          reason: 'owned_pending_task',
          evidence: { status: 'pending', owner: memberName.trim().toLowerCase() },
        },
      ],
      diagnostics: [],
    },
  };
  if (extra.report) value.report = extra.report;
  value.shadow = {
    reconciledBy: 'queue',
    wouldNudge: extra.wouldNudge ?? true,
    fingerprintChanged: extra.fingerprintChanged ?? n % 2 === 1,
  };
  value.evaluatedAt = evaluatedAt;
  value.diagnostics = [];
  if (extra.providerId) value.providerId = extra.providerId;
  return value;
}

function report(memberName, accepted, fingerprint, reportedAt) {
  const value = {
    state: accepted ? 'caught_up' : 'still_working',
    agendaFingerprint: fingerprint,
    memberName: memberName.trim().toLowerCase(),
    teamName: 'TEAM-A',
    reportedAt,
    accepted,
  };
  if (!accepted) value.rejectionCode = 'stale_fingerprint';
  return value;
}

function payload(to, extra = {}) {
  const value = {
    to,
    text: 'Work sync check: continue the current task or report a blocker.',
    taskRefs: [{ teamName: 'other-team', taskId: 'task-1', displayId: '11111111' }],
    workSyncIntent: extra.intent ?? 'agenda_sync',
  };
  if (extra.key) value.workSyncIntentKey = extra.key;
  if (extra.reviewIds) value.workSyncReviewRequestEventIds = extra.reviewIds;
  value.agendaFingerprint = extra.fingerprint ?? 'agenda:v1:abc';
  return value;
}

function intent(id, memberName, reason, recordedAt) {
  return {
    id,
    teamName: TEAM,
    memberName,
    request: { teamName: 'team-A ', memberName, state: 'caught_up', agendaFingerprint: 'agenda:v1:abc' },
    reason,
    status: 'pending',
    recordedAt,
  };
}

const ensure = (id, memberName, payloadHash, nowIso, extra = {}) => ({
  op: 'ensure',
  teamName: TEAM,
  memberName,
  id,
  payloadHash,
  payload: payload(memberName.trim().toLowerCase(), extra),
  nowIso,
});
const claim = (nowIso, limit = 10) => ({ op: 'claim', teamName: TEAM, claimedBy: 'dispatcher', nowIso, limit });
const delivered = (id, attemptGeneration, nowIso) => ({ op: 'markDelivered', teamName: TEAM, id, attemptGeneration, nowIso });
const failed = (id, attemptGeneration, retryable, nowIso, nextAttemptAt = null) => ({
  op: 'markFailed',
  teamName: TEAM,
  id,
  attemptGeneration,
  error: retryable ? 'inbox_locked' : 'inbox_payload_conflict',
  retryable,
  nextAttemptAt,
  nowIso,
});
const superseded = (id, nowIso) => ({ op: 'markSuperseded', teamName: TEAM, id, reason: 'agenda_changed', nowIso });

/** The steps, in order; each is one store call. */
export function scenario() {
  const steps = [];
  // Statuses and their events.
  steps.push({ op: 'writeStatus', status: status('bob', 0, { providerId: 'anthropic' }) });
  steps.push({
    op: 'writeStatus',
    status: status('Alice', 1, { state: 'caught_up', wouldNudge: false, report: report('Alice', true, 'agenda:v1:alice-1', at(500)) }),
  });
  steps.push({
    op: 'writeStatus',
    status: status('carol ', 2, { report: report('carol ', false, 'agenda:v1:carol-2', at(1500)), providerId: 'codex' }),
  });
  steps.push({ op: 'writeStatus', status: status('bob', 0, { providerId: 'anthropic' }) });
  // Report intents: the first reason and time stay; processed intents never change.
  steps.push({ op: 'appendReport', intent: intent('intent-1', 'bob', 'control_api_unavailable', at(0)) });
  steps.push({ op: 'appendReport', intent: intent('intent-1', 'Bob', 'second_reason', at(MIN)) });
  steps.push({ op: 'appendReport', intent: intent('intent-2', 'Alice', 'control_api_unavailable', at(2 * MIN)) });
  steps.push({ op: 'appendReport', intent: intent('intent-3', 'carol ', 'control_api_unavailable', at(MIN / 2)) });
  steps.push({ op: 'listPending', teamName: TEAM });
  steps.push({ op: 'markProcessed', teamName: TEAM, id: 'intent-2', status: 'accepted', resultCode: 'accepted', processedAt: at(3 * MIN) });
  steps.push({ op: 'markProcessed', teamName: TEAM, id: 'intent-2', status: 'rejected', resultCode: 'stale_fingerprint', processedAt: at(4 * MIN) });
  steps.push({ op: 'appendReport', intent: intent('intent-2', 'Alice', 'again', at(5 * MIN)) });
  steps.push({ op: 'markProcessed', teamName: TEAM, id: 'intent-3', status: 'rejected', resultCode: 'stale_fingerprint', processedAt: at(6 * MIN) });
  steps.push({ op: 'listPending', teamName: TEAM });
  // ensure -> claim -> stale markDelivered -> no early reclaim -> reclaim after 5 minutes -> deliver.
  steps.push(ensure('out-1', 'bob', 'hash-1', at(0), { key: 'agenda-sync-still-stuck:fp:1', fingerprint: 'agenda:v1:bob-0' }));
  steps.push(claim(at(MIN)));
  steps.push(delivered('out-1', 99, at(MIN)));
  steps.push(claim(at(5 * MIN)));
  steps.push(claim(at(6 * MIN)));
  steps.push(delivered('out-1', 2, at(6 * MIN)));
  steps.push(claim(at(7 * MIN)));
  steps.push(ensure('out-1', 'bob', 'hash-1', at(8 * MIN), { key: 'agenda-sync-still-stuck:fp:1', fingerprint: 'agenda:v1:bob-0' }));
  // A new hash resets a pending item; after delivery it is a payload conflict.
  steps.push(ensure('out-2', 'bob', 'hash-1', at(9 * MIN)));
  steps.push(ensure('out-2', 'bob', 'hash-2', at(10 * MIN), { fingerprint: 'agenda:v1:def' }));
  steps.push(claim(at(11 * MIN)));
  steps.push(ensure('out-2', 'bob', 'hash-2b', at(11 * MIN), { fingerprint: 'agenda:v1:def' }));
  steps.push(claim(at(12 * MIN)));
  steps.push(delivered('out-2', 3, at(12 * MIN)));
  steps.push(ensure('out-2', 'bob', 'hash-3', at(13 * MIN)));
  // A superseded item with the same hash is revived; a finished one cannot be superseded.
  steps.push(ensure('out-3', 'Alice', 'hash-a', at(14 * MIN), { key: 'status-only:agenda:v1:abc' }));
  steps.push(claim(at(15 * MIN)));
  steps.push(superseded('out-3', at(16 * MIN)));
  steps.push(ensure('out-3', 'Alice', 'hash-a', at(17 * MIN), { key: 'status-only:agenda:v1:abc' }));
  steps.push(superseded('out-1', at(17 * MIN)));
  steps.push(claim(at(17 * MIN + 30_000)));
  steps.push(delivered('out-3', 2, at(17 * MIN + 40_000)));
  // A retryable failure waits for its retry time; a late failure after a revival changes nothing.
  steps.push(ensure('out-4', 'carol ', 'hash-c', at(18 * MIN), { key: 'task-protocol-repair:fp:task-1' }));
  steps.push(claim(at(19 * MIN), 1));
  steps.push(failed('out-4', 1, true, at(20 * MIN), at(30 * MIN)));
  steps.push(claim(at(29 * MIN)));
  steps.push(claim(at(30 * MIN)));
  steps.push(failed('out-4', 1, true, at(31 * MIN), at(40 * MIN)));
  steps.push(ensure('out-4', 'carol ', 'hash-c', at(32 * MIN), { key: 'task-protocol-repair:fp:task-1' }));
  steps.push(failed('out-4', 2, true, at(33 * MIN), at(40 * MIN)));
  steps.push(claim(at(34 * MIN)));
  steps.push(failed('out-4', 3, false, at(35 * MIN)));
  steps.push(superseded('out-4', at(35 * MIN + 1)));
  steps.push(ensure('out-4', 'carol ', 'hash-c2', at(36 * MIN)));
  // A claim stamped in the future is stale at once.
  steps.push(ensure('out-5', 'bob', 'hash-5', at(37 * MIN)));
  steps.push(claim(at(24 * 60 * MIN)));
  steps.push(claim(at(38 * MIN)));
  // Claims come oldest due first (nextAttemptAt ?? updatedAt), up to the limit.
  steps.push(ensure('out-6', 'Alice', 'hash-6', at(41 * MIN)));
  steps.push(ensure('out-7', 'carol ', 'hash-7', at(39 * MIN)));
  steps.push(ensure('out-8', 'bob', 'hash-8', at(40 * MIN)));
  steps.push(claim(at(42 * MIN), 2));
  steps.push(claim(at(42 * MIN), 0));
  steps.push(claim(at(43 * MIN), 5));
  // A review pickup, delivered.
  steps.push(ensure('out-9', 'bob', 'hash-9', at(44 * MIN), { intent: 'review_pickup', key: 'review-pickup:ev-1+ev-2', reviewIds: ['ev-1', ' ev-2'] }));
  steps.push(claim(at(45 * MIN)));
  steps.push(delivered('out-9', 1, at(46 * MIN)));
  steps.push(delivered('out-8', 1, at(47 * MIN)));
  // Counts and finds at their bounds.
  const q = (op, input) => steps.push({ op, teamName: TEAM, ...input });
  q('countRecentDelivered', { memberName: 'BOB ', sinceIso: at(6 * MIN), workSyncIntentKeyPrefix: null });
  q('countRecentDelivered', { memberName: 'bob', sinceIso: at(6 * MIN + 1), workSyncIntentKeyPrefix: null });
  q('countRecentDelivered', { memberName: 'bob', sinceIso: at(0), workSyncIntentKeyPrefix: ' agenda-sync-still-stuck: ' });
  q('countRecentDelivered', { memberName: 'bob', sinceIso: at(0), workSyncIntentKeyPrefix: 'review-pickup:' });
  q('countRecentDelivered', { memberName: 'bob', sinceIso: at(0), workSyncIntentKeyPrefix: '   ' });
  q('countDeliveredForAgenda', { memberName: 'bob', agendaFingerprint: ' agenda:v1:bob-0 ', sinceIso: at(6 * MIN) });
  q('countDeliveredForAgenda', { memberName: 'bob', agendaFingerprint: 'agenda:v1:bob-0', sinceIso: at(6 * MIN - 1) });
  q('countDeliveredForAgenda', { memberName: 'bob', agendaFingerprint: 'agenda:v1:abc', sinceIso: null });
  q('countDeliveredForAgenda', { memberName: 'bob', agendaFingerprint: '  ', sinceIso: null });
  q('findReviewPickup', { memberName: 'Bob', reviewRequestEventIds: ['ev-2 ', 'ev-3', '', 'ev-1', 'ev-1'] });
  q('findReviewPickup', { memberName: 'bob', reviewRequestEventIds: [' ', ''] });
  q('findRecovery', { memberName: 'bob', intentKey: ' agenda-sync-still-stuck:fp:1 ', sinceIso: at(6 * MIN) });
  q('findRecovery', { memberName: 'bob', intentKey: 'agenda-sync-still-stuck:fp:1', sinceIso: at(17 * MIN + 1) });
  q('findRecovery', { memberName: 'carol', intentKey: 'task-protocol-repair:fp:task-1', sinceIso: at(0) });
  q('findRecovery', { memberName: 'Alice', intentKey: 'status-only:agenda:v1:abc', sinceIso: at(0) });
  q('findRecovery', { memberName: 'bob', intentKey: '  ', sinceIso: at(0) });
  // Past the cap: 90 more writes of three members, each two or three events; the 200 newest stay.
  const members = ['bob', 'Alice', 'carol '];
  const bulk = [];
  for (let n = 3; n < 93; n += 1) bulk.push(status(members[n % 3], n, { providerId: n % 3 === 0 ? 'anthropic' : undefined }));
  for (const s of bulk.slice(0, 45)) steps.push({ op: 'writeStatus', status: s });
  steps.push({ op: 'writeStatuses', statuses: bulk.slice(45) });
  // A status rewritten with an older evaluation: last writer wins, its events are ids already seen or pruned.
  steps.push({ op: 'writeStatus', status: status('bob', 0, { providerId: 'anthropic' }) });
  return steps;
}
