// A scratch Electron main process in the shape of the app's call sites
// (its `src/main/index.ts` and `src/main/http/teams.ts`): everything comes
// from `member-work-sync/electron` only, the way the app would import it
// after changing its import path. Type-checked with `tsc --strict` against
// Electron's own types (`npm test`); run in Node by electron-app.test.ts
// with a stand-in `ipcMain` and services.
import type { IpcMain } from 'electron'

import {
  buildMemberWorkSyncRuntimeTurnSettledEnvironment,
  createMemberWorkSyncFeature,
  hasUncertainWorkSyncRuntimeActivity,
  hasWorkSyncReachableRuntime,
  isRuntimeMemberActivityUncertainForWorkSync,
  isRuntimeMemberActiveForWorkSync,
  type MemberWorkSyncFeatureFacade,
  registerMemberWorkSyncIpc,
  removeMemberWorkSyncIpc,
  type MemberWorkSyncBusySignalPort,
  type MemberWorkSyncReportState,
  type RuntimeTurnSettledProvider,
  type TeamChangeEvent,
} from 'member-work-sync/electron'

/** What the scratch app's own services look like to the feature. */
export interface ScratchServices {
  teamsBasePath: string
  runtimeSnapshot(teamName: string): Promise<{ members: Record<string, { memberName: string; alive: boolean; backendType?: 'lead' | 'process' }> } | null>
  canDispatch(teamName: string): Promise<boolean> | boolean
  lifecycleActiveTeamNames(): Promise<string[]>
  controlUrl(): Promise<string | null> | string | null
  wakeOpenCode(input: { teamName: string; memberName: string; messageId: string; delayMs?: number }): void | Promise<void>
  relayLead(teamName: string): void | Promise<void>
  promptDeliveryBusy: MemberWorkSyncBusySignalPort
  toolApprovalBusy: MemberWorkSyncBusySignalPort
  /** The app's OpenCode delivery status of a message (null: not an OpenCode recipient, or unknown). */
  deliveryStatus(teamName: string, messageId: string): Promise<{ proofMissing: boolean; checking: boolean; nextReviewAt?: string; responsePending: boolean } | null>
  /** A runtime session the app knows the owner of (its live harness's resolver seam). */
  sessionOwner(sessionId: string): Promise<{ teamName: string; memberName: string } | null>
  /** How the app checks that a config file is there (`fs.promises.access`). */
  configFileAccess(configPath: string): Promise<void>
  logger: { debug(m: string, x?: Record<string, unknown>): void; warn(m: string, x?: Record<string, unknown>): void; error(m: string, x?: Record<string, unknown>): void }
  hostTimeoutMs?: number
  tuning?: { dispatchIntervalMs?: number; drainIntervalMs?: number }
  autoStart?: boolean
  clock?: { nowMs: number }
}

/** The app's reader services: accepted by the feature and not used. */
class TeamConfigReader {}
class TeamTaskReader {}
class TeamKanbanManager {}
class TeamMembersMetaStore {}

let memberWorkSyncFeature: MemberWorkSyncFeatureFacade | null = null

/** As the app's `initializeServices`: builds the feature with its options. */
export function startMemberWorkSync(ipcMain: IpcMain, services: ScratchServices): MemberWorkSyncFeatureFacade {
  const isTeamActiveForMemberWorkSync = async (teamName: string): Promise<boolean> =>
    hasWorkSyncReachableRuntime(await services.runtimeSnapshot(teamName))
  const isMemberActiveForMemberWorkSync = async (input: { teamName: string; memberName: string }): Promise<boolean> => {
    const snapshot = await services.runtimeSnapshot(input.teamName)
    return (
      isRuntimeMemberActiveForWorkSync(snapshot, input.memberName) ||
      isRuntimeMemberActivityUncertainForWorkSync(snapshot, input.memberName) ||
      hasUncertainWorkSyncRuntimeActivity(snapshot)
    )
  }
  memberWorkSyncFeature = createMemberWorkSyncFeature({
    teamsBasePath: services.teamsBasePath,
    configReader: new TeamConfigReader(),
    taskReader: new TeamTaskReader(),
    kanbanManager: new TeamKanbanManager(),
    membersMetaStore: new TeamMembersMetaStore(),
    internalStorageBackend: null,
    isTeamActive: isTeamActiveForMemberWorkSync,
    isMemberActive: isMemberActiveForMemberWorkSync,
    canDispatchNudges: (teamName) => services.canDispatch(teamName),
    listLifecycleActiveTeamNames: () => services.lifecycleActiveTeamNames(),
    priorityBusySignals: [services.promptDeliveryBusy],
    extraBusySignals: [services.toolApprovalBusy],
    resolveControlUrl: async () => services.controlUrl(),
    nudgeDeliveryWake: {
      schedule: async (input) => {
        if (input.providerId === 'opencode') {
          await services.wakeOpenCode({
            teamName: input.teamName,
            memberName: input.memberName,
            messageId: input.messageId,
            delayMs: input.delayMs,
          })
          return
        }
        if (input.memberName.trim().toLowerCase() === 'team-lead') {
          await services.relayLead(input.teamName)
        }
      },
    },
    // As the app's guard: only a delivery still missing its proof gets the recovery.
    proofMissingRecoveryGuard: {
      shouldDispatch: async (input) => {
        const status = await services.deliveryStatus(input.teamName, input.originalMessageId)
        if (!status) return { ok: true }
        if (status.proofMissing) {
          return status.checking
            ? { ok: false, reason: 'proof_missing_recovery_still_in_grace', retryable: true, ...(status.nextReviewAt ? { nextAttemptAt: status.nextReviewAt } : {}) }
            : { ok: true }
        }
        return status.responsePending
          ? { ok: false, reason: 'proof_missing_recovery_delivery_still_pending', retryable: true }
          : { ok: false, reason: 'proof_missing_recovery_suppressed', retryable: false }
      },
    },
    // As the app's live harness: a session the app knows decides the member.
    runtimeTurnSettledTargetResolver: {
      resolve: async (event) => {
        if (event.provider !== 'claude') return { ok: false, reason: 'unsupported_provider' }
        const owner = event.sessionId ? await services.sessionOwner(event.sessionId) : null
        return owner ? { ok: true, teamName: owner.teamName, memberName: owner.memberName } : { ok: false, reason: 'no_matching_member_session' }
      },
    },
    configFileAccess: (configPath) => services.configFileAccess(configPath),
    reviewPickupDelivery: {
      canDeliver: (input) =>
        input.providerId === 'opencode' ? { ok: true } : { ok: false, reason: `provider_not_supported:${input.providerId ?? 'unknown'}` },
      deliver: async (input) => {
        const deliveryMetadata: { actionMode: 'do'; taskRefs: { taskId: string; displayId: string; teamName: string }[] } = {
          actionMode: input.payload.actionMode,
          taskRefs: input.payload.taskRefs,
        }
        return deliveryMetadata.taskRefs.length > 0
          ? { ok: true, state: 'prompt_accepted', messageId: input.messageId }
          : { ok: false, reason: 'retryable_failure', message: 'opencode_review_pickup_delivery_not_confirmed' }
      },
    },
    reviewPickupEscalation: {
      escalate: async (input) => {
        services.logger.debug('review pickup escalation', {
          taskRefs: input.taskRefs.map((taskRef) => taskRef.displayId ?? taskRef.taskId.slice(0, 8)),
        })
      },
    },
    logger: services.logger,
    ...(services.hostTimeoutMs === undefined ? {} : { hostTimeoutMs: services.hostTimeoutMs }),
    ...(services.tuning ? { tuning: services.tuning } : {}),
    ...(services.autoStart === undefined ? {} : { autoStart: services.autoStart }),
    ...(services.clock ? { clock: services.clock } : {}),
  })
  registerMemberWorkSyncIpc(ipcMain, memberWorkSyncFeature)
  return memberWorkSyncFeature
}

/** As the app's team-change fan-out. */
export function notifyTeamChange(teamChange: TeamChangeEvent): void {
  memberWorkSyncFeature?.noteTeamChange(teamChange)
}

/** As the app's provisioning providers. */
export function runtimeEnvironmentFor(teamsBasePath: string, provider: RuntimeTurnSettledProvider): Promise<Record<string, string> | null> {
  return memberWorkSyncFeature
    ? memberWorkSyncFeature.buildRuntimeTurnSettledEnvironment({ provider })
    : buildMemberWorkSyncRuntimeTurnSettledEnvironment({ teamsBasePath, provider })
}

/** As the app's startup once teams are known. */
export async function startupScan(lifecycleActiveTeamNames: string[]): Promise<void> {
  await memberWorkSyncFeature?.replayPendingReports(lifecycleActiveTeamNames)
  await memberWorkSyncFeature?.enqueueStartupScan(lifecycleActiveTeamNames)
}

/** As the app's HTTP routes (`src/main/http/teams.ts`). */
export const routes = {
  diagnostics: () => {
    const diagnostics = memberWorkSyncFeature?.getQueueDiagnostics()
    return { queue: diagnostics, queued: diagnostics?.queuedItems.map((item) => `${item.teamName}/${item.memberName}`) }
  },
  metrics: (teamName: string) => memberWorkSyncFeature?.getMetrics({ teamName }),
  status: (teamName: string, memberName: string) => memberWorkSyncFeature?.getStatus({ teamName, memberName }),
  refresh: (teamName: string, memberName: string, body: { forceNudge?: boolean }) =>
    memberWorkSyncFeature?.refreshStatus({ teamName, memberName, ...(body.forceNudge === true ? { forceNudge: true } : {}) }),
  resume: (teamName: string) => memberWorkSyncFeature?.resumeTeam(teamName),
  report: (teamName: string, memberName: string, body: { state: MemberWorkSyncReportState; agendaFingerprint: string; reportToken?: string }) =>
    memberWorkSyncFeature?.report({ teamName, memberName, ...body, source: 'app' }),
}

/** As the app's team deletion. */
export async function deleteTeam(teamName: string): Promise<void> {
  await memberWorkSyncFeature?.prepareTeamDeletion(teamName, `deletion-${teamName}`)
  memberWorkSyncFeature?.completeTeamDeletion(teamName)
}

/** As the app's shutdown. */
export async function shutdown(ipcMain: IpcMain): Promise<void> {
  removeMemberWorkSyncIpc(ipcMain)
  await memberWorkSyncFeature?.dispose()
  memberWorkSyncFeature = null
}
