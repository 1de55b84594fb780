import middy from '@middy/core';
import type { APIGatewayProxyEventV2, APIGatewayProxyStructuredResultV2, Context } from 'aws-lambda';
import { pageWindow } from '../pagination.ts';
import { DOCUMENT_ROUTE, ROUTES, type Route, type ServedRoute } from '../routes.ts';
import { type ListResource } from '../../table/keys.ts';
import { createLogger } from '../log.ts';
import { readStackName, type Runtime } from '../config.ts';
import { baseUrl, financeJson, listEnvelopeJson, listPath } from './envelope.ts';
import { authorize } from './middleware/authorize.ts';
import { accessLog } from './middleware/access-log.ts';
import { contractErrors } from './middleware/contract-errors.ts';
import { headWithoutBody } from './middleware/head.ts';
import { readPageQuery, requireValidPage } from './middleware/paginate.ts';
import { requestDeadline } from './middleware/request-deadline.ts';
import { speculativePage } from './middleware/speculative-page.ts';
import { conditionalJson, entityTag, listEntityTag } from './entity-tag.ts';

type Event = APIGatewayProxyEventV2;
type Result = APIGatewayProxyStructuredResultV2;

const routeNamed = (name: Route['name']) => ROUTES.find((route) => route.name === name)!;

/**
 * What every function does around its own work: the Lambda context on its log lines, one access
 * line, the contract's error bodies, the request's clock and deadline. A logger per function,
 * as each has its own container in AWS; the stack's name, for the access line's metrics, read
 * once as the function is built, at cold start.
 *
 * Errors travel back up the chain: contractErrors answers each with its contract body (through
 * @middy/http-error-handler), and the access log, outside it, sees the status the client gets.
 * HEAD drops the body after both (middy runs `after` and `onError` hooks last-used first).
 * Middy's own early timeout is off: requestDeadline's covers the middlewares too.
 */
function apiFunction(route: ServedRoute) {
  const log = createLogger();
  return (
    middy<Event, Result, Error, Context>({ timeoutEarlyInMillis: 0 })
      .use(log.lambdaContext())
      .use(accessLog(route, readStackName()))
      .use(headWithoutBody())
      .use(contractErrors())
      .use(requestDeadline())
      // A direct invoke (npm run invoke) can pass any JSON: anything but an object is the bare 500.
      // Header names are lower-cased before anything reads them: API Gateway sends them so (payload format 2.0,
      // https://docs.aws.amazon.com/apigateway/latest/developerguide/http-api-develop-integrations-lambda.html),
      // `sam local` as the client wrote them.
      .before(function normalizeEvent({ event }) {
        if (!(event instanceof Object) || Array.isArray(event))
          throw new TypeError('the event is not an API Gateway event object');
        if (event.headers)
          event.headers = Object.fromEntries(
            Object.entries(event.headers).map(([name, value]) => [name.toLowerCase(), value]),
          );
      })
  );
}

/**
 * GET /api/{team}/projects and /daemons: one page of the list as its head describes it.
 *
 * The query is read first but judged after the token and the team (the contract's order), so
 * that a warm request can send the page's Query with the token's read (speculative-page.ts). The
 * ETag comes from the head: a revalidation that still matches is answered 304 without the Query.
 */
export function listHandler(resource: ListResource, { reader, config }: Runtime) {
  const route = routeNamed(resource);
  return apiFunction(route)
    .use(readPageQuery())
    .use(speculativePage({ reader, resource }))
    .use(
      authorize({
        ability: route.ability,
        read: (tokenHash, segment, options) => reader.readTokenAndHead(tokenHash, segment, resource, options),
      }),
    )
    .use(requireValidPage())
    .handler(async function listPage(event, context) {
      const { team: head, teamSegment } = context.access;
      const { page, perPage, perPageGiven } = context.page;
      const window = pageWindow(head.list.count, page, perPage);
      const path = listPath(baseUrl(event, config.publicBaseUrl, route.path), teamSegment, resource);
      return conditionalJson(event, listEntityTag(head, resource, window, perPageGiven, path), async () => {
        const { ordinals } = window;
        const items = ordinals
          ? await reader.readPage(head, ordinals, context, await context.earlyPage?.(head, ordinals))
          : [];
        return listEnvelopeJson({ items, window, path, perPageGiven, startedAt: context.startedAt });
      });
    });
}

/**
 * GET /api/{team}/finances: the summary the writers computed, stored in the team's finance item;
 * its fingerprint is the tag.
 */
export function financesHandler({ reader }: Runtime) {
  const route = routeNamed('finances');
  return apiFunction(route)
    .use(authorize({ ability: route.ability, read: (...args) => reader.readTokenAndFinance(...args) }))
    .handler(async function financeSummary(event, context) {
      const { team: finance } = context.access;
      const etag = entityTag('finances', finance.teamId, finance.tag);
      return conditionalJson(event, etag, () => financeJson(finance.fieldsJson, context.startedAt));
    });
}

/** GET /api/openapi.json: a fixed document, no token, no data read. */
export function documentHandler(document: object) {
  const body = JSON.stringify(document);
  const etag = entityTag('fixed', body);
  return apiFunction(DOCUMENT_ROUTE).handler(async function serveDocument(event) {
    return conditionalJson(event, etag, () => body);
  });
}
