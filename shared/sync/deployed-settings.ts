/**
 * The deployed sync's time budget and concurrency: one place, read by the stack that deploys it
 * (infra/sync.ts) and by the handler that runs it (deployed.ts).
 *
 * EventBridge Scheduler invokes the function once a minute, its shortest rate, and only "with 60
 * second precision": an invocation scheduled for 1:00 comes between 1:00:00 and 1:00:59 ("Schedule
 * types in EventBridge Scheduler",
 * https://docs.aws.amazon.com/scheduler/latest/UserGuide/schedule-types.html). Lambda runs an
 * invocation 15 minutes at most ("Configure Lambda function timeout",
 * https://docs.aws.amazon.com/lambda/latest/dg/configuration-timeout.html). So each invocation
 * syncs until a margin before its timeout, and the next one hands over (deployed.ts).
 */
export const SYNC_TIMEOUT_MS = 15 * 60_000;

/**
 * What an invocation leaves of its time when it stops syncing: it finishes the pass under way and
 * gives the lease back within it, long before Lambda would end it.
 */
export const SYNC_MARGIN_MS = 60_000;

/**
 * An invocation that finds the sync's lease held by one ending within this waits to take over the
 * moment it is given back. Two invocations can come up to two minutes apart (each anywhere in its
 * minute), so a window of two minutes always holds one.
 */
export const SYNC_HANDOVER_WITHIN_MS = 120_000;

/**
 * Executions at once: the invocation that syncs, the one waiting to take over, and a third that
 * looks at the lease and leaves in milliseconds. Reserved concurrency is both the function's
 * floor and its ceiling ("Configuring reserved concurrency for a function",
 * https://docs.aws.amazon.com/lambda/latest/dg/configuration-concurrency.html).
 */
export const SYNC_RESERVED_CONCURRENCY = 3;

/**
 * The sync's memory. Lambda allots CPU in proportion to memory; the sync mostly waits on the
 * source and DynamoDB, and a full pass holds one chunk of teams at a time (docs/deploy.md says
 * what it was measured to use).
 */
export const SYNC_MEMORY_MB = 512;

/**
 * The event the schedule sends: EventBridge Scheduler replaces each `<aws.scheduler.…>` keyword of
 * the target's input with its value at each invocation ("Adding context attributes in EventBridge
 * Scheduler", https://docs.aws.amazon.com/scheduler/latest/UserGuide/managing-schedule-context-attributes.html).
 * The handler logs them with what it did; it needs none of them to run (an empty event will do).
 */
export const SCHEDULER_INPUT = {
  scheduleArn: '<aws.scheduler.schedule-arn>',
  scheduledTime: '<aws.scheduler.scheduled-time>',
  executionId: '<aws.scheduler.execution-id>',
  attemptNumber: '<aws.scheduler.attempt-number>',
} as const;
