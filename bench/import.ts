import type { DynamoDBDocumentClient } from '@aws-sdk/lib-dynamodb';
import { validateSnapshot } from '../commands/import/snapshot.ts';
import { importSnapshot, type ImportProgress } from '../commands/import/importer.ts';
import { teamSnapshot, type BenchTeam } from './data.ts';
import { progressReporter } from '../commands/import/progress.ts';

export interface ImportRun {
  team: BenchTeam;
  items: number;
  validateMs: number;
  /** From the first item written to the last (the 'items' phase). */
  itemsMs: number;
  /** The whole importSnapshot call: reads, items, users and tokens, switch, cleanup. */
  importMs: number;
  /** What the progress display printed (its non-TTY form, as in a CI log). */
  progress: string[];
}

/**
 * Part 2: imports one team as `npm run import` does (validateSnapshot, then importSnapshot with
 * the progress display), timing validation, the item writes and the whole import.
 */
export async function importTeam(doc: DynamoDBDocumentClient, tableName: string, team: BenchTeam, echo?: (line: string) => void): Promise<ImportRun> {
  const document = teamSnapshot(team);
  const validateStarted = performance.now();
  const validated = validateSnapshot(document);
  const validateMs = performance.now() - validateStarted;
  if (!validated.ok) throw new Error(`bench snapshot is invalid:\n${validated.problems.slice(0, 10).join('\n')}`);

  const progress: string[] = [];
  // progress.ts writes a line every 10% when its stream is not a terminal: capture those lines.
  const stream = {
    isTTY: false,
    write(text: string) {
      for (const line of text.split('\n').filter(Boolean)) {
        progress.push(line);
        echo?.(line);
      }
      return true;
    },
  } as unknown as NodeJS.WriteStream;
  const reporter = progressReporter(stream);
  let itemsStarted = 0;
  let itemsEnded = 0;
  const onProgress = (p: ImportProgress) => {
    if (p.phase === 'items' && p.done === 0) itemsStarted = performance.now();
    if (p.phase === 'items' && p.done === p.total) itemsEnded = performance.now();
    reporter(p);
  };
  const started = performance.now();
  const summary = await importSnapshot(doc, tableName, validated.plan, { onProgress });
  const importMs = performance.now() - started;
  return { team, items: summary.items, validateMs, itemsMs: itemsEnded - itemsStarted, importMs, progress };
}
