import document from '../openapi.json' with { type: 'json' };
import { documentHandler } from '../shared/api/http/handlers.ts';

/** GET /api/openapi.json: the API's OpenAPI 3.1 document, without a token. */
export const handler = documentHandler(document);
