import type { DesiredState } from '../../shared/write/desired.ts';
import { locate } from './problems.ts';
import type { ValidSnapshot } from './validation.ts';

/**
 * The import's front end of the writers (docs/contract.md, section 7): the snapshot pass 1 validated,
 * as the state its teams, users and tokens should have. Each team of the snapshot is named whole
 * (every list given whole, its finance, its members exactly); users and tokens are upserted; nothing
 * absent from the snapshot is named, so nothing is removed. Apart from importer.ts so that what it
 * gives can be tested without a table (test/unit/import-desired-state.test.ts).
 */
export function desiredState(snapshot: ValidSnapshot): DesiredState {
  return {
    teams: snapshot.teams.map((team) => ({
      identity: { id: team.id, slug: team.slug, name: team.name },
      where: locate('teams', team.index, team.id),
      projects: {
        count: team.projectIds.length,
        fingerprint: team.projectsFingerprint,
        ids: team.projectIds,
        hashes: team.projectHashes,
      },
      daemons: {
        count: team.daemonIds.length,
        fingerprint: team.daemonsFingerprint,
        ids: team.daemonIds,
        hashes: team.daemonHashes,
      },
      finance: { json: team.financeJson, fingerprint: team.financeFingerprint },
      memberIds: team.memberIds,
    })),
    users: snapshot.users.map((user) => ({ id: user.id, name: user.name })),
    tokens: snapshot.tokens.map((token) => ({ ...token, where: locate('tokens', token.index) })),
  };
}
