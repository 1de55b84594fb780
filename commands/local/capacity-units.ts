import { numberSize, utf8 } from '../../shared/write/item-size.ts';

/**
 * What DynamoDB charges, in its own units, for items in its JSON wire form (`{"S": "…"}`,
 * `{"N": "…"}`, …), for the DynamoDB limiter (dynamodb-limiter.ts). Pure: no clock, no I/O.
 *
 * - Sizes: "DynamoDB item sizes and formats" (developer guide, CapacityUnitCalculations.html): an
 *   attribute is its name's UTF-8 bytes plus its value's; a string its UTF-8 bytes, a number about
 *   1 byte per two significant digits plus 1, a binary its raw bytes, null and booleans 1 byte, a
 *   list or map 3 bytes plus 1 byte and the size of each element (a map's element with its name).
 * - Units: "DynamoDB read and write operations" (read-write-operations.html): a write is 1 WCU per
 *   1 KB, rounded up; a read 1 RCU per 4 KB, rounded up, strongly consistent, half that eventually
 *   consistent; a transaction's reads and writes cost twice (transaction-apis.html, "Capacity
 *   management for transactions": DynamoDB prepares and commits each item). A read of an item that
 *   does not exist still costs one read unit's worth.
 */

/** A DynamoDB AttributeValue as the JSON protocol carries it. */
export type AttributeValue = Record<string, unknown>;
/** An item (or a key) in the JSON protocol's form. */
export type WireItem = Record<string, AttributeValue>;

/** How a read is made, which sets its price per 4 KB. */
export type ReadMode = 'eventual' | 'strong' | 'transactional';

const KB = 1024;
const READ_BLOCK = 4 * KB;
const READ_PRICE: Record<ReadMode, number> = { eventual: 0.5, strong: 1, transactional: 2 };

const binary = (base64: string) => Buffer.byteLength(base64, 'base64');

/** The size of one value, without its attribute's name. */
function valueSize(value: AttributeValue): number {
  const [type, content] = Object.entries(value)[0] ?? [];
  switch (type) {
    case 'S':
      return utf8(content as string);
    case 'N':
      return numberSize(content as string);
    case 'B':
      return binary(content as string);
    case 'BOOL':
    case 'NULL':
      return 1;
    case 'SS':
    case 'NS':
    case 'BS':
      // A set is the sum of its members, each sized as a value of the set's type (S, N or B).
      return (content as string[]).reduce((size, member) => size + valueSize({ [type[0]!]: member }), 0);
    case 'L':
      return (content as AttributeValue[]).reduce((size, element) => size + 1 + valueSize(element), 3);
    case 'M':
      return Object.entries(content as WireItem).reduce(
        (size, [name, element]) => size + 1 + utf8(name) + valueSize(element),
        3,
      );
    default:
      throw new TypeError(`no DynamoDB size for an attribute value of type ${String(type)}`);
  }
}

/** The size of an item in bytes, as DynamoDB counts it for capacity. */
export function itemSize(item: WireItem): number {
  let size = 0;
  for (const [name, value] of Object.entries(item)) size += utf8(name) + valueSize(value);
  return size;
}

/** Write units for an item of this size: 1 per KB, rounded up; an empty or absent item still costs 1. */
export function writeUnits(bytes: number, transactional = false): number {
  return Math.max(1, Math.ceil(bytes / KB)) * (transactional ? 2 : 1);
}

/**
 * Read units for this many bytes read in one operation (one item, or a Query's whole result): 4 KB
 * blocks, rounded up, at least one (a read that finds nothing is still a read).
 */
export function readUnits(bytes: number, mode: ReadMode): number {
  return Math.max(1, Math.ceil(bytes / READ_BLOCK)) * READ_PRICE[mode];
}
