/**
 * Whether a value reaches a target column unchanged (docs/loaded-tables.md "Values that would change"): PostgreSQL
 * reads `"08057"` into a bigint as 8057, rounds `1.234` into numeric(10,2), `9007199254740993` into double precision,
 * and cuts trailing blanks off a text longer than varchar(n), all without a word. The page decoders ask this module
 * for every value whose column has a rule, where they examine the value anyway, and a value that would change fails
 * the run before COPY commits anything.
 *
 * Two tests, by how the value arrived:
 * - text (a JSON string, a quoted txt field, an xml_query value not in number form): reading the stored value back
 *   as text must give the same characters;
 * - a number (a JSON number, a bare txt field, an xml_query value in number form): reading it back must give the
 *   same number (1.5 into numeric(10,2) reads back 1.50: kept; 1.234 reads back 1.23: changed).
 * A value the column's type does not read at all is left to PostgreSQL, which fails the run naming it.
 */

import { makeLocalTimeExists, type LocalTimeExists } from '../copy-binary/local-time.ts';

/**
 * Rule codes per column; 0 = none (text, dates, booleans, jsonb, …: nothing changes unseen). localTime: a timestamptz
 * column, which reads a time without offset in the load's zone, and a time that zone skips as a later one.
 */
export const FIT = { none: 0, integer: 1, numeric: 2, float8: 3, float4: 4, chars: 5, localTime: 6 } as const;

/** One of the {@link FIT} codes. */
export type FitCode = (typeof FIT)[keyof typeof FIT];

/** A column's rule: the code and its parameter (numeric: the scale, or NaN without one; chars: the length). */
export interface FitRule {
  code: FitCode;
  param: number;
}

/**
 * The rule of a target column from its type as `format_type` spells it (`bigint`, `numeric(10,2)`,
 * `character varying(80)`, `double precision`, …); {@link FIT.none} for a type whose values come back as sent or
 * are refused by PostgreSQL.
 */
export function fitRuleOf(type: string): FitRule {
  switch (type) {
    case 'bigint':
    case 'integer':
    case 'smallint':
      return { code: FIT.integer, param: 0 };
    case 'numeric':
      return { code: FIT.numeric, param: NaN };
    case 'double precision':
      return { code: FIT.float8, param: 0 };
    case 'real':
      return { code: FIT.float4, param: 0 };
    case 'timestamp with time zone':
      return { code: FIT.localTime, param: 0 };
  }
  let m = /^numeric\((\d+)(?:,(-?\d+))?\)$/.exec(type);
  if (m) return { code: FIT.numeric, param: m[2] === undefined ? 0 : Number(m[2]) };
  m = /^(?:character varying|character)\((\d+)\)$/.exec(type);
  if (m) return { code: FIT.chars, param: Number(m[1]) };
  return { code: FIT.none, param: 0 };
}

/** Why a value would change: one line for the error message. */
export type FitProblem = string;

/** Where a value that would change is, and what it is, for the loader's error (load-errors.ts). */
export interface ValueChange {
  /** 0-based column in COPY order. */
  column: number;
  page: number;
  /** 1-based row within the page. */
  row: number;
  value: string;
  problem: FitProblem;
}

/**
 * The rules of one load's columns, asked by the page decoders (rows-plan.ts): `onText[k]` / `onNumber[k]` is the
 * rule code that applies to a text / number value of column k (0: nothing to check, the common case, one array
 * read per value). {@link check} throws what the loader made of the change.
 */
export class ValueFit {
  readonly onText: Uint8Array;
  readonly onNumber: Uint8Array;
  /**
   * Per column: 1 when a text and a number are checked differently, so that the caller must tell which the value is;
   * 0 when either is checked alike (a length, a local time) or not at all.
   */
  readonly byKind: Uint8Array;
  private readonly params: Float64Array;
  private readonly types: readonly string[];
  private readonly fail: (change: ValueChange) => never;
  private readonly timezone: string;
  private localTimes: LocalTimeExists | undefined;

  /**
   * @param types per column in COPY order, the target type (undefined: a new column, nothing to check)
   * @param fail turns a change into the error that fails the run
   * @param timezone the load's zone (LoadSpec.timezone), in which a timestamptz column reads times without offset
   */
  constructor(types: readonly (string | undefined)[], fail: (change: ValueChange) => never, timezone = 'UTC') {
    this.timezone = timezone;
    const rules = types.map((t) => (t === undefined ? { code: FIT.none, param: 0 } : fitRuleOf(t)));
    this.onText = Uint8Array.from(rules, (r) => r.code);
    // A number keeps its value in an integer column or an unconstrained numeric (PostgreSQL refuses what it cannot
    // read); numeric(p,s), floats and lengths can change it.
    this.onNumber = Uint8Array.from(rules, (r) =>
      r.code === FIT.integer || (r.code === FIT.numeric && Number.isNaN(r.param)) ? FIT.none : r.code,
    );
    this.byKind = Uint8Array.from(rules, (r, k) =>
      this.onText[k] === this.onNumber[k] && (r.code === FIT.chars || r.code === FIT.localTime) ? 0 : 1,
    );
    this.params = Float64Array.from(rules, (r) => r.param);
    this.types = types.map((t) => t ?? 'text');
    this.fail = fail;
  }

  /** Whether any column has a rule (else decoders need not ask). */
  get any(): boolean {
    return this.onText.some((c) => c !== 0) || this.onNumber.some((c) => c !== 0);
  }

  /**
   * Checks the value b[s..e) (unescaped) of column `col`, given as text or as a number.
   * @throws what the loader's `fail` throws (ValueDoesNotFitError) when the column would change it
   */
  check(col: number, b: Uint8Array, s: number, e: number, text: boolean, page: number, row: number): void {
    const code = text ? this.onText[col]! : this.onNumber[col]!;
    if (code === FIT.none) return;
    if (code === FIT.localTime) {
      // Most days have no transition near: their times all exist, and only the date is read.
      const day = localDay(b, s, e);
      if (Number.isNaN(day)) return;
      const times = (this.localTimes ??= makeLocalTimeExists(this.timezone));
      if (times.plainDay(day)) return;
      const clock = clockMs(b, s, e);
      if (Number.isNaN(clock) || times.exists(day * DAY_MS + clock)) return;
      const problem =
        `it is a local time that ${this.timezone} skips (its clocks go forward over it), ` +
        'which PostgreSQL would read as a later time';
      this.fail({ column: col, page, row, value: Buffer.from(b.buffer, b.byteOffset + s, e - s).toString(), problem });
    }
    const problem = text
      ? textProblem(code, this.params[col]!, this.types[col]!, b, s, e)
      : numberProblem(code, this.params[col]!, this.types[col]!, b, s, e);
    if (problem !== undefined)
      this.fail({ column: col, page, row, value: Buffer.from(b.buffer, b.byteOffset + s, e - s).toString(), problem });
  }
}

function digitsAt(b: Uint8Array, i: number, n: number): number {
  let v = 0;
  for (let k = i; k < i + n; k++) {
    const d = b[k]! - 0x30;
    if (d < 0 || d > 9) return NaN;
    v = v * 10 + d;
  }
  return v;
}

const DAY_MS = 86_400_000;

/**
 * The local day (days since 1970-01-01, proleptic Gregorian) of a time without offset at b[s..e), or NaN for anything
 * else: ISO 8601 `yyyy-mm-dd[T ]hh:mm[:ss[.f]]` and txt's `dd.mm.yyyy hh:mm:ss[.f]`.
 */
function localDay(b: Uint8Array, s: number, e: number): number {
  const len = e - s;
  let end: number;
  let txt = false;
  if (len >= 16 && b[s + 4] === 0x2d && b[s + 7] === 0x2d && b[s + 13] === 0x3a) {
    const t = b[s + 10];
    if (t !== 0x54 && t !== 0x74 && t !== 0x20) return NaN;
    end = len >= 19 && b[s + 16] === 0x3a ? s + 19 : s + 16;
  } else if (len >= 19 && b[s + 2] === 0x2e && b[s + 5] === 0x2e && b[s + 10] === 0x20 && b[s + 13] === 0x3a) {
    end = s + 19;
    txt = true;
  } else return NaN;
  if (end < e) {
    // Only a fraction may follow: an offset or anything else is PostgreSQL's to read (checked first: the common case).
    if (b[end] !== 0x2e && b[end] !== 0x2c) return NaN;
    for (let k = end + 1; k < e; k++) if (b[k]! < 0x30 || b[k]! > 0x39) return NaN;
  }
  const y = txt ? digitsAt(b, s + 6, 4) : digitsAt(b, s, 4);
  const mo = digitsAt(b, s + (txt ? 3 : 5), 2);
  const d = digitsAt(b, s + (txt ? 0 : 8), 2);
  // Out of range (or not digits, NaN): PostgreSQL's to refuse.
  if (!(y >= 1 && mo >= 1 && mo <= 12 && d >= 1 && d <= 31)) return NaN;
  // Howard Hinnant's days_from_civil (Date.UTC costs more).
  const yy = mo <= 2 ? y - 1 : y;
  const era = Math.floor(yy / 400);
  const yoe = yy - era * 400;
  const doy = Math.floor((153 * (mo + (mo > 2 ? -3 : 9)) + 2) / 5) + d - 1;
  return era * 146_097 + yoe * 365 + Math.floor(yoe / 4) - Math.floor(yoe / 100) + doy - 719_468;
}

/** Milliseconds since midnight of the wall clock of a value {@link localDay} read (seconds whole), or NaN. */
function clockMs(b: Uint8Array, s: number, e: number): number {
  const h = digitsAt(b, s + 11, 2);
  const mi = digitsAt(b, s + 14, 2);
  const sec = e - s >= 19 && b[s + 16] === 0x3a ? digitsAt(b, s + 17, 2) : 0;
  if (!(h >= 0 && h <= 23 && mi <= 59 && sec <= 59)) return NaN;
  return ((h * 60 + mi) * 60 + sec) * 1000;
}

/** Characters of UTF-8 bytes b[s..e) (continuation bytes not counted). */
function charCount(b: Uint8Array, s: number, e: number): number {
  let n = 0;
  for (let i = s; i < e; i++) if ((b[i]! & 0xc0) !== 0x80) n++;
  return n;
}

/**
 * A text longer than the column's n characters: PostgreSQL refuses it (naming it), unless every character beyond the
 * n-th is a blank, which it cuts off without a word.
 */
function lengthProblem(n: number, type: string, b: Uint8Array, s: number, e: number): FitProblem | undefined {
  if (e - s <= n) return undefined;
  const chars = charCount(b, s, e);
  if (chars <= n) return undefined;
  for (let i = e - 1, k = chars; k > n; i--, k--) if (b[i] !== 0x20) return undefined;
  return `it has ${chars} characters, more than ${type} holds, and PostgreSQL would cut the blanks at its end`;
}

/** A decimal's digits and magnitude: value = 0.d1d2d3… × 10^exp, digits without leading or trailing zeros. */
interface Decimal {
  negative: boolean;
  digits: string;
  exp: number;
}

const NUMBER = /^([+-]?)(\d*)(?:\.(\d*))?(?:[eE]([+-]?\d+))?$/;

/** The decimal written in `t` (`-12.50`, `1.5e-7`, `+3`, `.5`), or undefined when it is no number. */
function parseDecimal(t: string): Decimal | undefined {
  const m = NUMBER.exec(t);
  if (!m || (m[2] === '' && (m[3] ?? '') === '')) return undefined;
  const int = m[2]!;
  const all = int + (m[3] ?? '');
  const lead = all.length - all.replace(/^0+/, '').length;
  const digits = all.slice(lead).replace(/0+$/, '');
  const exp = digits === '' ? 0 : int.length - lead + Number(m[4] ?? 0);
  return { negative: m[1] === '-' && digits !== '', digits, exp };
}

function sameDecimal(a: Decimal, b: Decimal): boolean {
  return a.negative === b.negative && a.digits === b.digits && a.exp === b.exp;
}

/** Canonical decimal text as numeric_out writes one: `-?(0|[1-9][0-9]*)(\.[0-9]+)?`, not a negative zero. */
const CANONICAL_DECIMAL = /^-?(?:0|[1-9]\d*)(?:\.\d+)?$/;
const CANONICAL_INTEGER = /^-?(?:0|[1-9]\d*)$/;

/** What a float column reads back for `t`: the shortest text that reads as the same double (or float4), or NaN. */
function floatReadBack(code: number, t: string): number {
  const x = Number(t);
  if (!Number.isFinite(x) || code === FIT.float8) return x;
  const f = Math.fround(x);
  for (let p = 1; p <= 9; p++) {
    const y = Number(f.toPrecision(p));
    if (Math.fround(y) === f) return y;
  }
  return f;
}

function textProblem(code: number, param: number, type: string, b: Uint8Array, s: number, e: number) {
  if (code === FIT.chars) return lengthProblem(param, type, b, s, e);
  const t = Buffer.from(b.buffer, b.byteOffset + s, e - s).toString('latin1');
  const keep = `it is text whose characters ${type} would not keep`;
  if (code === FIT.integer) return CANONICAL_INTEGER.test(t) && t !== '-0' ? undefined : keep;
  if (code === FIT.numeric) {
    if (!CANONICAL_DECIMAL.test(t) || /^-0(\.0*)?$/.test(t)) return keep;
    if (Number.isNaN(param)) return undefined;
    const point = t.indexOf('.');
    const scale = point < 0 ? 0 : t.length - point - 1;
    if (param >= 0) return scale === param ? undefined : `${keep} (it would read back with ${param} decimal places)`;
    const zeros = t.length - t.replace(/0+$/, '').length;
    return scale === 0 && (t === '0' || zeros >= -param) ? undefined : keep;
  }
  // Floats: PostgreSQL writes the shortest form, in exponent notation below 1e-4 and from 1e15 (1e6 for real).
  const back = floatReadBack(code, t);
  const limit = code === FIT.float8 ? 1e15 : 1e6;
  const a = Math.abs(back);
  const shown = Object.is(back, -0) ? '-0' : String(back);
  return (CANONICAL_DECIMAL.test(t) || t === '-0') && shown === t && (a === 0 || (a >= 1e-4 && a < limit))
    ? undefined
    : `${keep} (it would read back as ${String(back)})`;
}

function numberProblem(code: number, param: number, type: string, b: Uint8Array, s: number, e: number) {
  if (code === FIT.chars) return lengthProblem(param, type, b, s, e);
  const t = Buffer.from(b.buffer, b.byteOffset + s, e - s).toString('latin1');
  const d = parseDecimal(t.trim());
  if (d === undefined) return undefined; // PostgreSQL refuses it, naming it
  if (code === FIT.numeric) {
    // The last significant digit must lie within the scale: 10^-scale.
    return d.digits === '' || d.digits.length - d.exp <= param
      ? undefined
      : `it has more decimal places than ${type} keeps`;
  }
  const back = floatReadBack(code, t.trim());
  if (!Number.isFinite(back)) return undefined;
  const backDecimal = parseDecimal(String(back))!;
  return sameDecimal(d, backDecimal) || (d.digits === '' && back === 0)
    ? undefined
    : `${type} cannot hold it exactly (it would read back as ${String(back)})`;
}
