/**
 * What a failure's text may hold (docs/architecture.md "Errors"): bounded, well-formed, free of secrets, and summed up
 * by its first meaningful line: one that ends in ':' ("Report execution failed:") gets the next non-blank line joined
 * to it. history/attempt-list.ts summaryLineSql says the same in SQL.
 */

/** The most characters of a server's text kept (a message, a problem member, a detail). */
export const MAX_TEXT_CHARS = 3_000;
/** The most characters of an error's message: ours around a server's text of at most {@link MAX_TEXT_CHARS}. */
export const MAX_MESSAGE_CHARS = 4_000;

/** The first meaningful line of `text` (see the file comment), trimmed; '' for a blank text. */
export function summaryLine(text: string): string {
  const lines = text
    .split('\n')
    .map((l) => l.trim())
    .filter((l) => l !== '');
  const first = lines[0] ?? '';
  return first.endsWith(':') && lines[1] !== undefined ? `${first} ${lines[1]}` : first;
}

/** `n` bytes for people: `812 bytes`, `64.0 kB`, `19.9 MB`. */
export function formatBytes(n: number): string {
  if (n < 1000) return `${n} byte${n === 1 ? '' : 's'}`;
  const [value, unit] = n < 1e6 ? [n / 1e3, 'kB'] : n < 1e9 ? [n / 1e6, 'MB'] : [n / 1e9, 'GB'];
  return `${value.toFixed(1)} ${unit}`;
}

// C0 controls but tab, LF and CR, DEL, and lone surrogates: PostgreSQL refuses NUL and lone surrogates in text and
// jsonb (a failure that cannot be recorded), and none of them belongs in a text.
const UNFIT = new RegExp(
  '[\\u0000-\\u0008\\u000b\\u000c\\u000e-\\u001f\\u007f]' +
    '|[\\ud800-\\udbff](?![\\udc00-\\udfff])|(?<![\\ud800-\\udbff])[\\udc00-\\udfff]',
  'g',
);

/**
 * `text` at most `max` characters long, the cut marked `… [cut: 19.9 MB more]` (UTF-8 bytes, with `unreadBytes` the
 * body left unread; Infinity: of unknown size). Controls and lone surrogates become U+FFFD. Idempotent.
 */
export function boundText(text: string, max = MAX_TEXT_CHARS, unreadBytes = 0): string {
  if (text.length <= max && unreadBytes === 0) return text.replace(UNFIT, '\ufffd');
  // 30 characters of room for the note; never half of a surrogate pair.
  let keep = Math.max(0, max - 30);
  if (/[\ud800-\udbff]/.test(text.charAt(keep - 1))) keep--;
  const rest = Buffer.byteLength(text.slice(keep)) + unreadBytes;
  const note = Number.isFinite(rest) ? `${formatBytes(rest)} more` : 'the rest unread';
  return `${text.slice(0, keep).replace(UNFIT, '\ufffd')}… [cut: ${note}]`;
}

/**
 * A JSON value (a problem body, an error's details) with every key and string through {@link boundText}; when its JSON
 * is still longer than `max` characters, `{ cut: <its JSON, bounded> }` instead.
 */
export function boundJson<T>(value: T, max = 2 * MAX_TEXT_CHARS): T | { cut: string } {
  const walk = (v: unknown, depth: number): unknown => {
    if (typeof v === 'string') return boundText(v);
    if (v === null || typeof v !== 'object') return v;
    if (depth > 8) return '[cut: nested too deep]';
    if (typeof (v as { toJSON?: unknown }).toJSON === 'function') return walk((v as Date).toJSON(), depth);
    if (Array.isArray(v)) return v.map((x) => walk(x, depth + 1));
    return Object.fromEntries(Object.entries(v).map(([k, x]) => [boundText(k, 200), walk(x, depth + 1)]));
  };
  const bounded = walk(value, 0) as T;
  const json = JSON.stringify(bounded) ?? '';
  return json.length <= max ? bounded : { cut: boundText(json, max) };
}

/** A regular expression source matching `form` literally or URL-encoded (`%2f` or `%2F`, `+` or `%20` for a space). */
function echoPattern(form: string): string {
  let out = '';
  for (const ch of form) {
    if (/[A-Za-z0-9]/.test(ch)) {
      out += ch;
      continue;
    }
    const hex = [...Buffer.from(ch, 'utf8')]
      .map((b) => `%${b.toString(16).padStart(2, '0').toUpperCase()}`)
      .join('')
      .replace(/[A-F]/g, (h) => `[${h}${h.toLowerCase()}]`);
    const ways = [ch.replace(/[\\^$.*+?()[\]{}|/-]/g, '\\$&'), hex];
    if (ch === ' ' || ch === '+') ways.push(ch === ' ' ? '\\+' : ' ');
    out += `(?:${ways.join('|')})`;
  }
  return out;
}

/** The forms of `secret` a server may echo: as is, JSON-escaped, and base64 (standard and URL-safe) alone or inside. */
function secretForms(secret: string): string[] {
  const forms = [secret, JSON.stringify(secret).slice(1, -1)];
  const bytes = Buffer.from(secret, 'utf8');
  for (const alphabet of ['base64', 'base64url'] as const) {
    forms.push(bytes.toString(alphabet).replace(/=+$/, ''));
    // Inside a longer base64 text (`id:secret` of a Basic header) the secret starts at one of three bit offsets; the
    // characters wholly made of its bits are the same whatever surrounds it.
    for (let k = 0; k < 3; k++) {
      const text = Buffer.concat([Buffer.alloc(k), bytes]).toString(alphabet);
      const core = text.slice(Math.ceil((8 * k) / 6), Math.floor((8 * (k + bytes.length)) / 6));
      if (core.length >= 4) forms.push(core);
    }
  }
  return forms;
}

/**
 * The one redaction of secrets (docs/architecture.md "Errors"): replaces with `[redacted]` every form of each of
 * `secrets` a server may echo: as is, URL-encoded, JSON-escaped, base64 alone or within a longer text (pass
 * `id:secret` too for a Basic header).
 */
export function redactor(secrets: readonly (string | undefined)[]): (text: string) => string {
  const forms = [...new Set(secrets.filter((s): s is string => Boolean(s)).flatMap(secretForms))];
  if (forms.length === 0) return (text) => text;
  const re = new RegExp(
    forms
      .sort((a, b) => b.length - a.length)
      .map(echoPattern)
      .join('|'),
    'g',
  );
  return (text) => text.replace(re, '[redacted]');
}

/** `value` (a parsed JSON answer) with every string through `redact`. */
export function redactJson(value: unknown, redact: (text: string) => string): unknown {
  if (typeof value === 'string') return redact(value);
  if (value === null || typeof value !== 'object') return value;
  if (Array.isArray(value)) return value.map((v) => redactJson(v, redact));
  return Object.fromEntries(Object.entries(value).map(([k, v]) => [redact(k), redactJson(v, redact)]));
}
