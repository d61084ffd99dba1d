/**
 * JSON in and out without losing an id. A memory id is a 63-bit integer; JavaScript's numbers hold integers
 * exactly only up to 2^53 - 1, and JSON.parse would round a larger one to a neighbour's id. So an answer is
 * parsed with every integer beyond that range kept as its decimal string (an `Id` is `number | string`), and a
 * string of digits sent back where the service expects an integer is read as that integer by the service.
 */

/** A memory or history event id: a number while it is a safe integer, else its exact decimal string. */
export type Id = number | string;

/** Field names that carry one id in the service's answers (id, memory_id, event_id, superseded_by, ...). */
type IdKey = "id" | `${string}_id` | `${string}_by`;

type Widen<T> = T extends number ? Id : Wire<T>;

/** A generated schema type as this client returns it. Every field is present (the service answers each
 * field of a reply, null where it has no value), and a number in an id field, and every number in a list of
 * numbers (ids, memory_ids, added, deleted, ...: the service's lists of numbers are lists of ids), is an `Id`;
 * other numbers (scores, counts, times) stay numbers. */
export type Wire<T> = unknown extends T
  ? T
  : T extends string | number | boolean | null | undefined
    ? T
    : T extends readonly (infer U)[]
      ? [U] extends [number]
        ? Id[]
        : Wire<U>[]
      : { [K in keyof T]-?: K extends IdKey ? Widen<Exclude<T[K], undefined>> : Wire<Exclude<T[K], undefined>> };

/** A request field's type as this client takes it: a list of numbers (ids) also takes `Id`s. */
export type Loose<T> = T extends readonly number[] ? Id[] : T;

const DIGIT_RUN = /\d{16}/; // 2^53 has 16 digits: a text without such a run has no unsafe integer

function isNumberChar(code: number): boolean {
  // 0-9 . e E + -
  return (code >= 48 && code <= 57) || code === 46 || code === 101 || code === 69 || code === 43 || code === 45;
}

/** The JSON text with every integer literal outside Number's safe range turned into a string literal. */
export function quoteUnsafeIntegers(text: string): string {
  if (!DIGIT_RUN.test(text)) return text;
  let out = "";
  let last = 0;
  let i = 0;
  const n = text.length;
  while (i < n) {
    const c = text.charCodeAt(i);
    if (c === 34) {
      // a string: skip to its closing quote (a backslash escapes the next character)
      i++;
      while (i < n) {
        const d = text.charCodeAt(i);
        if (d === 92) i += 2;
        else if (d === 34) {
          i++;
          break;
        } else i++;
      }
    } else if (c === 45 || (c >= 48 && c <= 57)) {
      let j = i + 1;
      while (j < n && isNumberChar(text.charCodeAt(j))) j++;
      const token = text.slice(i, j);
      if (/^-?\d+$/.test(token) && !Number.isSafeInteger(Number(token))) {
        out += text.slice(last, i) + '"' + token + '"';
        last = j;
      }
      i = j;
    } else i++;
  }
  return out + text.slice(last);
}

/** JSON.parse, keeping integers beyond 2^53 exact (as strings). */
export function parseJson(text: string): unknown {
  return JSON.parse(quoteUnsafeIntegers(text));
}

/** JSON.stringify for a request body: a Date becomes the epoch seconds the Python Client would send, a
 * bigint its decimal string; undefined members are left out (the service's default applies). */
export function stringifyJson(body: unknown): string {
  return JSON.stringify(body, function (this: Record<string, unknown>, key: string, value: unknown) {
    const original = this[key];
    if (original instanceof Date) return original.getTime() / 1000;
    if (typeof value === "bigint") return value.toString();
    return value;
  });
}

/** A query-string value: text as is, a Date as whole epoch seconds (the service's query times are integers),
 * an object or array as JSON. */
export function queryValue(value: unknown): string {
  if (value instanceof Date) return String(Math.floor(value.getTime() / 1000));
  if (typeof value === "object" && value !== null) return stringifyJson(value);
  return String(value);
}
