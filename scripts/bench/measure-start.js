'use strict'
// How long `npm start` takes, run twice in a row in this checkout, and how
// long `npm test`'s build step (`npm run pretest`: install, build) takes after
// them. On a fresh clone the first start compiles everything; the second, with
// nothing changed, should compile nothing (scripts/build/build.js, scripts/build/napi-cargo.js).
// Each command's output goes to a log file under the system temp folder; a
// command that fails stops the run with its exit status.
//
// Usage: node scripts/bench/measure-start.js      (from a fresh clone: git clone <repo> x && cd x)

const fs = require('node:fs')
const os = require('node:os')
const path = require('node:path')
const { spawnSync } = require('node:child_process')

const ROOT = path.join(__dirname, '..', '..')
const STEPS = [
  ['first npm start', ['start']],
  ['second npm start', ['start']],
  ["npm test's build step (npm run pretest)", ['run', 'pretest']],
]

function main() {
  const logs = fs.mkdtempSync(path.join(os.tmpdir(), 'measure-start-'))
  const results = []
  for (const [i, [label, args]] of STEPS.entries()) {
    const log = path.join(logs, `${i + 1}.log`)
    const fd = fs.openSync(log, 'w')
    const started = process.hrtime.bigint()
    const out = spawnSync('npm', args, { cwd: ROOT, stdio: ['ignore', fd, fd] })
    const seconds = Number(process.hrtime.bigint() - started) / 1e9
    fs.closeSync(fd)
    const compiled = /Compiling member-work-sync /.test(fs.readFileSync(log, 'utf8'))
    results.push({ label, seconds, compiled, log })
    console.log(`${label}: ${seconds.toFixed(1)} s${compiled ? ' (compiled the crate)' : ''}  log ${log}`)
    if (out.error || out.status !== 0) {
      console.error(`measure-start: npm ${args.join(' ')} failed (${out.error ? out.error.message : `exit ${out.status}`}); see ${log}`)
      process.exit(out.status || 1)
    }
  }
  return results
}

if (require.main === module) main()
