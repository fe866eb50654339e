/**
 * A server that echoes what it received (the simulator's `echo` fault): the client secret in all three placements —
 * the Basic header, the form body, the user-dependent refresh grant (with the refresh token) — and the access token a
 * report call sent appear in no form in etl.run_errors, etl.attempts, etl.connection_logins, the logs, Redis or the
 * webhook bodies of `report-etl run` (docs/architecture.md "Errors").
 */
import { randomBytes } from 'node:crypto';
import { mkdtemp, readFile, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { parse } from 'yaml';
import { afterAll, beforeAll, expect, it, vi } from 'vitest';
import { configSchema } from '../src/config/schema.ts';
import { completeLogin, startLogin } from '../src/login/login-flow.ts';
import { secretKeyFromEnv, SECRET_KEY_ENV } from '../src/secret-box.ts';
import { DEFAULT_CLIENTS } from '../src/simulator/index.ts';
import { runCli } from './support/cli-process.ts';
import { uniqueName } from './support/env.ts';
import { startHarness, type Harness } from './support/harness.ts';
import { redisEntries, startHooks, type Hooks } from './support/hostile.ts';
import { loginOnSimulator } from './support/user-login.ts';
import { deleteKeys, deleteRuns } from './support/queue-env.ts';

const SECRET = `Ech0 s3cr3t+/=%&"ö-${randomBytes(6).toString('hex')}`;
const jp = uniqueName('echo');
const queuePrefix = uniqueName('echoq');
const previousKey = process.env[SECRET_KEY_ENV];
let h: Harness;
let hooks: Hooks;
let configPath: string;
let env: Record<string, string>;
/** Every text a run left where people or other programs read it. */
const texts: { where: string; text: string }[] = [];

beforeAll(async () => {
  process.env[SECRET_KEY_ENV] = randomBytes(32).toString('hex');
  h = await startHarness({
    clients: [
      ...DEFAULT_CLIENTS,
      { clientId: 'echo-client', clientSecret: SECRET },
      { clientId: 'echo-user', clientSecret: SECRET, userDependent: true },
    ],
  });
  hooks = await startHooks();
  configPath = join(await mkdtemp(join(tmpdir(), 'report-etl-echo-')), 'jobs.yaml');
  const report = '{ mandant: 7777, name: Sales/Orders, parameters: { ROWS: "10" } }';
  await writeFile(
    configPath,
    `connections:
  header: { baseUrl: "\${SIM_URL}", clientId: echo-client, clientSecret: "\${ECHO_SECRET}", credentials: header }
  body: { baseUrl: "\${SIM_URL}", clientId: echo-client, clientSecret: "\${ECHO_SECRET}", credentials: body }
  user:
    baseUrl: "\${SIM_URL}"
    clientId: echo-user
    clientSecret: "\${ECHO_SECRET}"
    auth: authorization_code
    scopes: [svc.pad, offline_access]
    redirectUri: http://127.0.0.1:9/oauth/callback
alerts:
  generic: { webhook: "\${HOOKS}/generic", events: [failed] }
  slack: { webhook: "\${HOOKS}/slack", events: [failed], format: slack }
  teams: { webhook: "\${HOOKS}/teams", events: [failed], format: teams }
jobs:
${['header', 'body', 'user', 'token']
  .map(
    (c) =>
      `  ${jp}_${c}: { connection: ${c === 'token' ? 'header' : c}, report: ${report}, ` +
      `target: { table: ${h.schema}.${c} } }`,
  )
  .join('\n')}
`,
  );
  env = {
    SIM_URL: h.sim.url,
    ECHO_SECRET: SECRET,
    HOOKS: hooks.url,
    REPORT_ETL_QUEUE_PREFIX: queuePrefix,
    LOG_LEVEL: 'debug',
    LOG_FORMAT: 'json',
  };
});

afterAll(async () => {
  await deleteRuns(h.pool, jp);
  await h.pool.query('DELETE FROM etl.job_alerts WHERE job LIKE $1', [`${jp}%`]);
  await h.pool.query('DELETE FROM etl.connection_logins WHERE base_url = $1', [h.sim.url]);
  await h.pool.query('DELETE FROM etl.login_states WHERE base_url = $1', [h.sim.url]);
  await deleteKeys(h.redis, queuePrefix);
  await hooks.close();
  await h.close();
  if (previousKey === undefined) delete process.env[SECRET_KEY_ENV];
  else process.env[SECRET_KEY_ENV] = previousKey;
});

/** Runs a job of the file with `report-etl run`; keeps its output. @returns its error as recorded */
async function run(connection: string): Promise<{ kind: string; message: string }> {
  const job = `${jp}_${connection}`;
  const r = await runCli(['run', job, '-c', configPath], env);
  expect(r.code, r.stderr.slice(-3000)).toBe(1);
  texts.push({ where: `${job}: output`, text: r.stdout + r.stderr });
  const { rows } = await h.pool.query<{ kind: string; message: string }>(
    `SELECT e.error_kind AS kind, e.message FROM etl.attempts a JOIN etl.run_errors e USING (attempt_id)
      WHERE a.job = $1`,
    [job],
  );
  expect(rows).toHaveLength(1);
  return rows[0]!;
}

it('a secret echoed from a Basic header, a form body or a refresh grant, or an access token: all hidden', async () => {
  // The user-dependent connection logs in first, while the token endpoint still answers.
  const resolved = (await readFile(configPath, 'utf8'))
    .replaceAll('${SIM_URL}', h.sim.url)
    .replaceAll('${ECHO_SECRET}', JSON.stringify(SECRET).slice(1, -1))
    .replaceAll('${HOOKS}', hooks.url);
  const parsed = configSchema.parse(parse(resolved));
  const user = { name: 'user', connection: parsed.connections.user! };
  const { url } = await startLogin(h.pool, user, 'cli');
  const location = await loginOnSimulator(url, 'anna', 'anna-password');
  await completeLogin(h.pool, secretKeyFromEnv(), (n) => parsed.connections[n], new URL(location).searchParams);
  const refreshToken = h.sim.oauthCounters().refreshTokensIssued.at(-1)!;
  expect(refreshToken).toBeTruthy();

  h.sim.setFaults({ echo: 'token' });
  const header = await run('header');
  expect(header).toMatchObject({ kind: 'TOKEN_FAILED' });
  expect(header.message).toContain('received Authorization: Basic [redacted]');
  const body = await run('body');
  expect(body).toMatchObject({ kind: 'TOKEN_FAILED' });
  expect(body.message).toContain('client_secret=[redacted]');
  const refresh = await run('user');
  expect(refresh).toMatchObject({ kind: 'LOGIN_REQUIRED' });
  expect(refresh.message).toContain('refresh_token=[redacted]');
  expect(refresh.message).toContain('client_secret=[redacted]');

  h.sim.setFaults({ echo: 'report' });
  const token = await run('token');
  expect(token).toMatchObject({ kind: 'ACCESS_FORBIDDEN' });
  expect(token.message).toContain('received Authorization: Bearer [redacted]');
  h.sim.setFaults({});

  // Every place a text went: the run history, the login's state, Redis, the webhooks.
  await vi.waitFor(() => expect(hooks.bodies.length).toBe(12), { timeout: 30_000 });
  for (const b of hooks.bodies) texts.push({ where: `webhook ${b.path}`, text: b.text });
  const history = await h.pool.query<{ row: string }>(
    `SELECT row_to_json(a)::text || coalesce(row_to_json(e)::text, '') AS row
       FROM etl.attempts a LEFT JOIN etl.run_errors e USING (attempt_id) WHERE a.job LIKE $1`,
    [`${jp}%`],
  );
  for (const r of history.rows) texts.push({ where: 'etl.attempts, etl.run_errors', text: r.row });
  const logins = await h.pool.query<{ row: string }>(
    'SELECT row_to_json(l)::text AS row FROM etl.connection_logins l WHERE base_url = $1',
    [h.sim.url],
  );
  // Both connections share the simulator's base URL: the user-dependent one's row holds the refused refresh.
  const userLogin = logins.rows.find((r) => r.row.includes('"auth":"authorization_code"'));
  expect(userLogin?.row).toContain('refresh_token=[redacted]');
  for (const r of logins.rows) texts.push({ where: 'etl.connection_logins', text: r.row });
  const entries = await redisEntries(h.redis, `${queuePrefix}:`);
  const tokenEntry = entries.find((e) => /:token:[0-9a-f]{16}$/.test(e.key));
  const accessToken = (JSON.parse(tokenEntry!.value) as { accessToken: string }).accessToken;
  expect(accessToken.length).toBeGreaterThan(20);
  for (const e of entries) texts.push({ where: `redis ${e.key}`, text: e.key + (e === tokenEntry ? '' : e.value) });

  const needles = [...forms(SECRET, 'echo-client'), ...forms(SECRET, 'echo-user'), ...forms(refreshToken)];
  needles.push(...forms(accessToken));
  for (const { where, text } of texts) for (const n of needles) expect(text.includes(n), `${where}: ${n}`).toBe(false);
}, 180_000);

/** How a server may echo `secret` (and `id:secret` in a Basic header), and how JSON (twice) writes each. */
function forms(secret: string, id?: string): string[] {
  const b64 = (s: string) => Buffer.from(s, 'utf8').toString('base64').replace(/=+$/, '');
  const encoded = [new URLSearchParams({ s: secret }).toString().slice(2), encodeURIComponent(secret)];
  const out = [
    secret,
    b64(secret),
    ...encoded,
    ...encoded.map((e) => e.replace(/%[0-9A-F]{2}/g, (x) => x.toLowerCase())),
  ];
  if (id) out.push(b64(`${id}:${secret}`), Buffer.from(`${id}:${secret}`).toString('base64url'));
  const json = (s: string) => JSON.stringify(s).slice(1, -1);
  return [...new Set([...out, ...out.map(json), ...out.map((s) => json(json(s)))])];
}
