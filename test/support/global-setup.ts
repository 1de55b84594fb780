import type { TestProject } from 'vitest/node';
import { startDynamoDbLocal } from '../../commands/local/dynamodb-local.ts';
import { seedDescription } from './fuzz.ts';
import { startSourceServers, type SourceEngine, type SourceServerStatus } from './source-servers.ts';

declare module 'vitest' {
  export interface ProvidedContext {
    dynamodbEndpoint: string;
    /** Each engine's server, or why there is none (source-databases.ts reads it). */
    sourceServers: Record<SourceEngine, SourceServerStatus>;
  }
}

/**
 * One DynamoDB Local for the whole run (each test file makes its own table in it), and beside it one
 * PostgreSQL and one MariaDB server for the sync's tests (each test file makes its own databases in
 * them; source-databases.ts).
 */
export default async function setup(project: TestProject) {
  // Once per run, so that a green run can be replayed as well as a red one.
  console.info(`property and fuzz tests: ${seedDescription}`);
  // Java on its quick compiler alone, with the serial collector, as the command tests start theirs:
  // a run of the suite is too short for the optimizing compiler's work on DynamoDB Local's code to
  // pay back (with it, that Java spends much more CPU on the same requests), and on a machine of two
  // cores the CPU of the collector's parallel threads is the suite's too. Only this Java gets these
  // options: the variable is put back once it has started (the database servers get an environment
  // of their own).
  const inherited = process.env.JAVA_TOOL_OPTIONS;
  process.env.JAVA_TOOL_OPTIONS = '-XX:TieredStopAtLevel=1 -XX:+UseSerialGC';
  const dynamoStarting = startDynamoDbLocal().finally(() => {
    if (inherited === undefined) delete process.env.JAVA_TOOL_OPTIONS;
    else process.env.JAVA_TOOL_OPTIONS = inherited;
  });
  // Started side by side: the database servers are ready well before Java is.
  const [dynamo, sources] = await Promise.allSettled([dynamoStarting, startSourceServers()]);
  if (dynamo.status === 'rejected') {
    if (sources.status === 'fulfilled') await sources.value.stop();
    throw dynamo.reason;
  }
  if (sources.status === 'rejected') {
    await dynamo.value.stop();
    throw sources.reason;
  }
  // One line per server that is missing (its tests are skipped) or broken (its tests fail, saying why).
  for (const line of sources.value.lines) console.info(line);
  project.provide('dynamodbEndpoint', dynamo.value.endpoint);
  project.provide('sourceServers', sources.value.statuses);
  return async () => {
    await Promise.all([dynamo.value.stop(), sources.value.stop()]);
  };
}
