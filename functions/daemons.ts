import { listHandler } from '../shared/http/handlers.ts';
import { runtime } from '../shared/config.ts';

/** GET /api/{team}/daemons */
export const handler = listHandler('daemons', runtime());
