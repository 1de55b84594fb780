import { listHandler } from '../shared/http/handlers.ts';
import { runtime } from '../shared/config.ts';

/** GET /api/{team}/projects */
export const handler = listHandler('projects', runtime());
