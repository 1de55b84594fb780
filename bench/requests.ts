import type { DynamoDBClient, QueryCommandOutput } from '@aws-sdk/client-dynamodb';
import { lambdaContext } from '../commands/local/api-gateway-event.ts';
import { createDynamoDbClient } from '../shared/table/dynamodb-client.ts';
import { callRecorder, type CallTrace } from '../test/support/calls.ts';
import { apiHandlers, routedGet } from '../test/support/table-api.ts';
import type { TwinEvent } from './bare-twin.ts';

/**
 * The API's handlers (shared/api/http/handlers.ts, the code the functions bundle) in this process,
 * each DynamoDB call counted from outside, at the client's middleware stack (test/support/calls.ts).
 */
export interface Answer {
  status: number;
  etag?: string;
  body: string;
  calls: CallTrace;
  /** Each call's command and input as sent: what the bare twin replays. */
  sent: TwinEvent['calls'];
}

export type Send = (target: string, secret: string, ifNoneMatch?: string) => Promise<Answer>;

/**
 * `warm` sends every request to the same functions, which remember what they saw, as a warm
 * container does; `firstSight` to new ones, as a new container. `wholeTeam` builds the baseline.
 */
export function apiFunctions(
  endpoint: string,
  tableName: string,
  options: { wholeTeam?: boolean } = {},
): { warm: Send; firstSight: Send } {
  // A patient client: a baseline request on a large team reads for seconds.
  const client = createDynamoDbClient({ endpoint, requestTimeoutMs: 60_000 });
  if (options.wholeTeam) readWholePartition(client);
  const recorder = callRecorder(client);
  const sent: TwinEvent['calls'] = [];
  // A copy of each command's input as the code sent it, before the call recorder adds to it.
  client.middlewareStack.add(
    (next, context) => (args) => {
      sent.push({
        command: String(context.commandName),
        input: structuredClone(args.input) as Record<string, unknown>,
      });
      return next(args);
    },
    { step: 'initialize', name: 'benchInputs' },
  );
  const functions = () => apiHandlers(client, tableName);
  const sender =
    (handlers: () => ReturnType<typeof apiHandlers>): Send =>
    async (target, secret, ifNoneMatch) => {
      const { name, event } = routedGet(target, { token: secret, ifNoneMatch });
      sent.length = 0;
      const { result, calls } = await recorder.trace(() =>
        handlers()[name]!(event, lambdaContext(name, 120_000, 'bench')),
      );
      return {
        status: result.statusCode!,
        etag: result.headers?.ETag as string,
        body: result.body ?? '',
        calls,
        sent: [...sent],
      };
    };
  const warm = functions();
  return { warm: sender(() => warm), firstSight: sender(functions) };
}

/**
 * The whole-team baseline, the common way to paginate when keys do not encode positions: a page
 * Query (`pk = :pk AND sk BETWEEN :first AND :last`) is sent as a Query of the whole partition,
 * following LastEvaluatedKey, and the page is sliced in memory by position. Everything else is
 * the API's own code, and every Query is a real call, counted and priced like any other.
 */
function readWholePartition(client: DynamoDBClient): void {
  client.middlewareStack.add(
    (next, context) => async (args) => {
      const input = args.input as {
        KeyConditionExpression?: string;
        ExpressionAttributeValues?: Record<string, { S?: string }>;
      };
      if (context.commandName !== 'QueryCommand') return next(args);
      const { ':first': first, ':last': last, ...values } = input.ExpressionAttributeValues ?? {};
      if (!first?.S || !last?.S || !input.KeyConditionExpression?.endsWith(' AND sk BETWEEN :first AND :last')) {
        throw new Error(`the baseline does not know this Query: ${input.KeyConditionExpression}`);
      }
      const items: NonNullable<QueryCommandOutput['Items']> = [];
      let answer: Awaited<ReturnType<typeof next>>;
      let startKey: unknown;
      do {
        answer = await next({
          ...args,
          input: {
            ...input,
            KeyConditionExpression: 'pk = :pk',
            ExpressionAttributeValues: values,
            ExclusiveStartKey: startKey,
          },
        });
        const output = answer.output as QueryCommandOutput;
        items.push(...(output.Items ?? []));
        startKey = output.LastEvaluatedKey;
      } while (startKey);
      const page = items.slice(Number(first.S) - 1, Number(last.S));
      return { ...answer, output: { ...(answer.output as QueryCommandOutput), Items: page, Count: page.length } };
    },
    { step: 'initialize', name: 'benchWholePartition' },
  );
}
