// Bundled by record.mjs from a source tree exported out of the reference's git mirror: the app's
// own SQLite store for member-work-sync (worker core with its migrations and mws.* ops, the
// store that maps domain values to rows, the mappers). No reference code is stored here.
export { InternalStorageWorkerCore } from '@features/internal-storage/main/infrastructure/worker/InternalStorageWorkerCore';
export { SqliteMemberWorkSyncStore } from '@features/member-work-sync/main/infrastructure/SqliteMemberWorkSyncStore';
export { reportIntentToRecord } from '@features/member-work-sync/main/infrastructure/memberWorkSyncSqliteMappers';
export { MemberWorkSyncSqliteImporter } from '@features/member-work-sync/main/infrastructure/MemberWorkSyncSqliteImporter';
export { InProcessGateway } from '../../test/features/internal-storage/helpers/InProcessGateway';
