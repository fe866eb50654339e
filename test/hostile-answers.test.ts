/**
 * What a failure's text may hold (src/failure-text.ts): bounded with a note of how much was cut, storable in
 * PostgreSQL, and free of a secret in every form a server may echo.
 */
import { describe, expect, it } from 'vitest';
import { boundJson, boundText, MAX_TEXT_CHARS, redactor } from '../src/failure-text.ts';

describe('the one redaction', () => {
  const id = 'echo-client';
  const secret = 'Ech0 s3cr3t+/=%&"ö-x';
  const redact = redactor([secret, `${id}:${secret}`, undefined, '']);
  const b64 = (s: string, enc: 'base64' | 'base64url' = 'base64') => Buffer.from(s, 'utf8').toString(enc);
  const form = new URLSearchParams({ client_id: id, client_secret: secret }).toString();
  const lowerHex = (s: string) => s.replace(/%[0-9A-F]{2}/g, (h) => h.toLowerCase());

  it.each([
    ['literal', `invalid secret ${secret}!`],
    ['Basic header', `got Authorization: Basic ${b64(`${id}:${secret}`)}`],
    ['base64url of id:secret', `got ${b64(`${id}:${secret}`, 'base64url')}`],
    ['base64 of the secret alone', `got ${b64(secret)}`],
    ['base64 within a longer text', `got ${b64(`Basic ${id}:${secret} and more`)}`],
    ['form body (+ for space, upper-case hex)', `got body ${form}`],
    ['form body, lower-case hex', `got body ${lowerHex(form)}`],
    ['encodeURIComponent', `got ${encodeURIComponent(secret)}`],
    ['JSON-escaped', `got ${JSON.stringify({ secret })}`],
  ])('removes the secret echoed %s', (_, text) => {
    const out = redact(text);
    expect(out).toContain('[redacted]');
    for (const needle of [secret, 'Ech0', 's3cr3t', b64(secret).slice(4, 20), '%C3%B6', '%c3%b6'])
      expect(out).not.toContain(needle);
    expect(out.startsWith(text.slice(0, 3))).toBe(true);
  });

  it('leaves other texts alone, and no secret at all changes nothing', () => {
    expect(redact('Report execution failed: Division by zero')).toBe('Report execution failed: Division by zero');
    expect(redactor([])('a secret-free text')).toBe('a secret-free text');
  });
});

describe('bounded texts', () => {
  it('cut a text to its limit with a note of how much was cut, once', () => {
    const cut = boundText('x'.repeat(20_000_000));
    expect(cut.length).toBeLessThanOrEqual(MAX_TEXT_CHARS);
    expect(cut).toMatch(/^x+… \[cut: 20\.0 MB more\]$/);
    expect(boundText(cut)).toBe(cut);
    expect(boundText('short', 100, 1_500)).toBe('short… [cut: 1.5 kB more]');
    expect(boundText('short', 100, Infinity)).toBe('short… [cut: the rest unread]');
    expect(boundText('a\u0000b\ud800c\udc00\u{1f600}')).toBe('a\ufffdb\ufffdc\ufffd\u{1f600}');
  });

  it('bound a JSON value: every string, and the whole', () => {
    expect(boundJson({ title: 'x'.repeat(10_000), n: 1, 'k\u0000': ['a'] })).toEqual({
      title: expect.stringMatching(/^x+… \[cut: 7\.0 kB more\]$/),
      n: 1,
      'k\ufffd': ['a'],
    });
    const wide = boundJson(Object.fromEntries(Array.from({ length: 1000 }, (_, i) => [`m${i}`, 'v'.repeat(50)])));
    expect(wide).toEqual({ cut: expect.stringMatching(/^\{"m0":"v+","m1".*… \[cut: 5\d\.\d kB more\]$/) });
    expect((wide as { cut: string }).cut.length).toBeLessThanOrEqual(2 * MAX_TEXT_CHARS);
  });
});
