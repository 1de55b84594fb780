import { createHash } from 'node:crypto';

/**
 * What the earlier, trigger-based version of the sync installed in a source (its change table, its
 * setup record, and a trigger per event on each table it watched, with its default mapping): the
 * statements exactly as that version ran them, so that tests can prepare a source the way it did and
 * check that setup now removes all of it (docs/contract.md, section 9: "setup on a source prepared by
 * an earlier version removes what that version installed").
 */
type SourceEngine = 'postgres' | 'mysql';
type ChangePart = 'team' | 'members' | 'projects' | 'daemons' | 'finance' | 'user' | 'token';
interface Touch {
  part: ChangePart;
  ref: string;
  on?: ('insert' | 'update' | 'delete')[];
}
interface Watch {
  key?: string;
  columns: string[];
  touches: Touch[];
}
interface Mapping {
  watch: Record<string, Watch>;
}
export const CHANGES_TABLE = 'team_resources_changes';
export const SETUP_TABLE = 'team_resources_sync';
const NOTIFY_CHANNEL = 'team_resources_changes';
const CAPTURE_VERSION = '1';
const textFingerprint = (text: string) => createHash('sha256').update(text).digest('base64url');

/** The fingerprint of what setup installs for a mapping: a sync compares it with the one recorded. */
function captureFingerprint(engine: SourceEngine, mapping: Mapping): string {
  return textFingerprint(JSON.stringify([CAPTURE_VERSION, engine, mapping.watch]));
}

const teamRef = 'SELECT {row}.team_id AS ref';

/** What the earlier version watched by default (Laravel's conventions). */
const LEGACY_MAPPING: Mapping = {
  watch: {
    teams: { columns: ['id', 'slug', 'name', 'user_id'], touches: [{ part: 'team', ref: 'SELECT {row}.id AS ref' }] },
    users: { columns: ['id', 'name'], touches: [{ part: 'user', ref: 'SELECT {row}.id AS ref' }] },
    team_user: { key: 'id', columns: ['team_id', 'user_id'], touches: [{ part: 'members', ref: teamRef }] },
    personal_access_tokens: {
      // Not last_used_at, nor the updated_at that Sanctum's save writes with it.
      columns: ['id', 'tokenable_type', 'tokenable_id', 'name', 'token', 'abilities', 'expires_at'],
      touches: [{ part: 'token', ref: 'SELECT {row}.id AS ref' }],
    },
    environments: { columns: ['id', 'team_id'], touches: [{ part: 'daemons', ref: teamRef }] },
    servers: {
      columns: ['id', 'team_id', 'monthly_cost', 'currency'],
      touches: [
        { part: 'finance', ref: teamRef },
        // A daemon names a server of any team: the daemons of whatever teams name it.
        {
          part: 'daemons',
          on: ['insert', 'delete'],
          ref:
            'SELECT e.team_id AS ref FROM daemons d JOIN environments e ON e.id = d.environment_id ' +
            'WHERE d.server_id = {row}.id',
        },
      ],
    },
    clients: { columns: ['id', 'team_id'], touches: [{ part: 'projects', ref: teamRef }] },
    projects: {
      columns: ['id', 'team_id', 'client_id', 'name', 'slug', 'created_at'],
      touches: [{ part: 'projects', ref: teamRef }],
    },
    daemons: {
      columns: ['id', 'environment_id', 'server_id', 'name', 'command', 'username', 'directory', 'processes'],
      touches: [
        { part: 'daemons', ref: 'SELECT e.team_id AS ref FROM environments e WHERE e.id = {row}.environment_id' },
      ],
    },
    costs: {
      columns: ['id', 'team_id', 'label', 'amount', 'currency'],
      touches: [{ part: 'finance', ref: teamRef }],
    },
  },
};

/** The statements the earlier version's `sync setup` ran on a source of this engine. */
export function legacySetupStatements(engine: SourceEngine): string[] {
  return engine === 'postgres' ? postgresSetup(LEGACY_MAPPING) : mysqlSetup(LEGACY_MAPPING);
}

/** The earlier version's trigger names on a table, per event. */
export const legacyTriggerName = (table: string, event: string) => `team_resources_${table}_${event}`.slice(0, 63);

const EVENTS = ['insert', 'update', 'delete', 'truncate'] as const;
type Event = (typeof EVENTS)[number];

const triggerName = (table: string, event: Event) => `team_resources_${table}_${event}`.slice(0, 63);
const functionName = (table: string) => `team_resources_capture_${table}`.slice(0, 63);

const quote = (text: string) => `'${text.replaceAll("'", "''")}'`;

/** The SELECT of (part, ref) pairs a row touches, for these touches, the row called `row`. */
function touched(touches: Touch[], row: string): string {
  return touches
    .map((touch) => `SELECT ${quote(touch.part)} AS part, x.ref FROM (${touch.ref.replaceAll('{row}', row)}) x`)
    .join(' UNION ALL ');
}

const touchesOn = (watch: Watch, event: 'insert' | 'update' | 'delete') =>
  watch.touches.filter((touch) => (touch.on ?? ['insert', 'update', 'delete']).includes(event));

function setupRecord(engine: SourceEngine, mapping: Mapping): string[] {
  const value = quote(captureFingerprint(engine, mapping));
  return engine === 'postgres'
    ? [
        `CREATE TABLE IF NOT EXISTS ${SETUP_TABLE} (name varchar(32) PRIMARY KEY, value text NOT NULL)`,
        `INSERT INTO ${SETUP_TABLE} (name, value) VALUES ('capture', ${value})
           ON CONFLICT (name) DO UPDATE SET value = EXCLUDED.value`,
      ]
    : [
        `CREATE TABLE IF NOT EXISTS ${SETUP_TABLE} (name varchar(32) PRIMARY KEY, value text NOT NULL) ENGINE=InnoDB`,
        `INSERT INTO ${SETUP_TABLE} (name, value) VALUES ('capture', ${value})
           ON DUPLICATE KEY UPDATE value = VALUES(value)`,
      ];
}

function postgresSetup(mapping: Mapping): string[] {
  const statements = [
    `CREATE TABLE IF NOT EXISTS ${CHANGES_TABLE} (
       id bigserial PRIMARY KEY,
       part varchar(16) NOT NULL,
       ref bigint,
       changed_at timestamptz NOT NULL DEFAULT clock_timestamp())`,
  ];
  for (const [table, watch] of Object.entries(mapping.watch)) {
    const key = watch.key ?? 'id';
    const columns = (alias: string) => watch.columns.map((c) => `${alias}.${c}`).join(', ');
    const differs = `ROW(${columns('o')}) IS DISTINCT FROM ROW(${columns('n')})`;
    const record = (touches: Touch[], rows: string) =>
      touches.length === 0
        ? 'NULL;'
        : `INSERT INTO ${CHANGES_TABLE} (part, ref)
             SELECT DISTINCT t.part, t.ref FROM ${rows} CROSS JOIN LATERAL (${touched(touches, 'r')}) t
             WHERE t.ref IS NOT NULL;`;
    const changedRows = `(
        SELECT o.* FROM old_rows o LEFT JOIN new_rows n ON n.${key} = o.${key}
          WHERE n.${key} IS NULL OR ${differs}
        UNION ALL
        SELECT n.* FROM new_rows n LEFT JOIN old_rows o ON o.${key} = n.${key}
          WHERE o.${key} IS NULL OR ${differs}) r`;
    const everyTeam = [...new Set(watch.touches.map((touch) => touch.part))]
      .map((part) => `(${quote(part)}, NULL)`)
      .join(', ');
    statements.push(
      `CREATE OR REPLACE FUNCTION ${functionName(table)}() RETURNS trigger LANGUAGE plpgsql AS $capture$
       BEGIN
         IF TG_OP = 'INSERT' THEN ${record(touchesOn(watch, 'insert'), 'new_rows r')}
         ELSIF TG_OP = 'DELETE' THEN ${record(touchesOn(watch, 'delete'), 'old_rows r')}
         ELSIF TG_OP = 'UPDATE' THEN ${record(touchesOn(watch, 'update'), changedRows)}
         ELSE INSERT INTO ${CHANGES_TABLE} (part, ref) VALUES ${everyTeam};
         END IF;
         PERFORM pg_notify('${NOTIFY_CHANNEL}', '');
         RETURN NULL;
       END $capture$`,
      ...EVENTS.map((event) => `DROP TRIGGER IF EXISTS ${triggerName(table, event)} ON ${table}`),
      `CREATE TRIGGER ${triggerName(table, 'insert')} AFTER INSERT ON ${table}
         REFERENCING NEW TABLE AS new_rows FOR EACH STATEMENT EXECUTE FUNCTION ${functionName(table)}()`,
      `CREATE TRIGGER ${triggerName(table, 'update')} AFTER UPDATE ON ${table}
         REFERENCING OLD TABLE AS old_rows NEW TABLE AS new_rows
         FOR EACH STATEMENT EXECUTE FUNCTION ${functionName(table)}()`,
      `CREATE TRIGGER ${triggerName(table, 'delete')} AFTER DELETE ON ${table}
         REFERENCING OLD TABLE AS old_rows FOR EACH STATEMENT EXECUTE FUNCTION ${functionName(table)}()`,
      `CREATE TRIGGER ${triggerName(table, 'truncate')} AFTER TRUNCATE ON ${table}
         FOR EACH STATEMENT EXECUTE FUNCTION ${functionName(table)}()`,
    );
  }
  return [...statements, ...setupRecord('postgres', mapping)];
}

function mysqlSetup(mapping: Mapping): string[] {
  const statements = [
    `CREATE TABLE IF NOT EXISTS ${CHANGES_TABLE} (
       id bigint unsigned NOT NULL AUTO_INCREMENT PRIMARY KEY,
       part varchar(16) NOT NULL,
       ref bigint NULL,
       changed_at timestamp(6) NOT NULL DEFAULT CURRENT_TIMESTAMP(6)) ENGINE=InnoDB`,
  ];
  const insert = (touches: Touch[], row: 'OLD' | 'NEW') =>
    touches.length === 0
      ? ''
      : `INSERT INTO ${CHANGES_TABLE} (part, ref)
           SELECT t.part, t.ref FROM (${touched(touches, row)}) t WHERE t.ref IS NOT NULL;`;
  for (const [table, watch] of Object.entries(mapping.watch)) {
    // Compared as bytes: a case-insensitive collation would take 'Globex' and 'GLOBEX' (and, in the
    // UCA collations, a name with a control character and one without) for the same value.
    const unchanged = watch.columns.map((c) => `CAST(OLD.${c} AS BINARY) <=> CAST(NEW.${c} AS BINARY)`).join(' AND ');
    const bodies: [Event, string, string][] = [
      ['insert', 'AFTER INSERT', insert(touchesOn(watch, 'insert'), 'NEW')],
      [
        'update',
        'AFTER UPDATE',
        touchesOn(watch, 'update').length === 0
          ? ''
          : `IF NOT (${unchanged}) THEN ${insert(touchesOn(watch, 'update'), 'OLD')} ` +
            `${insert(touchesOn(watch, 'update'), 'NEW')} END IF;`,
      ],
      // Before the row goes: a cascade it sets off has not yet removed what the reference reads.
      ['delete', 'BEFORE DELETE', insert(touchesOn(watch, 'delete'), 'OLD')],
    ];
    for (const [event, timing, body] of bodies) {
      statements.push(
        `DROP TRIGGER IF EXISTS ${triggerName(table, event)}`,
        `CREATE TRIGGER ${triggerName(table, event)} ${timing} ON ${table} FOR EACH ROW BEGIN ${body || 'DO 0;'} END`,
      );
    }
  }
  return [...statements, ...setupRecord('mysql', mapping)];
}
