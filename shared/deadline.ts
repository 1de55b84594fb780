/**
 * A request's deadline: the moment its DynamoDB calls must have ended, so that it answers the
 * contract's 503 before the function would be killed (shared/http/middleware/request-deadline.ts
 * starts one per request).
 *
 * The AbortSignal that enforces it is made only for a call that could outlive it. A call the
 * client's own timeouts end within `boundMs` (dynamodb-client.ts API_CALL_BOUND_MS: every attempt
 * bounded, the retry delay too) needs none while it starts more than `boundMs` before the
 * deadline: every call of a request that is not already late. Measured in a warm loop against
 * DynamoDB Local, handing the SDK an AbortSignal cost each call its abort listeners and about 2%
 * of a warm request's time, which the deadline almost never needs (bench/README.md).
 */
export class Deadline {
  /** performance.now() time of the deadline. */
  readonly at: number;
  private controller: AbortController | undefined;
  private timer: ReturnType<typeof setTimeout> | undefined;

  constructor(budgetMs: number, now = performance.now()) {
    this.at = now + budgetMs;
  }

  /** The signal for a call that ends within `boundMs` on its own (undefined: no bound known): none if it ends before the deadline anyway. */
  signalFor(boundMs: number | undefined): AbortSignal | undefined {
    if (boundMs !== undefined && performance.now() + boundMs < this.at) return undefined;
    return this.signal();
  }

  /** A signal aborted at the deadline (a TimeoutError, as AbortSignal.timeout gives), made on first use. */
  signal(): AbortSignal {
    if (!this.controller) {
      const controller = new AbortController();
      this.controller = controller;
      const remaining = this.at - performance.now();
      if (remaining <= 0) abortAtDeadline(controller);
      else {
        this.timer = setTimeout(abortAtDeadline, remaining, controller);
        // The deadline never keeps a process alive on its own (the local server, tests).
        this.timer.unref();
      }
    }
    return this.controller.signal;
  }

  /** The request ended: its timer, if it made one, goes. */
  stop(): void {
    clearTimeout(this.timer);
    this.timer = undefined;
  }
}

function abortAtDeadline(controller: AbortController) {
  // The SDK and p-retry pass the reason on; it answers 503 (shared/http/errors.ts).
  controller.abort(new DOMException('the request deadline passed', 'TimeoutError'));
}
