import middy from '@middy/core';
import { injectLambdaContext } from '@aws-lambda-powertools/logger/middleware';
import type { APIGatewayProxyEventV2, APIGatewayProxyStructuredResultV2, Context } from 'aws-lambda';
import { pageWindow } from '../domain/pagination.ts';
import type { ListResource } from '../domain/resources.ts';
import { ROUTES, type Route } from '../routes.ts';
import { createLogger } from '../log.ts';
import type { Runtime } from '../runtime.ts';
import { baseUrl, financeJson, listEnvelopeJson, listPath } from './envelope.ts';
import { authorize, authorizeFinances } from './middleware/authorize.ts';
import { accessLog } from './middleware/access-log.ts';
import { conditionalGet } from './middleware/conditional-get.ts';
import { contractErrors } from './middleware/contract-errors.ts';
import { headWithoutBody } from './middleware/head.ts';
import { paginate } from './middleware/paginate.ts';
import { requestDeadline } from './middleware/request-deadline.ts';
import { requestEvent } from './middleware/request-event.ts';
import { jsonResponse } from './response.ts';

type Event = APIGatewayProxyEventV2;
type Result = APIGatewayProxyStructuredResultV2;

function route(name: Route['name']): Route {
  return ROUTES.find((r) => r.name === name)!;
}

// The request deadline (middleware/request-deadline.ts) replaces middy's own early timeout.
const MIDDY_OPTIONS = { timeoutEarlyInMillis: 0 };

/**
 * What every function does around its own work: the Lambda context on its log lines, one access
 * log line, the contract's error bodies, the request's clock and deadline, and ETags. A logger
 * per function, as each has its own container in AWS: its cold start is its own.
 *
 * Errors travel back up the chain: contractErrors answers each with its contract body (through
 * @middy/http-error-handler), and the access log, outside it, sees the status the client gets.
 * HEAD drops the body after both (middy runs `after` and `onError` hooks last-used first);
 * requestEvent checks the event and lower-cases header names before anything reads them.
 */
function apiFunction() {
  const log = createLogger();
  return middy<Event, Result, Error, Context>(MIDDY_OPTIONS)
    // logEvent stays off whatever POWERTOOLS_LOGGER_LOG_EVENT says: the event holds the bearer token.
    .use(injectLambdaContext(log, { resetKeys: true, logEvent: false }))
    .use(accessLog(log))
    .use(headWithoutBody())
    .use(contractErrors(log))
    .use(requestDeadline())
    .use(requestEvent())
    .use(conditionalGet());
}

/** GET /api/{team}/projects and /daemons: one page of the team's current generation. */
export function listHandler(resource: ListResource, { reader, config }: Runtime) {
  return apiFunction()
    .use(authorize({ reader, ability: route(resource).ability }))
    .use(paginate())
    .handler(async function listPage(event, context) {
      const { head, teamSegment } = context.access;
      const window = pageWindow(head.counts[resource], context.page.page, context.page.perPage);
      const items = window.ordinals
        ? await reader.readPage(head, resource, window.ordinals.first, window.ordinals.last, context.deadline)
        : [];
      const path = listPath(baseUrl(event, config.publicBaseUrl, route(resource).path), teamSegment, resource);
      return jsonResponse(200, listEnvelopeJson({ items, window, path, perPageGiven: context.page.perPageGiven, startedAt: context.startedAt }));
    });
}

/** GET /api/{team}/finances: the summary computed at import, stored in the team's finance item. */
export function financesHandler({ reader }: Runtime) {
  return apiFunction()
    .use(authorizeFinances({ reader, ability: route('finances').ability }))
    .handler(async function financeSummary(_event, context) {
      return jsonResponse(200, financeJson(context.access.finance.fieldsJson, context.startedAt));
    });
}

/** GET /api/openapi.json: a fixed document, no token, no data read. */
export function documentHandler(document: object) {
  const body = JSON.stringify(document);
  return apiFunction().handler(async function serveDocument() {
    return jsonResponse(200, body);
  });
}
