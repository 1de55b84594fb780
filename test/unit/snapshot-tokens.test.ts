import { describe, expect, it } from 'vitest';
import { hashToken } from '../../shared/api/bearer.ts';
import { validateDocument } from '../support/validate.ts';
import { user } from '../support/snapshots.ts';

/**
 * A snapshot's `tokens` entry gives its secret as `token` (plain) or `token_sha256` (Sanctum's
 * stored hash), with an optional Sanctum `id` (docs/contract.md, section 7).
 */
const SECRET = 'migrated-secret-of-forty-characters-0001';
const SHA = hashToken(SECRET);
const users = [user(10, [])];

async function tokensOf(tokens: unknown[]) {
  const result = await validateDocument({ users, tokens });
  if (!result.ok) throw new Error(`expected a valid snapshot, got:\n${result.problems.join('\n')}`);
  return result.snapshot.tokens;
}

async function problems(tokens: unknown[]): Promise<string[]> {
  const result = await validateDocument({ users, tokens });
  if (result.ok) throw new Error('expected the snapshot to be rejected');
  return result.problems;
}

describe('a migrated token (token_sha256)', () => {
  it('is kept by its hash, with its Sanctum id', async () => {
    expect(await tokensOf([{ id: 5, user_id: 10, token_sha256: SHA, abilities: ['projects:read'] }])).toEqual([
      { index: 0, userId: 10, hash: SHA, sanctumId: 5, abilities: ['projects:read'], expiresAt: null, plain: false },
    ]);
  });

  it('may leave out its id', async () => {
    const [token] = await tokensOf([{ user_id: 10, token_sha256: SHA, abilities: ['*'] }]);
    expect(token!.sanctumId).toBeUndefined();
  });

  it('keeps abilities of the original service that this API does not know (they grant nothing)', async () => {
    const [token] = await tokensOf([
      { id: 5, user_id: 10, token_sha256: SHA, abilities: ['servers:write', 'projects:read'] },
    ]);
    expect(token!.abilities).toEqual(['servers:write', 'projects:read']);
  });

  it.each([
    ['upper-case hex', SHA.toUpperCase()],
    ['63 digits', SHA.slice(1)],
    ['65 digits', `${SHA}0`],
    ['a non-hex letter', `g${SHA.slice(1)}`],
    ['a number', 5],
  ])('refuses a token_sha256 of %s', async (_, value) => {
    expect(await problems([{ user_id: 10, token_sha256: value, abilities: [] }])).toEqual([
      expect.stringMatching(/^tokens\[0\]: token_sha256 must /),
    ]);
  });

  it.each([0, -1, 1.5, '5', 9007199254740992])('refuses the id %j', async (id) => {
    expect(await problems([{ id, user_id: 10, token_sha256: SHA, abilities: [] }])).toEqual([
      expect.stringMatching(/: id must be (a positive integer|at most 9007199254740991)$/),
    ]);
  });

  it('refuses an id given twice', async () => {
    expect(
      await problems([
        { id: 5, user_id: 10, token_sha256: SHA, abilities: [] },
        { id: 5, user_id: 10, token_sha256: hashToken('another-secret'), abilities: [] },
      ]),
    ).toEqual(['tokens[1] (id 5): id is a duplicate']);
  });
});

describe('the secret, in exactly one form', () => {
  it('refuses an entry with neither token nor token_sha256', async () => {
    expect(await problems([{ user_id: 10, abilities: [] }])).toEqual(['tokens[0]: token (or token_sha256) is missing']);
  });

  it('refuses an entry with both', async () => {
    expect(await problems([{ user_id: 10, token: SECRET, token_sha256: SHA, abilities: [] }])).toEqual([
      'tokens[0]: gives both token and token_sha256: give the secret one way',
    ]);
  });

  it.each([
    [
      'plain, then hashed',
      { user_id: 10, token: SECRET, abilities: [] },
      { id: 5, user_id: 10, token_sha256: SHA, abilities: [] },
    ],
    [
      'hashed, then plain',
      { id: 5, user_id: 10, token_sha256: SHA, abilities: [] },
      { user_id: 10, token: SECRET, abilities: [] },
    ],
    [
      'hashed twice',
      { id: 5, user_id: 10, token_sha256: SHA, abilities: [] },
      { id: 6, user_id: 10, token_sha256: SHA, abilities: [] },
    ],
  ])('refuses the same secret twice, %s', async (_, first, second) => {
    expect(await problems([first, second])).toEqual([
      expect.stringMatching(/^tokens\[1\]( \(id \d\))?: token is a duplicate/),
    ]);
  });

  it('refuses a plain token with a | (a bearer <id>|<secret> is split at it)', async () => {
    expect(await problems([{ user_id: 10, token: 'five|secret-token', abilities: [] }])).toEqual([
      'tokens[0]: token must not contain "|" (a bearer "<id>|<secret>" is split at it)',
    ]);
  });

  it('accepts an id on a plain token too', async () => {
    const [token] = await tokensOf([{ id: 7, user_id: 10, token: SECRET, abilities: ['*'] }]);
    expect(token).toMatchObject({ hash: SHA, sanctumId: 7 });
  });
});

describe('abilities of a plain token (hand-written data)', () => {
  it('are checked, with the closest known ability as a hint', async () => {
    expect(await problems([{ user_id: 10, token: SECRET, abilities: ['projects:read', 'projets:read'] }])).toEqual([
      'tokens[0]: abilities[1] must be one of finances:read, daemons:read, projects:read, *, not "projets:read" (did you mean "projects:read"?)',
    ]);
  });
});
