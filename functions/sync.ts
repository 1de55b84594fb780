import { syncHandler } from '../shared/sync/deployed.ts';

/** The sync, invoked by EventBridge Scheduler every minute (shared/sync/deployed.ts). */
export const handler = syncHandler();
