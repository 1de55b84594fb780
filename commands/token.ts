import { isTokenAbility, TOKEN_ABILITIES } from '../shared/table/abilities.ts';
import { expiryFrom } from './tokens/expiry.ts';
import { fail, usageError } from './cli/errors.ts';
import { command, runCommand, TABLE_ENVIRONMENT } from './cli/run.ts';
import { escapeText, shownText } from './cli/text.ts';
import { idValue, nameValue } from './cli/values.ts';

/** npm run token -- create | revoke | list: token administration on the table TABLE_NAME names. */
const TOKEN = {
  name: 'npm run token',
  usage: [
    'npm run token -- create --user <id> --abilities <a,b> [--name <name>] [--expires-in <90d|12h|30m>]',
    'npm run token -- revoke <token>',
    'npm run token -- revoke --id <id>',
    'npm run token -- revoke --id <sanctum id> --user <id>',
    'npm run token -- list --user <id>',
  ],
  about: `
Issues, revokes and lists API tokens in the table TABLE_NAME names. A new token is printed once,
on stdout alone (TOKEN=$(npm run -s token -- create ...) works); only its SHA-256 is stored.
A user or token that does not exist is an error (exit 1). Revoking a revoked token changes nothing
and exits 0, saying when it was revoked.

commands:
  create                     issues a token for a user and prints it once
  revoke                     revokes a token: by its secret, by the id list shows, or a migrated
                             token by its Sanctum id with --user
  list                       lists a user's tokens: id, status, name, abilities, dates; never a secret`,
  options: {
    user: { type: 'string', value: '<id>', help: 'the user, by id' },
    abilities: { type: 'string', value: '<a,b>', help: `comma-separated, of ${TOKEN_ABILITIES.join(' ')}` },
    name: {
      type: 'string',
      value: '<name>',
      help: 'what the token is for: 1 to 255 characters, no control characters',
    },
    'expires-in': {
      type: 'string',
      value: '<90d|12h|30m>',
      help: 'lifetime in days, hours or minutes; default: never expires',
    },
    id: {
      type: 'string',
      value: '<id>',
      help: 'a token id as list shows it (64 hex characters), or with --user a Sanctum id',
    },
  },
  environment: TABLE_ENVIRONMENT,
  positionals: ['[<command>]', '[<token>]'],
} as const;
type Values = { [K in keyof typeof TOKEN.options]?: string };

/** The options each command takes. */
const COMMANDS: Record<string, (keyof Values)[]> = {
  create: ['user', 'abilities', 'name', 'expires-in'],
  revoke: ['id', 'user'],
  list: ['user'],
};

/** The token code and the table (with the SDK), loaded once the command line is found right (so --help is quick). */
const load = async () => ({
  ...(await import('./tokens/tokens.ts')),
  ...(await import('./cli/database.ts')).databaseClient(),
});

export const npmRunToken = command(TOKEN, async ({ values, positionals: [command, secret] }) => {
  if (command === undefined) usageError(`name a command: ${Object.keys(COMMANDS).join(', ')}`);
  const allowed =
    COMMANDS[command] ??
    usageError(`unknown command "${shownText(command)}" (use ${Object.keys(COMMANDS).join(', ')})`);
  for (const name of Object.keys(values))
    if (!allowed.includes(name as keyof Values)) usageError(`--${name} does not apply to ${command}`);
  if (secret !== undefined && command !== 'revoke') usageError(`unexpected argument "${shownText(secret)}"`);
  if (command === 'create') return create(values);
  if (command === 'revoke') return revoke(values, secret);
  return list(values);
});

if (import.meta.main) await runCommand(npmRunToken);

function requiredUser(values: Values, command: string): number {
  if (values.user === undefined) usageError(`${command} needs --user <id>`);
  return idValue('--user', values.user);
}

async function create(values: Values) {
  // Everything the command line says is checked before the table is touched.
  const userId = requiredUser(values, 'create');
  const listed = values.abilities?.trim();
  if (!listed) usageError('create needs --abilities <a,b>');
  const entries = listed.split(',').map((a) => a.trim());
  // "projects:read,," is a slip (a variable that was empty?), not a shorter list: said, not guessed at.
  if (entries.includes(''))
    usageError(
      `--abilities has an empty entry: "${shownText(listed)}" (comma-separated, e.g. projects:read,daemons:read)`,
    );
  const abilities = [...new Set(entries)];
  const unknown = abilities.filter((a) => !isTokenAbility(a));
  if (unknown.length > 0) {
    const known = TOKEN_ABILITIES.join(', ');
    usageError(`unknown abilit${unknown.length === 1 ? 'y' : 'ies'}: ${shownText(unknown.join(', '))} (use ${known})`);
  }
  const name = values.name === undefined ? '' : nameValue('--name', values.name);
  const expiresAt = values['expires-in'] === undefined ? null : expiryFrom(values['expires-in']);

  const { doc, tableName, createToken } = await load();
  const secret = await createToken(doc, tableName, { userId, abilities, name, expiresAt });
  const named = name ? ` "${escapeText(name)}"` : '';
  const expires = expiresAt ? `, expires ${expiresAt}` : '';
  process.stderr.write(
    `token${named} for user ${userId} with ${abilities.join(', ')}${expires}; shown once, store it now:\n`,
  );
  process.stdout.write(`${secret}\n`);
}

async function revoke(values: Values, secret: string | undefined) {
  const { id, user } = values;
  if (secret !== undefined && id !== undefined) usageError('revoke takes a token or --id <id>, not both');
  if (secret === undefined && id === undefined) usageError('revoke needs a token, or --id <id>');
  // With --user, --id is a migrated token's Sanctum id (tokens are found through their user).
  if (user !== undefined && id === undefined) usageError('revoke --user needs --id <sanctum id>');
  const sanctum = user === undefined ? undefined : { userId: idValue('--user', user), sanctumId: idValue('--id', id!) };
  if (!sanctum && id !== undefined && !/^[0-9a-f]{64}$/i.test(id))
    usageError(
      `--id must be a token id as list shows it (64 hex characters), not "${shownText(id)}" ` +
        "(or a migrated token's Sanctum id, with --user)",
    );

  const { doc, tableName, listTokens, revoke } = await load();
  let by = secret !== undefined ? { secret } : { id: id!.toLowerCase() };
  if (sanctum) {
    const { userId, sanctumId } = sanctum;
    // More than one only if imports gave the id twice.
    const ids = (await listTokens(doc, tableName, userId))
      .filter((token) => token.sanctumId === sanctumId)
      .map((token) => token.id);
    if (ids.length === 0)
      fail(`user ${userId} has no token with Sanctum id ${sanctumId} in table ${escapeText(tableName)}`);
    if (ids.length > 1)
      fail(`user ${userId} has ${ids.length} tokens with Sanctum id ${sanctumId}; revoke each by the id list shows`);
    by = { id: ids[0]! };
  }
  const revoked = await revoke(doc, tableName, by);
  // Never echo a secret, even a wrong one.
  if (!revoked)
    fail(
      'secret' in by
        ? `no token with that secret in table ${escapeText(tableName)}`
        : `no token with id ${by.id} in table ${escapeText(tableName)}`,
    );
  process.stdout.write(revoked.already ? `already revoked at ${revoked.already}; nothing changed\n` : 'revoked\n');
}

async function list(values: Values) {
  const userId = requiredUser(values, 'list');
  const { doc, tableName, listTokens, userTeams } = await load();
  if (!(await userTeams(doc, tableName, userId)))
    fail(`user ${userId} does not exist in table ${escapeText(tableName)}`);
  const tokens = await listTokens(doc, tableName, userId);
  if (tokens.length === 0) return void process.stdout.write(`user ${userId} has no tokens\n`);
  // Names (and anything else) from the table may hold escape sequences: shown, never obeyed, and
  // measured as shown, so that every column starts at the same place on every line.
  const rows = [
    ['ID', 'STATUS', 'NAME', 'ABILITIES', 'CREATED', 'EXPIRES', 'SANCTUM ID', 'REVOKED'],
    ...tokens.map((t) =>
      [
        t.id,
        t.status,
        t.name || '-',
        t.abilities.join(','),
        t.createdAt ?? '-',
        t.expiresAt ?? 'never',
        String(t.sanctumId ?? '-'),
        t.revokedAt ?? '-',
      ].map(escapeText),
    ),
  ];
  const shownLength = (cell: string) => [...cell].length;
  const widths = rows[0]!.map((_, column) => Math.max(...rows.map((row) => shownLength(row[column]!))));
  for (const row of rows) {
    process.stdout.write(
      `${row
        .map((cell, column) => cell + ' '.repeat(widths[column]! - shownLength(cell)))
        .join('  ')
        .trimEnd()}\n`,
    );
  }
}
