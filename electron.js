'use strict'
// `member-work-sync/electron`: the addon behind the app's own feature API, so
// an Electron main process swaps `@features/member-work-sync/main` for this
// entry by changing the import path only. `createMemberWorkSyncFeature(deps)`
// takes the app's deps object and returns its facade; the decision-time
// options (`isTeamActive`, `canDispatchNudges`, `resolveControlUrl`, ...)
// become the addon's host questions (`onHostQuestion`), answered here and
// waited for by the addon at most `hostTimeoutMs`. Hand-written.

const path = require('node:path')
const { MemberWorkSync } = require('./index.js')

/** The app's IPC channels (same names as its `contracts/ipc.ts`). */
const MEMBER_WORK_SYNC_GET_STATUS = 'member-work-sync:getStatus'
const MEMBER_WORK_SYNC_REFRESH_STATUS = 'member-work-sync:refreshStatus'
const MEMBER_WORK_SYNC_GET_METRICS = 'member-work-sync:getMetrics'
const MEMBER_WORK_SYNC_REPORT = 'member-work-sync:report'

/**
 * Deps keys, each with how it is used. `reader`: the app's own disk readers,
 * accepted and not used (the addon reads the team, task and kanban files
 * itself). Every callback is answered as a host question of the addon.
 */
const DEP_KEYS = {
  teamsBasePath: 'path',
  claudeRoot: 'path',
  tasksBasePath: 'path',
  configReader: 'reader',
  taskReader: 'reader',
  kanbanManager: 'reader',
  membersMetaStore: 'reader',
  internalStorageBackend: 'storageBackend',
  isTeamActive: 'function',
  isMemberActive: 'function',
  canDispatchNudges: 'function',
  listLifecycleActiveTeamNames: 'function',
  resolveControlUrl: 'function',
  configFileAccess: 'function',
  priorityBusySignals: 'signals',
  extraBusySignals: 'signals',
  nudgeDeliveryWake: 'port',
  queueQuietWindowMs: 'number',
  runtimeTurnSettledTargetResolver: 'runtimeTurnSettledTargetResolver',
  proofMissingRecoveryGuard: 'proofMissingRecoveryGuard',
  reviewPickupDelivery: 'reviewPickupDelivery',
  reviewPickupEscalation: 'reviewPickupEscalation',
  logger: 'logger',
  hostTimeoutMs: 'number',
  tuning: 'object',
  autoStart: 'boolean',
  clock: 'object',
}

/** What a deps value of each kind must be (other kinds: anything). */
const DEP_CHECKS = {
  function: (value) => typeof value === 'function',
  signals: (value) => Array.isArray(value) && value.every((s) => s && typeof s.isBusy === 'function'),
  port: (value) => typeof value.schedule === 'function',
  storageBackend: (value) => typeof value === 'object' && value.gateway !== null && typeof value.gateway === 'object',
  reviewPickupDelivery: (value) => typeof value.canDeliver === 'function' && typeof value.deliver === 'function',
  reviewPickupEscalation: (value) => typeof value.escalate === 'function',
  runtimeTurnSettledTargetResolver: (value) => typeof value.resolve === 'function',
  proofMissingRecoveryGuard: (value) => typeof value.shouldDispatch === 'function',
  logger: (value) => ['debug', 'warn', 'error'].every((m) => typeof value[m] === 'function'),
  path: (value) => typeof value === 'string',
  number: (value) => typeof value === 'number',
  boolean: (value) => typeof value === 'boolean',
}

function invalid(message) {
  const error = new Error(message)
  error.code = 'MWS_INVALID_ARGUMENT'
  return error
}

/** Throws `MWS_INVALID_ARGUMENT` naming the first key of `value` not in `allowed`. */
function rejectUnknownKeys(value, allowed, what) {
  if (value === null || typeof value !== 'object' || Array.isArray(value)) {
    throw invalid(`${what} must be an object`)
  }
  for (const key of Object.keys(value)) {
    if (!allowed.includes(key)) throw invalid(`${what}.${key} is not a known key`)
  }
}

function checkDeps(deps) {
  rejectUnknownKeys(deps, Object.keys(DEP_KEYS), 'deps')
  if (typeof deps.teamsBasePath !== 'string' || deps.teamsBasePath.trim() === '') {
    throw invalid('deps.teamsBasePath must be a non-empty string')
  }
  for (const [key, kind] of Object.entries(DEP_KEYS)) {
    const value = deps[key]
    if (value === undefined || value === null) continue
    const ok = DEP_CHECKS[kind] ? DEP_CHECKS[kind](value) : true
    if (!ok) throw invalid(`deps.${key} has the wrong type (expected ${kind})`)
  }
}

/** Sends one addon log entry to the app's logger (`debug`/`warn`/`error`). */
function logTo(logger, entry) {
  if (!logger) return
  const method = entry.level === 'error' ? 'error' : entry.level === 'warn' ? 'warn' : 'debug'
  try {
    logger[method](`member work sync: ${entry.message}`, { code: entry.code, ...(entry.context || {}) })
  } catch {
    // A throwing logger must not reach the addon's callback path.
  }
}

/** The host's answer to one question of the addon (may throw or reject). */
async function answer(deps, kind, input) {
  switch (kind) {
    case 'isTeamActive':
      return Boolean(await deps.isTeamActive(input))
    case 'isMemberActive':
      return Boolean(await deps.isMemberActive(input))
    case 'canDispatchNudges':
      return Boolean(await deps.canDispatchNudges(input))
    case 'listLifecycleActiveTeamNames': {
      const names = await deps.listLifecycleActiveTeamNames()
      if (!Array.isArray(names)) throw new TypeError('listLifecycleActiveTeamNames must resolve an array')
      return names.filter((name) => typeof name === 'string')
    }
    case 'resolveControlUrl': {
      const url = await deps.resolveControlUrl()
      return typeof url === 'string' ? url : null
    }
    case 'priorityBusySignals':
    case 'extraBusySignals':
      // The app's composite: in order, the first busy one wins, a failing
      // one is logged and counts as not busy.
      for (const signal of deps[kind]) {
        try {
          const result = await signal.isBusy(input)
          if (result && result.busy === true) return result
        } catch (error) {
          logTo(deps.logger, {
            level: 'warn',
            code: 'MWS_LOG_HOST_CALLBACK_FAILED',
            message: 'busy signal failed',
            context: { callback: kind, teamName: input.teamName, memberName: input.memberName, error: String(error) },
          })
        }
      }
      return { busy: false }
    case 'nudgeDeliveryWake':
      await deps.nudgeDeliveryWake.schedule(input)
      return null
    case 'reviewPickupDelivery.canDeliver':
      return await deps.reviewPickupDelivery.canDeliver(input)
    case 'reviewPickupDelivery.deliver':
      return await deps.reviewPickupDelivery.deliver(input)
    case 'reviewPickupEscalation.escalate':
      await deps.reviewPickupEscalation.escalate(input)
      return null
    case 'proofMissingRecoveryGuard.shouldDispatch':
      return await deps.proofMissingRecoveryGuard.shouldDispatch(input)
    case 'runtimeTurnSettledTargetResolver.resolve':
      return await deps.runtimeTurnSettledTargetResolver.resolve(input)
    case 'configFileAccess':
      // The addon names the team; the path is the app's coordinator's.
      await deps.configFileAccess(path.join(deps.teamsBasePath, input, 'config.json'))
      return null
    default:
      throw new Error(`unknown host question ${kind}`)
  }
}

/** The host questions these deps answer. */
function hostAnswers(deps) {
  const kinds = []
  // The app's lifecycle port exists only with isTeamActive.
  if (deps.isTeamActive) kinds.push('isTeamActive')
  if (deps.isTeamActive && deps.isMemberActive) kinds.push('isMemberActive')
  for (const key of ['canDispatchNudges', 'listLifecycleActiveTeamNames', 'resolveControlUrl', 'nudgeDeliveryWake']) {
    if (deps[key]) kinds.push(key)
  }
  for (const key of ['priorityBusySignals', 'extraBusySignals']) {
    if (deps[key] && deps[key].length > 0) kinds.push(key)
  }
  if (deps.reviewPickupDelivery) kinds.push('reviewPickupDelivery.canDeliver', 'reviewPickupDelivery.deliver')
  if (deps.reviewPickupEscalation) kinds.push('reviewPickupEscalation.escalate')
  if (deps.proofMissingRecoveryGuard) kinds.push('proofMissingRecoveryGuard.shouldDispatch')
  if (deps.runtimeTurnSettledTargetResolver) kinds.push('runtimeTurnSettledTargetResolver.resolve')
  if (deps.configFileAccess) kinds.push('configFileAccess')
  return kinds
}

const STATUS_REQUEST_KEYS = ['teamName', 'memberName', 'forceNudge']
const TEAM_REQUEST_KEYS = ['teamName']

/** Loggers of the facades this entry made, for their IPC handlers. */
const facadeLoggers = new WeakMap()

/**
 * The app's `createMemberWorkSyncFeature(deps)`, backed by the addon.
 * Throws `MWS_INVALID_ARGUMENT` naming an unknown or mistyped key.
 */
function createMemberWorkSyncFeature(deps) {
  checkDeps(deps)
  const teamsBasePath = deps.teamsBasePath
  const claudeRoot = deps.claudeRoot || path.dirname(teamsBasePath)
  let addon = null
  const settle = (id, outcome) => {
    try {
      addon.settleHostQuestion(id, outcome)
    } catch {
      // Disposed or torn down: the addon stopped waiting already.
    }
  }
  const answers = hostAnswers(deps)
  addon = new MemberWorkSync({
    claudeRoot,
    teamsBasePath,
    tasksBasePath: deps.tasksBasePath || path.join(claudeRoot, 'tasks'),
    ...(deps.autoStart === undefined ? {} : { autoStart: deps.autoStart }),
    ...(deps.tuning || deps.queueQuietWindowMs != null
      ? {
          tuning: {
            ...(deps.tuning || {}),
            ...(deps.queueQuietWindowMs != null
              ? { queueQuietWindowMs: Math.max(1, Math.round(deps.queueQuietWindowMs)) }
              : {}),
          },
        }
      : {}),
    ...(deps.clock ? { clock: deps.clock } : {}),
    ...(deps.hostTimeoutMs === undefined ? {} : { hostTimeoutMs: deps.hostTimeoutMs }),
    // The app's storage worker owns app.db: the addon calls its gateway and
    // takes its selector's session decision (SQLite or the JSON files).
    ...(deps.internalStorageBackend
      ? {
          storage: {
            gateway: deps.internalStorageBackend.gateway,
            ...(deps.internalStorageBackend.selector ? { selector: deps.internalStorageBackend.selector } : {}),
            // The app passes false in production; a JSON session then hydrates
            // from the replica when there is one and fails closed on an unsafe one.
            ...(deps.internalStorageBackend.fallbackRequiresReplica == null
              ? {}
              : { fallbackRequiresReplica: deps.internalStorageBackend.fallbackRequiresReplica }),
          },
        }
      : {}),
    onLog: (entry) => logTo(deps.logger, entry),
    ...(answers.length > 0
      ? {
          hostAnswers: answers,
          onHostQuestion: (question) => {
            let pending
            try {
              pending = answer(deps, question.kind, question.input)
            } catch (error) {
              pending = Promise.reject(error)
            }
            pending.then(
              (value) => settle(question.id, { ok: true, value: value === undefined ? null : value }),
              (error) => settle(question.id, { ok: false, error: String(error) }),
            )
          },
        }
      : {}),
  })

  const statusRequest = (request) => {
    rejectUnknownKeys(request, STATUS_REQUEST_KEYS, 'request')
    return request
  }
  const teamRequest = (request) => {
    rejectUnknownKeys(request, TEAM_REQUEST_KEYS, 'request')
    return request
  }
  let disposePromise = null
  const facade = {
    getStatus: async (request) => addon.getStatus(statusRequest(request)),
    // As the app's facade: a refresh reconciles now; `forceNudge: true`
    // also resets nudge suppression (the addon's forced status read).
    refreshStatus: async (request) => {
      const { teamName, memberName, forceNudge } = statusRequest(request)
      return forceNudge === true
        ? addon.getStatus({ teamName, memberName, forceNudge: true })
        : addon.refreshStatus({ teamName, memberName })
    },
    getMetrics: async (request) => addon.getMetrics(teamRequest(request)),
    report: async (request) => addon.report(request),
    scheduleProofMissingRecovery: async (request) => addon.scheduleProofMissingRecovery(request),
    prepareTeamDeletion: (teamName, deletionIdentityId) =>
      addon.prepareTeamDeletion(teamName, deletionIdentityId),
    completeTeamDeletion: (teamName) => addon.completeTeamDeletion(teamName),
    resumeTeam: (teamName) => addon.resumeTeam(teamName),
    // Every kind the app emits is accepted; the addon ignores the kinds the
    // app's router ignores (`lead-context`, `member-advisory`) and routes the rest.
    noteTeamChange: (event) => addon.noteTeamChange(event),
    enqueueStartupScan: (teamNames) => addon.enqueueStartupScan(teamNames),
    replayPendingReports: (teamNames) => addon.replayPendingReports(teamNames),
    dispatchDueNudges: (teamNames) => addon.dispatchDueNudges(teamNames),
    buildRuntimeTurnSettledHookSettings: (input) => addon.buildRuntimeTurnSettledHookSettings(input),
    buildRuntimeTurnSettledEnvironment: (input) => addon.buildRuntimeTurnSettledEnvironment(input),
    drainRuntimeTurnSettledEvents: () => addon.drainRuntimeTurnSettledEvents(),
    getQueueDiagnostics: () => addon.getQueueDiagnostics(),
    dispose: () => {
      if (!disposePromise) disposePromise = addon.dispose()
      return disposePromise
    },
  }
  facadeLoggers.set(facade, deps.logger)
  return facade
}

/**
 * The app's `buildMemberWorkSyncRuntimeTurnSettledEnvironment`: the spool
 * environment for a provider before any feature exists (a short-lived
 * instance that starts nothing).
 */
async function buildMemberWorkSyncRuntimeTurnSettledEnvironment(input) {
  rejectUnknownKeys(input, ['teamsBasePath', 'provider'], 'input')
  if (typeof input.teamsBasePath !== 'string' || input.teamsBasePath.trim() === '') {
    throw invalid('input.teamsBasePath must be a non-empty string')
  }
  const claudeRoot = path.dirname(input.teamsBasePath)
  const addon = new MemberWorkSync({ claudeRoot, teamsBasePath: input.teamsBasePath, autoStart: false })
  try {
    return await addon.buildRuntimeTurnSettledEnvironment({ provider: input.provider })
  } finally {
    await addon.dispose()
  }
}

/** A request object for an IPC channel, or `MWS_INVALID_ARGUMENT`. */
function ipcRequest(request, keys) {
  rejectUnknownKeys(request, keys, 'request')
  if (typeof request.teamName !== 'string') throw invalid('request.teamName must be a string')
  return request
}

/** The app's `registerMemberWorkSyncIpc(ipcMain, feature)`: the four channels. */
function registerMemberWorkSyncIpc(ipcMain, feature) {
  const logger = facadeLoggers.get(feature)
  const handle = (channel, what, run) =>
    ipcMain.handle(channel, async (_event, request) => {
      try {
        return await run(request)
      } catch (error) {
        if (logger) logger.error(`Failed to ${what}`, { channel, error: String(error) })
        throw error
      }
    })
  handle(MEMBER_WORK_SYNC_GET_STATUS, 'get member work sync status', (r) =>
    feature.getStatus(ipcRequest(r, STATUS_REQUEST_KEYS)),
  )
  handle(MEMBER_WORK_SYNC_GET_METRICS, 'get member work sync metrics', (r) =>
    feature.getMetrics(ipcRequest(r, TEAM_REQUEST_KEYS)),
  )
  handle(MEMBER_WORK_SYNC_REFRESH_STATUS, 'refresh member work sync status', (r) =>
    feature.refreshStatus(ipcRequest(r, STATUS_REQUEST_KEYS)),
  )
  handle(MEMBER_WORK_SYNC_REPORT, 'submit member work sync report', (r) => {
    if (r === null || typeof r !== 'object') throw invalid('request must be an object')
    return feature.report(r)
  })
}

/** The app's `removeMemberWorkSyncIpc(ipcMain)`. */
function removeMemberWorkSyncIpc(ipcMain) {
  ipcMain.removeHandler(MEMBER_WORK_SYNC_GET_STATUS)
  ipcMain.removeHandler(MEMBER_WORK_SYNC_REFRESH_STATUS)
  ipcMain.removeHandler(MEMBER_WORK_SYNC_GET_METRICS)
  ipcMain.removeHandler(MEMBER_WORK_SYNC_REPORT)
}

// Runtime activity, decided from the app's runtime snapshot as its feature
// decides it: members with live process evidence count, the lead and the
// reserved names do not (except where a lead-like member is asked about).

const RESERVED_MEMBER_NAMES = new Set(['team-lead', 'user'])
const INACTIVE_LIVENESS = new Set([
  'permission_blocked',
  'runtime_process_candidate',
  'shell_only',
  'registered_only',
  'stale_metadata',
  'not_found',
])
const BOOTSTRAP_ONLY_PID_SOURCES = new Set(['runtime_bootstrap', 'persisted_metadata'])
const MEMBER_BOOTSTRAP_PID_SOURCES = new Set(['agent_process_table', 'opencode_bridge'])
const LEAD_BOOTSTRAP_PID_SOURCES = new Set(['lead_process'])

const normalizeMemberName = (name) => String(name || '').trim().toLowerCase()

function isLeadLike(memberName) {
  const name = normalizeMemberName(memberName).replace(/[\s_]+/g, '-')
  return name === 'lead' || name === 'team-lead' || name === 'teamlead' || name === 'team-leader'
}

function hasLiveProcess(entry, bootstrapSources) {
  if (!entry || entry.alive !== true) return false
  if (entry.livenessKind === 'confirmed_bootstrap') {
    const source = entry.pidSource
    if (!source || BOOTSTRAP_ONLY_PID_SOURCES.has(source) || !bootstrapSources.has(source)) return false
  }
  return !entry.livenessKind || !INACTIVE_LIVENESS.has(entry.livenessKind)
}

function isRuntimeEntryActiveForWorkSync(entry) {
  if (!entry) return false
  if (entry.backendType === 'lead' || RESERVED_MEMBER_NAMES.has(normalizeMemberName(entry.memberName))) return false
  if (entry.pidSource && LEAD_BOOTSTRAP_PID_SOURCES.has(entry.pidSource)) return false
  return hasLiveProcess(entry, MEMBER_BOOTSTRAP_PID_SOURCES)
}

function isLeadEntryActive(entry) {
  return Boolean(entry) && isLeadLike(entry.memberName) && entry.backendType === 'lead' && hasLiveProcess(entry, LEAD_BOOTSTRAP_PID_SOURCES)
}

function isRelevant(entry) {
  return entry.backendType !== 'lead' && !RESERVED_MEMBER_NAMES.has(normalizeMemberName(entry.memberName))
}

function mentionsProcessTableUnavailable(entry) {
  return [entry.runtimeDiagnostic, ...(entry.diagnostics || [])].some((text) =>
    /\bprocess table\b.*\bunavailable\b/i.test(text || ''),
  )
}

const entriesOf = (snapshot) => Object.values((snapshot && snapshot.members) || {})

function hasUncertainWorkSyncRuntimeActivity(snapshot) {
  return entriesOf(snapshot).some((entry) => isRelevant(entry) && mentionsProcessTableUnavailable(entry))
}

function hasWorkSyncActiveRuntime(snapshot) {
  return entriesOf(snapshot).some(isRuntimeEntryActiveForWorkSync)
}

function hasWorkSyncReachableRuntime(snapshot) {
  return entriesOf(snapshot).some((entry) => isRuntimeEntryActiveForWorkSync(entry) || isLeadEntryActive(entry))
}

function isRuntimeMemberActiveForWorkSync(snapshot, memberName) {
  const name = normalizeMemberName(memberName)
  if (!name) return false
  return entriesOf(snapshot).some(
    (entry) =>
      normalizeMemberName(entry.memberName) === name &&
      (isRuntimeEntryActiveForWorkSync(entry) || (isLeadLike(name) && isLeadEntryActive(entry))),
  )
}

function isRuntimeMemberActivityUncertainForWorkSync(snapshot, memberName) {
  const name = normalizeMemberName(memberName)
  if (!name) return false
  return entriesOf(snapshot).some(
    (entry) => normalizeMemberName(entry.memberName) === name && isRelevant(entry) && mentionsProcessTableUnavailable(entry),
  )
}

module.exports = {
  createMemberWorkSyncFeature,
  buildMemberWorkSyncRuntimeTurnSettledEnvironment,
  registerMemberWorkSyncIpc,
  removeMemberWorkSyncIpc,
  hasUncertainWorkSyncRuntimeActivity,
  hasWorkSyncActiveRuntime,
  hasWorkSyncReachableRuntime,
  isRuntimeEntryActiveForWorkSync,
  isRuntimeMemberActiveForWorkSync,
  isRuntimeMemberActivityUncertainForWorkSync,
  MEMBER_WORK_SYNC_GET_STATUS,
  MEMBER_WORK_SYNC_REFRESH_STATUS,
  MEMBER_WORK_SYNC_GET_METRICS,
  MEMBER_WORK_SYNC_REPORT,
}
