import type { Client } from 'pg';
import { type Pgoutput, PgoutputPlugin } from 'pg-logical-replication';
import { lsnText, lsnValue } from './lsn.ts';

/** A table as a relation message describes it: its oid, and its columns' names and types in order. */
export interface TableShape {
  oid: number;
  columns: string;
}

/** Oids as the library reads them: signed 32-bit (an oid past 2^31 is negative there). */
export const shapeOf = (oid: number, columns: { name: string; typeOid: number; typeMod: number }[]): TableShape => ({
  oid: oid | 0,
  columns: columns.map((c) => `${c.name}:${c.typeOid | 0}:${c.typeMod}`).join(','),
});

/**
 * Values as pgoutput's text: pg-logical-replication runs node-postgres's global type parsers
 * (local-time Dates, numbers), so each relation's parsers are replaced by the identity as it is
 * parsed, and the sync reads every value as the source wrote it.
 */
const asText = (text: string) => text;

/** pgoutput, with values as text and the START_REPLICATION options every supported server takes. */
export class TextPgoutput extends PgoutputPlugin {
  readonly #publication: string;
  readonly #received: () => void;
  readonly #broken: (error: unknown) => void;

  constructor(publication: string, received: () => void, broken: (error: unknown) => void) {
    super({ protoVersion: 1, publicationNames: [publication] });
    this.#publication = publication;
    this.#received = received;
    this.#broken = broken;
  }

  override parse(buffer: Buffer): Pgoutput.Message {
    this.#received();
    try {
      const message = super.parse(buffer);
      // The parser keeps this relation and reads every later row of it with these parsers.
      if (message.tag === 'relation') for (const column of message.columns) column.parser = asText;
      return message;
    } catch (error) {
      // Thrown here, it would escape from node-postgres's socket handler and end the process.
      this.#broken(error);
      return { tag: 'origin', originLsn: null, originName: '' };
    }
  }

  /** The library's own adds `messages`, which PostgreSQL 13's pgoutput refuses (it came in 14). */
  override start(client: Client, slot: string, position: string) {
    const publication = `"${this.#publication.replaceAll('"', '""')}"`;
    return client.query(
      `START_REPLICATION SLOT "${slot}" LOGICAL ${lsnText(lsnValue(position))} ` +
        `(proto_version '1', publication_names '${publication.replaceAll("'", "''")}')`,
    );
  }
}
