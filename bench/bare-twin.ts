import { BatchGetItemCommand, QueryCommand } from '@aws-sdk/client-dynamodb';
import { createDynamoDbClient } from '../shared/table/dynamodb-client.ts';

/**
 * The bare twin: a Lambda handler that makes exactly a function's DynamoDB calls (the event
 * carries their inputs, recorded from the function itself: bench/requests.ts) with the plain
 * client built as the functions build theirs, and nothing else: no middleware, no logger, no
 * checks. Bundled exactly as the functions are, it is what any handler making these calls pays.
 */
export interface TwinEvent {
  calls: { command: string; input: Record<string, unknown> }[];
  /** Sent all at once, as a warm function sends them for a token it recently saw; else one after the other. */
  together: boolean;
}

const client = createDynamoDbClient({ endpoint: process.env.DYNAMODB_ENDPOINT || undefined });

async function send({ command, input }: TwinEvent['calls'][number]): Promise<unknown[]> {
  if (command === 'QueryCommand') return (await client.send(new QueryCommand(input as never))).Items ?? [];
  return Object.values((await client.send(new BatchGetItemCommand(input as never))).Responses ?? {}).flat();
}

export async function handler(event: TwinEvent): Promise<{ statusCode: number; body: string }> {
  const items: unknown[][] = [];
  if (event.together) items.push(...(await Promise.all(event.calls.map(send))));
  else for (const call of event.calls) items.push(await send(call));
  return { statusCode: 200, body: `{"items":${items.flat().length}}` };
}
