// `member-work-sync/electron` for ES modules: the CommonJS entry's exports
// (electron.js), named. Hand-written.
import electron from './electron.js'

export const {
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
} = electron
