// Bundled by record.mjs (and record-team-files.mjs) from a source tree exported out of the reference's git mirror: the app's
// own SQLite store for member-work-sync (worker core with its migrations and mws.* ops, the
// store that maps domain values to rows, the mappers). No reference code is stored here.
export { InternalStorageWorkerCore } from '@features/internal-storage/main/infrastructure/worker/InternalStorageWorkerCore';
export { SqliteMemberWorkSyncStore } from '@features/member-work-sync/main/infrastructure/SqliteMemberWorkSyncStore';
export { reportIntentToRecord } from '@features/member-work-sync/main/infrastructure/memberWorkSyncSqliteMappers';
export { MemberWorkSyncSqliteImporter } from '@features/member-work-sync/main/infrastructure/MemberWorkSyncSqliteImporter';
export { InProcessGateway } from '../../test/features/internal-storage/helpers/InProcessGateway';
// The team-file rules (record-team-files.mjs): merge, replica protocol, legacy JSON store, paths.
export { mergeMemberWorkSyncSnapshots } from '@features/member-work-sync/main/infrastructure/memberWorkSyncSnapshotMerge';
export { BackendSelectingMemberWorkSyncStore } from '@features/member-work-sync/main/infrastructure/BackendSelectingMemberWorkSyncStore';
export { JsonMemberWorkSyncStore } from '@features/member-work-sync/main/infrastructure/JsonMemberWorkSyncStore';
export { MemberWorkSyncStorePaths } from '@features/member-work-sync/main/infrastructure/MemberWorkSyncStorePaths';
export { snapshotToRecords, recordsToSnapshot } from '@features/member-work-sync/main/infrastructure/memberWorkSyncSqliteMappers';
