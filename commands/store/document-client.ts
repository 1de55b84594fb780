import { DynamoDBDocumentClient } from '@aws-sdk/lib-dynamodb';
import { createDynamoDbClient, type ClientOptions } from '../../shared/store/dynamodb-client.ts';

export type { ClientOptions };

/** The document client the command-line tools and tests use, on the same plain client. */
export function createDocumentClient(options: ClientOptions = {}): DynamoDBDocumentClient {
  return DynamoDBDocumentClient.from(createDynamoDbClient(options), {
    marshallOptions: { removeUndefinedValues: true },
  });
}
