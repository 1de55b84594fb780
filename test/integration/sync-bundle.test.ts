import { mkdtempSync, readdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { pathToFileURL } from 'node:url';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { propsFromContext } from '../../infra/context.ts';
import { SYNC_MARGIN_MS } from '../../shared/sync/deployed-settings.ts';
import { DEPLOYED_MAPPING_FILE, MAPPING_FILE_VARIABLE } from '../../shared/sync/deployed-mapping.ts';
import { freshTable, type TestTable } from '../support/dynamodb.ts';
import { NODE } from '../support/import-process.ts';
import { startCommand } from '../support/processes.ts';
import { emfProblems } from '../support/emf.ts';
import { METRICS_NAMESPACE, STACK_DIMENSION } from '../../shared/metrics.ts';
import { createSourceDatabase, type SourceDatabase, sourceServer } from '../support/source-databases.ts';
import { seedSource } from '../support/source-seed.ts';
import { servedWithin, setUp } from '../support/sync.ts';
import { tableApi } from '../support/table-api.ts';
import { logicalId, SYNC_CONTEXT, synthStack } from '../infra/support.ts';

/**
 * Run what you deploy: the sync's bundle as `cdk synth` wrote it (one ES module, the database
 * drivers inside, the mapping file `-c syncMapping` gave beside it), imported from the cloud
 * assembly by a Node process of its own with the environment the template gives the function, and
 * invoked against DynamoDB Local and the suite's PostgreSQL and MariaDB, writing to stdout as it
 * would in Lambda. (Minified, a bundle that renamed the binlog library's classes never read MariaDB's
 * log: infra/sync.ts keeps their names.)
 */
const TOKEN = 'bundle-secret-token-01';
/** A mapping whose effect shows in what the API serves: the projects' names in capitals. */
const MAPPING = {
  queries: { projects: 'SELECT id, team_id, client_id, upper(name) AS name, slug, created_at FROM projects' },
};
let assemblyDir: string;
let bundleFile: string;
/** The function's environment variables as the template sets them (TABLE_NAME, the secret's ARN aside). */
let templateEnvironment: Record<string, string>;

beforeAll(() => {
  assemblyDir = mkdtempSync(join(tmpdir(), 'team-resources-sync-assembly-'));
  const mappingFile = join(assemblyDir, 'mapping.json');
  writeFileSync(mappingFile, JSON.stringify(MAPPING));
  const { app, stack } = synthStack({
    bundle: true,
    outdir: join(assemblyDir, 'cdk.out'),
    context: { ...SYNC_CONTEXT, syncMapping: mappingFile },
    props: (a) => propsFromContext(a.node),
  });
  const assembly = app.synth();
  const template = JSON.parse(readFileSync(join(assembly.directory, 'TeamResourcesApi.template.json'), 'utf8'));
  // The asset's folder is named by its hash, which is the S3 key the template gives the code.
  const fn = template.Resources[logicalId(stack, stack.sync!.function)].Properties;
  const assetDir = join(assembly.directory, `asset.${(fn.Code.S3Key as string).replace(/\.zip$/, '')}`);
  bundleFile = join(assetDir, 'index.mjs');
  expect(readdirSync(assetDir).sort()).toEqual(['index.mjs', 'index.mjs.map', DEPLOYED_MAPPING_FILE]);
  expect(JSON.parse(readFileSync(join(assetDir, DEPLOYED_MAPPING_FILE), 'utf8'))).toEqual(MAPPING);
  const { TABLE_NAME: _, SOURCE_SECRET_ARN: __, ...rest } = fn.Environment.Variables as Record<string, string>;
  templateEnvironment = rest;
  expect(templateEnvironment).toMatchObject({ [MAPPING_FILE_VARIABLE]: DEPLOYED_MAPPING_FILE });
}, 180_000);
afterAll(() => rmSync(assemblyDir, { recursive: true, force: true }));

describe.each(['postgres', 'mysql'] as const)("the sync's bundle (%s)", (engine) => {
  let db: SourceDatabase;
  let table: TestTable;
  beforeAll(async () => {
    if (sourceServer(engine).state === 'missing') return;
    db = await createSourceDatabase(engine);
    await seedSource(db, {
      teams: [{ id: 1, slug: 'acme', name: 'Acme', user_id: 10 }],
      users: [{ id: 10, name: 'Ada', teams: [1] }],
      tokens: [{ id: 70, user_id: 10, token: TOKEN, abilities: ['*'] }],
      projects: [{ id: 100, team_id: 1, name: 'Site', slug: 'site' }],
    });
    await setUp(db);
    table = await freshTable();
  }, 180_000);
  afterAll(async () => {
    await db?.drop();
  });

  it.skipIf(sourceServer(engine).state === 'missing')(
    'syncs the source into the table through the mapping in its code, serves a change within 10 s, its lines on stdout',
    async () => {
      // A process of its own, as Lambda's: the bundle reads its configuration when imported (the
      // template's, the mapping file named relative to the code), and SOURCE_DATABASE_URL stands in
      // for the stack's secret. The invocation syncs for 8 seconds.
      const invoke = `
      const { handler } = await import(${JSON.stringify(pathToFileURL(bundleFile).href)});
      const deadline = Date.now() + ${SYNC_MARGIN_MS + 8_000};
      const context = { awsRequestId: 'bundle', getRemainingTimeInMillis: () => deadline - Date.now() };
      const result = await handler({ scheduledTime: '2026-01-01T00:00:00Z' }, context);
      process.stdout.write('result ' + JSON.stringify(result) + '\\n');`;
      const run = startCommand(NODE, ['--input-type=module', '-e', invoke], {
        cwd: tmpdir(),
        env: {
          PATH: process.env.PATH,
          TABLE_NAME: table.tableName,
          DYNAMODB_ENDPOINT: table.endpoint,
          SOURCE_DATABASE_URL: db.syncUrl,
          ...templateEnvironment,
        },
      });
      process.env.LOG_LEVEL = 'SILENT';
      const api = tableApi(table);
      const names = async () => {
        const answer = await api.get('/api/acme/projects', { token: TOKEN });
        return answer.status === 200 ? (answer.body.data as { name: string }[]).map((p) => p.name) : [];
      };
      const crashed = run.exited.then(() => {
        throw new Error(`the invocation ended before serving the source:\n${run.output()}`);
      });
      crashed.catch(() => {}); // once served, its end is expected
      // The mapping's query, not the default one: the names in capitals.
      await Promise.race([servedWithin(async () => (await names()).includes('SITE'), 30_000), crashed]);
      await db.query("UPDATE projects SET name = 'Site renamed' WHERE id = 100");
      expect(await servedWithin(async () => (await names()).includes('SITE RENAMED'))).toBeLessThan(10_000);

      expect(await run.exited).toEqual({ code: 0, signal: null });
      const lines = run.output().split('\n').filter(Boolean);
      expect(JSON.parse(lines.at(-1)!.replace(/^result /, ''))).toMatchObject({ outcome: 'synced' });
      const metrics = lines.filter((line) => line.includes('"_aws"'));
      expect(metrics.length).toBeGreaterThan(0);
      for (const line of metrics) expect(emfProblems(line)).toEqual([]);
      // Powertools' Metrics, bundled: the stack's namespace, by the Stack dimension alone.
      for (const line of metrics)
        expect(JSON.parse(line)).toMatchObject({
          _aws: { CloudWatchMetrics: [{ Namespace: METRICS_NAMESPACE, Dimensions: [[STACK_DIMENSION]] }] },
          [STACK_DIMENSION]: 'TeamResourcesApi',
        });
      // Powertools' Logger, bundled: its lines with the invocation's keys.
      const logged = lines.filter((line) => line.startsWith('{')).map((line) => JSON.parse(line));
      expect(logged.find((line) => line.message === 'took the sync over')).toMatchObject({
        level: 'INFO',
        service: 'team-resources-sync',
        function_request_id: 'bundle',
        scheduled_time: '2026-01-01T00:00:00Z',
      });
      expect(lines.some((line) => line.includes('"took the sync over"'))).toBe(true);
    },
    60_000,
  );
});
