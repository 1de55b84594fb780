/**
 * What the contract allows an answer to be, status by status. `contractProblems` returns what is
 * wrong with an answer (empty when it is one the contract describes), so fuzzing can report
 * every bad answer at once instead of stopping at the first.
 */
export const ROUTE_ABILITIES = ['finances:read', 'daemons:read', 'projects:read'] as const;

export const PER_PAGE_MESSAGES = [
  'The per page field must be an integer.',
  'The per page field must be at least 1.',
  'The per page field must not be greater than 50.',
];
export const PAGE_MESSAGES = [
  'The page field must be an integer.',
  'The page field must be at least 1.',
  'The page field must not be greater than 9007199254740991.',
];

/** Bodies the local server (standing in for API Gateway) answers for requests Node's HTTP parser rejects. */
export const GATEWAY_BODIES: Record<number, string> = {
  400: '{"message":"Bad Request"}',
  431: '{"message":"Request Header Fields Too Large"}',
};

export interface Answer {
  status: number;
  headers: Record<string, string>;
  body: string;
}

const PROJECT_KEYS = ['id', 'name', 'slug', 'client_id', 'created_at'];
const DAEMON_KEYS = ['id', 'name', 'command', 'username', 'directory', 'processes', 'environment_id', 'server_id'];
const ENVELOPE_KEYS = ['data', 'links', 'meta', 'results', 'served_in'];
const META_KEYS = ['current_page', 'from', 'last_page', 'per_page', 'to', 'total', 'path'];
const FINANCE_KEYS = ['data', 'totals', 'grand_total', 'results', 'meta', 'served_in'];

const sameKeys = (value: unknown, keys: string[]) =>
  typeof value === 'object' &&
  value !== null &&
  !Array.isArray(value) &&
  JSON.stringify(Object.keys(value)) === JSON.stringify(keys);

export function contractProblems(answer: Answer): string[] {
  const problems: string[] = [];
  const { status, headers, body } = answer;
  // A conditional GET whose If-None-Match names the current ETag: no body at all.
  if (status === 304)
    return body === '' && /^"[^"]+"$/.test(headers.etag ?? '')
      ? []
      : [`304 with body ${body.slice(0, 80)} or ETag ${headers.etag}`];
  if (!/^application\/json(;|$)/.test(headers['content-type'] ?? ''))
    problems.push(`content-type is ${headers['content-type']}`);
  if (status >= 500) problems.push(`status ${status}`);
  let json: any;
  try {
    json = JSON.parse(body);
  } catch {
    problems.push(`body is not JSON: ${body.slice(0, 120)}`);
    return problems;
  }
  const exact = (expected: unknown) => {
    if (JSON.stringify(json) !== JSON.stringify(expected))
      problems.push(`body ${body.slice(0, 200)} is not ${JSON.stringify(expected)}`);
  };
  switch (status) {
    case 200:
      if (sameKeys(json, FINANCE_KEYS)) problems.push(...financeProblems(json));
      else if (sameKeys(json, ENVELOPE_KEYS)) problems.push(...envelopeProblems(json));
      else problems.push(`200 body has keys ${Object.keys(json ?? {}).join(',')}`);
      break;
    case 401:
      exact({ message: 'Unauthenticated.' });
      if (headers['www-authenticate'] !== 'Bearer')
        problems.push(`401 without WWW-Authenticate: Bearer (${headers['www-authenticate']})`);
      break;
    case 403: {
      const ability = json?.missing_permissions?.[0];
      if (!ROUTE_ABILITIES.includes(ability)) problems.push(`403 names ability ${ability}`);
      exact({
        message: `This token does not have the ${ability} ability.`,
        code: 'insufficient_permission',
        missing_permissions: [ability],
      });
      break;
    }
    case 404:
      exact({ message: 'Not Found' });
      break;
    case 422:
      problems.push(...validationProblems(json));
      break;
    case 400:
    case 431:
      if (body !== GATEWAY_BODIES[status]) problems.push(`${status} body ${body.slice(0, 120)}`);
      break;
    default:
      problems.push(`status ${status} is not one the contract gives`);
  }
  return problems;
}

function validationProblems(json: any): string[] {
  const problems: string[] = [];
  if (!sameKeys(json, ['message', 'errors'])) return [`422 body keys ${Object.keys(json ?? {}).join(',')}`];
  const fields = Object.keys(json.errors);
  const order = ['per_page', 'page'].filter((f) => fields.includes(f));
  if (fields.length === 0 || JSON.stringify(fields) !== JSON.stringify(order))
    problems.push(`422 fields ${fields.join(',')}`);
  const messages: string[] = [];
  for (const field of fields) {
    const list = json.errors[field];
    const allowed = field === 'per_page' ? PER_PAGE_MESSAGES : PAGE_MESSAGES;
    if (!Array.isArray(list) || list.length !== 1 || !allowed.includes(list[0]))
      problems.push(`422 ${field} messages ${JSON.stringify(list)}`);
    else messages.push(list[0]);
  }
  const more = messages.length - 1;
  const expected = `${messages[0]}${more === 0 ? '' : ` (and ${more} more error${more === 1 ? '' : 's'})`}`;
  if (json.message !== expected)
    problems.push(`422 message ${JSON.stringify(json.message)} is not ${JSON.stringify(expected)}`);
  return problems;
}

function envelopeProblems(json: any): string[] {
  const problems: string[] = [];
  const { data, links, meta, results, served_in } = json;
  if (!Array.isArray(data)) return ['data is not an array'];
  if (!sameKeys(meta, META_KEYS)) return [`meta keys ${Object.keys(meta ?? {}).join(',')}`];
  if (!sameKeys(links, ['first', 'last', 'prev', 'next'])) problems.push('links keys');
  const itemKeys = meta.path?.endsWith('/daemons') ? DAEMON_KEYS : PROJECT_KEYS;
  for (const item of data)
    if (!sameKeys(item, itemKeys)) problems.push(`item keys ${Object.keys(item ?? {}).join(',')}`);
  if (results !== data.length) problems.push(`results ${results} but ${data.length} items`);
  if (!/^\d+(\.\d{1,2})?ms$/.test(served_in)) problems.push(`served_in ${served_in}`);
  const { current_page, from, last_page, per_page, to, total } = meta;
  if (last_page !== Math.max(Math.ceil(total / per_page), 1))
    problems.push(`last_page ${last_page} for total ${total} / ${per_page}`);
  if (data.length > per_page) problems.push(`${data.length} items on a page of ${per_page}`);
  if (
    data.length === 0
      ? from !== null || to !== null
      : from !== (current_page - 1) * per_page + 1 || to !== from + data.length - 1
  ) {
    problems.push(`from ${from} to ${to} for page ${current_page} with ${data.length} items`);
  }
  for (let i = 1; i < data.length; i++) if (!(data[i].id > data[i - 1].id)) problems.push('items not in id order');
  return problems;
}

function financeProblems(json: any): string[] {
  const problems: string[] = [];
  if (!Array.isArray(json.data)) return ['finance data is not an array'];
  for (const line of json.data) {
    if (!sameKeys(line, ['label', 'amount', 'currency']))
      problems.push(`line keys ${Object.keys(line ?? {}).join(',')}`);
    if (!/^[A-Z]{3}$/.test(line?.currency)) problems.push(`currency ${line?.currency}`);
    if (typeof line?.amount !== 'number') problems.push(`amount ${line?.amount}`);
  }
  if (typeof json.totals !== 'object' || json.totals === null || Array.isArray(json.totals))
    problems.push('totals is not an object');
  if (typeof json.grand_total !== 'number') problems.push('grand_total is not a number');
  if (json.results !== json.data.length) problems.push('results is not the number of line items');
  if (!Array.isArray(json.meta) || json.meta.length !== 0) problems.push('meta is not []');
  if (!/^\d+(\.\d{1,2})?ms$/.test(json.served_in)) problems.push(`served_in ${json.served_in}`);
  return problems;
}
