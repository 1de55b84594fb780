import { createHash } from 'node:crypto';
import { createReadStream } from 'node:fs';
import { none, getManyValues, isMany } from 'stream-chain/defs.js';
import { jsonParser } from 'stream-json/core/parser.js';
import { verifyFile } from 'stream-json/file/verifier.js';
import {
  COLLECTION_NAMES,
  closestKey,
  fieldsOf,
  isCollection,
  LIMITS,
  type Collection,
} from '../../shared/domain/records.ts';
import { jsonNumber, WrittenNumber } from '../../shared/domain/decimal.ts';
import { locate, say, type Problems } from './problems.ts';

/**
 * Reads a snapshot file as a stream of records, never as one string: the bytes go through a
 * strict UTF-8 decoder and stream-json's tokenizer, and this module walks the tokens, so that only
 * one record is ever assembled at a time. Keys, strings and numbers come in chunks, and no more of
 * one is kept than a rule needs: a string is cut one code point past the longest any field allows
 * (its field's rule then says its own limit), a number past NUMBER_KEPT characters is kept as a
 * short number of the same kind (LongNumber). Whatever one value holds, memory stays bounded. It also checks
 * what only the text shows: a document that is not an object, collections that are not arrays,
 * records that are not objects, unknown keys (with the closest allowed key as a hint), duplicate
 * keys in any object, and JSON syntax (located by line and column with stream-json's Verifier,
 * never echoing the file). The bytes are fingerprinted (SHA-256) as they pass.
 */

/** Is handed each record, with its fields as parsed (numbers as numbers); may return a promise to slow the reader. */
type OnRecord = (
  collection: Collection,
  index: number,
  fields: Record<string, unknown>,
  keyProblems: unknown[],
) => void | Promise<void>;

const CHUNK_BYTES = 64 * 1024;
/** A user lists at most 1,000 teams: the array is kept to one more, enough for its rule to fail. */
const MAX_ARRAY_ELEMENTS = 1_001;
/** Stands for a value of the wrong shape (an object or array where a scalar belongs). */
const WRONG_SHAPE = Object.freeze({});
const ARRAY_FIELDS = new Set(['teams', 'abilities']);
/** No string the format allows is longer than LIMITS.text code points: one more is enough for every rule to fail. */
const STRING_KEPT = LIMITS.text + 1;
/** UTF-16 code units that surely hold STRING_KEPT code points. */
const STRING_UNITS_KEPT = 2 * STRING_KEPT;
/** No valid id or amount is near this long; a number past it is read into a LongNumber. */
const NUMBER_KEPT = 4_096;
/** How much of a long number a message shows. */
const NUMBER_SHOWN = 40;

class NotAnObject extends Error {}

/**
 * Reads the records of the snapshot at `path`, in file order, handing each to `onRecord`; `onBytes`
 * is told the bytes read after each chunk.
 */
export async function readSnapshotRecords(
  path: string,
  onRecord: OnRecord,
  problems: Problems,
  onBytes?: (bytes: number) => void,
) {
  const hash = createHash('sha256');
  const decoder = new TextDecoder('utf-8', { fatal: true });
  // Streamed, never packed: a packed value is assembled whole, however long the file makes it.
  const tokenize = jsonParser({ packValues: false, streamValues: true });
  const parse = tokenize as unknown as (input: string | typeof none) => ReturnType<typeof tokenize>;
  const walk = tokenWalker(onRecord, problems);
  let bytes = 0;
  let blank = true;
  /** The end of the chunk before, where a character the decoder still holds began. */
  let previous: Buffer = Buffer.alloc(0);
  // `readable` is false when the file could not be read as a JSON object at all (the problem is recorded).
  const unreadable = (problem: string) => {
    problems.add(problem);
    return { readable: false, sha256: '', bytes };
  };
  const stream = createReadStream(path, { highWaterMark: CHUNK_BYTES });
  try {
    // After the last chunk, `undefined` flushes the decoder (an unfinished character) and the parser.
    for await (const chunk of thenEnd(stream as AsyncIterable<Buffer>)) {
      let text: string;
      try {
        text = decoder.decode(chunk, { stream: chunk !== undefined });
      } catch {
        return unreadable(say.notUtf8(invalidUtf8Offset(previous, chunk ?? Buffer.alloc(0), bytes)));
      }
      if (chunk) {
        hash.update(chunk);
        bytes += chunk.length;
        previous = chunk.subarray(-3);
      }
      blank &&= !/\S/.test(text);
      let tokens: ReturnType<typeof parse>;
      try {
        tokens = parse(chunk ? text : none);
      } catch {
        return unreadable(chunk || !blank ? await syntaxError(path) : say.empty);
      }
      if (isMany(tokens)) await walk(getManyValues(tokens));
      if (chunk) onBytes?.(bytes);
    }
  } catch (error) {
    if (!(error instanceof NotAnObject)) throw error;
    return unreadable(say.notAnObject);
  } finally {
    stream.destroy();
  }
  return { readable: true, sha256: hash.digest('hex'), bytes };
}

async function* thenEnd(chunks: AsyncIterable<Buffer>): AsyncIterable<Buffer | undefined> {
  yield* chunks;
  yield undefined;
}

/** Where the syntax error is: the Verifier reads the file again and names line and position. */
async function syntaxError(path: string): Promise<string> {
  const { line = 1, pos = 1 } = await verifyFile(path).then(
    (): { line?: number; pos?: number } => ({}),
    (error) => error,
  );
  return say.notJson(line, pos);
}

/**
 * Walks the tokens. What a value is follows from its depth: 1 the document, 2 a collection, 3 a
 * record, 4 the elements of a record's array field; anything else (an unknown key's value, a
 * value of the wrong shape) is only checked for duplicate keys.
 */
function tokenWalker(onRecord: OnRecord, problems: Problems) {
  /** The keys seen in each open object, or null for an open array, outermost first. */
  const open: (Set<string> | null)[] = [];
  /** The document's key whose value comes next, when it names a collection. */
  let documentKey: Collection | null = null;
  /** The collection being read, its fields, and the index of its next record. */
  let collection: { name: Collection; allowed: string[]; index: number } | undefined;
  /** The record being read: its fields so far, and the key whose value comes next (null: a value that is ignored). */
  let record:
    | {
        fields: Record<string, unknown>;
        /** Said once the record is complete (its id is known then). */
        keyProblems: ((where: string) => string)[];
        key: string | null;
      }
    | undefined;
  /** The elements of the record's array field being read. */
  let array: unknown[] | undefined;

  /** A scalar, or the start of an object or an array (`container`). */
  function value(scalar: unknown, container?: 'object' | 'array'): void {
    const depth = open.length;
    if (depth === 0 && container !== 'object') throw new NotAnObject();
    if (depth === 1 && documentKey) {
      if (container === 'array') collection = { name: documentKey, allowed: fieldsOf(documentKey), index: 0 };
      else problems.add(say.notAnArray(documentKey));
    } else if (depth === 2 && collection) {
      if (container === 'object') record = { fields: {}, keyProblems: [], key: null };
      else problems.add(say.recordNotAnObject(locate(collection.name, collection.index++)));
    } else if (depth === 3 && record?.key) {
      if (container === 'array' && ARRAY_FIELDS.has(record.key)) record.fields[record.key] = array = [];
      else record.fields[record.key] = container ? WRONG_SHAPE : scalar;
    } else if (depth === 4 && array && array.length < MAX_ARRAY_ELEMENTS) {
      array.push(container ? WRONG_SHAPE : scalar);
    }
    if (container) open.push(container === 'object' ? new Set() : null);
  }

  function end(): void | Promise<void> {
    open.pop();
    const depth = open.length;
    if (depth === 1) collection = undefined;
    if (depth === 3) array = undefined;
    const done = record;
    if (depth !== 2 || !collection || !done) return undefined;
    record = undefined;
    const index = collection.index++;
    const where = locate(collection.name, index, done.fields.id);
    for (const problem of done.keyProblems) problems.add(problem(where));
    return onRecord(collection.name, index, done.fields, done.keyProblems);
  }

  function key(key: string): void {
    const depth = open.length;
    const keys = open[depth - 1]!;
    const duplicate = keys.has(key);
    keys.add(key);
    if (duplicate) {
      // In a record it is the record's problem, said with its id.
      if (record) record.keyProblems.push((where) => say.duplicateKey(where, key));
      else
        problems.add(
          say.duplicateKey(depth === 1 ? 'the snapshot' : (collection?.name ?? documentKey ?? 'the snapshot'), key),
        );
    }
    if (depth === 1) {
      if (!duplicate && !isCollection(key)) problems.add(say.unknownCollection(key, closestKey(key, COLLECTION_NAMES)));
      documentKey = duplicate || !isCollection(key) ? null : key;
    } else if (depth === 3 && record) {
      const allowed = collection!.allowed;
      if (!duplicate && !allowed.includes(key))
        record.keyProblems.push((where) => say.unknownField(where, key, closestKey(key, allowed)));
      record.key = duplicate || !allowed.includes(key) ? null : key;
    }
  }

  /** The key, string or number whose chunks are coming, as much of it as is kept. */
  let text: { parts: string[]; units: number; long?: LongNumber } | undefined;

  function chunk(part: string, number: boolean): void {
    if (!text || text.long) return void text?.long?.add(part);
    const room = (number ? NUMBER_KEPT : STRING_UNITS_KEPT) - text.units;
    if (part.length <= room) {
      text.parts.push(part);
      text.units += part.length;
    } else if (number) {
      text.long = new LongNumber(text.parts.join('') + part);
    } else if (room > 0) {
      text.parts.push(part.slice(0, room));
      text.units += room;
    }
  }

  /** The string read: whole, or cut to STRING_KEPT code points when it was longer. */
  function stringRead(): string {
    const read = text!.parts.join('');
    return text!.units < STRING_UNITS_KEPT ? read : [...read].slice(0, STRING_KEPT).join('');
  }

  /** Walks one chunk's tokens, waiting only when onRecord asks to (so the common case stays synchronous). */
  return async function walk(tokens: { name: string; value?: unknown }[]): Promise<void> {
    for (const { name, value: token } of tokens) {
      switch (name) {
        case 'startKey':
        case 'startString':
        case 'startNumber':
          text = { parts: [], units: 0 };
          break;
        case 'stringChunk':
        case 'numberChunk':
          chunk(token as string, name === 'numberChunk');
          break;
        case 'endKey':
          key(stringRead());
          break;
        case 'endString':
          value(stringRead());
          break;
        case 'endNumber':
          value(text!.long?.value() ?? jsonNumber(text!.parts.join('')));
          break;
        case 'endObject':
        case 'endArray': {
          const pending = end();
          if (pending) await pending;
          break;
        }
        case 'startObject':
          value(undefined, 'object');
          break;
        case 'startArray':
          value(undefined, 'array');
          break;
        default: // nullValue, trueValue, falseValue
          value(token);
      }
    }
  };
}

/**
 * A number whose text is too long to keep, read character by character: kept as a short number
 * of the same value when it has at most 20 significant digits (`1.000…0` is 1, as written), else
 * of the same kind, which is all any rule can say of it: the sign, the magnitude, whether it is
 * whole, and where its last significant digit is (so "more than 4 decimals" still holds or not).
 * A message shows its first NUMBER_SHOWN characters.
 */
class LongNumber {
  private readonly shown: string;
  private negative = false;
  private part: 'whole' | 'fraction' | 'exponent' = 'whole';
  /** Digits from the first significant one on: the first 19, and the last nonzero one after them. */
  private head = '';
  private tail = '';
  /** How many digits from the first significant one on, and the place of the last nonzero one. */
  private digits = 0;
  private lastNonzero = 0;
  /** Of those, the whole part's; and the fraction's zeros before its first significant digit. */
  private wholeDigits = 0;
  private leadingZeros = 0;
  private exponentNegative = false;
  /** Capped where a double still counts exactly: past it, every rule's answer is the same. */
  private exponent = 0;

  constructor(start: string) {
    this.shown = `${start.slice(0, NUMBER_SHOWN)}…`;
    this.add(start);
  }

  add(text: string): void {
    for (const c of text) {
      if (c === '-' && this.part === 'exponent') this.exponentNegative = true;
      else if (c === '-') this.negative = true;
      else if (c === '.') this.part = 'fraction';
      else if (c === 'e' || c === 'E') this.part = 'exponent';
      else if (c === '+') continue;
      else if (this.part === 'exponent') this.exponent = Math.min(this.exponent * 10 + Number(c), 1e15);
      else if (this.digits === 0 && c === '0') this.leadingZeros += this.part === 'fraction' ? 1 : 0;
      else {
        this.digits++;
        if (this.part === 'whole') this.wholeDigits++;
        if (c !== '0') this.lastNonzero = this.digits;
        if (this.digits <= 19) this.head += c;
        else if (c !== '0') this.tail = c;
      }
    }
  }

  value(): number | WrittenNumber {
    const count = this.lastNonzero;
    const exponent = this.exponentNegative ? -this.exponent : this.exponent;
    /** The power of ten of the first significant digit, and of the last. */
    const first = (this.wholeDigits > 0 ? this.wholeDigits - 1 : -(this.leadingZeros + 1)) + exponent;
    const last = first - (count - 1);
    const sign = this.negative ? '-' : '';
    let text = `${sign}0`;
    if (count > 0 && count <= 20) text = `${sign}${(this.head + this.tail).slice(0, count)}e${last}`;
    // 20 digits ending in the last nonzero one: as whole, as large, and as many decimals as the number.
    if (count > 20) text = `${sign}${this.head}${this.tail}e${last >= 0 ? first - 19 : last}`;
    const read = jsonNumber(text);
    return read instanceof WrittenNumber ? new WrittenNumber(read.text, this.shown) : read;
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
