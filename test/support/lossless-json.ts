/**
 * JSON.parse that keeps every number as the text it was written as, so a test can check that
 * `53.3` really was written `53.3` and not `53.300000000000004`, and compare amounts beyond what
 * a double carries. Strict enough for bodies the API writes; not a general-purpose parser.
 */
export class JsonNumber {
  readonly text: string;
  constructor(text: string) {
    this.text = text;
  }
}

export type LosslessValue = null | boolean | string | JsonNumber | LosslessValue[] | { [key: string]: LosslessValue };

export function parseLossless(text: string): LosslessValue {
  let at = 0;
  const fail = (what: string): never => {
    throw new SyntaxError(`${what} at ${at} in ${text.slice(Math.max(0, at - 20), at + 20)}`);
  };
  const space = () => {
    while (/\s/.test(text[at] ?? '')) at++;
  };
  const value = (): LosslessValue => {
    space();
    const c = text[at];
    if (c === '{') {
      at++;
      const object: Record<string, LosslessValue> = {};
      space();
      if (text[at] === '}') return (at++, object);
      for (;;) {
        space();
        const key = string();
        space();
        if (text[at++] !== ':') fail('expected :');
        object[key] = value();
        space();
        if (text[at] === ',') at++;
        else if (text[at] === '}') return (at++, object);
        else fail('expected , or }');
      }
    }
    if (c === '[') {
      at++;
      const list: LosslessValue[] = [];
      space();
      if (text[at] === ']') return (at++, list);
      for (;;) {
        list.push(value());
        space();
        if (text[at] === ',') at++;
        else if (text[at] === ']') return (at++, list);
        else fail('expected , or ]');
      }
    }
    if (c === '"') return string();
    const literal = /^(true|false|null)/.exec(text.slice(at, at + 5));
    if (literal) {
      at += literal[1]!.length;
      return literal[1] === 'null' ? null : literal[1] === 'true';
    }
    const number = /^-?(0|[1-9][0-9]*)(\.[0-9]+)?([eE][+-]?[0-9]+)?/.exec(text.slice(at));
    if (!number) return fail('unexpected character');
    at += number[0].length;
    return new JsonNumber(number[0]);
  };
  const string = (): string => {
    if (text[at] !== '"') fail('expected a string');
    const start = at;
    at++;
    while (text[at] !== '"') {
      if (at >= text.length) fail('unterminated string');
      at += text[at] === '\\' ? 2 : 1;
    }
    at++;
    return JSON.parse(text.slice(start, at)) as string;
  };
  const result = value();
  space();
  if (at !== text.length) fail('trailing text');
  return result;
}

/**
 * A decimal number's text as an exact count of 1/10,000ths. Rejects what the API must never
 * write for money: exponents, or more than 4 decimals.
 */
export function textToUnits(text: string): bigint {
  const match = /^(-?)([0-9]+)(?:\.([0-9]{1,4}))?$/.exec(text);
  if (!match) throw new Error(`${text} is not a plain decimal with at most 4 decimals`);
  const units = BigInt(match[2]!) * 10_000n + BigInt((match[3] ?? '').padEnd(4, '0'));
  return match[1] ? -units : units;
}
