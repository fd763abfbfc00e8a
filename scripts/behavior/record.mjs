// Records the REFERENCE side of a fixed subset of the behavioural differential into a committed
// fixture, so the addon side can be compared with it without the reference (a clone has no mirror):
// __test__/behavior-subset.test.ts replays the same cases on the addon and diffs every step.
//
//   node scripts/behavior/record.mjs --mirror DIR [--seed 1] [--cases 0-19] [--out FILE] [--work DIR]
//
//   --mirror DIR  bare git mirror of 777genius/agent-teams-ai (or env MWS_UPSTREAM_MIRROR); its
//                 member-work-sync feature at the pinned revision is exported and bundled into --work,
//                 never into the repository: only the projected observables are written.
//   esbuild       must be resolvable from the repository (e.g. `npm install --no-save esbuild@0.25.0`)
//                 or from the folder in env MWS_ESBUILD_DIR.
//   --cases       case indices of the seed: a list of numbers and ranges.
//   --out FILE    default __test__/fixtures/behavior/seed<seed>.json.
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { fileURLToPath, pathToFileURL } from 'node:url';

import { setNow } from './fake-date.mjs';
import { ensureUpstreamBundle, resolveOptions, REFERENCE_COMMIT } from './build-upstream.mjs';
import { runCase } from './case.mjs';
import { parseArgs } from './gen.mjs';
import { compactObservation } from './observe.mjs';

const repo = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..', '..');
const args = parseArgs(process.argv.slice(2), { seed: '1', cases: '0-19' });
const SEED = Number(args.seed);
const indices = String(args.cases)
  .split(',')
  .flatMap((part) => {
    const [lo, hi = lo] = part.split('-').map(Number);
    return Array.from({ length: hi - lo + 1 }, (_, i) => lo + i);
  });
const out = path.resolve(args.out ?? path.join(repo, '__test__', 'fixtures', 'behavior', `seed${SEED}.json`));

const opts = resolveOptions({ ...args, work: args.work ?? path.join(os.tmpdir(), 'mws-behavior') });
if (opts.error) {
  console.error(`record: ${opts.error}`);
  process.exit(1);
}
const built = await ensureUpstreamBundle(opts);
if (built.error) {
  console.error(`record: reference bundle unavailable: ${built.error}`);
  process.exit(1);
}
if (built.warning) console.error(`warning: ${built.warning}`);
const U = await import(pathToFileURL(built.bundle).href);

const tmp = fs.realpathSync(fs.mkdtempSync(path.join(os.tmpdir(), 'mws-record-')));
const cases = [];
try {
  for (const ci of indices) {
    const rec = await runCase({ SEED, ci, caseDir: path.join(tmp, String(ci)), U, setNow });
    cases.push({
      index: ci,
      id: rec.id,
      teamName: rec.teamName,
      members: rec.members,
      steps: rec.steps.map((s, i) => ({
        label: s.label,
        now: s.now,
        ...(s.refItemCount === undefined ? {} : { refItemCount: s.refItemCount }),
        result: s.result.up,
        obs: compactObservation(i === 0 ? null : rec.steps[i - 1].obs.up, s.obs.up),
      })),
    });
    console.log(`${rec.id}: ${rec.steps.length} steps`);
  }
} finally {
  fs.rmSync(tmp, { recursive: true, force: true });
}
fs.mkdirSync(path.dirname(out), { recursive: true });
// obs of a step holds only what changed since the step before (expandObservation in observe.mjs).
const fixture = { schema: 1, reference: built.commit ?? REFERENCE_COMMIT, seed: SEED, cases };
fs.writeFileSync(out, JSON.stringify(fixture) + '\n');
console.log(`wrote ${path.relative(repo, out)}: ${cases.length} cases, ${cases.reduce((n, c) => n + c.steps.length, 0)} steps`);
