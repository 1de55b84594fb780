/**
 * DynamoDB's limits, and item sizes in bytes computed the way DynamoDB computes them
 * (developer guide, "DynamoDB item sizes and formats"): each attribute counts its name's UTF-8
 * bytes plus its value's size. A string is its UTF-8 bytes; a number 1 byte per two significant
 * digits plus 1 (counted here from its text, which is never smaller); null and booleans 1 byte;
 * a set the sum of its members; a list 3 bytes plus, per element, 1 byte and the element. Those
 * are the types the import writes (no binary, no map). The import checks every item it will write
 * against these before the first write (commands/import/validation.ts).
 */
/** DynamoDB's limit of one item, key attributes included. */
export const DYNAMODB_ITEM_BYTES = 400 * 1024;

export const utf8 = (text: string) => Buffer.byteLength(text);

/** The size of a number (its text) as DynamoDB stores it: leading and trailing zeros are not digits. */
export function numberSize(text: string): number {
  const digits = text
    .trim()
    .replace(/^[-+]/, '')
    .replace(/e.*$/i, '')
    .replace('.', '')
    .replace(/^0+/, '')
    .replace(/0+$/, '');
  return Math.ceil(Math.max(digits.length, 1) / 2) + 1;
}

/** The size of one attribute value (without its name). */
function valueSize(value: unknown): number {
  if (value === null || typeof value === 'boolean') return 1;
  if (typeof value === 'string') return utf8(value);
  if (typeof value === 'number') return numberSize(String(value));
  if (value instanceof Set) return [...value].reduce<number>((size, member) => size + valueSize(member), 0);
  if (Array.isArray(value)) return value.reduce<number>((size, element) => size + 1 + valueSize(element), 3);
  throw new TypeError(`no DynamoDB size for a ${typeof value}`);
}

/** The size of an item (document-client form: plain values, Sets for sets), keys included. */
export function itemSize(item: Record<string, unknown>): number {
  let size = 0;
  for (const [name, value] of Object.entries(item)) {
    if (value !== undefined) size += utf8(name) + valueSize(value);
  }
  return size;
}
