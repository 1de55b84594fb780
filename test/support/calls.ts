import type { DynamoDBClient } from '@aws-sdk/client-dynamodb';
import type { DynamoDBDocumentClient } from '@aws-sdk/lib-dynamodb';

/** One DynamoDB call as the client sent it, priced by the ConsumedCapacity it answered with. */
export interface CallReport {
  operation: string;
  readCapacity: number;
  items: number;
  consistent: boolean;
}

/** What one request asked of DynamoDB, seen from the client. */
export interface CallTrace {
  /** Every call, in the order its answer arrived. */
  calls: CallReport[];
  /** Operations in the order they were sent (BatchGetItem, Query, ...). */
  operations: string[];
  /**
   * Round trips the request waited on one after the other: a call sent while another one is in
   * flight overlaps it and does not count again (docs/storage.md: "calls sent together count once").
   */
  sequentialRoundTrips: number;
  /** The most calls in flight at once. */
  maxInFlight: number;
  /** HTTP requests sent: more than the calls only when the SDK retried one. */
  attempts: number;
  /** Read capacity of all calls. */
  rcu: number;
}

interface ReadInput {
  ConsistentRead?: boolean;
  RequestItems?: Record<string, { ConsistentRead?: boolean }>;
  ReturnConsumedCapacity?: string;
}
interface ReadOutput {
  ConsumedCapacity?: { CapacityUnits?: number } | { CapacityUnits?: number }[];
  Items?: unknown[];
  Responses?: Record<string, unknown[]>;
}

function consistentRead(input: ReadInput): boolean {
  if (input.RequestItems) return Object.values(input.RequestItems).some((r) => r.ConsistentRead === true);
  return input.ConsistentRead === true;
}

function capacity(output: ReadOutput): number {
  const consumed = output.ConsumedCapacity;
  const all = Array.isArray(consumed) ? consumed : consumed ? [consumed] : [];
  return all.reduce((sum, c) => sum + (c.CapacityUnits ?? 0), 0);
}

function itemCount(output: ReadOutput): number {
  if (output.Responses) return Object.values(output.Responses).reduce((n, items) => n + items.length, 0);
  return output.Items?.length ?? 0;
}

/**
 * Records every command sent through a client at the client's own middleware stack, so nothing
 * is claimed: a call the code makes is a call counted, and priced by the ConsumedCapacity that
 * the recorder asks DynamoDB to return. `trace(fn)` runs one request and returns what it sent.
 * One request at a time.
 */
export function callRecorder(client: DynamoDBDocumentClient | DynamoDBClient) {
  let current: CallTrace | undefined;
  let inFlight = 0;
  client.middlewareStack.add(
    (next, context) => async (args) => {
      const trace = current;
      if (!trace) return next(args);
      const operation = String(context.commandName ?? '?').replace(/Command$/, '');
      const input = args.input as ReadInput;
      input.ReturnConsumedCapacity = 'TOTAL';
      trace.operations.push(operation);
      if (inFlight === 0) trace.sequentialRoundTrips += 1;
      inFlight += 1;
      trace.maxInFlight = Math.max(trace.maxInFlight, inFlight);
      try {
        const result = await next(args);
        const output = result.output as ReadOutput;
        const call = {
          operation,
          readCapacity: capacity(output),
          items: itemCount(output),
          consistent: consistentRead(input),
        };
        trace.calls.push(call);
        trace.rcu += call.readCapacity;
        return result;
      } finally {
        inFlight -= 1;
      }
    },
    // The serialize step sees the command's input as sent (the document client's marshalling done).
    { step: 'serialize', priority: 'high', name: 'testCallRecorder', override: true },
  );
  // Inside the retry middleware (finalizeRequest, low priority): once per HTTP attempt.
  client.middlewareStack.add(
    (next) => async (args) => {
      if (current) current.attempts += 1;
      return next(args);
    },
    { step: 'finalizeRequest', priority: 'low', name: 'testAttemptRecorder', override: true },
  );
  return {
    async trace<T>(request: () => Promise<T>): Promise<{ result: T; calls: CallTrace }> {
      const calls: CallTrace = {
        calls: [],
        operations: [],
        sequentialRoundTrips: 0,
        maxInFlight: 0,
        attempts: 0,
        rcu: 0,
      };
      current = calls;
      inFlight = 0;
      try {
        return { result: await request(), calls };
      } finally {
        current = undefined;
      }
    },
  };
}
