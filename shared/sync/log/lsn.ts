/**
 * PostgreSQL's log positions (pg_lsn): 64-bit WAL addresses written as two hexadecimal halves, `16/B374D848`
 * (https://www.postgresql.org/docs/current/datatype-pg-lsn.html). Compared as numbers, never as text:
 * `0/9` is before `0/10`.
 */
const LSN = /^([0-9A-Fa-f]{1,8})\/([0-9A-Fa-f]{1,8})$/;

export function lsnValue(text: string): bigint {
  const match = LSN.exec(text);
  if (!match) throw new Error(`not a PostgreSQL log position: ${JSON.stringify(text)}`);
  return (BigInt(`0x${match[1]}`) << 32n) | BigInt(`0x${match[2]}`);
}

/** PostgreSQL's own spelling (`%X/%X`: upper case, no leading zeros), as pg_lsn prints it. */
export function lsnText(value: bigint): string {
  return `${(value >> 32n).toString(16).toUpperCase()}/${(value & 0xffffffffn).toString(16).toUpperCase()}`;
}
