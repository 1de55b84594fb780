import { parseArgs } from 'node:util';
import { isTokenAbility, TOKEN_ABILITIES } from '../shared/domain/abilities.ts';
import { createToken, listTokens, revokeToken, UnknownUser } from './tokens/tokens.ts';
import { commandTable, fail } from './cli/table.ts';
import { expiryFrom } from './tokens/expiry.ts';

const USAGE = `usage:
  npm run token -- create --user <id> --abilities <a,b> [--name <name>] [--expires-in <90d|12h|30m>]
  npm run token -- revoke <token>          (or: revoke --id <id from list>)
  npm run token -- list --user <id>
abilities: ${TOKEN_ABILITIES.join(', ')}`;

const { positionals, values } = parseArgs({
  allowPositionals: true,
  options: {
    user: { type: 'string' },
    abilities: { type: 'string' },
    name: { type: 'string' },
    'expires-in': { type: 'string' },
    id: { type: 'string' },
  },
});
const [command, ...rest] = positionals;

function userId(): number {
  const id = values.user;
  if (!id || !/^[1-9][0-9]*$/.test(id)) fail(`--user must be a user id (a positive integer)\n${USAGE}`);
  return Number(id);
}

const { tableName, doc } = commandTable();
switch (command) {
  case 'create': {
    const abilities = (values.abilities ?? '').split(',').map((a) => a.trim()).filter(Boolean);
    if (abilities.length === 0) fail(`--abilities is required\n${USAGE}`);
    const unknown = abilities.filter((a) => !isTokenAbility(a));
    if (unknown.length > 0) fail(`unknown abilit${unknown.length === 1 ? 'y' : 'ies'}: ${unknown.join(', ')} (use ${TOKEN_ABILITIES.join(', ')})`);
    let expiresAt: string | null = null;
    try {
      if (values['expires-in'] !== undefined) expiresAt = expiryFrom(values['expires-in']);
    } catch (error) {
      fail((error as Error).message);
    }
    try {
      const secret = await createToken(doc, tableName, { userId: userId(), abilities: [...new Set(abilities)], name: values.name ?? '', expiresAt });
      process.stderr.write(`token for user ${values.user} with ${abilities.join(', ')}${expiresAt ? `, expires ${expiresAt}` : ''}; shown once, store it now:\n`);
      process.stdout.write(`${secret}\n`);
    } catch (error) {
      if (error instanceof UnknownUser) fail(error.message);
      throw error;
    }
    break;
  }
  case 'revoke': {
    const secret = rest[0];
    if ((secret === undefined) === (values.id === undefined)) fail(`revoke takes a token or --id\n${USAGE}`);
    if (values.id !== undefined && !/^[0-9a-f]{64}$/i.test(values.id)) fail('--id must be a token id as `list` prints it (64 hex characters)');
    const found = await revokeToken(doc, tableName, secret !== undefined ? { secret } : { id: values.id! });
    if (!found) fail('no such token');
    process.stdout.write('revoked\n');
    break;
  }
  case 'list': {
    const tokens = await listTokens(doc, tableName, userId());
    if (tokens.length === 0) process.stdout.write(`user ${values.user} has no tokens\n`);
    for (const t of tokens) {
      process.stdout.write(`${t.id}  ${t.status.padEnd(7)}  ${t.name || '-'}  ${t.abilities.join(',')}  created ${t.createdAt ?? '-'}  expires ${t.expiresAt ?? 'never'}${t.revokedAt ? `  revoked ${t.revokedAt}` : ''}\n`);
    }
    break;
  }
  default:
    fail(USAGE);
}
