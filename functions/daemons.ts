import { listHandler } from '../shared/api/http/handlers.ts';
import { runtime } from '../shared/api/config.ts';

/** GET /api/{team}/daemons */
export const handler = listHandler('daemons', runtime());
