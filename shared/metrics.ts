/**
 * The CloudWatch namespace of every metric the stack publishes: the API's access lines, the sync's
 * lines, and the stack's own count of throttled requests (infra/). One namespace, so that one
 * dashboard reads them all; the stack's name is a dimension of each.
 */
export const METRICS_NAMESPACE = 'TeamResourcesApi';

/**
 * The dimension every metric of a deployed stack carries, its value the stack's name: two stacks in
 * one account (a staging and a production one) never share a metric, so never an alarm either. The
 * stack gives its functions the name in STACK_NAME_VARIABLE; a function run outside a stack (the
 * local server, `npm run sync`) has none, and its lines carry no such dimension.
 */
export const STACK_DIMENSION = 'Stack';

/** The environment variable in which the stack names itself to its functions. */
export const STACK_NAME_VARIABLE = 'STACK_NAME';
