import { financesHandler } from '../shared/http/handlers.ts';
import { runtime } from '../shared/runtime.ts';

/** GET /api/{team}/finances */
export const handler = financesHandler(runtime());
