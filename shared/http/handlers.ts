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
import { contractErrors } from './middleware/contract-errors.ts';
import { headWithoutBody } from './middleware/head.ts';
import { readPageQuery, requireValidPage } from './middleware/paginate.ts';
import { requestDeadline } from './middleware/request-deadline.ts';
import { requestEvent } from './middleware/request-event.ts';
import { financeEntityTag, fixedEntityTag, isNotModified, listEntityTag, notModified, taggedJson } from './entity-tag.ts';
import { RecentAccess } from '../store/recent-access.ts';

type Event = APIGatewayProxyEventV2;
type Result = APIGatewayProxyStructuredResultV2;

function route(name: Route['name']): Route {
  return ROUTES.find((r) => r.name === name)!;
}

// The request deadline (middleware/request-deadline.ts) replaces middy's own early timeout.
const MIDDY_OPTIONS = { timeoutEarlyInMillis: 0 };

/**
 * What every function does around its own work: the Lambda context on its log lines, one access
 * log line, the contract's error bodies, the request's clock and deadline. A logger
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
    // No resetKeys: nothing adds keys to the logger per request (the access log passes its fields
    // with its one line), so there is nothing to reset, and its clean-up step cost every request.
    .use(injectLambdaContext(log, { logEvent: false }))
    .use(accessLog(log))
    .use(headWithoutBody())
    .use(contractErrors(log))
    .use(requestDeadline())
    .use(requestEvent());
}

/**
 * GET /api/{team}/projects and /daemons: one page of the team's current generation.
 *
 * The query is read first but judged after the token and the team (the contract's order), so
 * that a warm request can send the page's Query with the token's read (authorize.ts). The ETag
 * comes from the head: a revalidation that still matches is answered 304 without the Query.
 */
export function listHandler(resource: ListResource, { reader, config }: Runtime) {
  const recent = new RecentAccess();
  const { ability, path: routePath } = route(resource);
  return apiFunction()
    .use(readPageQuery())
    .use(authorize({ reader, ability, resource, recent }))
    .use(requireValidPage())
    .handler(async function listPage(event, context) {
      const { head, teamSegment, prefetched } = context.access;
      const { page, perPage, perPageGiven } = context.page;
      const window = pageWindow(head.counts[resource], page, perPage);
      const path = listPath(baseUrl(event, config.publicBaseUrl, routePath), teamSegment, resource);
      const etag = listEntityTag(head, resource, window, perPageGiven, path);
      if (isNotModified(event, etag)) return notModified(etag);
      const items = window.ordinals
        ? await reader.readPage(head, resource, window.ordinals, { deadline: context.deadline, prefetched })
        : [];
      return taggedJson(listEnvelopeJson({ items, window, path, perPageGiven, startedAt: context.startedAt }), etag);
    });
}

/** GET /api/{team}/finances: the summary computed at import, stored in the team's finance item. */
export function financesHandler({ reader }: Runtime) {
  return apiFunction()
    .use(authorizeFinances({ reader, ability: route('finances').ability }))
    .handler(async function financeSummary(event, context) {
      const { finance } = context.access;
      const etag = financeEntityTag(finance);
      if (isNotModified(event, etag)) return notModified(etag);
      return taggedJson(financeJson(finance.fieldsJson, context.startedAt), etag);
    });
}

/** GET /api/openapi.json: a fixed document, no token, no data read. */
export function documentHandler(document: object) {
  const body = JSON.stringify(document);
  const etag = fixedEntityTag(body);
  return apiFunction().handler(async function serveDocument(event) {
    return isNotModified(event, etag) ? notModified(etag) : taggedJson(body, etag);
  });
}
