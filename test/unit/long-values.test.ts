import { describe, expect, it } from 'vitest';
import { validateDocument } from '../support/validate.ts';

/**
 * docs/contract.md, section 7: no string the format allows is longer than 4,096 code points, so the
 * reader (commands/import/json-records.ts) keeps no more of one than that, and the field's own rule
 * says its own limit; a number too long to keep is judged by what it is, as written; and a message
 * shows at most the first 40 characters of what the file holds.
 */
const raw = (records: string) =>
  validateDocument(`{"teams":[{"id":1,"slug":"acme","name":"A"}],${records}}`, { raw: true });
const problemsOf = async (records: string) => {
  const result = await raw(records);
  return result.ok ? [] : result.problems;
};
const server = (field: string, value: string) => {
  const fields = { id: '7', team_id: '1', name: '"web"', monthly_cost: '"1"', currency: '"EUR"', [field]: value };
  return `"servers":[{${Object.entries(fields)
    .map(([key, text]) => `"${key}":${text}`)
    .join(',')}}]`;
};
const daemon = (field: string, value: string) => {
  const fields = {
    id: '1',
    environment_id: '5',
    server_id: '7',
    name: '"queue"',
    command: '"php artisan queue:work"',
    username: '"forge"',
    directory: '"/home/forge"',
    processes: '1',
    [field]: value,
  };
  const entries = Object.entries(fields).map(([key, text]) => `"${key}":${text}`);
  return `"environments":[{"id":5,"team_id":1,"name":"p"}],${server('id', '7')},"daemons":[{${entries.join(',')}}]`;
};

describe('a string longer than any field allows is cut, and its field says its own limit', () => {
  it.each([
    ['a name', server('name', `"${'n'.repeat(100_000)}"`), 'servers[0] (id 7): name must be at most 255 characters'],
    [
      'a command',
      daemon('command', `"${'c'.repeat(100_000)}"`),
      'daemons[0] (id 1): command must be at most 4,096 characters',
    ],
    [
      'a name of astral characters',
      server('name', `"${'😀'.repeat(50_000)}"`),
      'servers[0] (id 7): name must be at most 255 characters',
    ],
    [
      'a currency',
      server('currency', `"${'E'.repeat(100_000)}"`),
      'servers[0] (id 7): currency is not a currency code of 3 capital letters',
    ],
  ])('%s', async (_, records, problem) => {
    expect(await problemsOf(records)).toEqual([problem]);
  });

  it('a command of exactly 4,096 characters, escapes included, is whole', async () => {
    const command = `${'\\u0063'.repeat(2_048)}${'c'.repeat(2_048)}`;
    expect(await problemsOf(daemon('command', `"${command}"`))).toEqual([]);
  });

  it('an unknown key of 100,000 characters is named by its first 40', async () => {
    expect(await problemsOf(server(`${'k'.repeat(100_000)}`, '1'))).toEqual([
      `servers[0] (id 7): unknown field "${'k'.repeat(40)}…" (did you mean "id"?)`,
    ]);
  });
});

describe('a number too long to keep is judged by what it is, as written', () => {
  const zeros = '0'.repeat(10_000);
  it.each([
    ['1.000…0 is 1', server('monthly_cost', `1.${zeros}`), []],
    ['1e000…01 is 10', server('monthly_cost', `1e${zeros}1`), []],
    ['0.000…01 has more than 4 decimals', server('monthly_cost', `0.${zeros}1`), ['has more than 4 decimals']],
    ['1.000…01 has more than 4 decimals', server('monthly_cost', `1.${zeros}1`), ['has more than 4 decimals']],
    ['1000…0 is too large', server('monthly_cost', `1${zeros}`), ['must be below 100,000,000,000']],
    ['123…9.5 is too large', server('monthly_cost', `${'123456789'.repeat(1_000)}.5`), ['must be below']],
    ['-1000…0 is negative', server('monthly_cost', `-1${zeros}`), ['must not be negative']],
    ['an id of 10,000 digits is too large', server('team_id', `1${zeros}`), ['must be at most 9007199254740991']],
    ['an id with a fraction is not whole', server('team_id', `1${zeros}.5`), ['must be a positive integer']],
    ['an id of 1.000…0e3 is 1000', server('team_id', `1.${zeros}e3`), ['team_id 1000 is not a team']],
  ])('%s', async (_, records, problems) => {
    const found = await problemsOf(records);
    expect(found).toHaveLength(problems.length);
    for (const [i, problem] of problems.entries()) expect(found[i]).toContain(problem);
  });

  it("a record's id of 1,000,000 digits is shown by its first 40", async () => {
    expect(await problemsOf(server('id', '9'.repeat(1_000_000)))).toEqual([
      `servers[0] (id ${'9'.repeat(40)}…): id must be at most 9007199254740991`,
    ]);
  });
});
