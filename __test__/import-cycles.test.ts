import { spawnSync } from 'node:child_process'
import fs from 'node:fs'
import { createRequire } from 'node:module'
import path from 'node:path'
import { describe, expect, it } from 'vitest'

import { tempDir } from './helpers'

const SCRIPT = path.join(__dirname, '..', 'scripts', 'check', 'import-cycles.js')
const { findCycles } = createRequire(__filename)(SCRIPT) as { findCycles: (root: string) => string[][] }

/** Writes `files` (path under the crate's src -> text) into a fresh src dir; returns the dir. */
function crate(files: Record<string, string>): string {
  const src = path.join(tempDir('import-cycles-'), 'src')
  for (const [file, text] of Object.entries(files)) {
    fs.mkdirSync(path.dirname(path.join(src, file)), { recursive: true })
    fs.writeFileSync(path.join(src, file), text)
  }
  return src
}

// (case, the crate's files, the groups the check finds)
const cases: [string, Record<string, string>, string[][]][] = [
  [
    'two files naming each other through `use crate::`',
    {
      'lib.rs': 'mod a;\nmod b;\n',
      'a.rs': 'use crate::b::B;\npub struct A;\n',
      'b.rs': 'use crate::a::A;\npub struct B;\n',
    },
    [['a', 'b']],
  ],
  [
    'a cycle through a brace group (nested, with `self`)',
    {
      'lib.rs': 'mod a;\nmod b;\nmod c;\n',
      'a.rs': 'use crate::{\n    c::C,\n    b::{self, B},\n};\npub struct A;\n',
      'b.rs': 'use crate::{a::A, c::C};\npub struct B;\n',
      'c.rs': 'pub struct C;\n',
    },
    [['a', 'b']],
  ],
  [
    'a cycle through `super::` paths, one in a `use`, one in code',
    {
      'lib.rs': 'mod m;\n',
      'm/mod.rs': 'mod x;\nmod y;\n',
      'm/x.rs': 'use super::y::Y;\npub struct X;\n',
      'm/y.rs': 'pub struct Y;\nfn make() -> super::x::X {\n    super::x::X\n}\n',
    },
    [['m::x', 'm::y']],
  ],
  [
    'a `pub use` re-export followed to the file that defines the item',
    {
      'lib.rs': 'mod m;\n',
      'm/mod.rs': 'mod x;\nmod y;\npub use y::Y;\n',
      'm/x.rs': 'use super::Y;\npub struct X;\n',
      'm/y.rs': 'use super::x::X;\npub struct Y;\n',
    },
    [['m::x', 'm::y']],
  ],
  [
    'a re-exported name holding "as", imported under an alias',
    {
      'lib.rs': 'mod m;\n',
      'm/mod.rs': 'mod x;\nmod y;\npub use y::TaskIndex;\n',
      'm/x.rs': 'use super::TaskIndex as Index;\npub struct X;\n',
      'm/y.rs': 'use super::x::X;\npub struct TaskIndex;\n',
    },
    [['m::x', 'm::y']],
  ],
  [
    'a child naming its parent is no cycle (the parent declares it)',
    {
      'lib.rs': 'mod m;\n',
      'm/mod.rs': 'mod x;\nuse self::x::X;\npub struct P;\n',
      'm/x.rs': 'use super::P;\nuse crate::m::P as Q;\npub struct X;\n',
    },
    [],
  ],
  [
    'doc links, comments, strings and in-file tests name nothing',
    {
      'lib.rs': 'mod a;\nmod b;\n',
      'a.rs': [
        '//! Built from a [`crate::b::B`].',
        '/// See [crate::b::B].',
        'pub struct A;',
        '/* use crate::b::B; */',
        'fn name() -> &\'static str {',
        '    "crate::b::B"',
        '}',
        '#[cfg(test)]',
        'mod tests {',
        '    use crate::b::B;',
        '}',
        '',
      ].join('\n'),
      'b.rs': 'use crate::a::A;\npub struct B;\n',
    },
    [],
  ],
  [
    'a `#[path]` file is the module that declares it',
    {
      'lib.rs': 'mod a;\n#[path = "b_impl.rs"]\nmod b;\n',
      'a.rs': 'use crate::b::B;\npub struct A;\n',
      'b_impl.rs': 'use crate::a::A;\npub struct B;\n',
    },
    [['a', 'b']],
  ],
  [
    "platform twins' `#[path]` children are children of the one module both twins are",
    {
      'lib.rs': [
        'mod a;',
        '#[cfg(unix)]',
        '#[path = "d.rs"]',
        'mod d;',
        '#[cfg(windows)]',
        '#[path = "d_windows.rs"]',
        'mod d;',
        '',
      ].join('\n'),
      'a.rs': 'use crate::d::part::P;\npub struct A;\n',
      'd.rs': '#[path = "d_part.rs"]\nmod part;\n',
      'd_windows.rs': '#[path = "d_part.rs"]\nmod part;\n',
      'd_part.rs': 'use crate::a::A;\npub struct P;\n',
    },
    [['a', 'd::part']],
  ],
  [
    'paths into std and external crates are no edges',
    {
      'lib.rs': 'mod a;\nmod b;\n',
      'a.rs': 'use std::b::B;\nuse serde::b;\npub struct A;\n',
      'b.rs': 'use crate::a::A;\npub struct B;\n',
    },
    [],
  ],
  [
    'groups: the largest first, each sorted',
    {
      'lib.rs': 'mod p;\nmod q;\nmod x;\nmod y;\nmod z;\n',
      'p.rs': 'use crate::q::Q;\npub struct P;\n',
      'q.rs': 'use crate::p::P;\npub struct Q;\n',
      'z.rs': 'use crate::x::X;\npub struct Z;\n',
      'x.rs': 'use crate::y::Y;\npub struct X;\n',
      'y.rs': 'use crate::z::Z;\npub struct Y;\n',
    },
    [
      ['x', 'y', 'z'],
      ['p', 'q'],
    ],
  ],
]

describe('scripts/check/import-cycles.js', () => {
  it.each(cases)('%s', (_case, files, groups) => {
    expect(findCycles(crate(files))).toEqual(groups)
  })

  it('as a command: prints each group with its edges and exits 1 on a cycle', () => {
    const src = crate(cases[0][1])
    const out = spawnSync(process.execPath, [SCRIPT, src], { encoding: 'utf8' })
    expect({ code: out.status, stdout: out.stdout, stderr: out.stderr }).toEqual({
      code: 1,
      stdout: '1 cycles (strongly connected groups of files)\n2 a b\n    a -> b\n    b -> a\n',
      stderr: '',
    })
  })

  it("the crate's own src/ has no import cycle", () => {
    const src = path.join(__dirname, '..', 'src')
    expect(findCycles(src)).toEqual([])
    const out = spawnSync(process.execPath, [SCRIPT, src], { encoding: 'utf8' })
    expect({ code: out.status, stdout: out.stdout }).toEqual({
      code: 0,
      stdout: '0 cycles (strongly connected groups of files)\n',
    })
  })
})
