/**
 * Pages of the in-process simulator for the benches that measure one part alone (kept-pages-store.ts,
 * kept-pages-codec.ts, simulator-render.ts): a client-credentials token, then the first output page of a report
 * job, over real HTTP as the product reads them.
 */
import { request } from 'undici';

/** The headers of the simulator's report API with a fresh access token of its demo client. */
export async function simulatorHeaders(url: string): Promise<Record<string, string>> {
  const tokenRes = await request(`${url}/oauth/oauth2/v1/token`, {
    method: 'POST',
    headers: { 'content-type': 'application/x-www-form-urlencoded' },
    body: 'grant_type=client_credentials&client_id=demo-client&client_secret=demo-secret',
  });
  const { access_token: token } = (await tokenRes.body.json()) as { access_token: string };
  return { authorization: `Bearer ${token}`, 'content-type': 'application/json' };
}

/**
 * Runs Big.avw with `rows` rows in one page of `outputType` and gives that page's bytes; deletes the report job.
 * @param headers from {@link simulatorHeaders}
 */
export async function firstBigPage(
  url: string,
  headers: Record<string, string>,
  outputType: string,
  rows: number,
): Promise<Buffer> {
  const start = await request(`${url}/api/svcreport/v1/report/7777/Big`, {
    method: 'POST',
    headers,
    body: JSON.stringify({ outputType, paging: rows, parameters: { ROWS: String(rows) } }),
  });
  const { id } = (await start.body.json()) as { id: string };
  for (;;) {
    const job = await request(`${url}/api/svcreport/v1/jobs/${id}`, { headers });
    if (((await job.body.json()) as { state: string }).state !== 'Running') break;
  }
  const res = await request(`${url}/api/svcreport/v1/jobs/${id}/output/1`, { headers });
  const page = Buffer.from(await res.body.arrayBuffer());
  await (await request(`${url}/api/svcreport/v1/jobs/${id}`, { method: 'DELETE', headers })).body.dump();
  return page;
}
