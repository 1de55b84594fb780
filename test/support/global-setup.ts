import type { TestProject } from 'vitest/node';
import { startDynamoDbLocal } from '../../commands/local/dynamodb-local.ts';
import { seedDescription } from './fuzz.ts';

declare module 'vitest' {
  export interface ProvidedContext {
    dynamodbEndpoint: string;
  }
}

/** One DynamoDB Local for the whole run (each test file makes its own table in it). */
export default async function setup(project: TestProject) {
  // Once per run, so that a green run can be replayed as well as a red one.
  console.info(`property and fuzz tests: ${seedDescription}`);
  // Java on its quick compiler alone, with the serial collector, as the command tests start theirs:
  // a run of the suite is too short for the optimizing compiler's work on DynamoDB Local's code to
  // pay back (with it, that Java spends much more CPU on the same requests), and on a machine of two
  // cores the CPU of the collector's parallel threads is the suite's too. Only this Java gets these
  // options: the variable is put back once it has started.
  const inherited = process.env.JAVA_TOOL_OPTIONS;
  process.env.JAVA_TOOL_OPTIONS = '-XX:TieredStopAtLevel=1 -XX:+UseSerialGC';
  const dynamo = await startDynamoDbLocal().finally(() => {
    if (inherited === undefined) delete process.env.JAVA_TOOL_OPTIONS;
    else process.env.JAVA_TOOL_OPTIONS = inherited;
  });
  project.provide('dynamodbEndpoint', dynamo.endpoint);
  return async () => {
    await dynamo.stop();
  };
}
