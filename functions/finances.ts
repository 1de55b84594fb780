import { financesHandler } from '../shared/http/handlers.ts';
import { runtime } from '../shared/config.ts';

/** GET /api/{team}/finances */
export const handler = financesHandler(runtime());
