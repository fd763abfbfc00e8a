// Type test, checked by `tsc --strict` in `npm test` (not run by vitest):
// the declarations accept what the addon accepts and refuse the rest.
import type {
  MemberWorkSyncErrorCode,
  MemberWorkSyncItemReason,
  MemberWorkSyncTriggerReason,
  MemberWorkSyncExplainEntry,
  MemberWorkSyncExplanation,
  MemberWorkSyncLogEntry,
  MemberWorkSyncOptions,
  MemberWorkSyncStatusState,
  TeamChangeEvent,
} from '../index'

export const settled: TeamChangeEvent = { type: 'member-turn-settled', teamName: 'forge', detail: '{"memberName":"jill"}' }
// @ts-expect-error a misspelled event type is refused
export const typo: TeamChangeEvent = { type: 'tsak', teamName: 'forge' }

export const codes: MemberWorkSyncErrorCode[] = ['MWS_INVALID_ARGUMENT', 'MWS_IO', 'MWS_DISPOSED', 'MWS_TEAM_QUIESCED', 'MWS_INTERNAL']
// @ts-expect-error an unknown error code is refused
export const badCode: MemberWorkSyncErrorCode = 'MWS_OOPS'

export const state: MemberWorkSyncStatusState = 'needs_sync'
// @ts-expect-error an unknown state is refused
export const badState: MemberWorkSyncStatusState = 'busy'

export const options: MemberWorkSyncOptions = {
  autoStart: false,
  onLog: (entry: MemberWorkSyncLogEntry) => {
    const level: 'debug' | 'info' | 'warn' | 'error' = entry.level
    void level
  },
}
// @ts-expect-error an unknown log code is refused
export const badEntry: MemberWorkSyncLogEntry = { level: 'warn', code: 'MWS_LOG_NOPE', message: '' }

export const entry: MemberWorkSyncExplainEntry = {
  atMs: 0,
  at: '1970-01-01T00:00:00.000Z',
  origin: 'outbox',
  kind: 'outbox_delivered',
  sentence: 'outbox: nudge o1 (agenda_sync) delivered',
  fields: {},
}
export const explanation: MemberWorkSyncExplanation = { teamName: 'forge', memberName: 'jack', generatedAt: '', since: null, entries: [entry], diagnostics: [] }
// @ts-expect-error an unknown origin is refused
export const badOrigin: MemberWorkSyncExplainEntry = { ...entry, origin: 'inbox' }

// Item reasons and trigger reasons are closed unions too.
const reason: MemberWorkSyncItemReason = 'owned_pending_task'
// @ts-expect-error: not an item reason
const badReason: MemberWorkSyncItemReason = 'owned_task'
const trigger: MemberWorkSyncTriggerReason = 'turn_settled'
// @ts-expect-error: not a trigger
const badTrigger: MemberWorkSyncTriggerReason = 'turn_ended'
void [reason, badReason, trigger, badTrigger]

// member-work-sync/lazy: resolves to the module itself; the rejection's code is its own.
import { loadMemberWorkSync } from '../lazy'
import type { MemberWorkSyncModule, MemberWorkSyncNoNativeBinaryError } from '../index'
export const lazyModule: Promise<MemberWorkSyncModule> = loadMemberWorkSync()
export const lazyInstance = loadMemberWorkSync().then((m) => new m.MemberWorkSync({ claudeRoot: '/tmp/x', autoStart: false }))
export const noBinary: MemberWorkSyncNoNativeBinaryError['code'] = 'MWS_NO_NATIVE_BINARY'
// @ts-expect-error the missing-binary error has only its own code
export const noBinaryOther: MemberWorkSyncNoNativeBinaryError['code'] = 'MWS_IO'
