import middy from '@middy/core';
import httpHeaderNormalizer from '@middy/http-header-normalizer';
import type { APIGatewayProxyEventV2, APIGatewayProxyStructuredResultV2 } from 'aws-lambda';
import { pageWindow, parsePagination } from '../pagination.ts';
import { DOCUMENT_ROUTE, ROUTES, type Route, type ServedRoute } from '../routes.ts';
import { earlyItems, rememberPass, startSpeculativePage, type RecentPasses } from '../speculative-page.ts';
import type { ListResource } from '../../table/keys.ts';
import { createLogger } from '../log.ts';
import { readStackName, type Runtime } from '../config.ts';
import type { TeamFinance, TeamHead } from '../team-reader.ts';
import { authorize, readCredentials, requireValidPage, type AccessRead } from './checks.ts';
import type { Context, RequestContext } from './context.ts';
import { baseUrl, financeJson, listEnvelopeJson, listPath } from './envelope.ts';
import { accessLog } from './middleware/access-log.ts';
import { contractErrors } from './middleware/contract-errors.ts';
import { headWithoutBody } from './middleware/head.ts';
import { requestDeadline } from './middleware/request-deadline.ts';
import { conditionalJson, entityTag, listEntityTag } from './entity-tag.ts';

type Event = APIGatewayProxyEventV2;
type Result = APIGatewayProxyStructuredResultV2;

const routeNamed = (name: Route['name']) => ROUTES.find((route) => route.name === name)!;

/**
 * What every function does around its own work, and nothing else: the Lambda context on its log
 * lines, one access line, HEAD, the contract's error bodies, the request's clock and deadline, and
 * header names lower-cased. A logger per function, as each has its own container in AWS; the stack's
 * name, for the access line's metrics, read once as the function is built, at cold start.
 *
 * Errors travel back up the chain: contractErrors answers each with its contract body (through
 * @middy/http-error-handler), and the access log, outside it, sees the status the client gets.
 * HEAD drops the body after both (middy runs `after` and `onError` hooks last-used first).
 * Middy's own early timeout is off: requestDeadline's covers the middlewares too.
 *
 * @middy/http-header-normalizer lower-cases every header name (its default; `canonical` would
 * write `Authorization`, https://middy.js.org/docs/middlewares/http-header-normalizer/), as API
 * Gateway's payload format 2.0 already has them
 * (https://docs.aws.amazon.com/apigateway/latest/developerguide/http-api-develop-integrations-lambda.html);
 * `sam local` passes them as the client wrote them.
 */
function apiFunction(route: ServedRoute, answer: (event: Event, context: RequestContext) => Promise<Result>) {
  const log = createLogger();
  return middy<Event, Result, Error, Context>({ timeoutEarlyInMillis: 0 })
    .use(log.lambdaContext())
    .use(accessLog(route, readStackName()))
    .use(headWithoutBody())
    .use(contractErrors())
    .use(requestDeadline())
    .use(httpHeaderNormalizer())
    .handler(function answerApiGatewayEvent(event, context) {
      // A direct invoke (npm run invoke) can pass any JSON: anything but an object is the bare 500.
      if (!(event instanceof Object) || Array.isArray(event))
        throw new TypeError('the event is not an API Gateway event object');
      return answer(event, context);
    });
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
  const readAccess: AccessRead<TeamHead> = (tokenHash, segment, options) =>
    reader.readTokenAndHead(tokenHash, segment, resource, options);
  const passes: RecentPasses = new Map();
  return apiFunction(route, async function listPage(event, context) {
    const credentials = readCredentials(event);
    const query = parsePagination(event.queryStringParameters);
    const revalidating = event.headers?.['if-none-match'] !== undefined;
    const speculation = startSpeculativePage(passes, reader, { credentials, query, revalidating }, context);
    let passedOn: TeamHead | undefined;
    try {
      const { team: head, teamSegment } = await authorize(credentials, route.ability, readAccess, context);
      passedOn = head;
      context.teamId = head.teamId; // for the access line
      const { page, perPage, perPageGiven } = requireValidPage(query);
      const window = pageWindow(head.list.count, page, perPage);
      const path = listPath(baseUrl(event, config.publicBaseUrl, route.path), teamSegment, resource);
      return await conditionalJson(event, listEntityTag(head, resource, window, perPageGiven, path), async () => {
        const { ordinals } = window;
        const items = ordinals
          ? await reader.readPage(head, ordinals, context, await earlyItems(speculation, head, ordinals))
          : [];
        return listEnvelopeJson({ items, window, path, perPageGiven, startedAt: context.startedAt });
      });
    } finally {
      await rememberPass(passes, speculation, passedOn);
    }
  });
}

/**
 * GET /api/{team}/finances: the summary the writers computed, stored in the team's finance item;
 * its fingerprint is the tag.
 */
export function financesHandler({ reader }: Runtime) {
  const route = routeNamed('finances');
  const readAccess: AccessRead<TeamFinance> = (...args) => reader.readTokenAndFinance(...args);
  return apiFunction(route, async function financeSummary(event, context) {
    const { team: finance } = await authorize(readCredentials(event), route.ability, readAccess, context);
    context.teamId = finance.teamId; // for the access line
    const etag = entityTag('finances', finance.teamId, finance.tag);
    return conditionalJson(event, etag, () => financeJson(finance.fieldsJson, context.startedAt));
  });
}

/** GET /api/openapi.json: a fixed document, no token, no data read. */
export function documentHandler(document: object) {
  const body = JSON.stringify(document);
  const etag = entityTag('fixed', body);
  return apiFunction(DOCUMENT_ROUTE, async function serveDocument(event) {
    return conditionalJson(event, etag, () => body);
  });
}
