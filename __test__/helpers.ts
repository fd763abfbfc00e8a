import fs from 'node:fs'
import os from 'node:os'
import path from 'node:path'
import { afterAll } from 'vitest'

/** Temp dirs made by this test file, removed when the file is done. */
const tempDirs: string[] = []
afterAll(() => {
  for (const dir of tempDirs.splice(0)) fs.rmSync(dir, { recursive: true, force: true })
}, 120_000)

/**
 * A fresh empty dir under the OS temp dir, named `<prefix>XXXXXX`, removed
 * (with all it holds) once the test file that made it has run.
 */
export function tempDir(prefix: string, parent: string = os.tmpdir()): string {
  const dir = fs.mkdtempSync(path.join(parent, prefix))
  tempDirs.push(dir)
  return dir
}

/** A fresh copy of the bundled example Claude root in a temp dir. */
export function copyExampleRoot(): string {
  const root = tempDir('mws-test-')
  fs.cpSync(path.join(__dirname, '..', 'examples', 'claude-root'), root, { recursive: true })
  return root
}

export function readJson(file: string): any {
  return JSON.parse(fs.readFileSync(file, 'utf8'))
}

export function writeJson(file: string, value: unknown): void {
  fs.mkdirSync(path.dirname(file), { recursive: true })
  fs.writeFileSync(file, JSON.stringify(value, null, 2))
}

/** Every file path under `dir`, relative, sorted. */
export function listFiles(dir: string): string[] {
  const out: string[] = []
  const walk = (d: string) => {
    for (const entry of fs.readdirSync(d, { withFileTypes: true })) {
      const full = path.join(d, entry.name)
      if (entry.isDirectory()) walk(full)
      else out.push(path.relative(dir, full))
    }
  }
  walk(dir)
  return out.sort()
}

/**
 * Polls `probe` until it returns a value (not undefined); throws after `timeoutMs`. The limit only
 * bounds a hang: a queued reconcile on a machine shared with compiles can take seconds, and 5 s turned
 * that into a failure at load 15 on 2 cores.
 */
export async function until<T>(probe: () => T | undefined, timeoutMs = 15_000): Promise<T> {
  const started = Date.now()
  for (;;) {
    const value = probe()
    if (value !== undefined) return value
    if (Date.now() - started > timeoutMs) throw new Error('timed out waiting')
    await new Promise((resolve) => setTimeout(resolve, 20))
  }
}

/**
 * Everything observable about a tree, without following links: each entry's
 * relative path, kind, mode, size, inode, mtime and (for files) a content
 * hash. Two equal fingerprints mean nothing was written, moved or created.
 */
export function treeFingerprint(dir: string): string {
  const crypto = require('node:crypto') as typeof import('node:crypto')
  const lines: string[] = []
  const walk = (d: string) => {
    for (const name of fs.readdirSync(d).sort()) {
      const full = path.join(d, name)
      const st = fs.lstatSync(full)
      const kind = st.isDirectory() ? 'dir' : st.isSymbolicLink() ? 'link' : st.isFile() ? 'file' : 'other'
      const content = kind === 'file' ? crypto.createHash('sha256').update(fs.readFileSync(full)).digest('hex') : ''
      lines.push([path.relative(dir, full), kind, st.mode, st.size, st.ino, st.mtimeMs, content].join(' '))
      if (kind === 'dir') walk(full)
    }
  }
  walk(dir)
  return lines.join('\n')
}

/** Two hours of calm shadow history before `nowMs` for five members of team forge: readiness becomes shadow_ready. */
export function writeShadowHistory(root: string, nowMs: number): void {
  const members: Record<string, unknown> = {}
  for (let i = 0; i < 5; i++) {
    members[`m${i}`] = { memberName: `m${i}`, state: 'caught_up', agendaFingerprint: 'agenda:v1:x', actionableCount: 0, evaluatedAt: '2026-11-22T09:00:00.000Z' }
  }
  const recentEvents = Array.from({ length: 30 }, (_, i) => ({
    id: `h${i}`,
    teamName: 'forge',
    memberName: `m${i % 5}`,
    kind: 'status_evaluated',
    state: 'caught_up',
    agendaFingerprint: 'agenda:v1:x',
    recordedAt: new Date(nowMs - 2 * 3_600_000 + i * 240_000).toISOString(),
    actionableCount: 0,
  }))
  writeJson(path.join(root, 'teams/forge/.member-work-sync/indexes/metrics.json'), { schemaVersion: 2, members, recentEvents })
}
