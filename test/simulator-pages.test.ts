/**
 * The simulator's output pages over real HTTP: each output type carries the catalogue's values exactly,
 * txt BOM/header/Content-Length, json chunked, 404 past the last page, byte-identical re-fetches, and the
 * faults (5xx rate, pages cut off midway, latency, misreported row counts).
 */
import { parse as parseCsv } from 'csv-parse/sync';
import { SaxesParser } from 'saxes';
import { request } from 'undici';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import {
  reportData,
  startSimulator,
  txtBom,
  type ReportData,
  type Simulator,
  type SimulatorOptions,
} from '../src/simulator/index.ts';
import { waitFor } from './support/wait.ts';

const API = '/api/svcreport/v1';
const sims: Simulator[] = [];

async function sim(opts: SimulatorOptions = {}): Promise<{ s: Simulator; tok: string }> {
  const s = await startSimulator({ jobDurationMs: 20, ...opts });
  sims.push(s);
  const r = await request(`${s.url}/oauth/oauth2/v1/token`, {
    method: 'POST',
    headers: { 'content-type': 'application/x-www-form-urlencoded' },
    body: 'grant_type=client_credentials&client_id=demo-client&client_secret=demo-secret',
  });
  return { s, tok: ((await r.body.json()) as { access_token: string }).access_token };
}

afterAll(async () => {
  await Promise.all(sims.map((x) => x.close()));
});

/** Starts a job and waits until it finished; returns its id and message. */
async function run(
  s: Simulator,
  tok: string,
  name: string,
  outputType: string,
  paging: number,
  parameters: Record<string, string> = {},
) {
  const headers = { authorization: `Bearer ${tok}`, 'content-type': 'application/json', accept: 'application/json' };
  const r = await request(`${s.url}${API}/report/7777/${name}`, {
    method: 'POST',
    headers,
    body: JSON.stringify({ outputType, paging, parameters }),
  });
  const job = (await r.body.json()) as { id: string };
  const done = await waitFor(`job ${job.id} to finish`, async () => {
    const st = await request(`${s.url}${API}/jobs/${job.id}`, { headers });
    const b = (await st.body.json()) as { state: string; message: string };
    return b.state !== 'Running' && b;
  });
  return { id: job.id, message: done.message };
}

async function page(s: Simulator, tok: string, id: string, n: number) {
  const r = await request(`${s.url}${API}/jobs/${id}/output/${n}`, { headers: { authorization: `Bearer ${tok}` } });
  const bytes = Buffer.from(await r.body.arrayBuffer());
  return { status: r.statusCode, headers: r.headers, bytes };
}

/** Reads a page until the connection breaks; returns what arrived and whether it broke. */
async function pageUntilBroken(
  s: Simulator,
  tok: string,
  id: string,
  n: number,
): Promise<{ bytes: Buffer; broken: boolean }> {
  const parts: Buffer[] = [];
  try {
    const r = await request(`${s.url}${API}/jobs/${id}/output/${n}`, { headers: { authorization: `Bearer ${tok}` } });
    for await (const chunk of r.body) parts.push(chunk as Buffer);
    return { bytes: Buffer.concat(parts), broken: false };
  } catch {
    return { bytes: Buffer.concat(parts), broken: true };
  }
}

/** The canonical values of rows [from, to), timestamps as epoch ms strings; `emptyIsNull` for xml_query. */
function expected(data: ReportData, from: number, to: number, emptyIsNull = false): (string | null)[][] {
  const out: (string | null)[][] = [];
  for (let i = from; i < to; i++) {
    out.push(
      data.row(i).map((v, c) => {
        if (v === null) return null;
        if (data.columns[c]!.kind === 'timestamp') return String(Date.parse(v));
        return emptyIsNull && v === '' ? null : v;
      }),
    );
  }
  return out;
}

/** JSON page -> rows of raw value strings: numbers by their source digits (JSON.parse with source). */
function jsonRows(text: string, data: ReportData): (string | null)[][] {
  const parsed = JSON.parse(text, (_k, v: unknown, ctx?: { source?: string }) =>
    typeof v === 'number' ? ctx!.source : v,
  ) as {
    data: Record<string, string | null>[];
  };
  return parsed.data.map((row) => {
    expect(Object.keys(row)).toEqual(data.columns.map((c) => c.name));
    return data.columns.map((c) => {
      const v = row[c.name]!;
      return v !== null && c.kind === 'timestamp' ? String(Date.parse(v)) : v;
    });
  });
}

function xmlRows(text: string): (string | null)[][] {
  const rows: (string | null)[][] = [];
  let row: (string | null)[] = [];
  let value = '';
  const p = new SaxesParser();
  p.on('opentag', (t) => {
    if (t.name === 'row') row = [];
    if (t.name === 'field') value = '';
  });
  p.on('text', (t) => {
    value += t;
  });
  p.on('closetag', (t) => {
    if (t.name === 'field') row.push(value === '' ? null : value);
    if (t.name === 'row') rows.push(row);
  });
  p.write(text).close();
  return rows;
}

describe('pages of each output type', () => {
  let s: Simulator;
  let tok: string;
  const params = { ROWS: '230' };
  const data = reportData('Sales/Orders.avw', params, 1)!;
  beforeAll(async () => {
    ({ s, tok } = await sim());
  });

  it('json: pretty, chunked, exact digits, ISO timestamps with offset, null', async () => {
    const { id, message } = await run(s, tok, 'Sales%2FOrders', 'json', 100, params);
    expect(message).toBe('rows=230;pages=3');
    const got: (string | null)[][] = [];
    for (let n = 1; n <= 3; n++) {
      const p = await page(s, tok, id, n);
      expect(p.status).toBe(200);
      expect(p.headers['content-type']).toBe('application/json');
      expect(p.headers['transfer-encoding']).toBe('chunked');
      expect(p.headers['content-length']).toBeUndefined();
      const text = p.bytes.toString('utf8');
      expect(text.startsWith('{\n  "data" : [ {\n')).toBe(true);
      expect(text).toMatch(/"Erfasst Am" : "\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}\+0[12]:00"/);
      got.push(...jsonRows(text, data));
    }
    expect(got).toEqual(expected(data, 0, 230));
    const past = await page(s, tok, id, 4);
    expect(past.status).toBe(404);
    expect(past.headers['content-length']).toBe('0');
    expect(past.bytes.length).toBe(0);
    expect((await page(s, tok, id, 0)).status).toBe(404);
  });

  it('json_compact: no whitespace outside strings, big integers verbatim', async () => {
    const { id } = await run(s, tok, 'Sales%2FOrders', 'json_compact', 1000, params);
    const p = await page(s, tok, id, 1);
    const text = p.bytes.toString('utf8');
    expect(text.startsWith('{"data":[{"Auftrag Nr":100000,')).toBe(true);
    expect(text.replace(/"(?:[^"\\]|\\.)*"/g, '')).not.toMatch(/\s/);
    expect(text).toContain('"Beleg ID":9007199254740993}');
    expect(text).toContain(`"Beleg ID":${(9_007_199_254_740_993n + 229n).toString()}}`);
    expect(jsonRows(text, data)).toEqual(expected(data, 0, 230));
    expect(data.row(0).includes('9007199254740993')).toBe(true);
  });

  it('xml_query: rows of fields with escaped text, null and empty as empty text', async () => {
    const { id } = await run(s, tok, 'Sales%2FOrders', 'xml_query', 150, params);
    const p1 = await page(s, tok, id, 1);
    expect(p1.headers['content-type']).toBe('text/xml');
    expect(p1.headers['transfer-encoding']).toBe('chunked');
    const t1 = p1.bytes.toString('utf8');
    expect(
      t1.startsWith('<?xml version="1.0" encoding="UTF-8"?><result><row><field name="Auftrag Nr">100000</field>'),
    ).toBe(true);
    const rows = [...xmlRows(t1), ...xmlRows((await page(s, tok, id, 2)).bytes.toString('utf8'))];
    const tsCol = data.columns.findIndex((c) => c.kind === 'timestamp');
    for (const r of rows) r[tsCol] = String(Date.parse(r[tsCol]!));
    expect(rows).toEqual(expected(data, 0, 230, true));
    expect(t1).toContain('<field name="Kunde">Preis &amp; Co. &lt;Schweiz&gt; €</field>');
  });

  it('txt: BOM per page, header on every page, Content-Length, CSV quoting, local timestamps, NULL vs ""', async () => {
    const { id, message } = await run(s, tok, 'Sales%2FOrders', 'txt', 40, params);
    expect(message).toBe('rows=230;pages=6');
    const header = data.columns.map((c) => `"${c.name}"`).join(',');
    const zurich = new Intl.DateTimeFormat('de-CH', {
      timeZone: 'Europe/Zurich',
      year: 'numeric',
      month: '2-digit',
      day: '2-digit',
      hour: '2-digit',
      minute: '2-digit',
      second: '2-digit',
      hourCycle: 'h23',
    });
    const boms = new Set<string>();
    const got: (string | null)[][] = [];
    for (let n = 1; n <= 6; n++) {
      const p = await page(s, tok, id, n);
      expect(p.headers['content-type']).toBe('text/plain');
      expect(Number(p.headers['content-length'])).toBe(p.bytes.length);
      const bom = txtBom(n);
      expect(p.bytes.subarray(0, bom.length)).toEqual(bom);
      boms.add(bom.toString('hex'));
      const text = p.bytes.subarray(bom.length).toString('utf8');
      expect(text.startsWith(`${header}\r\n`)).toBe(true);
      expect(text.endsWith('\r\n')).toBe(true);
      const records = parseCsv(text, {
        from_line: 2,
        cast: (value: string, c: { quoting: boolean }) => (c.quoting ? value : value === '' ? null : value),
      }) as (string | null)[][];
      got.push(...records);
    }
    expect(boms).toEqual(new Set(['efbbbf', 'feff', 'fffe', '0000feff', 'fffe0000']));
    const want = expected(data, 0, 230);
    const tsCol = data.columns.findIndex((c) => c.kind === 'timestamp');
    for (let i = 0; i < 230; i++) {
      const ms = Number(want[i]![tsCol]);
      const local = `${zurich.format(new Date(ms)).replace(',', '')}.${String(ms % 1000).padStart(3, '0')}`;
      expect(got[i]![tsCol]).toBe(local);
      got[i]![tsCol] = want[i]![tsCol]!;
    }
    expect(got).toEqual(want);
    const raw = (await page(s, tok, id, 1)).bytes.toString('utf8');
    expect(raw).toMatch(/,"",/); // an empty string
    expect(raw).toMatch(/,,/); // a NULL
    expect(raw).toContain('"Café ""Zur Sonne"", Zürich"');
  });

  it('serves identical bytes for the same page, job after job', async () => {
    const a = await run(s, tok, 'Sales%2FOrders', 'txt', 50, params);
    const b = await run(s, tok, 'Sales%2FOrders', 'txt', 50, params);
    const p = (await page(s, tok, a.id, 2)).bytes;
    expect((await page(s, tok, a.id, 2)).bytes.equals(p)).toBe(true);
    expect((await page(s, tok, b.id, 2)).bytes.equals(p)).toBe(true);
    const other = await sim({ seed: 2 });
    const c = await run(other.s, other.tok, 'Sales%2FOrders', 'txt', 50, params);
    expect((await page(other.s, other.tok, c.id, 2)).bytes.equals(p)).toBe(false);
  });

  it('streams a big page and survives a client that hangs up midway', async () => {
    const { id, message } = await run(s, tok, 'Big', 'json', 50_000);
    expect(message).toBe('rows=1000000;pages=20');
    const r = await request(`${s.url}${API}/jobs/${id}/output/1`, { headers: { authorization: `Bearer ${tok}` } });
    let got = 0;
    for await (const chunk of r.body) {
      got += (chunk as Buffer).length;
      if (got > 1_000_000) break;
    }
    expect(got).toBeGreaterThan(1_000_000);
    const last = await page(s, tok, id, 20);
    expect(last.status).toBe(200);
    const rows = (JSON.parse(last.bytes.toString('utf8')) as { data: Record<string, unknown>[] }).data;
    expect(rows.length).toBe(50_000);
    expect(rows[49_999]!['Auftrag Nr']).toBe(100_000 + 999_999);
    expect(last.bytes.toString('utf8')).toContain(`"Beleg ID" : ${(9_007_199_254_740_993n + 999_999n).toString()}\n`);
    expect((await page(s, tok, id, 21)).status).toBe(404);
  });
});

describe('faults', () => {
  it('cuts pages midway: what arrives is a strict prefix of the clean page (txt and json)', async () => {
    const { s, tok } = await sim({ faultSeed: 7 });
    for (const outputType of ['txt', 'json']) {
      const { id } = await run(s, tok, 'Sales%2FOrders', outputType, 2000, { ROWS: '2000' });
      const clean = await page(s, tok, id, 1);
      s.setFaults({ resetRate: 1 });
      for (let k = 0; k < 3; k++) {
        const cut = await pageUntilBroken(s, tok, id, 1);
        expect(cut.broken).toBe(true);
        expect(cut.bytes.length).toBeLessThan(clean.bytes.length);
        expect(clean.bytes.subarray(0, cut.bytes.length).equals(cut.bytes)).toBe(true);
      }
      s.setFaults({});
      expect((await page(s, tok, id, 1)).bytes.equals(clean.bytes)).toBe(true);
    }
    expect(s.counters().faultsInjected.resets).toBe(6);
  });

  it('answers report_api requests 502/503/504 at the error rate, reproducibly by fault seed', async () => {
    const statuses = async (seed: number) => {
      const { s, tok } = await sim({ faultSeed: seed });
      await request(`${s.url}/_sim/faults`, { method: 'POST', body: JSON.stringify({ errorRate: 0.3 }) });
      const out: number[] = [];
      for (let i = 0; i < 200; i++) {
        const r = await request(`${s.url}${API}/jobs/x`, { headers: { authorization: `Bearer ${tok}` } });
        const body = await r.body.text();
        if (r.statusCode >= 500) expect(body).toMatch(/^50[234] /);
        out.push(r.statusCode);
      }
      const errors = out.filter((c) => c >= 500);
      expect(s.counters().faultsInjected.errors).toBe(errors.length);
      expect(new Set(errors)).toEqual(new Set([502, 503, 504]));
      expect(out.filter((c) => c === 404).length).toBe(200 - errors.length);
      // discovery and token are not report_api: never failed
      expect((await request(`${s.url}/.well-known/openid-configuration`)).statusCode).toBe(200);
      return out;
    };
    const a = await statuses(11);
    const errors = a.filter((c) => c >= 500).length;
    expect(errors).toBeGreaterThan(30);
    expect(errors).toBeLessThan(90);
    expect(await statuses(11)).toEqual(a);
    expect(await statuses(12)).not.toEqual(a);
  });

  it('adds latency to every response', async () => {
    const { s } = await sim({ faults: { latencyMs: 150 } });
    const t0 = performance.now();
    await (await request(`${s.url}/.well-known/openid-configuration`)).body.dump();
    expect(performance.now() - t0).toBeGreaterThanOrEqual(145);
  });

  it('misreports the row count in the FinishedSuccess message when asked', async () => {
    const { s, tok } = await sim({ faults: { misreportRows: 1 } });
    expect((await run(s, tok, 'Stock%2FLevels', 'json', 20)).message).toBe('rows=41;pages=3');
    s.setFaults({});
    expect((await run(s, tok, 'Stock%2FLevels', 'json', 20)).message).toBe('rows=40;pages=2');
  });
});
