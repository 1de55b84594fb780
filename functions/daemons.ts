import { listHandler } from '../shared/http/handlers.ts';
import { runtime } from '../shared/runtime.ts';

/** GET /api/{team}/daemons */
export const handler = listHandler('daemons', runtime());
