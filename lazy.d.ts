/* Types of `member-work-sync/lazy` (lazy.js, hand-written). */
import type { MemberWorkSyncModule } from './index'

/**
 * Loads the addon: resolves to the module `require('member-work-sync')`
 * returns, or rejects with a `MemberWorkSyncNoNativeBinaryError`
 * (`code: 'MWS_NO_NATIVE_BINARY'`) when no native binary loads for this
 * platform. Never throws; importing this entry loads nothing.
 */
export declare function loadMemberWorkSync(): Promise<MemberWorkSyncModule>
