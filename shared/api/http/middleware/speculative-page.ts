import type { MiddlewareObj } from '@middy/core';
import type { APIGatewayProxyEventV2 } from 'aws-lambda';
import { monotonicMs } from '../../clock.ts';
import { pageWindow } from '../../pagination.ts';
import type { ListResource } from '../../../table/keys.ts';
import { pageKeys, type TeamHead, type TeamReader } from '../../team-reader.ts';
import type { Authorized, Context, QueryRead, Speculated, Timed } from '../context.ts';
import { credentialsOf, type CredentialsInternal } from './authorize.ts';

/**
 * One round trip on a warm function (docs/storage.md): for a token this function recently saw
 * get through the checks for this team, the page's Query on the generation it saw then goes out
 * before authorize's read, so that the two travel together. The handler uses its items only if
 * the head authorize reads still names that generation; otherwise it reads the page itself (one
 * more Query, never a wrong answer). Nothing remembered here ever answers a request: the token
 * and the head are read on every one.
 *
 * Never for a token not seen passing (an unknown token, or one probing teams it cannot read,
 * causes no Query), never for a query that will answer 422, and never with If-None-Match, whose
 * answer may need no Query at all.
 *
 * A (bearer, team segment) pair is remembered with its head once a request of it gets through
 * the checks (whatever its answer then), and forgotten once one does not. The bearer is keyed as
 * sent, its Sanctum id included, so a wrong id never speculates on a right one's pass. FRESH_MS
 * is also how long a replaced generation stays readable, so a speculation never aims at one
 * already swept. The map is bounded, least recently used first out.
 */
const FRESH_MS = 5 * 60_000;
const CAPACITY = 4_096;

type Event = APIGatewayProxyEventV2;
type Internal = CredentialsInternal & {
  /** The pair this request is remembered under, and its early Query if one went out. */
  speculation?: { pair: string; early?: Promise<EarlyPage | undefined> };
};
type EarlyPage = { team: TeamHead; items: string[] };
// What authorize leaves on the context (`access`, once the checks passed) is read after the answer.
type SpeculationContext = Context & Timed & QueryRead & Speculated & Partial<Authorized>;

export function speculativePage({
  reader,
  resource,
}: {
  reader: TeamReader;
  resource: ListResource;
}): MiddlewareObj<Event, unknown, Error, SpeculationContext, Internal> {
  const passes = new Map<string, { head: TeamHead; at: number }>();

  const recentHead = (pair: string) => {
    const pass = passes.get(pair);
    return pass && monotonicMs() - pass.at <= FRESH_MS ? pass.head : undefined;
  };

  /** After the answer or the error: the early Query is waited for, then the pair remembered or forgotten. */
  const rememberOutcome = async ({ context, internal }: { context: SpeculationContext; internal: Internal }) => {
    if (internal.speculation === undefined) return;
    const { pair, early } = internal.speculation;
    // The request ends with no call of its own in flight, and its access line counts what the Query cost.
    await early;
    passes.delete(pair);
    if (context.access === undefined) return;
    passes.set(pair, { head: context.access.team, at: monotonicMs() });
    if (passes.size > CAPACITY) passes.delete(passes.keys().next().value!);
  };

  return {
    before: function sendPageQueryEarly(request) {
      const { event, context, internal } = request;
      const credentials = credentialsOf(request);
      if (credentials === undefined) return;
      const { bearer, teamSegment } = credentials;
      // A hash is always 64 hex characters, so the bearer's key and the segment name one pair.
      const pair = `${bearer.sanctumId ?? ''}|${bearer.tokenHash}${teamSegment}`;
      internal.speculation = { pair };
      const head = recentHead(pair);
      const { query } = context;
      if (!head || !query.ok || event.headers?.['if-none-match'] !== undefined) return;
      const { ordinals } = pageWindow(head.list.count, query.value.page, query.value.perPage);
      if (!ordinals) return;
      const keys = pageKeys(head, ordinals);
      // A Query that fails is simply not used: the handler reads the page itself.
      const early = reader.queryPage(head, keys, context).then(
        (items) => ({ team: head, keys, items }),
        () => undefined,
      );
      internal.speculation.early = early;
      // Used only where the current head names the very keys the early Query read.
      context.earlyPage = async (current, currentOrdinals) => {
        const page = await early;
        const same =
          page?.team.teamId === current.teamId &&
          page.team.list.generation === current.list.generation &&
          String(pageKeys(current, currentOrdinals)) === String(page.keys);
        return same ? page.items : undefined;
      };
    },
    after: rememberOutcome,
    onError: rememberOutcome,
  };
}
