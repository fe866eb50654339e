/**
 * SimulatorOptions.pageCache and Simulator.prerender (src/simulator/page-cache.ts): pages served from memory
 * are byte-identical to the streamed ones, with the same headers; prerender renders every page once; a report
 * with other parameters is a different entry; reset faults still cut pages off.
 */
import { request as undiciRequest } from 'undici';
import { afterAll, describe, expect, it } from 'vitest';
import { startSimulator, type Simulator, type SimulatorOptions } from '../src/simulator/index.ts';

const API = '/api/svcreport/v1';

/**
 * One request on a connection of its own: the simulators run in this process, and prerender holds the event loop
 * for seconds on a busy machine, after which a kept-alive connection may be reused just as its server closes it.
 */
const request: typeof undiciRequest = ((url: string, opts: object = {}) =>
  undiciRequest(url, { ...opts, reset: true })) as typeof undiciRequest;
const sims: Simulator[] = [];

afterAll(async () => {
  await Promise.all(sims.map((x) => x.close()));
});

async function start(opts: SimulatorOptions): Promise<{ s: Simulator; headers: Record<string, string> }> {
  const s = await startSimulator({ jobDurationMs: 0, ...opts });
  sims.push(s);
  const r = await request(`${s.url}/oauth/oauth2/v1/token`, {
    method: 'POST',
    headers: { 'content-type': 'application/x-www-form-urlencoded' },
    body: 'grant_type=client_credentials&client_id=demo-client&client_secret=demo-secret',
  });
  const tok = ((await r.body.json()) as { access_token: string }).access_token;
  return {
    s,
    headers: { authorization: `Bearer ${tok}`, 'content-type': 'application/json', accept: 'application/json' },
  };
}

/** Runs a report and fetches every page: bodies and the interesting headers. */
async function fetchAll(
  s: Simulator,
  headers: Record<string, string>,
  outputType: string,
  paging: number,
  rows: number,
) {
  const r = await request(`${s.url}${API}/report/7777/Big`, {
    method: 'POST',
    headers,
    body: JSON.stringify({ outputType, paging, parameters: { ROWS: String(rows) } }),
  });
  const { id } = (await r.body.json()) as { id: string };
  const pages: { body: Buffer; length?: string; type?: string; chunked: boolean }[] = [];
  for (let p = 1; ; p++) {
    const res = await request(`${s.url}${API}/jobs/${id}/output/${p}`, { headers });
    const body = Buffer.from(await res.body.arrayBuffer());
    if (res.statusCode === 404) break;
    expect(res.statusCode).toBe(200);
    pages.push({
      body,
      length: res.headers['content-length'] as string | undefined,
      type: res.headers['content-type'] as string,
      chunked: res.headers['transfer-encoding'] === 'chunked',
    });
  }
  await request(`${s.url}${API}/jobs/${id}`, { method: 'DELETE', headers });
  return pages;
}

describe('simulator page cache', () => {
  it('serves byte-identical pages with the same headers, rendered once by prerender', async () => {
    const plain = await start({});
    const cached = await start({ pageCache: true });
    for (const type of ['txt', 'json', 'json_compact', 'xml_query'] as const) {
      const pre = cached.s.prerender('Big.avw', { ROWS: '2500' }, type, 1000);
      expect(pre.pages).toBe(3);
      expect(pre.rows).toBe(2500);
      const want = await fetchAll(plain.s, plain.headers, type, 1000, 2500);
      const got = await fetchAll(cached.s, cached.headers, type, 1000, 2500);
      expect(got).toEqual(want);
      expect(pre.bytes).toBe(want.reduce((a, p) => a + p.body.length, 0));
      expect(got[0]!.chunked).toBe(type !== 'txt');
    }
    expect(cached.s.counters().pagesServed).toBe(12);
    // Other parameters are other rows: not served from the ROWS=2500 entry.
    const fewer = await fetchAll(cached.s, cached.headers, 'txt', 1000, 1500);
    expect(fewer.length).toBe(2);
    expect(fewer).toEqual(await fetchAll(plain.s, plain.headers, 'txt', 1000, 1500));
    cached.s.clearPageCache();
    expect(() => cached.s.prerender('Nope.avw', {}, 'txt', 10)).toThrow(/no such report/);
    expect(() => plain.s.prerender('Big.avw', { ROWS: '10' }, 'txt', 10)).toThrow(/pageCache/);
  });

  it('still cuts pages off under the reset fault', async () => {
    const { s, headers } = await start({ pageCache: true, faults: { resetRate: 1 } });
    s.prerender('Big.avw', { ROWS: '500' }, 'json', 500);
    const r = await request(`${s.url}${API}/report/7777/Big`, {
      method: 'POST',
      headers,
      body: JSON.stringify({ outputType: 'json', paging: 500, parameters: { ROWS: '500' } }),
    });
    const { id } = (await r.body.json()) as { id: string };
    const res = await request(`${s.url}${API}/jobs/${id}/output/1`, { headers });
    await expect(res.body.arrayBuffer()).rejects.toThrow();
    expect(s.counters().faultsInjected.resets).toBe(1);
  });
});
