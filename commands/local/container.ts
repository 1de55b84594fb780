import type { MessagePort } from 'node:worker_threads';
import { Piscina } from 'piscina';
import type { APIGatewayProxyEventV2 } from 'aws-lambda';
import type { FunctionName } from '../../shared/api/routes.ts';
import { lambdaContext } from './api-gateway-event.ts';
import { loadBundledHandlers } from './bundled-handlers.ts';
import { loadFunctionHandlers } from './server.ts';

/**
 * One container (a worker thread of containers.ts's pool): the functions loaded once, in a module
 * scope of their own, as a Lambda execution environment loads its function, then one invocation at
 * a time. Loaded from the bundles in `workerData.bundled` (a cloud assembly) when it names one.
 */
const { bundled } = Piscina.workerData as { bundled?: string };
const handlers = bundled ? await loadBundledHandlers(bundled) : await loadFunctionHandlers();

export interface Invocation {
  name: FunctionName;
  event: APIGatewayProxyEventV2;
  timeoutMs: number;
  /** Told when the function starts: its timeout counts from then, not from the wait for a container. */
  started: MessagePort;
}

/** Calls the function, saying first that it starts; a task without one only says the functions loaded. */
export default async function invoke(invocation: Invocation | Record<string, never>) {
  if (!('name' in invocation)) return null;
  const { name, event, timeoutMs, started } = invocation;
  started.postMessage(null);
  started.close();
  return handlers[name](event, lambdaContext(name, timeoutMs, event.requestContext.requestId));
}
