'use strict'
// What the CLI prints is made here safe for a terminal and short enough for
// one: names, subjects and file names come from files agents write, and a
// control character there (ESC, BEL, CSI, OSC 52 ...) would drive the
// operator's terminal (write the clipboard, clear a line, hide a member).

/** C0 controls but tab and newline, DEL and C1 controls. */
// eslint-disable-next-line no-control-regex
const TERMINAL_CONTROLS = /[\u0000-\u0008\u000b-\u001f\u007f-\u009f]/g
/** Every C0 control, DEL and C1 control (a field is one line). */
// eslint-disable-next-line no-control-regex
const FIELD_CONTROLS = /[\u0000-\u001f\u007f-\u009f]/g
/** DEL and C1 controls, which JSON.stringify leaves raw (it escapes C0 itself). */
const JSON_RAW_CONTROLS = /[\u007f-\u009f]/g

/** Where text output is wrapped. */
const MAX_COLUMNS = 100

/** `\xHH` for one control character. */
function visible(char) {
  if (char === '\n') return '\\n'
  if (char === '\t') return '\\t'
  return `\\x${char.charCodeAt(0).toString(16).padStart(2, '0')}`
}

/** Text output: every control character but newline and tab shown as `\xHH`. */
function escapeControls(text) {
  return String(text).replace(TERMINAL_CONTROLS, visible)
}

/** One value inside a line (a name, a subject): every control character shown, newline and tab too. */
function field(value) {
  return String(value).replace(FIELD_CONTROLS, visible)
}

/** JSON output: DEL and C1 controls as `\u00HH` escapes (still the same JSON value). */
function escapeJson(json) {
  return json.replace(JSON_RAW_CONTROLS, (char) => `\\u${char.charCodeAt(0).toString(16).padStart(4, '0')}`)
}

/**
 * `line` cut into lines of at most `width` characters at spaces; the
 * continuation lines are indented by `indent` spaces. A word longer than a
 * line is split.
 */
function wrapLine(line, width = MAX_COLUMNS, indent = 0) {
  if (line.length <= width) return [line]
  const lines = []
  let rest = line
  let first = true
  while (rest.length > 0) {
    const prefix = first ? '' : ' '.repeat(indent)
    const room = width - prefix.length
    if (rest.length <= room) {
      lines.push(prefix + rest)
      break
    }
    let cut = rest.lastIndexOf(' ', room)
    // A word too long for any line is split where the line ends, not moved down whole.
    const wordEnd = rest.indexOf(' ', cut + 1)
    if (cut <= 0 || (wordEnd === -1 ? rest.length : wordEnd) - cut - 1 > width - indent) cut = room
    lines.push(prefix + rest.slice(0, cut).trimEnd())
    rest = rest.slice(cut).trimStart()
    first = false
  }
  return lines
}

/** Every line of `text` wrapped at `width`, continuation lines indented 2 past the line's own indent. */
function wrapText(text, width = MAX_COLUMNS) {
  return text
    .split('\n')
    .flatMap((line) => wrapLine(line, width, Math.min(line.length - line.trimStart().length + 2, width / 2)))
    .join('\n')
}

/** Edit distance with adjacent transpositions (`stauts` is 1 from `status`). */
function editDistance(a, b) {
  const d = Array.from({ length: a.length + 1 }, (_, i) => [i, ...Array(b.length).fill(0)])
  for (let j = 1; j <= b.length; j++) d[0][j] = j
  for (let i = 1; i <= a.length; i++) {
    for (let j = 1; j <= b.length; j++) {
      const cost = a[i - 1] === b[j - 1] ? 0 : 1
      d[i][j] = Math.min(d[i - 1][j] + 1, d[i][j - 1] + 1, d[i - 1][j - 1] + cost)
      if (i > 1 && j > 1 && a[i - 1] === b[j - 2] && a[i - 2] === b[j - 1]) d[i][j] = Math.min(d[i][j], d[i - 2][j - 2] + 1)
    }
  }
  return d[a.length][b.length]
}

/** The candidate `word` most likely meant (a prefix of it, or at most 2 edits away), or undefined. */
function closest(word, candidates) {
  const lower = word.toLowerCase()
  const prefixed = candidates.filter((c) => lower.length >= 3 && c.startsWith(lower))
  if (prefixed.length === 1) return prefixed[0]
  let best
  let bestDistance = Math.min(2, Math.max(1, Math.floor(lower.length / 3)))
  for (const candidate of candidates) {
    const distance = editDistance(lower, candidate)
    if (distance <= bestDistance && (best === undefined || distance < editDistance(lower, best))) {
      best = candidate
      bestDistance = distance
    }
  }
  return best
}

module.exports = { escapeControls, escapeJson, field, wrapLine, wrapText, closest, MAX_COLUMNS }
