/**
 * The rules of CloudWatch's embedded metric format that a line must meet for CloudWatch Logs to
 * extract its metrics, as "Specification: Embedded metric format" states them
 * (https://docs.aws.amazon.com/AmazonCloudWatch/latest/monitoring/CloudWatch_Embedded_Metric_Format_Specification.html):
 * the log event is one JSON object with nothing before or after it; `_aws` holds a Timestamp
 * (milliseconds since the epoch) and CloudWatchMetrics, an array of directives; each directive
 * names a Namespace, Dimensions (an array of dimension sets, each an array of at most 30 names of
 * root members whose values are strings) and Metrics (each a Name of a root member whose value
 * is a number, and a Unit CloudWatch knows). Returns the problems; none for a valid document.
 */
const UNITS = new Set([
  'Seconds',
  'Microseconds',
  'Milliseconds',
  'Bytes',
  'Kilobytes',
  'Megabytes',
  'Gigabytes',
  'Terabytes',
  'Bits',
  'Kilobits',
  'Megabits',
  'Gigabits',
  'Terabits',
  'Percent',
  'Count',
  'Bytes/Second',
  'Kilobytes/Second',
  'Megabytes/Second',
  'Gigabytes/Second',
  'Terabytes/Second',
  'Bits/Second',
  'Kilobits/Second',
  'Megabits/Second',
  'Gigabits/Second',
  'Terabits/Second',
  'Count/Second',
  'None',
]);

export function emfProblems(line: string): string[] {
  const problems: string[] = [];
  let root: Record<string, any>;
  try {
    root = JSON.parse(line);
  } catch {
    return ['not one JSON value'];
  }
  if (typeof root !== 'object' || root === null || Array.isArray(root)) return ['not a JSON object'];
  const aws = root._aws;
  if (!Number.isInteger(aws?.Timestamp) || aws.Timestamp <= 0)
    problems.push('_aws.Timestamp is not a time in milliseconds');
  if (!Array.isArray(aws?.CloudWatchMetrics) || aws.CloudWatchMetrics.length === 0)
    return [...problems, '_aws.CloudWatchMetrics is not a non-empty array'];
  for (const directive of aws.CloudWatchMetrics) {
    if (typeof directive.Namespace !== 'string' || directive.Namespace.length === 0)
      problems.push('a directive without a Namespace');
    for (const set of directive.Dimensions ?? [null]) {
      if (!Array.isArray(set) || set.length > 30)
        problems.push(`dimension set ${JSON.stringify(set)} is not an array of at most 30 names`);
      else
        for (const name of set)
          if (typeof root[name] !== 'string')
            problems.push(`dimension ${name} is not a root member with a string value`);
    }
    for (const metric of directive.Metrics ?? [null]) {
      if (typeof root[metric?.Name] !== 'number')
        problems.push(`metric ${metric?.Name} is not a root member with a number value`);
      if (metric?.Unit !== undefined && !UNITS.has(metric.Unit))
        problems.push(`metric ${metric.Name} has unit ${metric.Unit}`);
    }
  }
  return problems;
}
