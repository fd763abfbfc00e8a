import { spawnSync } from 'node:child_process'
import path from 'node:path'
import { describe, expect, it } from 'vitest'

const ROOT = path.join(__dirname, '..')

/** Loads index.js in a fresh node whose process.platform / arch say otherwise. */
function loadAs(platform: string, arch: string) {
  const script = `
    Object.defineProperty(process, 'platform', { value: ${JSON.stringify(platform)} })
    Object.defineProperty(process, 'arch', { value: ${JSON.stringify(arch)} })
    try { require('./index.js'); console.log(JSON.stringify({ loaded: true })) }
    catch (e) { console.log(JSON.stringify({ code: e.code, message: e.message })) }`
  const out = spawnSync(process.execPath, ['-e', script], { cwd: ROOT, encoding: 'utf8' })
  return JSON.parse(out.stdout)
}

describe('the package', () => {
  it.each([
    ['freebsd', 'x64', 'freebsd-x64'],
    ['win32', 'arm64', 'win32-arm64-msvc'],
    ['win32', 'x64', 'win32-x64-gnu'],
    ['darwin', 'ia32', 'darwin-ia32'],
  ])('on %s-%s without a binary the loader names the platform and the package it looked for', (platform, arch, name) => {
    const result = loadAs(platform, arch)
    expect(result.code).toBe('MWS_NO_NATIVE_BINARY')
    expect(result.message).toContain(`no native binary loaded for platform ${name}`)
    expect(result.message).toContain(`./member-work-sync.${name}.node`)
    expect(result.message).toContain(`the package member-work-sync-${name}`)
    expect(result.message).not.toContain('npm has a bug')
  })

  it('an ES module import sees every export the CommonJS require does', () => {
    const esm = spawnSync(process.execPath, ['--input-type=module', '-e', "import * as m from './index.js'; console.log(JSON.stringify(Object.keys(m).filter((k) => k !== 'default').sort()))"], { cwd: ROOT, encoding: 'utf8' })
    const cjs = spawnSync(process.execPath, ['-e', "console.log(JSON.stringify(Object.keys(require('./index.js')).sort()))"], { cwd: ROOT, encoding: 'utf8' })
    expect(JSON.parse(cjs.stdout)).toContain('MemberWorkSync')
    expect(JSON.parse(esm.stdout)).toEqual(JSON.parse(cjs.stdout))
  })

  it('npm pack of the main package holds the loader and no binary', () => {
    const out = spawnSync('npm', ['pack', '--dry-run', '--json', '--loglevel=error'], { cwd: ROOT, encoding: 'utf8' })
    const files: string[] = JSON.parse(out.stdout)[0].files.map((f: { path: string }) => f.path)
    expect(files).toContain('index.js')
    expect(files).toContain('lazy.js')
    expect(files).toContain('lazy.d.ts')
    expect(files).toContain('hooks/turn-settled-hook-v1.sh')
    expect(files.filter((f) => f.endsWith('.node'))).toEqual([])
    // The native hook ships in the platform packages only, its sources nowhere.
    expect(files.filter((f) => f.includes('turn-settled-hook-v1') && !f.endsWith('.sh'))).toEqual([])
    expect(files.filter((f) => f.startsWith('hooks/native'))).toEqual([])
  })
})
