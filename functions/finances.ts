import { financesHandler } from '../shared/api/http/handlers.ts';
import { runtime } from '../shared/api/config.ts';

/** GET /api/{team}/finances */
export const handler = financesHandler(runtime());
