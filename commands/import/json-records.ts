import { createHash } from 'node:crypto';
import { createReadStream } from 'node:fs';
import { none, getManyValues, isMany } from 'stream-chain/defs.js';
import { jsonParser } from 'stream-json/core/parser.js';
import { jsonVerifier } from 'stream-json/core/utils/verifier.js';
import { COLLECTION_NAMES, closestKey, fieldsOf, isCollection, type Collection } from './snapshot.ts';
import { jsonNumber } from './decimal.ts';
import { locate, say, type Problems } from './problems.ts';

/**
 * Reads a snapshot file as a stream of records, never as one string: the bytes go through a
 * strict UTF-8 decoder and stream-json's tokenizer (packed keys, strings and numbers), and this
 * module walks the tokens, so that only one record is ever assembled at a time. It also checks
 * what only the text shows: a document that is not an object, collections that are not arrays,
 * records that are not objects, unknown keys (with the closest allowed key as a hint), duplicate
 * keys in any object, and JSON syntax (located by line and column with stream-json's Verifier,
 * never echoing the file). The bytes are fingerprinted (SHA-256) as they pass.
 */

/** Problems of a record's keys, said once the record is complete (its id is known then). */
export type KeyProblem = (where: string) => string;

export interface RecordVisitor {
  /** One record, with its fields as parsed (numbers as numbers); may return a promise to slow the reader. */
  record(collection: Collection, index: number, fields: Record<string, unknown>, keyProblems: KeyProblem[]): void | Promise<void>;
}

export interface ReadOptions {
  /** Bytes read so far, after each chunk. */
  onBytes?: (bytes: number) => void;
}

export interface ReadResult {
  /** False when the file could not be read as a JSON object at all (the problem is recorded). */
  readable: boolean;
  sha256: string;
  bytes: number;
}

const CHUNK_BYTES = 64 * 1024;
/** A user lists at most 1,000 teams: the array is kept to one more, enough for its rule to fail. */
const MAX_ARRAY_ELEMENTS = 1_001;
/** Stands for a value of the wrong shape (an object or array where a scalar belongs). */
const WRONG_SHAPE = Object.freeze({});
const ARRAY_FIELDS = new Set(['teams', 'abilities']);

class NotAnObject extends Error {}

/** Reads the records of the snapshot at `path`, in file order, handing each to the visitor. */
export async function readSnapshotRecords(path: string, visitor: RecordVisitor, problems: Problems, options: ReadOptions = {}): Promise<ReadResult> {
  const hash = createHash('sha256');
  const decoder = new TextDecoder('utf-8', { fatal: true });
  const parse = jsonParser({ streamValues: false });
  const end = parse as unknown as (input: typeof none) => ReturnType<typeof parse>;
  const walker = new TokenWalker(visitor, problems);
  let bytes = 0;
  let blank = true;
  /** The end of the chunk before, where a character the decoder still holds began. */
  let previous: Buffer = Buffer.alloc(0);
  const stream = createReadStream(path, { highWaterMark: CHUNK_BYTES });
  try {
    for await (const chunk of stream as AsyncIterable<Buffer>) {
      let text: string;
      try {
        text = decoder.decode(chunk, { stream: true });
      } catch {
        problems.add(say.notUtf8(invalidUtf8Offset(previous, chunk, bytes)));
        return { readable: false, sha256: '', bytes };
      }
      hash.update(chunk);
      bytes += chunk.length;
      previous = chunk.subarray(-3);
      if (blank && /\S/.test(text)) blank = false;
      let tokens;
      try {
        tokens = parse(text);
      } catch {
        problems.add(await syntaxError(path));
        return { readable: false, sha256: '', bytes };
      }
      if (isMany(tokens)) {
        const pending = walker.walk(getManyValues(tokens));
        if (pending) await pending;
      }
      options.onBytes?.(bytes);
    }
    try {
      decoder.decode();
      const rest = end(none);
      if (isMany(rest)) {
        const pending = walker.walk(getManyValues(rest));
        if (pending) await pending;
      }
    } catch (error) {
      if (error instanceof NotAnObject) throw error;
      if (error instanceof TypeError) problems.add(say.notUtf8(invalidUtf8Offset(previous, Buffer.alloc(0), bytes)));
      else problems.add(blank ? say.empty : await syntaxError(path));
      return { readable: false, sha256: '', bytes };
    }
  } catch (error) {
    if (error instanceof NotAnObject) {
      problems.add(say.notAnObject);
      return { readable: false, sha256: '', bytes };
    }
    throw error;
  } finally {
    stream.destroy();
  }
  return { readable: true, sha256: hash.digest('hex'), bytes };
}

/** Where the syntax error is: the Verifier reads the file again and names line and position. */
async function syntaxError(path: string): Promise<string> {
  const verify = jsonVerifier();
  const end = verify as unknown as (input: typeof none) => unknown;
  const decoder = new TextDecoder('utf-8', { fatal: true });
  try {
    for await (const chunk of createReadStream(path, { highWaterMark: CHUNK_BYTES }) as AsyncIterable<Buffer>) verify(decoder.decode(chunk, { stream: true }));
    end(none);
  } catch (error) {
    const { line, pos } = error as { line?: number; pos?: number };
    if (typeof line === 'number' && typeof pos === 'number') return say.notJson(line, pos);
  }
  return say.notJson(1, 1);
}

type Role = 'document' | 'collection' | 'record' | 'field-array' | 'skip';

interface Frame {
  role: Role;
  /** Keys seen in this object (objects only). */
  keys?: Set<string>;
  /** The key whose value comes next (objects), or null when that value is ignored. */
  key?: string | null;
  collection?: Collection;
  index?: number;
  fields?: Record<string, unknown>;
  keyProblems?: KeyProblem[];
  allowed?: string[];
  array?: unknown[];
}

/** Walks the tokens, keeping one frame per open object or array. */
class TokenWalker {
  private readonly stack: Frame[] = [];
  private readonly visitor: RecordVisitor;
  private readonly problems: Problems;
  private readonly allowedFields = new Map<Collection, string[]>(COLLECTION_NAMES.map((c) => [c, fieldsOf(c)]));

  constructor(visitor: RecordVisitor, problems: Problems) {
    this.visitor = visitor;
    this.problems = problems;
  }

  /** Returns a promise only when the visitor asked to wait (so the common case stays synchronous). */
  walk(tokens: { name: string; value?: unknown }[], from = 0): Promise<void> | undefined {
    for (let i = from; i < tokens.length; i++) {
      const token = tokens[i]!;
      let pending: void | Promise<void> = undefined;
      switch (token.name) {
        case 'startObject':
          this.open(true);
          break;
        case 'startArray':
          this.open(false);
          break;
        case 'endObject':
        case 'endArray':
          pending = this.close();
          break;
        case 'keyValue':
          this.key(token.value as string);
          break;
        case 'stringValue':
          this.scalar(token.value);
          break;
        case 'numberValue':
          this.scalar(jsonNumber(token.value as string));
          break;
        case 'nullValue':
        case 'trueValue':
        case 'falseValue':
          this.scalar(token.value);
          break;
      }
      if (pending) return pending.then(() => this.walk(tokens, i + 1));
    }
    return undefined;
  }

  private get top(): Frame | undefined {
    return this.stack[this.stack.length - 1];
  }

  private open(object: boolean): void {
    const parent = this.top;
    const frame: Frame = object ? { role: 'skip', keys: new Set() } : { role: 'skip' };
    if (!parent) {
      if (!object) throw new NotAnObject();
      frame.role = 'document';
    } else if (parent.role === 'document') {
      if (parent.key && isCollection(parent.key)) {
        if (object) this.problems.add(say.notAnArray(parent.key));
        else Object.assign(frame, { role: 'collection', collection: parent.key, index: 0 });
      }
    } else if (parent.role === 'collection') {
      if (object) {
        Object.assign(frame, { role: 'record', collection: parent.collection, index: parent.index, fields: {}, keyProblems: [], allowed: this.allowedFields.get(parent.collection!) });
      } else {
        this.problems.add(say.recordNotAnObject(locate(parent.collection!, parent.index!)));
      }
    } else if (parent.role === 'record') {
      if (parent.key) {
        if (!object && ARRAY_FIELDS.has(parent.key)) {
          frame.role = 'field-array';
          frame.array = [];
          parent.fields![parent.key] = frame.array;
        } else {
          parent.fields![parent.key] = WRONG_SHAPE;
        }
      }
    } else if (parent.role === 'field-array') {
      if (parent.array!.length < MAX_ARRAY_ELEMENTS) parent.array!.push(WRONG_SHAPE);
    }
    this.stack.push(frame);
  }

  private close(): void | Promise<void> {
    const frame = this.stack.pop()!;
    const parent = this.top;
    if (parent?.role === 'collection') parent.index!++;
    if (frame.role === 'record') {
      const where = locate(frame.collection!, frame.index!, frame.fields!.id);
      for (const problem of frame.keyProblems!) this.problems.add(problem(where));
      return this.visitor.record(frame.collection!, frame.index!, frame.fields!, frame.keyProblems!);
    }
    return undefined;
  }

  private key(key: string): void {
    const frame = this.top!;
    const keys = frame.keys!;
    if (keys.has(key)) {
      this.duplicateKey(frame, key);
      frame.key = null;
      return;
    }
    keys.add(key);
    frame.key = key;
    if (frame.role === 'document') {
      if (!isCollection(key)) {
        this.problems.add(say.unknownCollection(key, closestKey(key, COLLECTION_NAMES)));
        frame.key = null;
      }
    } else if (frame.role === 'record' && !frame.allowed!.includes(key)) {
      const allowed = frame.allowed!;
      frame.keyProblems!.push((where) => say.unknownField(where, key, closestKey(key, allowed)));
      frame.key = null;
    }
  }

  /** A key twice in one object: in a record it is the record's problem, said with its id. */
  private duplicateKey(frame: Frame, key: string): void {
    const record = this.enclosingRecord();
    if (record) record.keyProblems!.push((where) => say.duplicateKey(where, key));
    else this.problems.add(say.duplicateKey(frame.role === 'document' ? 'the snapshot' : this.enclosingKey(), key));
  }

  private enclosingRecord(): Frame | undefined {
    for (let i = this.stack.length - 1; i >= 0; i--) if (this.stack[i]!.role === 'record') return this.stack[i];
    return undefined;
  }

  /** Where a skipped value is, for a message: the top-level key it belongs to. */
  private enclosingKey(): string {
    const document = this.stack[0];
    const collection = this.stack[1]?.collection;
    return collection ?? (document?.key ? String(document.key) : 'the snapshot');
  }

  private scalar(value: unknown): void {
    const frame = this.top;
    if (!frame) throw new NotAnObject();
    switch (frame.role) {
      case 'document':
        if (frame.key && isCollection(frame.key)) this.problems.add(say.notAnArray(frame.key));
        return;
      case 'collection':
        this.problems.add(say.recordNotAnObject(locate(frame.collection!, frame.index!)));
        frame.index!++;
        return;
      case 'record':
        if (frame.key) frame.fields![frame.key] = value;
        return;
      case 'field-array':
        if (frame.array!.length < MAX_ARRAY_ELEMENTS) frame.array!.push(value);
        return;
      default:
        return;
    }
  }
}

/**
 * Where the first invalid UTF-8 sequence begins, as a file offset: in `chunk` (which starts at
 * `start`; empty at the end of the file), after the bytes the streaming decoder still held from
 * `before` (the end of the chunk before). The bytes are decoded again without `fatal`: the first
 * U+FFFD that the file does not itself hold (EF BF BD) is where the broken sequence begins.
 */
function invalidUtf8Offset(before: Buffer, chunk: Buffer, start: number): number {
  let from = 0;
  while (from < before.length && (before[from]! & 0xc0) === 0x80) from++;
  const bytes = Buffer.concat([before.subarray(from), chunk]);
  const text = new TextDecoder().decode(bytes, { stream: chunk.length > 0 });
  for (let i = text.indexOf('\ufffd'); i >= 0; i = text.indexOf('\ufffd', i + 1)) {
    const at = Buffer.byteLength(text.slice(0, i));
    if (bytes.subarray(at, at + 3).toString('hex') !== 'efbfbd') return start - (before.length - from) + at;
  }
  return start;
}
