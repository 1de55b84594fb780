import type { DynamoDBDocumentClient } from '@aws-sdk/lib-dynamodb';
import { importSnapshot } from '../commands/import/importer.ts';
import { progressDisplay } from '../commands/import/progress.ts';
import { validateSnapshotFile } from '../commands/import/validation.ts';
import { teamSnapshot, type BenchTeam } from './data.ts';
import { writeSnapshotFile } from './snapshot-file.ts';

export interface ImportRun {
  team: BenchTeam;
  items: number;
  /** Pass 1: the file read and checked whole. */
  validateMs: number;
  /** From the first item written to the last (the 'writing' phase of pass 2). */
  itemsMs: number;
  /** The whole importSnapshot call: lock, reads, items, switch, users and tokens, sweep. */
  importMs: number;
  /** What the progress display printed (its non-TTY form, as in a CI log). */
  progress: string[];
}

/**
 * Part 2: imports one team as `npm run import` does (pass 1, validateSnapshotFile, then pass 2,
 * importSnapshot, with the progress display), timing validation, the item writes and the whole
 * import.
 */
export async function importTeam(doc: DynamoDBDocumentClient, tableName: string, team: BenchTeam, echo?: (line: string) => void): Promise<ImportRun> {
  const path = await writeSnapshotFile(teamSnapshot(team));
  const progress: string[] = [];
  // The display writes a line every 10% when its stream is not a terminal: capture those lines.
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
  const display = progressDisplay({ stream });
  const validateStarted = performance.now();
  const validated = await validateSnapshotFile(path, { onBytes: display.validating });
  const validateMs = performance.now() - validateStarted;
  if (!validated.ok) throw new Error(`bench snapshot is invalid:\n${validated.problems.slice(0, 10).join('\n')}`);

  let itemsStarted = 0;
  let itemsEnded = 0;
  const started = performance.now();
  const summary = await importSnapshot(doc, tableName, validated.snapshot, {
    onProgress: (p) => {
      if (p.phase === 'writing' && p.done === 0) itemsStarted = performance.now();
      if (p.phase === 'writing' && p.done === p.total) itemsEnded = performance.now();
      return display.importing(p);
    },
  });
  const importMs = performance.now() - started;
  return { team, items: summary.items, validateMs, itemsMs: itemsEnded - itemsStarted, importMs, progress };
}
