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
  const dynamo = await startDynamoDbLocal();
  project.provide('dynamodbEndpoint', dynamo.endpoint);
  return async () => {
    await dynamo.stop();
  };
}
