/**
 * `report-etl login <connection>`: the one-time login of a user-dependent service user (docs/report-export-service.md
 * "User-dependent service user"). Prints the authorization URL and waits for the code: at the admin server's
 * `/oauth/callback` (seen in PostgreSQL), or as the redirected URL pasted or given with `--redirected-url`. Exit 0
 * logged in, 1 the login failed or timed out, 2 usage or config error.
 */
import { createInterface } from 'node:readline';
import { setTimeout } from 'node:timers/promises';
import { Option } from 'commander';
import type pg from 'pg';
import type { ConnectionConfig } from '../config/schema.ts';
import { ConfigError, EtlError } from '../errors.ts';
import { getLoginState, LOGIN_STATE_TTL_MS } from '../history/login-states.ts';
import type { CompletedLogin } from '../login/login-flow.ts';
import type { Logger } from '../logger.ts';
import { secretKeyFromEnv } from '../secret-box.ts';
import { formatTime } from '../time-text.ts';
import { configOption } from './options.ts';
import { withStores } from './stores.ts';
import { fail, type Cli, type RegisterCommand } from './types.ts';

/** How often a waiting login looks for the callback's outcome, ms. */
const POLL_MS = 1_000;

/** Error codes that mean the login failed (exit 1), not the command. */
const LOGIN_FAILURES = new Set(['LOGIN_FAILED', 'SERVER_UNREACHABLE', 'TOKEN_FAILED', 'HTTP_TRANSIENT']);

/** The query of the URL the browser was redirected to; `from` names where the text came from. @throws ConfigError */
function parseRedirected(text: string, from: string): URLSearchParams {
  try {
    return new URL(text.trim()).searchParams;
  } catch {
    throw new ConfigError([
      `${from}: "${text.slice(0, 80)}" is not a URL: paste the whole address the browser was sent to (it ` +
        'starts with your redirectUri and carries code= and state=)',
    ]);
  }
}

/** Says the login is done; `zone` is the connection's, which its times are printed in (docs/operations.md "Times"). */
function done(cli: Cli, r: CompletedLogin | string, zone: (connection: string) => string | undefined): void {
  if (typeof r === 'string') return cli.out(r);
  cli.out(
    `${r.connection}: logged in; scopes granted: ${r.grantedScope ?? '(none named)'}; the refresh token lasts ` +
      `until ${formatTime(r.expiresBy, zone(r.connection))} at the latest (docs/report-export-service.md "Limits")`,
  );
}

export const registerLogin: RegisterCommand = (program, cli) => {
  configOption(
    program.command('login').description('one-time login of a user-dependent service user (auth: authorization_code)'),
  )
    .argument('<connection>', 'connection name in jobs.yaml')
    .addOption(
      new Option('--redirected-url <url>', 'the URL the browser was redirected to after the login (non-interactive)'),
    )
    .addOption(
      new Option('--print-url', 'print the authorization URL and exit (its state is valid for 10 minutes)').conflicts(
        'redirectedUrl',
      ),
    )
    .action(async (name: string, opts: { config: string; redirectedUrl?: string; printUrl?: boolean }) => {
      // Loaded here: `--help` and the other commands need none of it (start-up cost).
      const [{ loadConfig, unknownName }, { completeLogin, startLogin }] = await Promise.all([
        import('../config/load.ts'),
        import('../login/login-flow.ts'),
      ]);
      const { config } = await loadConfig(opts.config);
      const find = (n: string): ConnectionConfig | undefined =>
        Object.hasOwn(config.connections, n) ? config.connections[n] : undefined;
      const connection = find(name);
      if (!connection)
        throw new ConfigError([unknownName('connection', name, Object.keys(config.connections), opts.config)]);
      if (connection.auth !== 'authorization_code')
        throw new ConfigError([
          `connection "${name}" has auth: ${connection.auth}: only a user-dependent service user (auth: ` +
            'authorization_code) logs in',
        ]);
      const zoneOf = (n: string) => find(n)?.timezone;
      const key = secretKeyFromEnv();
      await withStores(async ({ pool, logger }) => {
        try {
          if (opts.redirectedUrl !== undefined)
            return done(
              cli,
              await completeLogin(pool, key, find, parseRedirected(opts.redirectedUrl, '--redirected-url'), { logger }),
              zoneOf,
            );
          const started = await startLogin(pool, { name, connection }, 'cli', { logger });
          if (opts.printUrl) return cli.out(started.url);
          cli.err(
            `Open this URL in a browser and log in as the product user whose rights the runs of "${name}" should have:`,
          );
          cli.out(started.url);
          cli.err(
            `Waiting for the redirect to ${connection.redirectUri} (the admin server's /oauth/callback completes the ` +
              'login),',
          );
          cli.err('or paste the URL the browser was redirected to and press Enter. The link expires in 10 minutes.');
          done(cli, await waitForCode(pool, key, find, started.state, logger, (line) => cli.err(line)), zoneOf);
        } catch (err) {
          if (!(err instanceof EtlError && LOGIN_FAILURES.has(err.code))) throw err;
          fail(cli, `${name}: login failed (${err.code}): ${err.message}`, 1);
        }
      });
    });
};

/**
 * Waits for whichever comes first: the callback's outcome in etl.login_states, or a URL pasted on stdin. A pasted
 * line that is no URL is explained through `say` and the wait goes on.
 * @throws LoginFailedError from a pasted URL or the callback's failure; EtlError LOGIN_FAILED after 10 minutes
 */
async function waitForCode(
  pool: pg.Pool,
  key: ReturnType<typeof secretKeyFromEnv>,
  find: (n: string) => ConnectionConfig | undefined,
  state: string,
  logger: Logger,
  say: (line: string) => void,
): Promise<CompletedLogin | string> {
  const { completeLogin } = await import('../login/login-flow.ts');
  const failed = (text: string) => new EtlError('LOGIN_FAILED', text, { retryable: false, stage: 'token' });
  const controller = new AbortController();
  const lines = createInterface({ input: process.stdin, terminal: false });
  const pasted = new Promise<CompletedLogin>((resolve, reject) => {
    lines.on('line', (line) => {
      if (line.trim() === '') return;
      let params: URLSearchParams;
      try {
        params = parseRedirected(line, 'the pasted line');
      } catch (err) {
        // A stray line is not the end of the login: say what is wrong and keep waiting.
        return say(`${(err as Error).message}; still waiting`);
      }
      controller.abort();
      completeLogin(pool, key, find, params, { logger }).then(resolve, reject);
    });
  });
  const callback = (async (): Promise<string> => {
    const deadline = Date.now() + LOGIN_STATE_TTL_MS + POLL_MS;
    while (Date.now() < deadline) {
      await setTimeout(POLL_MS, undefined, { signal: controller.signal });
      const row = await getLoginState(pool, state);
      if (row?.outcome === 'logged_in') return row.message ?? `connection "${row.connection}" logged in`;
      if (row?.outcome === 'failed') throw failed(row.message ?? 'the login failed at the callback');
    }
    throw failed('no redirect arrived within 10 minutes: start the login again');
  })();
  try {
    return await Promise.race([
      pasted,
      callback.catch((err: unknown) => (controller.signal.aborted ? pasted : Promise.reject(err))),
    ]);
  } finally {
    controller.abort();
    lines.close();
  }
}
