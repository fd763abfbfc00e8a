import { spawnSync } from 'node:child_process'
import path from 'node:path'
import { describe, expect, it } from 'vitest'

describe('npm start', () => {
  it('walks the example team through hook, drain, phase 2, nudge, report and timeline', () => {
    const out = spawnSync(process.execPath, [path.join(__dirname, '..', 'scripts', 'demo', 'start.js')], { encoding: 'utf8', timeout: 60_000 })
    expect(out.stderr).toBe('')
    expect(out.status).toBe(0)
    const stdout = out.stdout
    // The per-member agenda table comes first.
    expect(stdout.indexOf('Team forge: 5 member(s)')).toBeGreaterThan(-1)
    expect(stdout.indexOf('Team forge: 5 member(s)')).toBeLessThan(stdout.indexOf('== Step 1'))
    for (const line of [
      // The native hook where the build placed it beside the addon, else the script.
      /hook installed: settings\.json runs on every Stop:\n  ('.*\/turn-settled-hook-v1'|\/bin\/sh '.*turn-settled-hook-v1\.sh') /,
      /event drained and attributed: session demo-session-bob -> forge\/bob \(claude\)/,
      /bob reconciled by turn_settled: needs_sync, 2 actionable item\(s\), would nudge: true/,
      /phase 2: shadow_ready\nphase 2 ready/,
      /nudge delivered to teams\/forge\/inboxes\/bob\.json \(tasks 7, 12\)/,
      /report accepted: bob is still_working until /,
      /explain forge\/bob: \d+ entries/,
      // Collecting readiness no longer holds a native member back: the first turn plans.
      /\n\d{4}-\d\d-\d\d \d\d:\d\d:\d\d {2}nudge planned/,
      /\n\d{4}-\d\d-\d\d \d\d:\d\d:\d\d {2}nudge member-work-sync:forge:bob:[\s\S]{0,120}? delivered to the inbox/,
      /\n\d{4}-\d\d-\d\d \d\d:\d\d:\d\d {2}report accepted/,
    ]) {
      expect(stdout).toMatch(line)
    }
    // Steps run in order.
    // The timeline fits 100 columns.
    const timeline = stdout.slice(stdout.indexOf('explain forge/bob:'))
    expect(timeline.split('\n').filter((l) => l.length > 100)).toEqual([])
    const steps = [...stdout.matchAll(/== Step (\d+)/g)].map((m) => Number(m[1]))
    expect(steps).toEqual([1, 2, 3, 4, 5, 6, 7])
  })
})
