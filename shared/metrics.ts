/**
 * The CloudWatch namespace of every metric the stack publishes: the API's access lines, the sync's
 * lines, and the stack's own count of throttled requests (infra/). One namespace, so that one
 * dashboard reads them all; the stack's name is a dimension of each.
 */
export const METRICS_NAMESPACE = 'TeamResourcesApi';
