import * as v from 'valibot';
import { closestMatch } from 'leven';
import { TOKEN_ABILITIES } from '../table/abilities.ts';
import { isLargeInteger, parseAmount } from './decimal.ts';
import { NAME_MAX, quote, stringProblem } from './strings.ts';
import { toUtcTimestamp } from './timestamp.ts';

/**
 * The snapshot format, record by record (docs/contract.md, section 7): the collections, the fields each
 * record may have, and the rules of each field. Rules between records (references, duplicates,
 * totals, sizes) are the import's (commands/import/validation.ts, which reads the file) and the
 * sync's (shared/sync/read-team.ts, which reads the source): a row of the source is judged by the
 * same rules as a record of a snapshot.
 */

/** Limits of the format. Strings count Unicode code points. */
export const LIMITS = {
  name: NAME_MAX,
  text: 4_096,
  teamSlug: 100,
  secretMin: 8,
  secretMax: 512,
  /** Money below 10^11 (15 significant digits with 4 decimals: exact as a double). */
  amountBelow: 100_000_000_000n,
  /**
   * Teams one user may list. A token carries a membership entry per team and retained
   * generation (about 35 bytes each), and must stay far below DynamoDB's 400 KB item.
   */
  teamsPerUser: 1_000,
} as const;
/** The money limit in the 1/10,000ths the sums are kept in. */
export const AMOUNT_LIMIT_UNITS = LIMITS.amountBelow * 10_000n;

// ---- Field rules -------------------------------------------------------------------------

/** A string of 1 to `max` code points, well-formed, without control characters (strings.ts). */
const text = (max: number) =>
  v.pipe(
    v.string('must be a string'),
    v.check(
      (s) => stringProblem(s, max) === undefined,
      (issue) => stringProblem(issue.input as string, max)!,
    ),
  );
const name = text(LIMITS.name);

/** A whole number from `min`, judged as written (decimal.ts: `800.0000000000000001` is no integer). */
const integer = (min: number, problem: string) =>
  v.custom<number>(
    (input) => Number.isSafeInteger(input) && (input as number) >= min,
    ({ input }) =>
      isLargeInteger(input)
        ? `must be at most ${Number.MAX_SAFE_INTEGER}`
        : min === 0 && Number.isInteger(input)
          ? 'must not be negative'
          : problem,
  );
const id = integer(1, 'must be a positive integer');
const count = integer(0, 'must be a whole number');
const currency = v.pipe(
  v.string('must be a string'),
  v.regex(/^[A-Z]{3}$/, 'is not a currency code of 3 capital letters'),
);
/** An amount: its units (1/10,000ths) once valid. */
const amount = v.pipe(
  v.unknown(),
  v.rawTransform(({ dataset, addIssue, NEVER }) => {
    const parsed = parseAmount(dataset.value);
    if (parsed.ok) return parsed.units;
    addIssue({ message: parsed.problem });
    return NEVER;
  }),
  v.check((units) => units < AMOUNT_LIMIT_UNITS, 'must be below 100,000,000,000'),
);
const isoTime = v.pipe(
  v.string('must be a string'),
  v.check((input) => toUtcTimestamp(input) !== undefined, 'is not an ISO 8601 time'),
  v.transform((input) => toUtcTimestamp(input)!),
);
const teamSlug = v.pipe(
  v.string('must be a string'),
  v.check((s) => /^[A-Za-z0-9_-]+$/.test(s), 'must be ASCII letters, digits, "-" and "_" only (it is a path segment)'),
  v.check((s) => s.length <= LIMITS.teamSlug, `must be at most ${LIMITS.teamSlug} characters`),
  v.check((s) => !/^[0-9]+$/.test(s), 'must not be all digits (an all-digit segment is a team id)'),
);
const secret = v.pipe(
  v.string('must be a string'),
  v.regex(
    new RegExp(`^[\\x21-\\x7e]{${LIMITS.secretMin},${LIMITS.secretMax}}$`),
    `must be ${LIMITS.secretMin} to ${LIMITS.secretMax} printable ASCII characters without spaces ` +
      '(it travels in a header)',
  ),
  // Sanctum's clients send `<id>|<secret>`: a secret with a `|` would be split (shared/api/bearer.ts).
  v.check((s) => !s.includes('|'), 'must not contain "|" (a bearer "<id>|<secret>" is split at it)'),
);
/** Sanctum's `personal_access_tokens.token` column: the secret's SHA-256, lower-case hex. */
const secretSha256 = v.pipe(
  v.string('must be a string'),
  v.regex(/^[0-9a-f]{64}$/, "must be 64 lower-case hex digits (the secret's SHA-256, as Sanctum stores it)"),
);
/**
 * Abilities as stored: any names, since a token migrated from Sanctum may carry abilities of the
 * original service; they are kept and grant nothing here. A hand-written `token` entry may name
 * only the API's own (Token's check below).
 */
const abilities = v.array(name, 'must be an array of abilities');
/** The abilities a hand-written `token` entry may name: the API's own. */
const OwnAbilities = v.object({
  abilities: v.array(
    v.picklist(
      TOKEN_ABILITIES,
      ({ input }) =>
        `must be one of ${TOKEN_ABILITIES.join(', ')}, not ${quote(input as string)} ` +
        `(did you mean "${closestKey(input as string, TOKEN_ABILITIES)}"?)`,
    ),
  ),
});

// ---- Records -----------------------------------------------------------------------------

/** Every collection, in the contract's order, with its record's schema. */
const COLLECTIONS = {
  teams: v.object({ id, slug: v.optional(teamSlug), name }),
  users: v.object({
    id,
    name: v.optional(name),
    teams: v.pipe(
      v.array(id, 'must be an array of team ids'),
      v.maxLength(LIMITS.teamsPerUser, `must list at most ${LIMITS.teamsPerUser.toLocaleString('en')} teams`),
    ),
  }),
  tokens: v.pipe(
    v.object({
      id: v.optional(id),
      user_id: id,
      token: v.optional(secret),
      token_sha256: v.optional(secretSha256),
      name: v.optional(name),
      abilities,
      expires_at: v.optional(v.nullable(isoTime), null),
    }),
    v.check((t) => t.token !== undefined || t.token_sha256 !== undefined, 'token (or token_sha256) is missing'),
    v.check(
      (t) => t.token === undefined || t.token_sha256 === undefined,
      'gives both token and token_sha256: give the secret one way',
    ),
    v.rawCheck(({ dataset, addIssue }) => {
      if (!dataset.typed || dataset.value.token === undefined) return;
      for (const { message, path } of v.safeParse(OwnAbilities, dataset.value).issues ?? [])
        addIssue({ message, path });
    }),
  ),
  environments: v.object({ id, team_id: id, name }),
  servers: v.object({ id, team_id: id, name, monthly_cost: amount, currency }),
  clients: v.object({ id, team_id: id, name }),
  projects: v.object({
    id,
    team_id: id,
    client_id: v.optional(v.nullable(id), null),
    name,
    slug: name,
    created_at: isoTime,
  }),
  daemons: v.object({
    id,
    environment_id: id,
    server_id: id,
    name,
    command: text(LIMITS.text),
    username: name,
    directory: text(LIMITS.text),
    processes: count,
  }),
  costs: v.object({ team_id: id, label: name, amount, currency }),
};
export type Collection = keyof typeof COLLECTIONS;
export type RecordOf<C extends Collection> = v.InferOutput<(typeof COLLECTIONS)[C]>;
export const COLLECTION_NAMES = Object.keys(COLLECTIONS) as Collection[];

export function isCollection(key: string): key is Collection {
  return Object.hasOwn(COLLECTIONS, key);
}

/** Fields a record of the collection may have, in the contract's order. */
export function fieldsOf(collection: Collection): string[] {
  const schema = COLLECTIONS[collection];
  // A record with a rule across its fields (Token) is an object schema in a pipe.
  return Object.keys('pipe' in schema ? schema.pipe[0].entries : schema.entries);
}

/** The allowed key closest to one that is not allowed: the "did you mean" of a typo. */
export function closestKey(key: string, allowed: readonly string[]): string {
  return closestMatch(key, allowed) ?? allowed[0]!;
}

/** A valid record of any collection, its fields as optional as the collection makes them. */
export type AnyRecord = Partial<
  RecordOf<'teams'> &
    RecordOf<'users'> &
    RecordOf<'tokens'> &
    RecordOf<'servers'> &
    RecordOf<'projects'> &
    RecordOf<'daemons'> &
    RecordOf<'costs'>
>;

/**
 * Checks one record's fields (a parsed JSON object: numbers as numbers). Returns the record
 * with its values normalised (amounts as units, times in UTC) or one problem per field: each
 * field reports the first rule it breaks.
 */
export function checkRecord(
  collection: Collection,
  record: Record<string, unknown>,
  only?: readonly string[],
): { ok: true; record: AnyRecord } | { ok: false; problems: string[] } {
  const schema = only ? pickedSchema(collection, only) : (COLLECTIONS[collection] as v.GenericSchema);
  const result = v.safeParse(schema, record, { abortPipeEarly: true });
  if (result.success) return { ok: true, record: result.output as AnyRecord };
  return { ok: false, problems: result.issues.map(describe) };
}

const picked = new Map<string, v.GenericSchema>();

/**
 * A collection's rules for some of its fields only: the sync reads of an environment, a server or
 * a client only what the API serves or refers to (no name), and judges just that.
 */
function pickedSchema(collection: Collection, fields: readonly string[]): v.GenericSchema {
  const key = `${collection}:${fields.join(',')}`;
  let schema = picked.get(key);
  if (!schema) {
    const whole = COLLECTIONS[collection];
    const object = ('pipe' in whole ? whole.pipe[0] : whole) as v.ObjectSchema<v.ObjectEntries, undefined>;
    schema = v.pick(object, fields as never) as unknown as v.GenericSchema;
    picked.set(key, schema);
  }
  return schema;
}

function describe(issue: v.BaseIssue<unknown>): string {
  // Array indexes as a reader writes them: `abilities[1]`, not `abilities.1`.
  const field = v.getDotPath(issue)?.replace(/\.(\d+)/g, '[$1]');
  if (!field) return issue.message;
  return issue.kind === 'schema' && issue.input === undefined ? `${field} is missing` : `${field} ${issue.message}`;
}
