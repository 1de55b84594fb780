/**
 * A value the stack was given that it cannot use: a context value (context.ts) or a prop the stack
 * checks. `cdk synth` and `cdk deploy` print its message alone, in one line, and exit 1 (app.ts);
 * anything else thrown is a bug, and keeps its stack trace.
 */
export class UsageError extends Error {
  constructor(message: string) {
    super(message);
    this.name = 'UsageError';
  }
}

/** What `check` throws, as a UsageError: the functions' own rules, run at synth (their messages name the setting). */
export function asUsage<T>(check: () => T): T {
  try {
    return check();
  } catch (error) {
    throw error instanceof Error && !(error instanceof UsageError) ? new UsageError(error.message) : error;
  }
}
