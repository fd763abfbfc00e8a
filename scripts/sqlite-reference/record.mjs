// Records what the reference's own SQLite store does with the scripted operations of
// scenario.mjs, into tests/fixtures/sqlite/reference-recording.json, which
// tests/sqlite_conformance.rs replays against the addon (a clone has no mirror; the recording is
// the reference's answer). Also the schema a fresh reference database has (sqlite_master,
// table_info, user_version, journal_mode).
//
//   node scripts/sqlite-reference/record.mjs --mirror DIR --deps DIR [--out FILE] [--ref REV]
//
// --mirror: bare git mirror of 777genius/agent-teams-ai. --deps: a folder whose node_modules holds
// esbuild, better-sqlite3 12.x (13.x needs Node 22) and drizzle-orm (the reference's ^0.45.2), e.g.
//   npm install --prefix DIR better-sqlite3@12.11.1 drizzle-orm@0.45.2 esbuild@0.28.2
// The reference code is exported from the mirror into a temporary folder and bundled there; none
// of it is kept.
import { execFileSync } from 'node:child_process';
import { createHash } from 'node:crypto';
import fs from 'node:fs';
import { builtinModules, createRequire } from 'node:module';
import os from 'node:os';
import path from 'node:path';
import { fileURLToPath, pathToFileURL } from 'node:url';
import { parseArgs } from 'node:util';

import { scenario } from './scenario.mjs';

const LARGE = 16 * 1024;
const sha256 = (text) => createHash('sha256').update(text).digest('hex');
const here = path.dirname(fileURLToPath(import.meta.url));
const REFERENCE_COMMIT = '5f462d2db7a93bcb69c4ddedf4e6e42ca83b4c98';
export const TABLES = [
  'member_work_sync_status',
  'member_work_sync_report_intents',
  'member_work_sync_outbox',
  'member_work_sync_metric_events',
  'store_imports',
];
const KEYS = {
  member_work_sync_status: 'team_name, member_key',
  member_work_sync_report_intents: 'team_name, id',
  member_work_sync_outbox: 'team_name, id',
  member_work_sync_metric_events: 'team_name, id',
  store_imports: 'store_id, team_name',
};

/** Exports the reference's sources and bundles entry.ts; returns the bundle's module. */
export async function loadReference({ mirror, deps, ref = REFERENCE_COMMIT, work }) {
  const git = (...argv) => execFileSync('git', ['-C', mirror, ...argv], { maxBuffer: 1 << 30 });
  let commit;
  try {
    commit = git('rev-parse', '--verify', `${ref}^{commit}`).toString().trim();
  } catch {
    commit = git('rev-parse', 'HEAD').toString().trim();
  }
  const root = path.join(work, `reference-${commit.slice(0, 12)}`);
  if (!fs.existsSync(path.join(root, 'src'))) {
    fs.mkdirSync(root, { recursive: true });
    const tar = git('archive', commit, 'src', 'test/features/internal-storage/helpers', 'tsconfig.json');
    execFileSync('tar', ['-x', '-C', root], { input: tar, maxBuffer: 1 << 30 });
  }
  const requireDep = createRequire(path.join(path.resolve(deps), 'package.json'));
  const esbuild = requireDep('esbuild');
  const src = path.join(root, 'src');
  const builtins = new Set([...builtinModules, ...builtinModules.map((m) => `node:${m}`)]);
  const depsModules = path.join(path.resolve(deps), 'node_modules');
  const outfile = path.join(root, 'bundle.mjs');
  await esbuild.build({
    entryPoints: [path.join(here, 'entry.ts')],
    outfile,
    bundle: true,
    platform: 'node',
    target: 'node20',
    format: 'esm',
    logLevel: 'error',
    nodePaths: [depsModules],
    tsconfig: path.join(root, 'tsconfig.json'),
    banner: { js: "import { createRequire as __cr } from 'node:module'; const require = __cr(import.meta.url);" },
    plugins: [
      {
        name: 'reference-paths',
        setup(build) {
          build.onResolve({ filter: /^@(features|main|shared|renderer|preload)\// }, async (args) => {
            const r = await build.resolve(`./${args.path.slice(1)}`, { resolveDir: src, kind: args.kind });
            return r.errors.length > 0 ? { errors: r.errors } : { path: r.path };
          });
          build.onResolve({ filter: /^\.\.\/\.\.\/test\// }, async (args) => {
            const r = await build.resolve(`./${args.path.slice('../../'.length)}`, { resolveDir: root, kind: args.kind });
            return r.errors.length > 0 ? { errors: r.errors } : { path: r.path };
          });
          // drizzle-orm is bundled from --deps; any other package the imports reach
          // (electron, ...) is a stub that throws if used.
          build.onResolve({ filter: /^[^./]/ }, (args) => {
            if (builtins.has(args.path) || args.path.startsWith('drizzle-orm')) return undefined;
            return { path: args.path, namespace: 'stub' };
          });
          build.onLoad({ filter: /.*/, namespace: 'stub' }, (args) => ({
            contents: `const h={get(_t,p){if(p==='__esModule')return true;if(p==='then')return undefined;return new Proxy(function(){},h);},apply(){throw new Error('stub: ${args.path}');},construct(){throw new Error('stub: ${args.path}');}};module.exports=new Proxy(function(){},h);`,
            loader: 'js',
          }));
        },
      },
    ],
  });
  const mod = await import(pathToFileURL(outfile).href);
  const Database = requireDep('better-sqlite3');
  return { mod, Database, commit };
}

/** sqlite_master, table_info of the five tables, user_version and journal_mode of a database. */
export function schemaOf(db) {
  return {
    master: db.prepare('SELECT type, name, tbl_name, sql FROM sqlite_master ORDER BY type, name').all(),
    tableInfo: Object.fromEntries(TABLES.map((t) => [t, db.prepare(`PRAGMA table_info(${t})`).all()])),
    userVersion: db.pragma('user_version', { simple: true }),
    journalMode: db.pragma('journal_mode', { simple: true }),
  };
}

/** Every row of the five tables, by key. */
export function rowsOf(db) {
  return Object.fromEntries(TABLES.map((t) => [t, db.prepare(`SELECT * FROM ${t} ORDER BY ${KEYS[t]}`).all()]));
}

/** Runs one scenario step on the reference store; returns what the step answered. */
export async function run(store, gateway, mod, step) {
  switch (step.op) {
    case 'writeStatus':
      await store.write(step.status);
      return null;
    case 'writeStatuses':
      for (const s of step.statuses) await store.write(s);
      return null;
    case 'appendReport':
      await gateway.reportsAppend(mod.reportIntentToRecord(step.intent));
      return null;
    case 'listPending':
      return (await store.listPendingReports(step.teamName)).map((i) => i.id);
    case 'markProcessed':
      await store.markPendingReportProcessed(step.teamName, step.id, {
        status: step.status,
        resultCode: step.resultCode,
        processedAt: step.processedAt,
      });
      return null;
    case 'ensure': {
      const r = await store.ensurePending({
        teamName: step.teamName,
        memberName: step.memberName,
        id: step.id,
        agendaFingerprint: step.payload.agendaFingerprint,
        payloadHash: step.payloadHash,
        payload: step.payload,
        nowIso: step.nowIso,
      });
      return { outcome: r.outcome, status: r.item.status, attemptGeneration: r.item.attemptGeneration };
    }
    case 'claim':
      return (await store.claimDue(step)).map((i) => ({ id: i.id, attemptGeneration: i.attemptGeneration }));
    case 'markDelivered':
      await store.markDelivered({ ...step, deliveredMessageId: step.id });
      return null;
    case 'markFailed':
      await store.markFailed(step);
      return null;
    case 'markSuperseded':
      await store.markSuperseded(step);
      return null;
    case 'countRecentDelivered':
      return store.countRecentDelivered(step);
    case 'countDeliveredForAgenda':
      return store.countDeliveredForAgenda(step);
    case 'findReviewPickup':
      return store.findDeliveredReviewPickupRequestEventIds(step);
    case 'findRecovery':
      return store.findRecentRecoveryByIntent(step);
    default:
      throw new Error(`unknown step ${step.op}`);
  }
}

/** A reference store on `databasePath` (its own worker core and gateway, no legacy import). */
export function referenceStore({ mod, Database }, databasePath) {
  const core = new mod.InternalStorageWorkerCore({ databasePath, createDatabase: (p) => new Database(p) });
  const gateway = new mod.InProcessGateway(core);
  const store = new mod.SqliteMemberWorkSyncStore({
    gateway,
    importer: { ensureImported: async () => {} },
    buildReportIntentId: () => {
      throw new Error('the scenario gives intent ids');
    },
  });
  return { core, gateway, store };
}

async function main() {
  const { values } = parseArgs({
    options: { mirror: { type: 'string' }, deps: { type: 'string' }, out: { type: 'string' }, ref: { type: 'string' } },
  });
  if (!values.mirror || !values.deps) {
    console.error('usage: record.mjs --mirror DIR --deps DIR [--out FILE] [--ref REV]');
    process.exit(2);
  }
  const work = fs.mkdtempSync(path.join(os.tmpdir(), 'mws-sqlite-ref-'));
  const reference = await loadReference({ mirror: values.mirror, deps: values.deps, ref: values.ref, work });
  const databasePath = path.join(work, 'storage', 'app.db');
  const { core, gateway, store } = referenceStore(reference, databasePath);
  await gateway.ping();
  const db = new reference.Database(databasePath, { readonly: true });
  const schema = schemaOf(db);
  const steps = [];
  let previous = {};
  for (const step of scenario()) {
    const result = await run(store, gateway, reference.mod, step);
    const rows = rowsOf(db);
    // A table is recorded only when the step changed it (null: as after the previous step); a
    // large one as the sha256 of its rows' JSON, except after the last step.
    const last = steps.length === scenario().length - 1;
    const tables = Object.fromEntries(
      TABLES.map((t) => {
        const json = JSON.stringify(rows[t]);
        if (json === JSON.stringify(previous[t])) return [t, null];
        if (json.length > LARGE && !last) return [t, { rows: rows[t].length, sha256: sha256(json) }];
        return [t, rows[t]];
      })
    );
    previous = rows;
    steps.push({ step, result: result ?? null, tables });
  }
  db.close();
  core.close();
  const out = values.out ?? path.join(here, '..', '..', 'tests', 'fixtures', 'sqlite', 'reference-recording.json');
  const recording = {
    about: 'Recorded by scripts/sqlite-reference/record.mjs from the reference store; replayed by tests/sqlite_conformance.rs.',
    reference: reference.commit,
    betterSqlite3: reference.Database.prototype ? createRequire(path.join(path.resolve(values.deps), 'package.json'))('better-sqlite3/package.json').version : null,
    schema,
    steps,
  };
  // One step per line: a re-recording diffs step by step.
  const lines = steps.map((s) => JSON.stringify(s));
  const head = JSON.stringify({ ...recording, steps: [] }, null, 1).replace(/"steps": \[\]\n}$/, '"steps": [\n');
  fs.writeFileSync(out, `${head}${lines.join(',\n')}\n]}\n`);
  fs.rmSync(work, { recursive: true, force: true });
  console.log(`${out}: ${steps.length} steps, reference ${reference.commit.slice(0, 12)}`);
}

if (process.argv[1] && path.resolve(process.argv[1]) === fileURLToPath(import.meta.url)) await main();
