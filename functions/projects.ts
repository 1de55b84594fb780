import { listHandler } from '../shared/api/http/handlers.ts';
import { runtime } from '../shared/api/config.ts';

/** GET /api/{team}/projects */
export const handler = listHandler('projects', runtime());
