// Records what the reference's own code does with a team's files in a SQLite session, into
// tests/fixtures/sqlite/team-files-recording.json, which tests/sqlite_team_files.rs replays
// against the addon (the replica, the importer's merge, team identity):
//
// - replica: the steps of scenario.mjs, each run as one call of the app's
//   BackendSelectingMemberWorkSyncStore (replica fence, importer, op, clean publication); the
//   replica file after every step (its envelope updatedAt, a wall-clock time, blanked);
// - prepare: a database and a clean replica that disagree (every merge rule, case aliases in
//   the database), then one read: the rows and the replica after; also a dirty replica (ignored
//   under integrity ok) and a clean replica of another team (refused);
// - merge: mergeMemberWorkSyncSnapshots on record sets (ties, invalid times, duplicates inside
//   one side, the 200-event cap, member-key folding).
//
//   node scripts/sqlite-reference/record-team-files.mjs --mirror DIR --deps DIR [--out FILE]
//
// Same --mirror and --deps as record.mjs. No reference code is stored.
import { createHash } from 'node:crypto';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { parseArgs } from 'node:util';

import { loadReference, rowsOf, run, TABLES } from './record.mjs';
import { scenario } from './scenario.mjs';

const sha256 = (text) => createHash('sha256').update(text).digest('hex');
const here = path.dirname(fileURLToPath(import.meta.url));
const BASE = Date.parse('2026-07-07T10:00:00.000Z');
const at = (ms) => new Date(BASE + ms).toISOString();
const MIN = 60_000;
const MUTATIONS = new Set([
  'writeStatus',
  'writeStatuses',
  'appendReport',
  'markProcessed',
  'ensure',
  'claim',
  'markDelivered',
  'markFailed',
  'markSuperseded',
]);
export const UPDATED_AT_BLANK = '<updatedAt>';

/** The replica file's text with the envelope's wall-clock updatedAt blanked (the first,
 * top-level one; the snapshot's own updatedAt fields are deeper). */
export function blankUpdatedAt(text) {
  return text.replace(/^ {2}"updatedAt": "[^"]*"/m, `  "updatedAt": "${UPDATED_AT_BLANK}"`);
}

function teamOf(step) {
  return step.teamName ?? step.status?.teamName ?? step.statuses?.[0]?.teamName ?? step.intent?.teamName;
}

/** A reference SQLite session on a fresh database and teams folder. */
async function session(reference, work, name, { backend = 'sqlite', wrapGateway = (g) => g, requiresReplica = false } = {}) {
  const { mod, Database } = reference;
  const root = path.join(work, name);
  const teams = path.join(root, 'claude', 'teams');
  fs.mkdirSync(teams, { recursive: true });
  const databasePath = path.join(root, 'storage', 'app.db');
  const core = new mod.InternalStorageWorkerCore({ databasePath, createDatabase: (p) => new Database(p) });
  const gateway = new mod.InProcessGateway(core);
  await gateway.ping();
  const paths = new mod.MemberWorkSyncStorePaths(teams);
  const jsonStore = new mod.JsonMemberWorkSyncStore(paths);
  const importer = new mod.MemberWorkSyncSqliteImporter({ gateway, jsonStore });
  const sqliteStore = new mod.SqliteMemberWorkSyncStore({
    gateway,
    importer,
    buildReportIntentId: () => {
      throw new Error('the scenario gives intent ids');
    },
  });
  const selector = {
    select: async (sqlite, json) => (backend === 'sqlite' ? sqlite : json),
    getBackendInfo: () => ({ integrity: 'ok' }),
  };
  const store = new mod.BackendSelectingMemberWorkSyncStore(selector, sqliteStore, jsonStore, {
    gateway: wrapGateway(gateway),
    paths,
    fallbackRequiresReplica: requiresReplica,
  });
  const db = new Database(databasePath);
  const call = (team, mutation, action) =>
    store.run(team, mutation, action, () => {
      throw new Error('not a JSON session');
    });
  return { core, gateway, paths, store, sqliteStore, db, call, teams, claude: path.dirname(teams) };
}

async function recordReplica(reference, work) {
  const s = await session(reference, work, 'replica');
  const steps = [];
  let previous = null;
  for (const step of scenario()) {
    const team = teamOf(step);
    const result = await s.call(team, MUTATIONS.has(step.op), () => run(s.sqliteStore, s.gateway, reference.mod, step));
    const text = blankUpdatedAt(fs.readFileSync(s.paths.getSqliteFallbackReplicaPath(team), 'utf8'));
    // A replica is recorded only when it changed since the previous step: in full at the first
    // and the last step, as its length and sha256 in between.
    const full = steps.length === 0 || steps.length === scenario().length - 1;
    const replica = text === previous ? null : full ? text : { bytes: Buffer.byteLength(text), sha256: sha256(text) };
    steps.push({ op: step.op, team, result: result ?? null, replica });
    previous = text;
  }
  s.db.close();
  s.core.close();
  return steps;
}

function statusOf(team, member, evaluatedAt, extra = {}) {
  return {
    teamName: team,
    memberName: member,
    state: extra.state ?? 'needs_sync',
    agenda: {
      teamName: team,
      memberName: member.trim().toLowerCase(),
      generatedAt: evaluatedAt,
      fingerprint: extra.fingerprint ?? `agenda:v1:${member.trim().toLowerCase()}`,
      items: [],
      diagnostics: [],
    },
    ...(extra.report ? { report: extra.report } : {}),
    evaluatedAt,
    diagnostics: [],
    ...(extra.providerId ? { providerId: extra.providerId } : {}),
  };
}

function intentOf(team, id, member, status, recordedAt, processedAt) {
  return {
    id,
    teamName: team,
    memberName: member,
    request: { teamName: team, memberName: member, state: 'caught_up', agendaFingerprint: 'agenda:v1:x', reportToken: 't' },
    reason: 'control_api_unavailable',
    status,
    recordedAt,
    ...(processedAt ? { processedAt, resultCode: status === 'accepted' ? 'accepted' : 'stale_fingerprint' } : {}),
  };
}

function outboxOf(team, id, member, status, attemptGeneration, updatedAt, extra = {}) {
  return {
    id,
    teamName: team,
    memberName: member,
    agendaFingerprint: 'agenda:v1:x',
    payloadHash: extra.payloadHash ?? 'hash-1',
    payload: {
      to: member,
      text: 'sync',
      taskRefs: [{ teamName: 'other-team', taskId: 't1', displayId: 'abc' }],
      workSyncIntent: 'agenda_sync',
      ...(extra.reviewIds ? { workSyncIntent: 'review_pickup', workSyncReviewRequestEventIds: extra.reviewIds } : {}),
    },
    status,
    attemptGeneration,
    ...(status === 'claimed' ? { claimedBy: 'dispatcher', claimedAt: updatedAt } : {}),
    ...(status === 'delivered' ? { deliveredMessageId: `${id}-message` } : {}),
    ...(extra.lastError ? { lastError: extra.lastError } : {}),
    createdAt: at(0),
    updatedAt,
  };
}

function eventOf(team, id, member, recordedAt, kind = 'status_evaluated', actionableCount = 1) {
  return {
    teamName: team,
    memberName: member,
    state: 'needs_sync',
    agendaFingerprint: 'agenda:v1:x',
    recordedAt,
    actionableCount,
    id,
    kind,
  };
}

const domain = (parts) => ({
  statuses: [],
  reportIntents: [],
  outboxItems: [],
  metricEvents: [],
  filesToArchive: [],
  ...parts,
});

/** A database and a clean replica of Team-A that disagree on every rule. */
function disagreeing() {
  const T = 'Team-A';
  const database = domain({
    statuses: [
      statusOf(T, 'bob', at(1 * MIN)),
      statusOf(T, 'alice', at(1 * MIN), { providerId: 'anthropic' }),
      statusOf(T, 'carol', at(3 * MIN)),
      statusOf(T, 'dave', at(1 * MIN)),
    ],
    reportIntents: [
      intentOf(T, 'i1', 'bob', 'accepted', at(0), at(2 * MIN)),
      intentOf(T, 'i2', 'bob', 'pending', at(0)),
      intentOf(T, 'i3', 'alice', 'rejected', at(0), at(2 * MIN)),
      intentOf(T, 'i4', 'alice', 'accepted', at(0), at(2 * MIN)),
      intentOf(T, 'i5', 'carol', 'pending', at(1 * MIN)),
    ],
    outboxItems: [
      outboxOf(T, 'o1', 'bob', 'pending', 99, at(5 * MIN)),
      outboxOf(T, 'o2', 'bob', 'delivered', 1, at(2 * MIN)),
      outboxOf(T, 'o3', 'alice', 'claimed', 2, at(2 * MIN)),
      outboxOf(T, 'o4', 'alice', 'pending', 1, at(2 * MIN)),
      outboxOf(T, 'o5', 'dave', 'failed_retryable', 1, at(2 * MIN), { lastError: 'busy' }),
    ],
    metricEvents: [eventOf(T, 'e1', 'bob', at(1 * MIN)), eventOf(T, 'e2', 'bob', at(2 * MIN))],
  });
  const replica = domain({
    statuses: [
      statusOf(T, 'bob', at(2 * MIN), { state: 'caught_up' }),
      statusOf(T, 'alice', at(1 * MIN), { state: 'still_working' }),
      statusOf(T, 'carol', at(2 * MIN), { state: 'blocked' }),
      statusOf(T, 'erin', at(2 * MIN)),
    ],
    reportIntents: [
      intentOf(T, 'i1', 'bob', 'pending', at(1 * MIN)),
      intentOf(T, 'i2', 'bob', 'rejected', at(0), at(3 * MIN)),
      intentOf(T, 'i3', 'alice', 'accepted', at(0), at(3 * MIN)),
      intentOf(T, 'i4', 'alice', 'rejected', at(0), at(2 * MIN)),
      intentOf(T, 'i5', 'carol', 'pending', at(1 * MIN)),
    ],
    outboxItems: [
      outboxOf(T, 'o1', 'bob', 'delivered', 1, at(1 * MIN)),
      outboxOf(T, 'o2', 'bob', 'failed_terminal', 5, at(9 * MIN), { lastError: 'gone' }),
      outboxOf(T, 'o3', 'alice', 'pending', 1, at(9 * MIN)),
      outboxOf(T, 'o4', 'alice', 'superseded', 1, at(3 * MIN), { lastError: 'agenda_changed' }),
      outboxOf(T, 'o6', 'erin', 'pending', 0, at(1 * MIN), { reviewIds: ['r2', 'r1'] }),
    ],
    metricEvents: [eventOf(T, 'e1', 'bob', at(1 * MIN), 'would_nudge', 3), eventOf(T, 'e3', 'erin', at(30_000))],
  });
  return { database, replica };
}

/** The replica file the app writes for `snapshot`. */
function replicaText(state, snapshot) {
  const envelope = { schemaVersion: 1, state, updatedAt: at(0), ...(snapshot ? { snapshot } : {}) };
  return `${JSON.stringify(envelope, null, 2)}\n`;
}

async function recordPrepare(reference, work) {
  const { mod } = reference;
  const s = await session(reference, work, 'prepare');
  const { database, replica } = disagreeing();
  const cases = [
    { team: 'Team-A', database, replica: replicaText('clean', replica) },
    { team: 'team-d', database: domain({ statuses: [statusOf('team-d', 'bob', at(MIN))] }), replica: replicaText('dirty') },
    {
      team: 'team-x',
      database: domain({ statuses: [statusOf('team-x', 'bob', at(MIN))] }),
      replica: replicaText('clean', domain({ statuses: [statusOf('team-y', 'bob', at(MIN))] })),
    },
  ];
  const recorded = [];
  for (const c of cases) {
    await s.gateway.importTeam(c.team, mod.snapshotToRecords(c.team, c.database));
    if (c.team === 'Team-A') {
      // Rows stranded under case and whitespace aliases of the team.
      s.db.prepare("UPDATE member_work_sync_status SET team_name = ' TEAM-A' WHERE member_key = 'dave'").run();
      s.db.prepare("UPDATE member_work_sync_outbox SET team_name = 'team-a' WHERE id = 'o5'").run();
      s.db.prepare("UPDATE member_work_sync_metric_events SET team_name = 'team-a' WHERE id = 'e2'").run();
    }
    const seed = rowsOf(s.db);
    const replicaPath = s.paths.getSqliteFallbackReplicaPath(c.team);
    fs.mkdirSync(path.dirname(replicaPath), { recursive: true });
    fs.writeFileSync(replicaPath, c.replica);
    let result;
    try {
      result = { pending: (await s.store.listPendingReports(c.team)).map((i) => i.id) };
    } catch (error) {
      result = { error: String(error.message) };
    }
    recorded.push({
      team: c.team,
      seed,
      replicaBefore: c.replica,
      result,
      rows: rowsOf(s.db),
      replicaAfter: blankUpdatedAt(fs.readFileSync(replicaPath, 'utf8')),
    });
    for (const t of TABLES) s.db.prepare(`DELETE FROM ${t}`).run();
  }
  s.db.close();
  s.core.close();
  return recorded;
}

function recordMerge({ mod }) {
  const T = 'Team-A';
  const { database, replica } = disagreeing();
  const events = (n, offset, team) =>
    Array.from({ length: n }, (_, i) => eventOf(team, `ev-${String(i + offset).padStart(3, '0')}`, 'bob', at((i + offset) * 1000)));
  const cases = [
    { name: 'disagreeing', canonical: database, incoming: replica },
    {
      name: 'invalid times lose, ties go to incoming, duplicates fold in order',
      canonical: domain({
        statuses: [statusOf(T, 'bob', 'not a time'), statusOf(T, 'Bob', at(MIN), { state: 'blocked' })],
        reportIntents: [intentOf(T, 'i1', 'bob', 'accepted', at(0), 'never'), intentOf(T, 'i2', 'bob', 'pending', at(MIN))],
        outboxItems: [outboxOf(T, 'o1', 'bob', 'pending', 3, at(MIN)), outboxOf(T, 'o1', 'bob', 'pending', 2, at(9 * MIN))],
      }),
      incoming: domain({
        statuses: [statusOf('team-a', 'BOB ', 'garbage', { state: 'caught_up' }), statusOf(T, 'carol', 'x'), statusOf(T, 'carol', 'y', { state: 'blocked' })],
        reportIntents: [intentOf(' TEAM-A', 'i1', 'bob', 'rejected', at(0), at(MIN)), intentOf(T, 'i2', 'bob', 'pending', at(MIN))],
        outboxItems: [outboxOf('team-a', 'o1', 'bob', 'pending', 3, at(MIN), { payloadHash: 'hash-2' })],
      }),
    },
    {
      name: 'the 200 newest events, a duplicate id takes the incoming value',
      canonical: domain({ metricEvents: events(150, 0, T) }),
      incoming: domain({ metricEvents: [...events(120, 100, 'team-a'), eventOf(T, 'ev-010', 'bob', at(500_000), 'would_nudge')] }),
    },
  ];
  return cases.map((c) => {
    const canonical = mod.snapshotToRecords(T, c.canonical);
    const incoming = mod.snapshotToRecords(T, c.incoming);
    // snapshotToRecords already routes to T; keep the aliases the case spells.
    c.canonical.statuses.forEach((s, i) => (canonical.statuses[i].teamName = s.teamName));
    c.incoming.statuses.forEach((s, i) => (incoming.statuses[i].teamName = s.teamName));
    c.incoming.reportIntents.forEach((r, i) => (incoming.reportIntents[i].teamName = r.teamName));
    c.incoming.outboxItems.forEach((r, i) => (incoming.outboxItems[i].teamName = r.teamName));
    c.incoming.metricEvents.forEach((r, i) => (incoming.metricEvents[i].teamName = r.teamName));
    return { name: c.name, team: T, canonical, incoming, merged: mod.mergeMemberWorkSyncSnapshots(T, canonical, incoming) };
  });
}


const json = (value) => `${JSON.stringify(value, null, 2)}\n`;

/** Every file under `root` (relative, sorted), quarantine times blanked. */
function tree(root) {
  const out = [];
  const walk = (dir) => {
    for (const entry of fs.readdirSync(dir, { withFileTypes: true })) {
      const full = path.join(dir, entry.name);
      if (entry.isDirectory()) walk(full);
      else out.push(path.relative(root, full).split(path.sep).join('/').replace(/\.invalid\.\d+$/, '.invalid.<ms>'));
    }
  };
  if (fs.existsSync(root)) walk(root);
  return out.sort();
}

/** The import scenarios: files and rows before, then calls, each in a new session when asked. */
function importScenarios() {
  const A = 'team-a';
  const dir = (member) => `${A}/members/${encodeURIComponent(member.trim().toLowerCase())}/.member-work-sync`;
  const team = `${A}/.member-work-sync`;
  const canonical = domain({
    statuses: [statusOf(A, 'bob', at(1 * MIN)), statusOf(A, 'dave', at(1 * MIN))],
    reportIntents: [intentOf(A, 'i1', 'bob', 'pending', at(0)), intentOf(A, 'i9', 'dave', 'accepted', at(0), at(MIN))],
    outboxItems: [outboxOf(A, 'o1', 'bob', 'pending', 99, at(5 * MIN)), outboxOf(A, 'o9', 'dave', 'delivered', 1, at(MIN))],
    metricEvents: [eventOf(A, 'e0', 'dave', at(0))],
  });
  const live = {
    [`${A}/members/bob/member.meta.json`]: json({ schemaVersion: 1, memberName: 'bob', memberKey: 'bob' }),
    [`${dir('bob')}/status.json`]: json({ schemaVersion: 2, status: statusOf(A, 'bob', at(3 * MIN), { state: 'caught_up' }) }),
    [`${dir('bob')}/reports.json`]: json({ schemaVersion: 2, intents: { i1: intentOf(A, 'i1', 'bob', 'accepted', at(0), at(2 * MIN)), i2: intentOf(A, 'i2', 'bob', 'pending', at(MIN)) } }),
    [`${dir('bob')}/outbox.json`]: json({ schemaVersion: 2, items: { o1: outboxOf(A, 'o1', 'bob', 'delivered', 1, at(2 * MIN)), ox: outboxOf('team-b', 'ox', 'bob', 'pending', 0, at(MIN)) } }),
    [`${dir('carol')}/status.json`]: json({ schemaVersion: 2, status: statusOf(A, 'carol', at(2 * MIN)) }),
    [`${dir('erin')}/reports.json`]: '{ not json',
    [`${A}/members/erin/member.meta.json`]: json({ schemaVersion: 1, memberName: 'Erin' }),
    [`${team}/status.json`]: json({
      schemaVersion: 1,
      members: { bob: statusOf(A, 'bob', at(9 * MIN), { state: 'blocked' }), frank: statusOf(A, 'Frank', at(MIN)), gus: statusOf('team-b', 'gus', at(MIN)) },
      metrics: { recentEvents: [eventOf(A, 'e1', 'bob', at(MIN)), eventOf('team-b', 'e-foreign', 'gus', at(MIN))] },
    }),
    [`${team}/pending-reports.json`]: json({ schemaVersion: 1, intents: { i2: intentOf(A, 'i2', 'bob', 'pending', at(2 * MIN)), i3: intentOf(A, 'i3', 'Frank', 'pending', at(MIN)) } }),
    [`${team}/outbox.json`]: json({ schemaVersion: 1, items: { o1: outboxOf(A, 'o1', 'bob', 'pending', 7, at(9 * MIN)), o3: outboxOf(A, 'o3', 'Frank', 'pending', 0, at(MIN)) } }),
    [`${team}/indexes/metrics.json`]: json({ schemaVersion: 2, members: {}, recentEvents: [eventOf(A, 'e1', 'bob', at(MIN), 'would_nudge'), eventOf(A, 'e2', 'carol', at(2 * MIN))] }),
    [`${team}/indexes/outbox-index.json`]: json({ schemaVersion: 2, items: {} }),
    [`${team}/indexes/pending-reports-index.json`]: json({ schemaVersion: 2, items: {} }),
    [`${team}/status.json.pre-sqlite`]: json({ schemaVersion: 1, members: {} }),
  };
  const blockers = Object.fromEntries(
    Array.from({ length: 100 }, (_, i) => [`${dir('bob')}/reports.json.pre-sqlite${i === 0 ? '' : `-${i + 1}`}`, '{}\n'])
  );
  const archived = {
    [`${A}/members/bob/member.meta.json`]: json({ schemaVersion: 1, memberName: 'bob' }),
    [`${dir('bob')}/status.json.pre-sqlite`]: json({ schemaVersion: 2, status: statusOf(A, 'bob', at(1 * MIN)) }),
    [`${dir('bob')}/status.json.pre-sqlite-2`]: json({ schemaVersion: 2, status: statusOf(A, 'bob', at(2 * MIN), { state: 'blocked' }) }),
    [`${dir('bob')}/status.json.pre-sqlite-10`]: json({ schemaVersion: 2, status: statusOf(A, 'bob', at(0), { state: 'caught_up' }) }),
    [`${dir('bob')}/outbox.json.pre-sqlite`]: json({ schemaVersion: 2, items: { o1: outboxOf(A, 'o1', 'bob', 'delivered', 1, at(MIN)) } }),
    [`${dir('bob')}/outbox.json.pre-sqlite-2`]: json({ schemaVersion: 2, items: { o1: outboxOf(A, 'o1', 'bob', 'pending', 50, at(9 * MIN)), o2: outboxOf(A, 'o2', 'bob', 'pending', 0, at(MIN)) } }),
    [`${dir('bob')}/reports.json.pre-sqlite-2`]: 'garbage',
    [`${team}/pending-reports.json.pre-sqlite`]: json({ schemaVersion: 1, intents: { i1: intentOf(A, 'i1', 'bob', 'rejected', at(0), at(MIN)) } }),
    [`${team}/pending-reports.json.pre-sqlite-3`]: json({ schemaVersion: 1, intents: { i1: intentOf(A, 'i1', 'bob', 'pending', at(5 * MIN)) } }),
    [`${team}/indexes/metrics.json.pre-sqlite`]: json({ schemaVersion: 2, members: {}, recentEvents: [eventOf(A, 'e1', 'bob', at(MIN))] }),
  };
  return [
    { name: 'live files over canonical rows', files: live, canonical, calls: [{ session: 1 }, { session: 1 }] },
    {
      name: 'a partial archive is retried from the surviving subset',
      files: { ...live, ...blockers },
      canonical,
      calls: [
        { session: 1 },
        {
          session: 2,
          remove: Object.keys(blockers).slice(1),
          write: { [`${dir('bob')}/outbox.json`]: json({ schemaVersion: 2, items: { o1: outboxOf(A, 'o1', 'bob', 'delivered', 2, at(8 * MIN)) } }) },
        },
      ],
    },
    {
      name: 'a lost marker rebuilds from archives in numeric order, a present one skips them',
      files: archived,
      canonical: domain({}),
      calls: [{ session: 1 }, { session: 2, write: { [`${dir('bob')}/status.json.pre-sqlite-11`]: json({ schemaVersion: 2, status: statusOf(A, 'bob', at(99 * MIN)) }) } }],
    },
    {
      name: 'stranded case aliases are folded with the marker set',
      files: {},
      canonical,
      aliases: true,
      marker: true,
      team: 'Team-A',
      calls: [{ session: 1 }],
    },
  ];
}

async function recordImport(reference, work) {
  const recorded = [];
  for (const [n, scenario] of importScenarios().entries()) {
    const name = `import-${n}`;
    const routing = scenario.team ?? 'team-a';
    let s = await session(reference, work, name);
    for (const [rel, text] of Object.entries(scenario.files)) {
      fs.mkdirSync(path.dirname(path.join(s.teams, rel)), { recursive: true });
      fs.writeFileSync(path.join(s.teams, rel), text);
    }
    await s.gateway.importTeam('team-a', reference.mod.snapshotToRecords('team-a', scenario.canonical));
    if (scenario.aliases) {
      s.db.prepare("UPDATE member_work_sync_status SET team_name = ' TEAM-A' WHERE member_key = 'dave'").run();
      s.db.prepare("UPDATE member_work_sync_outbox SET team_name = 'TEAM-A' WHERE id = 'o9'").run();
    }
    if (scenario.marker) await s.gateway.recordStoreImport('member-work-sync', routing, 0);
    s.db.prepare("UPDATE store_imports SET imported_at = '<importedAt>'").run();
    const seed = rowsOf(s.db);
    const calls = [];
    let current = 1;
    for (const call of scenario.calls) {
      if (call.session !== current) {
        // A new app session (a new process) on the same database and files.
        s.db.close();
        s.core.close();
        s = await session(reference, work, name);
        current = call.session;
      }
      for (const rel of call.remove ?? []) fs.rmSync(path.join(s.teams, rel));
      for (const [rel, text] of Object.entries(call.write ?? {})) fs.writeFileSync(path.join(s.teams, rel), text);
      let result;
      try {
        result = { pending: (await s.store.listPendingReports(routing)).map((i) => i.id) };
      } catch (error) {
        result = { error: String(error.message).replace(s.teams, '<teams>') };
      }
      const rows = rowsOf(s.db);
      rows.store_imports = rows.store_imports.map((r) => ({ ...r, imported_at: '<importedAt>' }));
      const replicaPath = s.paths.getSqliteFallbackReplicaPath(routing);
      calls.push({
        remove: call.remove ?? [],
        write: call.write ?? {},
        newSession: call.session,
        result,
        rows,
        files: tree(s.teams),
        replica: fs.existsSync(replicaPath) ? blankUpdatedAt(fs.readFileSync(replicaPath, 'utf8')) : null,
      });
    }
    s.db.close();
    s.core.close();
    recorded.push({ name: scenario.name, team: routing, files: scenario.files, seed, calls });
  }
  return recorded;
}


/** Every file under `root` with its text (quarantine times blanked, replica updatedAt blanked). */
function treeWithText(root) {
  return Object.fromEntries(
    tree(root).map((rel) => {
      const text = fs.readFileSync(path.join(root, rel), 'utf8');
      return [rel, rel.endsWith('sqlite-fallback-replica.json') ? blankUpdatedAt(text) : text];
    })
  );
}

/** Purge scenarios: state before (files under the Claude root, rows), then calls. The addon
 * replays from `replayFrom` on (earlier calls are the reference's own JSON-session or crashed
 * steps, whose end state the replay starts from). */
function purgeScenarios() {
  const A = 'team-a';
  const dir = (member) => `teams/${A}/members/${member}/.member-work-sync`;
  const team = `teams/${A}/.member-work-sync`;
  const canonical = domain({
    statuses: [statusOf(A, 'bob', at(1 * MIN))],
    reportIntents: [intentOf(A, 'i1', 'bob', 'pending', at(0))],
    outboxItems: [outboxOf(A, 'o9', 'bob', 'delivered', 1, at(MIN))],
    metricEvents: [eventOf(A, 'e0', 'bob', at(0))],
  });
  const files = (identity) => ({
    [`teams/${A}/config.json`]: json({ name: A, _backupIdentityId: identity }),
    [`teams/${A}/members/bob/member.meta.json`]: json({ schemaVersion: 1, memberName: 'bob' }),
    [`${dir('bob')}/status.json`]: json({ schemaVersion: 2, status: statusOf(A, 'bob', at(2 * MIN)) }),
    [`${dir('bob')}/outbox.json`]: json({ schemaVersion: 2, items: {} }),
    [`${dir('bob')}/journal.jsonl`]: '{"kind":"x"}\n',
    [`${dir('bob')}/reports.json.pre-sqlite`]: json({ schemaVersion: 2, intents: {} }),
    [`${team}/indexes/metrics.json`]: json({ schemaVersion: 2, members: {}, recentEvents: [] }),
    [`${team}/report-token-secret.json`]: json({ secret: 'kept' }),
    [`${team}/status.json.pre-sqlite`]: json({ schemaVersion: 1, members: {} }),
    [`${team}/foreign.txt`]: 'kept\n',
  });
  const recreated = {
    [`teams/${A}/config.json`]: json({ name: A, _backupIdentityId: 'del-2' }),
    [`teams/${A}/members/carol/member.meta.json`]: json({ schemaVersion: 1, memberName: 'carol' }),
    [`teams/${A}/members/carol/.member-work-sync/status.json`]: json({ schemaVersion: 2, status: statusOf(A, 'carol', at(5 * MIN)) }),
  };
  const oldMarker = json({ schemaVersion: 2, teamName: A, deletionIdentityId: 'del-1', teamRootIdentity: null, activeJsonStateCleared: false });
  return [
    { name: 'a purge in a SQLite session', files: files('del-1'), canonical, replayFrom: 0, calls: [{ purge: 'del-1' }, {}] },
    {
      name: 'a marker left by a crash before the empty commit is finished at the next access',
      files: files('del-1'),
      canonical,
      replayFrom: 1,
      calls: [{ purge: 'del-1', crashImport: true }, {}],
    },
    {
      name: 'a marker of a replaced generation is dropped, the new team imported as the exact state',
      files: { ...recreated, [`.member-work-sync-deletions/${A}.json`]: oldMarker },
      canonical,
      replayFrom: 0,
      calls: [{}],
    },
    {
      name: 'a second deletion id on the current generation is refused',
      files: {
        ...recreated,
        [`.member-work-sync-deletions/${A}.json`]: json({ schemaVersion: 2, teamName: A, deletionIdentityId: 'del-2', teamRootIdentity: null, activeJsonStateCleared: false }),
      },
      canonical,
      replayFrom: 0,
      calls: [{ purge: 'del-3' }],
    },
    {
      name: 'a JSON-session purge is finished by the next SQLite session',
      files: files('del-1'),
      canonical,
      replayFrom: 1,
      calls: [{ purge: 'del-1', backend: 'json' }, {}],
    },
  ];
}

async function recordPurge(reference, work) {
  const recorded = [];
  for (const [n, scenario] of purgeScenarios().entries()) {
    const name = `purge-${n}`;
    const open = (call) =>
      session(reference, work, name, {
        backend: call.backend ?? 'sqlite',
        wrapGateway: (g) =>
          call.crashImport
            ? Object.assign(Object.create(g), {
                importTeam: async () => {
                  throw new Error('simulated crash before the purge commit');
                },
              })
            : g,
      });
    let s = await open({});
    const write = (files) => {
      for (const [rel, text] of Object.entries(files)) {
        fs.mkdirSync(path.dirname(path.join(s.claude, rel)), { recursive: true });
        fs.writeFileSync(path.join(s.claude, rel), text);
      }
    };
    const isMarker = (rel) => rel.startsWith('.member-work-sync-deletions/');
    write(Object.fromEntries(Object.entries(scenario.files).filter(([rel]) => !isMarker(rel))));
    await s.gateway.importTeam('team-a', reference.mod.snapshotToRecords('team-a', scenario.canonical));
    // A clean replica of those rows, as an earlier session left it; then the marker.
    await s.call('team-a', false, async () => null);
    write(Object.fromEntries(Object.entries(scenario.files).filter(([rel]) => isMarker(rel))));
    const calls = [];
    for (const call of scenario.calls) {
      // Every call in a new session (a new process) on the same database and files.
      s.db.close();
      s.core.close();
      s = await open(call);
      const before = { files: treeWithText(s.claude), rows: rowsOf(s.db) };
      before.rows.store_imports = before.rows.store_imports.map((r) => ({ ...r, imported_at: '<importedAt>' }));
      let result;
      try {
        result = call.purge
          ? (await s.store.purgeTeam('team-a', call.purge), { purged: true })
          : { pending: (await s.store.listPendingReports('team-a')).map((x) => x.id) };
      } catch (error) {
        result = { error: String(error.message) };
      }
      const rows = rowsOf(s.db);
      rows.store_imports = rows.store_imports.map((r) => ({ ...r, imported_at: '<importedAt>' }));
      calls.push({ purge: call.purge ?? null, backend: call.backend ?? 'sqlite', before, result, rows, files: treeWithText(s.claude) });
    }
    s.db.close();
    s.core.close();
    recorded.push({ name: scenario.name, replayFrom: scenario.replayFrom, calls });
  }
  return recorded;
}

/** Hydration scenarios of a JSON session: files under the Claude root and the
 * replica's text before the session's first call of the team. */
function hydrateScenarios() {
  const A = 'team-a';
  const live = Object.fromEntries(
    Object.entries(importScenarios()[0].files).map(([rel, text]) => [`teams/${rel}`, text])
  );
  const events = (n, offset, team) =>
    Array.from({ length: n }, (_, i) => eventOf(team, `ev-${String(i + offset).padStart(3, '0')}`, 'bob', at((i + offset) * 1000)));
  const replica = domain({
    statuses: [
      statusOf(A, 'bob', at(9 * MIN), { state: 'still_working', providerId: 'anthropic' }),
      statusOf('TEAM-A ', 'carol', at(1 * MIN), { state: 'blocked' }),
      statusOf(A, 'Dave', at(4 * MIN)),
    ],
    reportIntents: [
      intentOf(A, 'i1', 'bob', 'rejected', at(0), at(2 * MIN)),
      intentOf(A, 'i2', 'bob', 'pending', at(3 * MIN)),
      intentOf('Team-A', 'i3', 'Frank', 'accepted', at(0), at(MIN)),
      intentOf(A, 'i7', 'Dave', 'pending', at(MIN)),
    ],
    outboxItems: [
      outboxOf(A, 'o1', 'bob', 'pending', 9, at(9 * MIN)),
      outboxOf(A, 'o3', 'Frank', 'delivered', 1, at(MIN)),
      outboxOf(A, 'o7', 'Dave', 'failed_retryable', 2, at(2 * MIN), { lastError: 'busy', nextAttemptAt: at(7 * MIN) }),
    ],
    metricEvents: [...events(190, 0, A), eventOf(A, 'e1', 'bob', at(MIN), 'report_accepted', 0), eventOf('Team-A', 'e9', 'Dave', at(MIN))],
  });
  const config = { [`teams/${A}/config.json`]: json({ name: A, _backupIdentityId: 'del-1' }) };
  const marker = {
    [`.member-work-sync-deletions/${A}.json`]: json({ schemaVersion: 2, teamName: A, deletionIdentityId: 'del-1', teamRootIdentity: null, activeJsonStateCleared: false }),
  };
  return [
    { name: 'no replica: the live JSON is used as it is', files: live, replica: null },
    { name: 'no replica where the session requires one', files: live, replica: null, requiresReplica: true },
    { name: 'a dirty replica fails every call', files: live, replica: replicaText('dirty'), calls: 2 },
    { name: 'a malformed replica', files: live, replica: '{ "schemaVersion": 1, \n' },
    { name: 'an envelope of another version', files: live, replica: json({ schemaVersion: 2, state: 'clean', updatedAt: at(0), snapshot: domain({}) }) },
    { name: 'a clean replica of another team', files: live, replica: replicaText('clean', domain({ statuses: [statusOf('team-y', 'bob', at(MIN))] })) },
    { name: 'a clean replica merged with the live JSON', files: live, replica: replicaText('clean', replica), calls: 2 },
    { name: 'a clean replica without live JSON', files: {}, replica: replicaText('clean', replica) },
    {
      name: 'a purge marker: its JSON purge is finished and the replica not read',
      files: { ...live, ...config, ...marker },
      replica: replicaText('dirty'),
    },
  ];
}

/** Every file under `root` with its text, the wall-clock parts blanked: the replica's and
 * member.meta.json's updatedAt, quarantine times in names. */
function hydratedTree(root) {
  const out = {};
  const walk = (dir) => {
    for (const entry of fs.readdirSync(dir, { withFileTypes: true })) {
      const full = path.join(dir, entry.name);
      if (entry.isDirectory()) {
        walk(full);
        continue;
      }
      const rel = path.relative(root, full).split(path.sep).join('/');
      let text = fs.readFileSync(full, 'utf8');
      if (rel.endsWith('sqlite-fallback-replica.json')) text = blankUpdatedAt(text);
      if (rel.endsWith('member.meta.json')) text = text.replace(/"updatedAt": "[^"]*"/, `"updatedAt": "${UPDATED_AT_BLANK}"`);
      out[rel.replace(/\.invalid\.\d+$/, '.invalid.<ms>')] = text;
    }
  };
  if (fs.existsSync(root)) walk(root);
  return Object.fromEntries(Object.entries(out).sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0)));
}

async function recordHydrate(reference, work) {
  const recorded = [];
  for (const [n, scenario] of hydrateScenarios().entries()) {
    const s = await session(reference, work, `hydrate-${n}`, { backend: 'json', requiresReplica: scenario.requiresReplica ?? false });
    for (const [rel, text] of Object.entries(scenario.files)) {
      fs.mkdirSync(path.dirname(path.join(s.claude, rel)), { recursive: true });
      fs.writeFileSync(path.join(s.claude, rel), text);
    }
    const replicaPath = s.paths.getSqliteFallbackReplicaPath('team-a');
    if (scenario.replica !== null) {
      fs.mkdirSync(path.dirname(replicaPath), { recursive: true });
      fs.writeFileSync(replicaPath, scenario.replica);
    }
    const before = hydratedTree(s.claude);
    const calls = [];
    for (let i = 0; i < (scenario.calls ?? 1); i += 1) {
      let result;
      // The files as the JSON store is about to serve the call: the hydration's own work.
      let served = null;
      try {
        await s.store.run(
          'team-a',
          false,
          () => {
            throw new Error('not a SQLite session');
          },
          async () => {
            served = hydratedTree(s.claude);
          }
        );
        result = { served: true };
      } catch (error) {
        result = { error: String(error.message).replace(s.claude, '<claude>') };
      }
      calls.push({ result, files: served ?? hydratedTree(s.claude) });
    }
    s.db.close();
    s.core.close();
    recorded.push({
      name: scenario.name,
      requiresReplica: scenario.requiresReplica ?? false,
      before,
      calls,
    });
  }
  return recorded;
}

async function main() {
  const { values } = parseArgs({
    options: { mirror: { type: 'string' }, deps: { type: 'string' }, out: { type: 'string' }, ref: { type: 'string' } },
  });
  if (!values.mirror || !values.deps) {
    console.error('usage: record-team-files.mjs --mirror DIR --deps DIR [--out FILE] [--ref REV]');
    process.exit(2);
  }
  const work = fs.mkdtempSync(path.join(os.tmpdir(), 'mws-sqlite-ref-'));
  const reference = await loadReference({ mirror: values.mirror, deps: values.deps, ref: values.ref, work });
  const recording = {
    about:
      'Recorded by scripts/sqlite-reference/record-team-files.mjs from the reference code; replayed by tests/sqlite_team_files.rs.',
    reference: reference.commit,
    updatedAtBlank: UPDATED_AT_BLANK,
    replica: await recordReplica(reference, work),
    prepare: await recordPrepare(reference, work),
    merge: recordMerge(reference),
    import: await recordImport(reference, work),
    purge: await recordPurge(reference, work),
    hydrate: await recordHydrate(reference, work),
  };
  const out = values.out ?? path.join(here, '..', '..', 'tests', 'fixtures', 'sqlite', 'team-files-recording.json');
  fs.writeFileSync(out, `${JSON.stringify(recording, null, 1)}\n`);
  fs.rmSync(work, { recursive: true, force: true });
  console.log(`${out}: ${recording.replica.length} replica steps, ${recording.prepare.length} prepare cases, ${recording.merge.length} merge cases`);
}

if (process.argv[1] && path.resolve(process.argv[1]) === fileURLToPath(import.meta.url)) await main();
