import { listHandler } from '../shared/http/handlers.ts';
import { runtime } from '../shared/runtime.ts';

/** GET /api/{team}/projects */
export const handler = listHandler('projects', runtime());
