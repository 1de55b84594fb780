import * as v from 'valibot';
import { toUtcTimestamp } from './timestamp.ts';

/**
 * The resources as the API returns them: fields exactly these, in this order (docs/contract.md,
 * section 3). The import stores each one as this JSON, serialised once, and the functions serve it
 * as stored, so the shape is decided here, beside the writer and the OpenAPI document.
 */
export const Project = v.object({
  id: v.pipe(v.number(), v.integer()),
  name: v.string(),
  slug: v.string(),
  client_id: v.nullable(v.pipe(v.number(), v.integer())),
  created_at: v.pipe(v.string(), v.isoTimestamp(), v.regex(/^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}\+00:00$/)),
});
export type Project = v.InferOutput<typeof Project>;

export const Daemon = v.object({
  id: v.pipe(v.number(), v.integer()),
  name: v.string(),
  command: v.string(),
  username: v.string(),
  directory: v.string(),
  processes: v.pipe(v.number(), v.integer()),
  environment_id: v.pipe(v.number(), v.integer()),
  server_id: v.pipe(v.number(), v.integer()),
});
export type Daemon = v.InferOutput<typeof Daemon>;

/**
 * A sum of money as served: not negative and below 100,000,000,000, with at most 4 decimals
 * (docs/contract.md, section 7), so it reads back exactly as an IEEE double.
 */
export const Amount = v.pipe(
  v.number(),
  v.minValue(0),
  v.ltValue(100_000_000_000),
  v.description('Not negative, below 100,000,000,000, at most 4 decimals; exact (decimal sums, not float)'),
);

export const FinanceLineItem = v.object({
  label: v.string(),
  amount: Amount,
  currency: v.pipe(v.string(), v.regex(/^[A-Z]{3}$/)),
});

/** Serialises a resource with exactly its schema's fields, in contract order (JSON.stringify's key list). */
const writer = (schema: typeof Project | typeof Daemon) => {
  const fields = Object.keys(schema.entries);
  return (resource: object) => JSON.stringify(resource, fields);
};
export const projectJson: (p: Project) => string = writer(Project);
export const daemonJson: (d: Daemon) => string = writer(Daemon);

/**
 * A project or daemon as the API serves it, from a record of a snapshot or a row of the source
 * (checked by shared/domain/records.ts): its time in UTC, a missing client as null. The import
 * fingerprints and writes this text, the sync too: one text for the same record.
 */
export function servedJson(collection: 'projects' | 'daemons', fields: Record<string, unknown>): string {
  if (collection === 'daemons') return daemonJson(fields as Daemon);
  const createdAt = toUtcTimestamp(String(fields.created_at))!;
  return projectJson({
    ...(fields as Project),
    client_id: (fields.client_id ?? null) as number | null,
    created_at: createdAt,
  });
}
