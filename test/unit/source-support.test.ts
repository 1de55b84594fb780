import { describe, expect, it } from 'vitest';
import { toMysqlPlaceholders } from '../support/source-databases.ts';
import { seedRows, utc } from '../support/source-seed.ts';
import { lastWords } from '../support/source-servers.ts';

/** The pure parts of the source-database helpers the sync's tests use (the servers are tested in integration). */

describe('toMysqlPlaceholders', () => {
  it.each([
    ['SELECT * FROM t WHERE a = $1 AND b = $2', [1, 2], 'SELECT * FROM t WHERE a = ? AND b = ?', [1, 2]],
    ['SELECT $2, $1, $2', ['a', 'b'], 'SELECT ?, ?, ?', ['b', 'a', 'b']],
    ["SELECT '$1', \"$1\", `$1`, 'it''s $1', $1", [7], "SELECT '$1', \"$1\", `$1`, 'it''s $1', ?", [7]],
    ["SELECT 'a\\'$1' -- $1\n, $1 # $1\n/* $1 */", [7], "SELECT 'a\\'$1' -- $1\n, ? # $1\n/* $1 */", [7]],
    ['SELECT 1', [], 'SELECT 1', []],
  ])('rewrites %j', (sql, params, text, ordered) => {
    expect(toMysqlPlaceholders(sql, params)).toEqual([text, ordered]);
  });

  it('names a placeholder that has no parameter', () => {
    expect(() => toMysqlPlaceholders('SELECT $3', [1, 2])).toThrow('$3 has no parameter (2 given)');
  });
});

describe('lastWords', () => {
  it.each([
    [
      'LOG:  starting\n2026-11-26 19:10:27.141 UTC [14927] FATAL:  invalid value for parameter "wal_level": "x"\n' +
        '2026-11-26 19:10:27.142 UTC [14927] LOG:  database system is shut down\n',
      'FATAL: invalid value for parameter "wal_level": "x"',
    ],
    [
      "2026-11-26 19:10:23 0 [ERROR] Can't start server: Bind on TCP/IP port. Got error: 98: Address already in use\n" +
        '2026-11-26 19:10:23 0 [ERROR] Aborting\n',
      "[ERROR] Can't start server: Bind on TCP/IP port. Got error: 98: Address already in use",
    ],
    ['initdb: cannot be run as root\n\n', 'initdb: cannot be run as root'],
  ])('says why a server stopped in one line', (log, line) => {
    expect(lastWords(log)).toBe(line);
  });
});

describe('the seed', () => {
  it.each([
    ['2026-01-02T05:04:05+02:00', '2026-01-02 03:04:05'],
    ['2026-01-02T05:04:05.999Z', '2026-01-02 05:04:05'],
    ['2026-12-31T23:30:00-01:00', '2027-01-01 00:30:00'],
  ])('stores %s as Laravel does: %s', (iso, stored) => {
    expect(utc(iso)).toBe(stored);
  });

  it("keeps a team's owner out of team_user, as Jetstream does", () => {
    const tables = new Map(
      seedRows({
        teams: [{ id: 1, slug: 'a', name: 'A', user_id: 10 }],
        users: [
          { id: 10, teams: [1] },
          { id: 11, teams: [1] },
        ],
      }),
    );
    expect(tables.get('team_user')?.map((row) => row.user_id)).toEqual([11]);
  });
});
