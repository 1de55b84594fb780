import { monotonicMs } from './clock.ts';
import { pageWindow, type Ordinals, type PaginationResult } from './pagination.ts';
import type { Credentials } from './http/checks.ts';
import { pageKeys, type ReadOptions, type TeamHead, type TeamReader } from './team-reader.ts';

/**
 * One round trip on a warm function (docs/storage.md): for a token this function recently saw
 * get through the checks for this team, the page's Query on the generation it saw then goes out
 * before the token's read, so that the two travel together. The handler uses its items only if
 * the head it then reads still names the keys that Query read; otherwise it reads the page itself
 * (one more Query, never a wrong answer). Nothing remembered here ever answers a request: the
 * token and the head are read on every one.
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

/** What a list function remembers across its requests: each pair's last pass, and the head it read then. */
export type RecentPasses = Map<string, { head: TeamHead; at: number }>;

/** A request's speculation: the pair it is remembered under, and its early Query if one went out. */
interface Speculation {
  pair: string;
  early?: Promise<{ team: TeamHead; keys: string[]; items: string[] } | undefined>;
}

/**
 * Sends the page's Query now when the request's pair passed lately; undefined for a request that
 * names no bearer. `revalidating`: the request carries If-None-Match.
 */
export function startSpeculativePage(
  passes: RecentPasses,
  reader: Pick<TeamReader, 'queryPage'>,
  { credentials, query, revalidating }: { credentials?: Credentials; query: PaginationResult; revalidating: boolean },
  options: ReadOptions,
): Speculation | undefined {
  if (credentials === undefined) return undefined;
  const { bearer, teamSegment } = credentials;
  // A hash is always 64 hex characters, so the bearer's key and the segment name one pair.
  const pair = `${bearer.sanctumId ?? ''}|${bearer.tokenHash}${teamSegment}`;
  const pass = passes.get(pair);
  const head = pass && monotonicMs() - pass.at <= FRESH_MS ? pass.head : undefined;
  if (!head || !query.ok || revalidating) return { pair };
  const { ordinals } = pageWindow(head.list.count, query.value.page, query.value.perPage);
  if (!ordinals) return { pair };
  const keys = pageKeys(head, ordinals);
  // A Query that fails is simply not used: the handler reads the page itself.
  const early = reader.queryPage(head, keys, options).then(
    (items) => ({ team: head, keys, items }),
    () => undefined,
  );
  return { pair, early };
}

/** The early Query's items, only where the current head names the very keys it read; else undefined. */
export async function earlyItems(
  speculation: Speculation | undefined,
  head: TeamHead,
  ordinals: Ordinals,
): Promise<string[] | undefined> {
  const page = await speculation?.early;
  const same =
    page?.team.teamId === head.teamId &&
    page.team.list.generation === head.list.generation &&
    String(pageKeys(head, ordinals)) === String(page.keys);
  return same ? page.items : undefined;
}

/**
 * After the answer or the error: the early Query is waited for (the request ends with no call of
 * its own in flight, and its access line counts what the Query cost), then the pair is
 * remembered with the head it passed on, or forgotten when `passedOn` is undefined.
 */
export async function rememberPass(
  passes: RecentPasses,
  speculation: Speculation | undefined,
  passedOn: TeamHead | undefined,
): Promise<void> {
  if (speculation === undefined) return;
  await speculation.early;
  passes.delete(speculation.pair);
  if (passedOn === undefined) return;
  passes.set(speculation.pair, { head: passedOn, at: monotonicMs() });
  if (passes.size > CAPACITY) passes.delete(passes.keys().next().value!);
}
