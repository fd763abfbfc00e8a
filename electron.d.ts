/* Types of `member-work-sync/electron` (electron.js, hand-written): the app's
 * feature API over the addon. */
import type {
  MemberWorkSyncReportState,
  MemberWorkSyncStatusState,
  MemberWorkSyncProofMissingRecoveryScheduleRequest,
  MemberWorkSyncProofMissingRecoveryScheduleResult,
  MemberWorkSyncQueueDiagnostics,
  MemberWorkSyncReportRequest,
  MemberWorkSyncReportResult,
  MemberWorkSyncStatus,
  MemberWorkSyncStatusRequest,
  MemberWorkSyncTeamMetrics,
  MemberWorkSyncTeamRequest,
  MemberWorkSyncTuningOption,
  RuntimeTurnSettledDrainSummary,
} from './index'

export type {
  MemberWorkSyncReportState,
  MemberWorkSyncStatusState,
  MemberWorkSyncQueueDiagnostics,
  MemberWorkSyncReportRequest,
  MemberWorkSyncReportResult,
  MemberWorkSyncStatus,
  MemberWorkSyncStatusRequest,
  MemberWorkSyncTeamMetrics,
  MemberWorkSyncProofMissingRecoveryScheduleRequest,
  MemberWorkSyncProofMissingRecoveryScheduleResult,
  RuntimeTurnSettledDrainSummary,
}

/** The runtimes a Stop hook or spool environment is built for. */
export type RuntimeTurnSettledProvider = 'claude' | 'codex' | 'opencode'

/** A member's provider as statuses name it. */
export type MemberWorkSyncProviderId = 'anthropic' | 'codex' | 'gemini' | 'opencode'

/** `getMetrics` request. */
export type MemberWorkSyncMetricsRequest = MemberWorkSyncTeamRequest

/** A team change as the app emits it; kinds the addon does not route are ignored. */
export interface TeamChangeEvent {
  type:
    | 'config'
    | 'inbox'
    | 'log-source-change'
    | 'task-log-change'
    | 'task'
    | 'lead-activity'
    | 'lead-context'
    | 'lead-message'
    | 'tool-activity'
    | 'member-turn-settled'
    | 'member-advisory'
    | 'process'
    | 'member-spawn'
  teamName: string
  runId?: string
  detail?: string
  taskId?: string
  /** Accepted and not used for routing (as the app's router). */
  taskSignalKind?: 'log' | 'change'
}

/** The app's logger port; gets every background failure with its `code`. */
export interface MemberWorkSyncLoggerPort {
  debug(message: string, metadata?: Record<string, unknown>): void
  warn(message: string, metadata?: Record<string, unknown>): void
  error(message: string, metadata?: Record<string, unknown>): void
}

/** A task reference of a nudge payload. */
export interface MemberWorkSyncTaskRef {
  taskId: string
  displayId?: string
  teamName?: string
}

/** A nudge as it is written into a member inbox. */
export interface MemberWorkSyncNudgePayload {
  from: 'system'
  to: string
  messageKind: 'member_work_sync_nudge'
  source: 'member-work-sync'
  actionMode: 'do'
  workSyncIntent: 'agenda_sync' | 'review_pickup'
  workSyncIntentKey?: string
  workSyncReviewRequestEventIds?: string[]
  text: string
  taskRefs: { taskId: string; displayId: string; teamName: string }[]
}

/** One of the app's busy signals, asked right before a nudge is delivered. */
export interface MemberWorkSyncBusySignalPort {
  isBusy(input: {
    teamName: string
    memberName: string
    nowIso: string
    workSyncIntent?: MemberWorkSyncNudgePayload['workSyncIntent']
    workSyncIntentKey?: MemberWorkSyncNudgePayload['workSyncIntentKey']
    taskRefs?: MemberWorkSyncNudgePayload['taskRefs']
  }): Promise<{ busy: boolean; reason?: string; retryAfterIso?: string }>
}

/** Woken after each nudge delivery (inserted or already present). */
export interface MemberWorkSyncNudgeDeliveryWakePort {
  schedule(input: {
    teamName: string
    memberName: string
    messageId: string
    providerId?: MemberWorkSyncProviderId | null
    reason: 'member_work_sync_nudge_inserted' | 'member_work_sync_nudge_existing'
    delayMs?: number
  }): Promise<void> | void
}

/**
 * Asked right before a queued proof-missing recovery is delivered; `ok:
 * false` holds it (retryable: retried at `nextAttemptAt`, else superseded).
 * Throwing or late: retried later (`nudge_retryable`, logged).
 */
export interface MemberWorkSyncProofMissingRecoveryGuardPort {
  shouldDispatch(input: {
    teamName: string
    memberName: string
    intentKey: string
    originalMessageId: string
    taskIds: string[]
    nowIso: string
  }): Promise<{ ok: true } | { ok: false; reason: string; retryable: boolean; nextAttemptAt?: string }>
}

/** Asked by the planner and the dispatcher for a review pickup (README "Electron entry"). */
export interface MemberWorkSyncReviewPickupDeliveryPort {
  canDeliver(input: {
    teamName: string
    memberName: string
    providerId?: MemberWorkSyncProviderId | null
  }):
    | Promise<{ ok: true } | { ok: false; reason: string; diagnostics?: string[] }>
    | { ok: true }
    | { ok: false; reason: string; diagnostics?: string[] }
  deliver(input: {
    teamName: string
    memberName: string
    messageId: string
    providerId?: MemberWorkSyncProviderId | null
    payload: MemberWorkSyncNudgePayload
    inserted: boolean
    nowIso: string
  }): Promise<
    | { ok: true; state: 'prompt_accepted' | 'response_proven'; messageId: string; diagnostics?: string[] }
    | {
        ok: false
        reason: 'capability_absent' | 'retryable_failure' | 'terminal_failure'
        message: string
        diagnostics?: string[]
        retryAfterIso?: string
      }
  >
}

/** Handed every `review_pickup_escalated` line (README "Electron entry"). */
export interface MemberWorkSyncReviewPickupEscalationPort {
  escalate(input: {
    teamName: string
    memberName: string
    reason: string
    nowIso: string
    agendaFingerprint?: string
    reviewRequestEventIds?: string[]
    diagnostics?: string[]
    taskRefs: MemberWorkSyncTaskRef[]
  }): Promise<void> | void
}

/** A normalized runtime turn-settled event, as the app's resolver gets it. */
export interface RuntimeTurnSettledEvent {
  schemaVersion: 1
  provider: RuntimeTurnSettledProvider
  hookEventName: 'Stop'
  sourceId: string
  payloadHash: string
  recordedAt: string
  sessionId?: string
  turnId?: string
  transcriptPath?: string
  cwd?: string
  teamName?: string
  memberName?: string
  agentId?: string
  threadId?: string
  outcome?: string
}

/** The member a settled turn belongs to, or why none. */
export type RuntimeTurnSettledTargetResolution =
  | { ok: true; teamName: string; memberName: string }
  | { ok: false; reason: string }

/**
 * Asked for each drained event (not one ignored before resolution) in place
 * of the addon's own attribution. Throwing or late: the spool file waits
 * for a later drain (`failed`, logged).
 */
export interface RuntimeTurnSettledTargetResolverPort {
  resolve(event: RuntimeTurnSettledEvent): Promise<RuntimeTurnSettledTargetResolution>
}

/** The app's deps object. */
export interface MemberWorkSyncFeatureDeps {
  /** `<claude root>/teams`; the Claude root is its parent unless `claudeRoot` says. */
  teamsBasePath: string
  /** Optional: the Claude root (default: the parent of `teamsBasePath`). */
  claudeRoot?: string
  /** Optional: task dirs (default `<claude root>/tasks`). */
  tasksBasePath?: string
  /** Accepted and not used: the addon reads the team config itself. */
  configReader?: unknown
  /** Accepted and not used: the addon reads the task files itself. */
  taskReader?: unknown
  /** Accepted and not used: the addon reads the kanban state itself. */
  kanbanManager?: unknown
  /** Accepted and not used: the addon reads members meta itself. */
  membersMetaStore?: unknown
  /**
   * The app's storage backend (`{ gateway, selector }`): the addon keeps its
   * state in the app's SQLite database through `gateway`, or in the JSON
   * files when `selector` decides a JSON session (README, gateway mode).
   */
  internalStorageBackend?: { gateway: object; selector?: object; fallbackRequiresReplica?: boolean } | null
  /** Asked at every runtime-activity check (reconcile, report, dispatch). */
  isTeamActive?: (teamName: string) => Promise<boolean> | boolean
  /** Asked after `isTeamActive` said active (only with `isTeamActive`). */
  isMemberActive?: (input: { teamName: string; memberName: string }) => Promise<boolean> | boolean
  /** Asked once per team dispatch; failing or late: no dispatch (logged). */
  canDispatchNudges?: (teamName: string) => Promise<boolean> | boolean
  /** Asked per scheduled dispatch pass for the teams to serve; failing or late: the pass does nothing. */
  listLifecycleActiveTeamNames?: () => Promise<string[]>
  /** Asked per delivery; blank, failing or late: the delivery is retried later. */
  resolveControlUrl?: () => Promise<string | null> | string | null
  /** Asked before the addon's tool activity, right before a delivery. */
  priorityBusySignals?: MemberWorkSyncBusySignalPort[]
  /** Asked after the addon's tool activity, right before a delivery. */
  extraBusySignals?: MemberWorkSyncBusySignalPort[]
  /** Scheduled after each recorded delivery; a failure is journaled `nudge_wake_failed`. */
  nudgeDeliveryWake?: MemberWorkSyncNudgeDeliveryWakePort
  /** Every trigger but a manual refresh waits this long (at most five times it); rounded, at least 1 ms. */
  queueQuietWindowMs?: number
  /** Resolves each drained turn-settled event's member in place of the addon's own attribution. */
  runtimeTurnSettledTargetResolver?: RuntimeTurnSettledTargetResolverPort
  /** Asked right before a queued proof-missing recovery is delivered. */
  proofMissingRecoveryGuard?: MemberWorkSyncProofMissingRecoveryGuardPort
  /**
   * Asked whether a deleted team's `<teamsBasePath>/<team>/config.json` is
   * back (a `config` event for it): resolved resumes the team once;
   * rejecting or late: still deleted (default: the addon reads the file).
   */
  configFileAccess?: (configPath: string) => Promise<void>
  /** `canDeliver` asked by the planner and the dispatcher, `deliver` after the inbox write (README). */
  reviewPickupDelivery?: MemberWorkSyncReviewPickupDeliveryPort
  /** Handed every `review_pickup_escalated` line; a failure is logged only. */
  reviewPickupEscalation?: MemberWorkSyncReviewPickupEscalationPort
  /** Gets every background failure (`metadata.code`: `MWS_LOG_*`) and the hook installer's messages. */
  logger?: MemberWorkSyncLoggerPort
  /** Longest wait for one callback answer, ms (10 to 120 000; default 5 000). */
  hostTimeoutMs?: number
  /** The addon's scheduler and retention tuning. */
  tuning?: MemberWorkSyncTuningOption
  /** Start background work (default true). */
  autoStart?: boolean
  /** Fixed test clock. */
  clock?: { nowMs: number }
}

/** Counts of one nudge dispatch. */
export interface MemberWorkSyncNudgeDispatchSummary {
  claimed: number
  delivered: number
  superseded: number
  retryable: number
  terminal: number
  /** Member outboxes or outcomes that failed (the addon's addition). */
  failed: number
}

/** Counts of one pending-report replay. */
export interface MemberWorkSyncPendingReportReplaySummary {
  processed: number
  accepted: number
  rejected: number
  superseded: number
}

/** The app's feature facade. */
export interface MemberWorkSyncFeatureFacade {
  getStatus(request: MemberWorkSyncStatusRequest): Promise<MemberWorkSyncStatus>
  refreshStatus(request: MemberWorkSyncStatusRequest): Promise<MemberWorkSyncStatus>
  getMetrics(request: MemberWorkSyncMetricsRequest): Promise<MemberWorkSyncTeamMetrics>
  report(request: MemberWorkSyncReportRequest): Promise<MemberWorkSyncReportResult>
  scheduleProofMissingRecovery(
    request: MemberWorkSyncProofMissingRecoveryScheduleRequest,
  ): Promise<MemberWorkSyncProofMissingRecoveryScheduleResult>
  prepareTeamDeletion(teamName: string, deletionIdentityId?: string): Promise<void>
  completeTeamDeletion(teamName: string): void
  resumeTeam(teamName: string): void
  noteTeamChange(event: TeamChangeEvent): void
  enqueueStartupScan(teamNames: string[]): Promise<void>
  replayPendingReports(teamNames: string[]): Promise<MemberWorkSyncPendingReportReplaySummary>
  dispatchDueNudges(teamNames: string[]): Promise<MemberWorkSyncNudgeDispatchSummary>
  buildRuntimeTurnSettledHookSettings(input: {
    provider: RuntimeTurnSettledProvider
  }): Promise<Record<string, unknown> | null>
  buildRuntimeTurnSettledEnvironment(input: {
    provider: RuntimeTurnSettledProvider
  }): Promise<Record<string, string> | null>
  drainRuntimeTurnSettledEvents(): Promise<RuntimeTurnSettledDrainSummary>
  getQueueDiagnostics(): MemberWorkSyncQueueDiagnostics
  dispose(): Promise<void>
}

/**
 * The app's `createMemberWorkSyncFeature`, backed by the addon. Throws
 * `MWS_INVALID_ARGUMENT` naming an unknown or mistyped deps key.
 */
export declare function createMemberWorkSyncFeature(deps: MemberWorkSyncFeatureDeps): MemberWorkSyncFeatureFacade

/** The spool environment of a provider before any feature exists. */
export declare function buildMemberWorkSyncRuntimeTurnSettledEnvironment(input: {
  teamsBasePath: string
  provider: RuntimeTurnSettledProvider
}): Promise<Record<string, string> | null>

/** The slice of Electron's `IpcMain` the IPC pair uses. */
export interface MemberWorkSyncIpcMain {
  handle(channel: string, listener: (event: any, ...args: any[]) => Promise<unknown> | unknown): void
  removeHandler(channel: string): void
}

/** Registers `member-work-sync:{getStatus,refreshStatus,getMetrics,report}`. */
export declare function registerMemberWorkSyncIpc(ipcMain: MemberWorkSyncIpcMain, feature: MemberWorkSyncFeatureFacade): void
/** Removes the four handlers. */
export declare function removeMemberWorkSyncIpc(ipcMain: MemberWorkSyncIpcMain): void

export declare const MEMBER_WORK_SYNC_GET_STATUS: 'member-work-sync:getStatus'
export declare const MEMBER_WORK_SYNC_REFRESH_STATUS: 'member-work-sync:refreshStatus'
export declare const MEMBER_WORK_SYNC_GET_METRICS: 'member-work-sync:getMetrics'
export declare const MEMBER_WORK_SYNC_REPORT: 'member-work-sync:report'

/** One runtime entry of the app's runtime snapshot (the fields the helpers read). */
export interface MemberWorkSyncRuntimeEntry {
  memberName: string
  alive: boolean
  backendType?: 'lead' | 'tmux' | 'iterm2' | 'in-process' | 'process'
  livenessKind?:
    | 'confirmed_bootstrap'
    | 'runtime_process'
    | 'runtime_process_candidate'
    | 'permission_blocked'
    | 'shell_only'
    | 'registered_only'
    | 'stale_metadata'
    | 'not_found'
  pidSource?:
    | 'lead_process'
    | 'tmux_pane'
    | 'tmux_child'
    | 'agent_process_table'
    | 'opencode_bridge'
    | 'runtime_bootstrap'
    | 'persisted_metadata'
  runtimeDiagnostic?: string
  diagnostics?: string[]
}

/** The app's runtime snapshot (the part the helpers read). */
export interface MemberWorkSyncRuntimeSnapshot {
  members: Record<string, MemberWorkSyncRuntimeEntry>
}

type Snapshot = MemberWorkSyncRuntimeSnapshot | null | undefined
export declare function hasUncertainWorkSyncRuntimeActivity(snapshot: Snapshot): boolean
export declare function hasWorkSyncActiveRuntime(snapshot: Snapshot): boolean
export declare function hasWorkSyncReachableRuntime(snapshot: Snapshot): boolean
export declare function isRuntimeEntryActiveForWorkSync(entry: MemberWorkSyncRuntimeEntry | null | undefined): boolean
export declare function isRuntimeMemberActiveForWorkSync(snapshot: Snapshot, memberName: string): boolean
export declare function isRuntimeMemberActivityUncertainForWorkSync(snapshot: Snapshot, memberName: string): boolean
