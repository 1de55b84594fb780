import type { DynamoDBClient } from '@aws-sdk/client-dynamodb';
import type { DynamoDBDocumentClient } from '@aws-sdk/lib-dynamodb';

/** What one request asked of DynamoDB, seen from the client. */
export interface CallTrace {
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
}

/**
 * Records every command sent through a client, measured at the client's own middleware stack
 * (so nothing is claimed: a call the code makes is a call counted). `trace(fn)` runs one request
 * and returns what it sent. One request at a time.
 */
export function callRecorder(doc: DynamoDBDocumentClient | DynamoDBClient) {
  let current: CallTrace | undefined;
  let inFlight = 0;
  doc.middlewareStack.add(
    (next, context) => async (args) => {
      const trace = current;
      if (trace) {
        trace.operations.push(String(context.commandName ?? '?').replace(/Command$/, ''));
        if (inFlight === 0) trace.sequentialRoundTrips += 1;
        inFlight += 1;
        trace.maxInFlight = Math.max(trace.maxInFlight, inFlight);
      }
      try {
        return await next(args);
      } finally {
        if (trace) inFlight -= 1;
      }
    },
    { step: 'initialize', name: 'benchCallRecorder', override: true },
  );
  // Inside the retry middleware (finalizeRequest, low priority): once per HTTP attempt.
  doc.middlewareStack.add(
    (next) => async (args) => {
      if (current) current.attempts += 1;
      return next(args);
    },
    { step: 'finalizeRequest', priority: 'low', name: 'benchAttemptRecorder', override: true },
  );
  return {
    async trace<T>(request: () => Promise<T>): Promise<{ result: T; calls: CallTrace }> {
      const calls: CallTrace = { operations: [], sequentialRoundTrips: 0, maxInFlight: 0, attempts: 0 };
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
