import { missingSchema } from './checks.ts';
import type { Mapping } from './mapping.ts';
import { connectSource, type SourceConnection } from './source/connection.ts';
import type { SourceUrl } from './source/url.ts';

/**
 * How often a schema that lacks what the mapping reads is looked at again, besides each change of a
 * table's shape the log reports: PostgreSQL's log says nothing of a table renamed and renamed back, or
 * of a column given back before any row of its table changes. A test may give a shorter one
 * (SyncSettings.schemaRecheckMs).
 */
const SCHEMA_RECHECK_MS = 5_000;

/**
 * Whether the source still has what the mapping reads (contract section 9, "Schema changes never hurt
 * the app"): while a migration has taken a column or a table away, that is said once in one line
 * naming the table and column, and the parts that read it are kept as they are; the watch says when
 * it has them again, so that the run reads those parts again.
 */
export class SchemaWatch {
  /** Since when a query of the mapping has failed for the source's schema. */
  private brokenSince?: number;
  /** The line that says so, being looked up. */
  private said?: Promise<void>;
  private readonly url: SourceUrl;
  private readonly say: (line: string) => void;
  private readonly clock: () => number;
  private readonly recheckMs: number;

  constructor(url: SourceUrl, say: (line: string) => void, clock: () => number, recheckMs = SCHEMA_RECHECK_MS) {
    this.url = url;
    this.say = say;
    this.clock = clock;
    this.recheckMs = recheckMs;
  }

  /** A few seconds after the schema last lacked something: time to look again. */
  get recheckDue(): boolean {
    return this.brokenSince !== undefined && this.clock() - this.brokenSince >= this.recheckMs;
  }

  /**
   * Looks at the schema: 'broken' while it lacks what the mapping reads (said once), 'mended' the
   * first time it has all of it again (said), else 'whole'.
   */
  async check(source: SourceConnection, mapping: Mapping): Promise<'broken' | 'mended' | 'whole'> {
    const missing = await missingSchema(source, mapping);
    if (missing.length > 0) {
      this.failed(mapping, undefined, missing);
      this.brokenSince = this.clock();
      return 'broken';
    }
    if (this.brokenSince === undefined) return 'whole';
    this.brokenSince = undefined;
    this.say(`the source answers every query of the mapping again (${this.url.redacted}): catching up`);
    return 'mended';
  }

  /**
   * A query of the mapping failed for the source's schema, or the schema lacks what it reads: said
   * once while it lasts, naming the table and column as the schema check names them. Where a query
   * failed, they are looked up on a connection of its own: the batch's snapshot holds the statement
   * that failed.
   */
  failed(mapping: Mapping, failure?: string, lacks?: string[]): void {
    if (this.brokenSince !== undefined) return;
    this.brokenSince = this.clock();
    this.said = (async () => {
      if (!lacks) {
        const connection = await connectSource(this.url).catch(() => undefined);
        try {
          if (connection) lacks = await missingSchema(connection, mapping);
        } catch {
          // The failure alone is said.
        } finally {
          await connection?.close().catch(() => {});
        }
      }
      const why = failure === undefined ? '' : ` (${failure})`;
      this.say(
        lacks && lacks.length > 0
          ? `the source no longer has what the mapping reads: ${lacks.join('; ')}${why}; ` +
              'the parts that read it are kept as they are until it has it again'
          : `the source no longer answers a query of the mapping${why}; ` +
              'the parts that read it are kept as they are until it does',
      );
    })();
  }

  /** Once the line being looked up is said. */
  settled(): Promise<void> | undefined {
    return this.said;
  }
}
