// Bundles upstream-entry.ts (the reference's member-work-sync use cases, adapters and team readers)
// into one ES module with esbuild, from a source tree exported out of the reference's git mirror.
// Path aliases (@features/, @main/, @shared/, ...) are resolved against the exported src/; any bare
// package (electron, ...) is replaced by a stub that throws when used.
//
// Inputs (record.mjs passes them; the same flags work when this file is run on its own):
//   --mirror DIR   bare git mirror of 777genius/agent-teams-ai (the path that
//                  `fetch github:777genius/agent-teams-ai` returns); env MWS_UPSTREAM_MIRROR. Required.
//   --work DIR     where the exported source and the bundle go; default <OS temp dir>/mws-behavior.
//   --ref REV      reference revision to export; default REFERENCE_COMMIT below (the revision the
//                  driver was written against); HEAD of the mirror when the mirror lacks it.
// esbuild comes from the repository's node_modules, else from env MWS_ESBUILD_DIR.
//
//   node build-upstream.mjs --mirror DIR [--work DIR]     (prints the bundle path)
import { execFileSync } from 'node:child_process';
import fs from 'node:fs';
import { builtinModules, createRequire } from 'node:module';
import os from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';

const here = path.dirname(fileURLToPath(import.meta.url));
export const REFERENCE_COMMIT = '5f462d2db7a93bcb69c4ddedf4e6e42ca83b4c98';
const MIRROR_HINT = 'pass --mirror DIR (or set MWS_UPSTREAM_MIRROR) with the path that `fetch github:777genius/agent-teams-ai` returns';

/** Resolves {mirror, work, ref} from parsed flags + environment; returns {error} when the mirror is unusable. */
export function resolveOptions(args) {
  const mirrorArg = typeof args.mirror === 'string' ? args.mirror : process.env.MWS_UPSTREAM_MIRROR;
  if (!mirrorArg) return { error: `no reference mirror given: ${MIRROR_HINT}` };
  const mirror = path.resolve(mirrorArg);
  try {
    execFileSync('git', ['-C', mirror, 'rev-parse', '--git-dir'], { stdio: 'pipe' });
  } catch {
    return { error: `${mirror} is not a git directory: ${MIRROR_HINT}` };
  }
  const work = path.resolve(typeof args.work === 'string' ? args.work : path.join(os.tmpdir(), 'mws-behavior'));
  const ref = typeof args.ref === 'string' ? args.ref : REFERENCE_COMMIT;
  return { mirror, work, ref };
}

function git(mirror, argv, opts = {}) {
  return execFileSync('git', ['-C', mirror, ...argv], { stdio: ['ignore', 'pipe', 'pipe'], maxBuffer: 1 << 30, ...opts });
}

function resolveCommit(mirror, ref) {
  try {
    return { commit: git(mirror, ['rev-parse', '--verify', '--quiet', `${ref}^{commit}`]).toString().trim() };
  } catch {
    const head = git(mirror, ['rev-parse', '--verify', 'HEAD^{commit}']).toString().trim();
    return { commit: head, warning: `reference revision ${ref} not in the mirror; using its HEAD ${head.slice(0, 12)}` };
  }
}

/** Exports src/, resources/, package.json and tsconfig.json of `commit` into <work>/upstream-<commit>/ once. */
function ensureSource(mirror, work, commit) {
  const root = path.join(work, `upstream-${commit.slice(0, 12)}`);
  if (fs.existsSync(path.join(root, 'src', 'features', 'member-work-sync'))) return root;
  fs.mkdirSync(work, { recursive: true });
  const tmp = fs.mkdtempSync(path.join(work, '.extract-'));
  try {
    const tar = git(mirror, ['archive', commit, 'src', 'resources', 'package.json', 'tsconfig.json']);
    execFileSync('tar', ['-x', '-C', tmp], { input: tar, maxBuffer: 1 << 30 });
    if (!fs.existsSync(path.join(tmp, 'src', 'features', 'member-work-sync'))) throw new Error(`commit ${commit} has no src/features/member-work-sync`);
    fs.rmSync(root, { recursive: true, force: true });
    fs.renameSync(tmp, root);
  } finally {
    fs.rmSync(tmp, { recursive: true, force: true });
  }
  return root;
}

/** esbuild from the repository's node_modules, else from the folder in env MWS_ESBUILD_DIR. */
function loadEsbuild() {
  const from = [path.join(here, '..', '..', 'package.json'), ...(process.env.MWS_ESBUILD_DIR ? [path.join(process.env.MWS_ESBUILD_DIR, 'package.json')] : [])];
  for (const anchor of from) {
    try {
      return createRequire(anchor)('esbuild');
    } catch {
      // try the next place
    }
  }
  return null;
}

/** Builds the bundle if missing or older than the entry / this builder; returns {bundle, warning?} or {error}. */
export async function ensureUpstreamBundle({ mirror, work, ref = REFERENCE_COMMIT }) {
  let commit;
  let warning;
  try {
    ({ commit, warning } = resolveCommit(mirror, ref));
  } catch (e) {
    return { error: `cannot read the mirror ${mirror}: ${String(e.message).split('\n')[0]}` };
  }
  const entry = path.join(here, 'upstream-entry.ts');
  const bundle = path.join(work, 'build', `upstream-${commit.slice(0, 12)}.mjs`);
  const inputs = [entry, fileURLToPath(import.meta.url)];
  if (fs.existsSync(bundle) && inputs.every((f) => fs.statSync(bundle).mtimeMs >= fs.statSync(f).mtimeMs)) return { bundle, commit, warning };
  const esbuild = loadEsbuild();
  if (!esbuild) return { error: 'esbuild not installed: `npm install --no-save esbuild@0.25.0` in the repository, or set MWS_ESBUILD_DIR' };
  let upstreamRoot;
  try {
    upstreamRoot = ensureSource(mirror, work, commit);
  } catch (e) {
    return { error: `cannot export the reference source from ${mirror}: ${String(e.message).split('\n')[0]}` };
  }
  const upstreamSrc = path.join(upstreamRoot, 'src');
  const builtins = new Set([...builtinModules, ...builtinModules.map((m) => `node:${m}`)]);
  const plugin = {
    name: 'upstream-aliases',
    setup(build) {
      build.onResolve({ filter: /^@(features|main|shared|renderer|preload)\// }, async (args) => {
        const r = await build.resolve(`./${args.path.slice(1)}`, { resolveDir: upstreamSrc, kind: args.kind });
        if (r.errors.length > 0) return { errors: r.errors };
        return { path: r.path };
      });
      build.onResolve({ filter: /^[^./]/ }, (args) => {
        if (builtins.has(args.path) || args.path.startsWith('node:')) return undefined;
        return { path: args.path, namespace: 'stub' };
      });
      build.onLoad({ filter: /.*/, namespace: 'stub' }, (args) => ({
        contents: `const name=${JSON.stringify(args.path)};const h={get(_t,p){if(p==='__esModule')return true;if(p==='then')return undefined;if(p===Symbol.toPrimitive)return()=>'[stub '+name+']';return new Proxy(function(){},h);},apply(){throw new Error('behavior stub: '+name+' is not available');},construct(){throw new Error('behavior stub: '+name+' is not available');}};module.exports=new Proxy(function(){},h);`,
        loader: 'js',
      }));
    },
  };
  fs.mkdirSync(path.dirname(bundle), { recursive: true });
  const tmpOut = `${bundle}.${process.pid}.tmp.mjs`;
  try {
    await esbuild.build({
      entryPoints: [entry],
      outfile: tmpOut,
      bundle: true,
      platform: 'node',
      target: 'node20',
      format: 'esm',
      logLevel: 'error',
      tsconfig: fs.existsSync(path.join(upstreamRoot, 'tsconfig.json')) ? path.join(upstreamRoot, 'tsconfig.json') : undefined,
      banner: { js: "import { createRequire as __cr } from 'node:module'; const require = __cr(import.meta.url);" },
      plugins: [plugin],
    });
    fs.renameSync(tmpOut, bundle);
  } catch (e) {
    fs.rmSync(tmpOut, { force: true });
    return { error: `esbuild failed: ${String(e.message).split('\n')[0]}` };
  }
  return { bundle, commit, warning };
}

if (process.argv[1] && path.resolve(process.argv[1]) === fileURLToPath(import.meta.url)) {
  const { parseArgs } = await import('./gen.mjs');
  const opts = resolveOptions(parseArgs(process.argv.slice(2)));
  const r = opts.error ? opts : await ensureUpstreamBundle(opts);
  if (r.error) {
    console.error(r.error);
    process.exit(2);
  }
  if (r.warning) console.error(`warning: ${r.warning}`);
  console.log(r.bundle);
}
