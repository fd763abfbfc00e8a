// Observables of one side of the behavioural differential and their comparison, shared by the
// recorder (record.mjs, reference side) and the addon-side test (__test__/behavior-subset.test.ts).
// Copied from the behaviour driver's run.mjs (see README.md in this folder): what is projected and
// how two projections are diffed must stay the same as there, so a recording compares like a live run.

import fs from 'node:fs';
import path from 'node:path';

// ------------------------------------------------------------------ projections and diffs
export const plain = (v) => (v === undefined ? undefined : JSON.parse(JSON.stringify(v)));
export const readJsonOr = (file, fallback) => {
  try {
    return JSON.parse(fs.readFileSync(file, 'utf8'));
  } catch {
    return fallback;
  }
};
export const errOf = (e) => ({ error: e?.code && String(e.code).startsWith('MWS_') ? e.code : 'thrown' });
export const msgOf = (e) => String(e?.message ?? e).split('\n')[0].slice(0, 200);

export function projectStatus(s) {
  if (!s || typeof s !== 'object') return s ?? null;
  const r = s.report;
  const sh = s.shadow;
  return {
    state: s.state,
    diagnostics: s.diagnostics,
    fingerprint: s.agenda?.fingerprint,
    itemCount: s.agenda?.items?.length,
    evaluatedAt: s.evaluatedAt,
    providerId: s.providerId,
    report: r
      ? { state: r.state, accepted: r.accepted, rejectionCode: r.rejectionCode, agendaFingerprint: r.agendaFingerprint, reportedAt: r.reportedAt, expiresAt: r.expiresAt, taskIds: r.taskIds, source: r.source }
      : undefined,
    reportToken: s.reportToken,
    reportTokenExpiresAt: s.reportTokenExpiresAt,
    shadow: sh
      ? {
          reconciledBy: sh.reconciledBy,
          wouldNudge: sh.wouldNudge,
          fingerprintChanged: sh.fingerprintChanged,
          previousFingerprint: sh.previousFingerprint,
          triggerReasons: sh.triggerReasons,
          nudgeSuppressionDelivered: sh.nudgeSuppression?.deliveredCount,
          nudgeSuppressionResetAt: sh.nudgeSuppressionResetAt,
        }
      : undefined,
  };
}

/** Field-level diff of two projections: returns [{kind, up, ad}] with kind `${prefix}.${field}`. */
export function diffFields(prefix, up, ad, out) {
  if (up === null || ad === null || typeof up !== 'object' || typeof ad !== 'object' || Array.isArray(up) || Array.isArray(ad)) {
    if (JSON.stringify(up) !== JSON.stringify(ad)) out.push({ kind: prefix, up, ad });
    return out;
  }
  for (const k of new Set([...Object.keys(up), ...Object.keys(ad)])) {
    const u = up[k];
    const a = ad[k];
    if (JSON.stringify(u) === JSON.stringify(a)) continue;
    if (u && a && typeof u === 'object' && typeof a === 'object' && !Array.isArray(u) && !Array.isArray(a)) diffFields(`${prefix}.${k}`, u, a, out);
    else out.push({ kind: `${prefix}.${k}`, up: u, ad: a });
  }
  return out;
}

const taskIdsOf = (refs) => (Array.isArray(refs) ? refs.map((t) => `${t?.taskId ?? ''}${t?.displayId ? `(${t.displayId})` : ''}`).sort() : refs);
function projectOutbox(file) {
  const items = file && typeof file === 'object' && file.items && typeof file.items === 'object' ? Object.values(file.items) : [];
  return items
    .map((i) => ({
      id: i.id,
      status: i.status,
      agendaFingerprint: i.agendaFingerprint,
      intent: i.payload?.workSyncIntent,
      intentKey: i.payload?.workSyncIntentKey,
      reviewRequestEventIds: i.payload?.workSyncReviewRequestEventIds,
      to: i.payload?.to,
      tasks: taskIdsOf(i.payload?.taskRefs),
      attemptGeneration: i.attemptGeneration,
      nextAttemptAt: i.nextAttemptAt,
      deliveredMessageId: i.deliveredMessageId,
      createdAt: i.createdAt,
      updatedAt: i.updatedAt,
    }))
    .sort((l, r) => (l.id < r.id ? -1 : l.id > r.id ? 1 : 0));
}
function projectInbox(rows) {
  if (!Array.isArray(rows)) return rows === null ? [] : { unreadable: true };
  return rows.map((m) => ({
    messageId: m?.messageId,
    from: m?.from,
    to: m?.to,
    messageKind: m?.messageKind,
    source: m?.source,
    workSyncIntent: m?.workSyncIntent,
    workSyncIntentKey: m?.workSyncIntentKey,
    tasks: taskIdsOf(m?.taskRefs),
    timestamp: m?.timestamp,
  }));
}
export function projectMetrics(m) {
  if (!m || m.error) return m;
  return {
    memberCount: m.memberCount,
    stateCounts: m.stateCounts,
    actionableItemCount: m.actionableItemCount,
    wouldNudgeCount: m.wouldNudgeCount,
    fingerprintChangeCount: m.fingerprintChangeCount,
    reportAcceptedCount: m.reportAcceptedCount,
    reportRejectedCount: m.reportRejectedCount,
    readiness: { state: m.phase2Readiness?.state, reasons: m.phase2Readiness?.reasons, rates: m.phase2Readiness?.rates },
    events: (m.recentEvents ?? []).map((e) => `${e.recordedAt} ${e.kind} ${e.memberName} ${e.state} ${e.actionableCount}${e.rejectionCode ? ` ${e.rejectionCode}` : ''}`),
  };
}

// ------------------------------------------------------------------ on-disk observation
function listMemberDirs(teamDir) {
  try {
    return fs.readdirSync(path.join(teamDir, 'members')).sort();
  } catch {
    return [];
  }
}
function readJournalLines(file) {
  try {
    return fs
      .readFileSync(file, 'utf8')
      .split('\n')
      .filter(Boolean)
      .map((l) => {
        try {
          return JSON.parse(l);
        } catch {
          return { event: '<unparseable>' };
        }
      });
  } catch {
    return [];
  }
}
function listInboxes(teamDir) {
  try {
    return fs.readdirSync(path.join(teamDir, 'inboxes')).filter((f) => f.endsWith('.json')).sort();
  } catch {
    return [];
  }
}

/** Snapshot of everything compared on disk for one side. `seen` keeps journal offsets between steps. */
export function observe(teamDir, seen) {
  const out = { status: {}, journal: {}, outbox: {}, inbox: {} };
  for (const key of listMemberDirs(teamDir)) {
    const dir = path.join(teamDir, 'members', key, '.member-work-sync');
    const st = readJsonOr(path.join(dir, 'status.json'), null);
    out.status[key] = st ? projectStatus(st.status ?? st) : null;
    const lines = readJournalLines(path.join(dir, 'journal.jsonl'));
    const from = seen.journal[key] ?? 0;
    out.journal[key] = lines
      .slice(from)
      .filter((l) => !String(l.event).startsWith('queue_'))
      .map((l) => ({ event: l.event, reason: l.reason }));
    seen.journal[key] = lines.length;
    out.outbox[key] = projectOutbox(readJsonOr(path.join(dir, 'outbox.json'), null));
  }
  for (const f of listInboxes(teamDir)) out.inbox[f] = projectInbox(readJsonOr(path.join(teamDir, 'inboxes', f), null));
  return out;
}

export function compareObservations(up, ad, diffs) {
  for (const key of new Set([...Object.keys(up.status), ...Object.keys(ad.status)])) {
    const u = up.status[key];
    const a = ad.status[key];
    if (u === undefined || a === undefined || u === null || a === null) {
      if (JSON.stringify(u ?? null) !== JSON.stringify(a ?? null)) diffs.push({ kind: 'status.file', member: key, up: u ? `status ${u.state}` : 'none', ad: a ? `status ${a.state}` : 'none' });
      continue;
    }
    for (const d of diffFields('status', u, a, [])) diffs.push({ ...d, member: key });
  }
  for (const key of new Set([...Object.keys(up.journal), ...Object.keys(ad.journal)])) {
    const u = up.journal[key] ?? [];
    const a = ad.journal[key] ?? [];
    const uk = u.map((l) => l.event);
    const ak = a.map((l) => l.event);
    if (JSON.stringify(uk) !== JSON.stringify(ak)) diffs.push({ kind: 'journal.kinds', member: key, up: uk, ad: ak });
    else {
      const ur = u.map((l) => `${l.event}:${l.reason ?? ''}`);
      const ar = a.map((l) => `${l.event}:${l.reason ?? ''}`);
      if (JSON.stringify(ur) !== JSON.stringify(ar)) diffs.push({ kind: 'journal.reasons', member: key, up: ur, ad: ar });
    }
  }
  for (const key of new Set([...Object.keys(up.outbox), ...Object.keys(ad.outbox)])) {
    const u = up.outbox[key] ?? [];
    const a = ad.outbox[key] ?? [];
    if (JSON.stringify(u) === JSON.stringify(a)) continue;
    const uIds = u.map((i) => i.id).join();
    const aIds = a.map((i) => i.id).join();
    if (uIds !== aIds) diffs.push({ kind: 'outbox.items', member: key, up: u.map((i) => `${i.intent}:${i.status}:${i.id}`), ad: a.map((i) => `${i.intent}:${i.status}:${i.id}`) });
    else for (let n = 0; n < u.length; n++) for (const d of diffFields('outbox', u[n], a[n], [])) diffs.push({ ...d, member: key });
  }
  for (const key of new Set([...Object.keys(up.inbox), ...Object.keys(ad.inbox)])) {
    const u = up.inbox[key] ?? [];
    const a = ad.inbox[key] ?? [];
    if (JSON.stringify(u) !== JSON.stringify(a)) diffs.push({ kind: 'inbox', member: key, up: u, ad: a });
  }
}

// ------------------------------------------------------------------ board edits (applied to both roots)
function taskFiles(tasksDir) {
  try {
    return fs
      .readdirSync(tasksDir)
      .filter((f) => f.endsWith('.json') && !f.startsWith('.'))
      .sort();
  } catch {
    return [];
  }
}
export function editableTasks(tasksDir) {
  const out = [];
  for (const f of taskFiles(tasksDir)) {
    const t = readJsonOr(path.join(tasksDir, f), null);
    if (t && typeof t === 'object' && !Array.isArray(t) && (typeof t.id === 'string' || typeof t.id === 'number')) out.push({ file: f, task: t });
  }
  return out;
}


// ------------------------------------------------------------------ compact storage of a side's observations
const SECTIONS = ['status', 'outbox', 'inbox'];

/**
 * What changed from `prev` to `obs` (both from observe()): per section, only the entries whose
 * projection changed, `gone` for entries that disappeared, and only non-empty journal slices.
 * expandObservation(prev, delta) gives `obs` back; a recording stores deltas to stay small.
 */
export function compactObservation(prev, obs) {
  const delta = {};
  for (const section of SECTIONS) {
    for (const [key, value] of Object.entries(obs[section])) {
      if (prev && JSON.stringify(prev[section][key]) === JSON.stringify(value)) continue;
      (delta[section] ??= {})[key] = value;
    }
    for (const key of Object.keys(prev?.[section] ?? {})) if (!(key in obs[section])) (delta.gone ??= []).push(`${section}/${key}`);
  }
  for (const [key, lines] of Object.entries(obs.journal)) if (lines.length) (delta.journal ??= {})[key] = lines;
  return delta;
}

/** Inverse of compactObservation. */
export function expandObservation(prev, delta) {
  const obs = { status: {}, journal: {}, outbox: {}, inbox: {} };
  for (const section of SECTIONS) Object.assign(obs[section], prev?.[section], delta[section]);
  for (const entry of delta.gone ?? []) {
    const [section, ...key] = entry.split('/');
    delete obs[section][key.join('/')];
  }
  for (const key of Object.keys(obs.status)) obs.journal[key] = delta.journal?.[key] ?? [];
  Object.assign(obs.journal, delta.journal);
  return obs;
}
