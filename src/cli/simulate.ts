/** `report-etl simulate`: serves the built-in simulator (docs/architecture.md "Tests") until SIGINT or SIGTERM. */
import { Help, InvalidArgumentError, type Command } from 'commander';
import { CONFIG_NOT_READ } from './options.ts';
import type { Cli } from './types.ts';
import type { SimulatorOptions } from '../simulator/index.ts';
// The catalogue alone (no renderers): `simulate --help` lists it.
import { CATALOGUE, followsState, MAX_ROWS } from '../simulator/catalogue.ts';

function int(name: string, min: number): (value: string) => number {
  return (value) => {
    if (!/^\d+$/.test(value) || Number(value) < min)
      throw new InvalidArgumentError(`${name} must be an integer >= ${min}`);
    return Number(value);
  };
}

function rate(value: string): number {
  const n = Number(value);
  if (value.trim() === '' || !Number.isFinite(n) || n < 0 || n > 1)
    throw new InvalidArgumentError('must be a number from 0 to 1');
  return n;
}

interface SimulateFlags {
  port: number;
  host: string;
  tokenLifetime: number;
  jobDuration: number;
  seed: number;
  timezone: string;
  errorRate: number;
  resetRate: number;
  latency: number;
  productVersion?: number;
  pkce: boolean;
}

/** Words of `text` in lines of at most `width` characters (commander's own wrapping), each after `indent`. */
function wrap(text: string, width: number, indent: string): string {
  return new Help()
    .boxWrap(text, width)
    .split('\n')
    .map((l) => indent + l)
    .join('\n');
}

/**
 * What `simulate --help` says after the options: every report of the catalogue as jobs.yaml names it, its rows and
 * what it is for, and the parameters the simulator reads, so that a job for it can be written from the help alone.
 */
export function simulatorReportsHelp(): string {
  const reports = CATALOGUE.map((r) => {
    const name = r.path.replace(/\.avw$/, '');
    const rows = followsState(r.path)
      ? 'rows by FROM/TO and mandant'
      : `${r.defaultRows.toLocaleString('en-US')} row${r.defaultRows === 1 ? '' : 's'}`;
    return `  ${name} (${rows})\n${wrap(r.description, 76, '      ')}`;
  });
  const parameters =
    `Report parameters it reads: ROWS (the row count, 0 to ${MAX_ROWS.toLocaleString('en-US')}), FROM and TO ` +
    '(yyyy-mm-dd, the days [FROM, TO) of the reports that name them), SIM_FAIL_MANDANT (a mandant, or several ' +
    'comma-separated, whose report ends FinishedError). Any mandant number works. POST /_sim/revision ' +
    '{"revision": 1} changes Finance/Bookings as late postings do.';
  return [
    '',
    'Reports (report.name in jobs.yaml; ".avw" is appended, an avx report gives its extension):',
    ...reports,
    '',
    wrap(parameters, 80, ''),
  ].join('\n');
}

export function registerSimulate(program: Command, cli: Cli): void {
  program
    .command('simulate')
    .description('Serve the built-in Report Export Service simulator (for the demo and dry runs)')
    .addHelpText('after', simulatorReportsHelp)
    .option('--port <n>', 'TCP port', int('--port', 0), 8080)
    .option('-c, --config <path>', CONFIG_NOT_READ)
    .option('--host <host>', 'interface to bind', '127.0.0.1')
    .option('--token-lifetime <s>', 'expires_in of issued tokens, in seconds', int('--token-lifetime', 1), 600)
    .option('--job-duration <ms>', 'how long a job stays Running, in ms', int('--job-duration', 0), 300)
    .option('--seed <n>', 'data seed', int('--seed', 0), 1)
    .option('--timezone <zone>', 'IANA zone of txt timestamps', 'Europe/Zurich')
    .option('--error-rate <p>', 'probability of a 502/503/504 answer per report request (0..1)', rate, 0)
    .option('--reset-rate <p>', 'probability that an output page is cut off midway (0..1)', rate, 0)
    .option('--latency <ms>', 'latency added to every response, in ms', int('--latency', 0), 0)
    .option(
      '--product-version <year>',
      'product version of the simulated server: pdf needs 2025, excel/word 2026 (older: 400 "Unknown outputType"); ' +
        'default: every type',
      int('--product-version', 2000),
    )
    .option('--no-pkce', 'a server without PKCE: the login ignores code_challenge and code_verifier')
    .action(async (flags: SimulateFlags) => {
      // Loaded here: the simulator brings pdfkit, exceljs and docx, which no other command needs.
      const [{ makeLogger }, { DEFAULT_CLIENTS, DEFAULT_USERS, startSimulator }] = await Promise.all([
        import('../logger.ts'),
        import('../simulator/index.ts'),
      ]);
      const logger = makeLogger();
      const options: SimulatorOptions = {
        port: flags.port,
        host: flags.host,
        tokenLifetimeSeconds: flags.tokenLifetime,
        jobDurationMs: flags.jobDuration,
        seed: flags.seed,
        timezone: flags.timezone,
        faults: { errorRate: flags.errorRate, resetRate: flags.resetRate, latencyMs: flags.latency },
        ...(flags.productVersion === undefined ? {} : { productVersion: flags.productVersion }),
        pkce: flags.pkce,
        logger,
      };
      const sim = await startSimulator(options);
      cli.out(`Report Export Service simulator listening on ${sim.url}`);
      cli.out(`  discovery: ${sim.url}/.well-known/openid-configuration`);
      for (const c of DEFAULT_CLIENTS) {
        const note =
          c.interfaceAccess === false
            ? ' (no interface access: 403)'
            : c.reportRights === false
              ? ' (no report rights)'
              : c.userDependent
                ? c.clientSecret
                  ? ' (user-dependent, trusted)'
                  : ' (user-dependent, public: no secret)'
                : '';
        // Demo credentials of the simulator only; printing them is the point of this command.
        cli.out(`  client: ${c.clientId}${c.clientSecret ? ` / ${c.clientSecret}` : ''}${note}`);
      }
      for (const u of DEFAULT_USERS) {
        const offline = u.offlineAccess === false ? 'no offline access: 10 h' : 'offline access: 60 d';
        cli.out(
          `  login page user: ${u.username} / ${u.password} (scopes: ${u.scopes.join(' ') || 'none'}; ${offline})`,
        );
      }
      cli.out('Press Ctrl-C to stop.');
      await new Promise<void>((resolve) => {
        const stop = (): void => {
          process.off('SIGINT', stop);
          process.off('SIGTERM', stop);
          resolve();
        };
        process.on('SIGINT', stop);
        process.on('SIGTERM', stop);
      });
      await sim.close();
      logger.info('simulator: closed');
      logger.flush();
    });
}
