import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { ConfigError } from '../src/errors.ts';
import { resolveJob, loadConfig, validateConfigText } from '../src/config/load.ts';
import { parseWindow } from '../src/config/duration.ts';

let dir: string;
beforeAll(async () => {
  dir = await mkdtemp(join(tmpdir(), 'report-etl-config-'));
});
afterAll(async () => {
  await rm(dir, { recursive: true, force: true });
});

const ENV = { REPORT_CLIENT_SECRET: 's3cr3t-from-env' };

/**
 * A minimal valid file (14 lines): `connection` becomes line 6 (inside connections.erp), `job` line 15 (inside
 * jobs.j1).
 */
function minimal(over: { connection?: string; job?: string } = {}): string {
  return [
    'connections:',
    '  erp:',
    '    baseUrl: https://erp.example.com',
    '    clientId: etl',
    '    clientSecret: ${REPORT_CLIENT_SECRET}',
    over.connection ?? '',
    'jobs:',
    '  j1:',
    '    connection: erp',
    '    report:',
    '      mandant: 7777',
    '      name: Sales/Orders',
    '    target:',
    '      table: erp.orders',
    over.job ?? '',
  ].join('\n');
}

function problemsOf(text: string, env: NodeJS.ProcessEnv = ENV): string[] {
  try {
    validateConfigText(text, 'jobs.yaml', env);
  } catch (err) {
    expect(err).toBeInstanceOf(ConfigError);
    expect((err as ConfigError).code).toBe('CONFIG_INVALID');
    return (err as ConfigError).problems;
  }
  throw new Error('expected a ConfigError');
}

describe('loadConfig', () => {
  it('loads the sample jobs.yaml with the demo defaults', async () => {
    const loaded = await loadConfig(join(import.meta.dirname, '..', 'jobs.yaml'), {});
    expect(Object.keys(loaded.config.jobs)).toEqual([
      'sales_orders',
      'stock_levels',
      'ledger',
      'orders_compact',
      'broken_report',
    ]);
    expect(loaded.config.connections.sim).toMatchObject({
      baseUrl: 'http://127.0.0.1:8080',
      clientId: 'demo-client',
      clientSecret: 'demo-secret',
      timezone: 'Europe/Zurich',
    });
    const sales = loaded.config.jobs.sales_orders!;
    expect(sales.report).toMatchObject({ mandant: '7777', name: 'Sales/Orders', outputType: 'json', paging: 500 });
    expect(sales.target).toMatchObject({ table: 'erp.sales_orders', mode: 'replace' });
    expect(loaded.config.jobs.stock_levels!.target).toMatchObject({
      mode: 'merge',
      key: ['artikel'],
      columns: { bestand: 'integer' },
    });
    expect(loaded.config.jobs.ledger!.report.name).toBe('Finance/Ledger.avx');
    expect(loaded.config.jobs.broken_report!.report.name).toBe('Failing');
    expect(loaded.hash).toMatch(/^[0-9a-f]{64}$/);
  });

  it('takes environment values over ${VAR:-default} defaults, and the hash follows the text', async () => {
    const file = join(dir, 'env.yaml');
    await writeFile(
      file,
      minimal({ connection: '    timezone: ${TZ_NAME:-Europe/Berlin}', job: '    schedule: "${CRON:-0 3 * * *}"' }),
    );
    const a = await loadConfig(file, { ...ENV, TZ_NAME: 'America/New_York' });
    expect(a.config.connections.erp!.timezone).toBe('America/New_York');
    expect(a.config.connections.erp!.clientSecret).toBe('s3cr3t-from-env');
    expect(a.config.jobs.j1!.schedule).toBe('0 3 * * *');
    const b = await loadConfig(file, { ...ENV, TZ_NAME: '' });
    expect(b.config.connections.erp!.timezone).toBe('Europe/Berlin');
    expect(b.hash).toBe(a.hash);
    await writeFile(file, minimal({ job: '    schedule: "0 4 * * *"' }));
    const c = await loadConfig(file, ENV);
    expect(c.hash).not.toBe(a.hash);
  });

  it('converts numeric ${VAR} text where the schema wants a number, and keeps $${ literal', () => {
    const text = minimal({
      job: '    retry:\n      attempts: ${ATTEMPTS}\n      backoffMs: "${BACKOFF:-1500}"',
    }).replace(
      '      name: Sales/Orders',
      () =>
        '      name: Sales/Orders\n      paging: ${PAGING:-20}\n      parameters: { NOTE: ' +
        '"cost $${X} for ${WHO}", N: "${ATTEMPTS}" }',
    );
    const cfg = validateConfigText(text, 'jobs.yaml', { ...ENV, ATTEMPTS: '7', WHO: 'ops' });
    expect(cfg.jobs.j1!.retry).toEqual({ attempts: 7, backoffMs: 1500 });
    expect(cfg.jobs.j1!.report.paging).toBe(20);
    // parameters are text: a numeric ${VAR} stays exactly as written (no leading-zero loss)
    expect(cfg.jobs.j1!.report.parameters).toEqual({ NOTE: 'cost ${X} for ops', N: '7' });
    expect(
      validateConfigText(text, 'jobs.yaml', { ...ENV, ATTEMPTS: '007', WHO: 'x' }).jobs.j1!.report.parameters.N,
    ).toBe('007');
    // a non-numeric value is still an error, positioned on its node
    expect(problemsOf(text, { ...ENV, ATTEMPTS: 'many', WHO: 'x' })).toEqual([
      'jobs.yaml:18:17: jobs.j1.retry.attempts: expected integer (≥ 1), got a string (Attempts per ' +
        'run before it is failed for good)',
    ]);
  });

  it('names file, line, path and variable when an env var is missing', () => {
    const problems = problemsOf(minimal(), {});
    expect(problems).toEqual([
      'jobs.yaml:5:19: connections.erp.clientSecret: environment variable REPORT_CLIENT_SECRET is not set: ' +
        'export REPORT_CLIENT_SECRET before starting report-etl',
    ]);
  });

  it('lists every problem at once, each with its line and column, sorted', () => {
    const text = [
      'connections:',
      '  erp:',
      '    baseUrl: https://erp.example.com',
      '    clientId: ${ETL_CLIENT_ID}',
      '    clientSecret: ${REPORT_CLIENT_SECRET}',
      '    timezone: Europe/Zurik',
      'jobs:',
      '  sales_orders:',
      '    connection: erp',
      '    schedule: "61 * * * *"',
      '    report:',
      '      mandant: 7777',
      '      name: Sales/Orders',
      '      outputType: csv',
      '      paging: 5',
      '    target:',
      '      table: erp.sales_orders',
      '      mode: merge',
      '  stock:',
      '    connection: erpp',
      '    catchup: { all: 3 days }',
      '    report: { mandant: 1, name: "Lager/Bestände" }',
      '    target: { table: erp.stock, mdoe: append }',
    ].join('\n');
    const problems = problemsOf(text);
    expect(problems).toEqual([
      'jobs.yaml:4:15: connections.erp.clientId: environment variable ETL_CLIENT_ID is not set: ' +
        'export ETL_CLIENT_ID, or write ${ETL_CLIENT_ID:-default} in the file',
      'jobs.yaml:6:15: connections.erp.timezone: unknown time zone "Europe/Zurik": ' +
        'write an IANA zone name such as Europe/Zurich or UTC',
      expect.stringMatching(
        new RegExp(
          /^jobs\.yaml:10:15: jobs\.sales_orders\.schedule: invalid cron expression "61 \* \* \* /.source +
            /\*": 61 is not a minute: the minute field takes 0 to 59/.source,
        ),
      ),
      'jobs.yaml:14:19: jobs.sales_orders.report.outputType: "csv" is not allowed: ' +
        'write one of json | json_compact | txt | xml_query | txt_all | txt_cstr | txt_allcstr | xml | ' +
        'json_userdef | json_userdef_compact | pdf | excel-xlsx_data | excel-xlsx_matrix | excel-xlsx | word-docx',
      'jobs.yaml:15:15: jobs.sales_orders.report.paging: paging must be at least 10: ' +
        'below 10 the server silently uses 10000 rows per page',
      'jobs.yaml:17:7: jobs.sales_orders.target.key: merge needs key: the columns that identify a row',
      'jobs.yaml:20:17: jobs.stock.connection: unknown connection "erpp" (did you mean "erp"? known: erp)',
      'jobs.yaml:21:21: jobs.stock.catchup.all: invalid catch-up window "3 days": write a number and a unit ' +
        's, m, h, d or w, e.g. 30m, 12h, 2d',
      expect.stringMatching(
        /^jobs\.yaml:22:33: jobs\.stock\.report\.name: report name "Lager\/Bestände" has characters the server rejects/,
      ),
      'jobs.yaml:23:33: jobs.stock.target.mdoe: unknown key "mdoe" (did you mean "mode"?)',
    ]);
  });

  it('refuses a literal clientSecret without printing it', () => {
    const secret = 'hunter2-Literal-9f8e';
    const problems = problemsOf(minimal().replace('${REPORT_CLIENT_SECRET}', secret));
    expect(problems).toEqual([
      'jobs.yaml:5:19: connections.erp.clientSecret: clientSecret must come from the environment: ' +
        'write ${REPORT_CLIENT_SECRET} (any variable name) instead of the secret itself',
    ]);
    // Also when the literal breaks the YAML: the syntax error must not quote the line.
    const broken = problemsOf(minimal().replace('${REPORT_CLIENT_SECRET}', `"${secret}`));
    expect(broken.length).toBeGreaterThan(0);
    // Nor can it hide in a merged template.
    const merged = problemsOf(
      minimal()
        .replace('connections:\n', () => `templates:\n  t: &t { clientSecret: ${secret} }\nconnections:\n`)
        .replace('    clientSecret: ${REPORT_CLIENT_SECRET}\n', '    <<: *t\n'),
    );
    expect(merged).toContainEqual(
      expect.stringMatching(/connections\.erp\.clientSecret: clientSecret must come from the environment/),
    );
    for (const p of [...problems, ...broken, ...merged]) expect(p).not.toContain(secret);
  });

  it('never echoes a secret-named value, even when it is malformed', () => {
    const problems = problemsOf(minimal().replace('${REPORT_CLIENT_SECRET}', '${REPORT_CLIENT_SECRET:-pa55word'));
    expect(problems.join('\n')).not.toContain('pa55word');
    expect(problems[0]).toMatch(
      /^jobs\.yaml:5:19: connections\.erp\.clientSecret: malformed variable reference: write/,
    );
  });

  it('suggests the closest option for an unknown key, or lists the allowed ones', () => {
    const problems = problemsOf(
      minimal({ connection: '    pathEncodng: slash\n    zzzzzz: 1', job: '    shedule: "* * * * *"' }),
    );
    expect(problems).toEqual([
      'jobs.yaml:6:5: connections.erp.pathEncodng: unknown key "pathEncodng" (did you mean "pathEncoding"?)',
      expect.stringMatching(
        new RegExp(
          /^jobs\.yaml:7:5: connections\.erp\.zzzzzz: unknown key "zzzzzz" \(allowed: baseUrl, /.source +
            /auth, clientId, clientSecret, scopes, redirectUri, tokenOrigin, credentials, /.source +
            /pathEncoding, timezone, /.source,
        ),
      ),
      'jobs.yaml:16:5: jobs.j1.shedule: unknown key "shedule" (did you mean "schedule"?)',
    ]);
  });

  it('rejects a bad cron expression and accepts 5- and 6-field ones', () => {
    expect(problemsOf(minimal({ job: '    schedule: "* * *"' }))).toEqual([
      expect.stringMatching(
        /^jobs\.yaml:15:15: jobs\.j1\.schedule: invalid cron expression "\* \* \*": expected 5 or 6 fields but got 3/,
      ),
    ]);
    expect(
      validateConfigText(minimal({ job: '    schedule: "*/30 * * * * *"' }), 'jobs.yaml', ENV).jobs.j1!.schedule,
    ).toBe('*/30 * * * * *');
  });

  it('accepts canonical zone names, UTC and aliases', () => {
    for (const zone of [
      'Europe/Zurich',
      'UTC',
      'Etc/UTC',
      'Asia/Kolkata',
      'Asia/Calcutta',
      'US/Eastern',
      'Europe/Kyiv',
    ]) {
      expect(
        validateConfigText(minimal({ connection: `    timezone: ${zone}` }), 'jobs.yaml', ENV).connections.erp!
          .timezone,
      ).toBe(zone);
    }
  });

  it('rejects unknown time zones on jobs and connections', () => {
    const problems = problemsOf(
      minimal({ connection: '    timezone: Mars/Olympus', job: '    timezone: Europe/Zurich2' }),
    );
    expect(problems).toEqual([
      'jobs.yaml:6:15: connections.erp.timezone: unknown time zone "Mars/Olympus": ' +
        'write an IANA zone name such as Europe/Zurich or UTC',
      'jobs.yaml:15:15: jobs.j1.timezone: unknown time zone "Europe/Zurich2": ' +
        'write an IANA zone name such as Europe/Zurich or UTC',
    ]);
  });

  it('renders the time templates of report parameters at validate, offsets included', () => {
    const text = minimal().replace(
      '      name: Sales/Orders',
      '      name: Sales/Orders\n      parameters:\n        FROM: "%{logicalEnd-7d:yyyy-MM-dd}"\n' +
        '        TO: "%{logicalEnd-2w}"\n        AT: "%{tik}"',
    );
    expect(problemsOf(text)).toEqual([
      'jobs.yaml:15:13: jobs.j1.report.parameters.TO: malformed time "%{logicalEnd-2w}" in "%{logicalEnd-2w}" ' +
        '(write a name and an optional offset, e.g. %{logicalEnd-7d:yyyy-MM-dd}; units d, h, min)',
      'jobs.yaml:16:13: jobs.j1.report.parameters.AT: unknown time "%{tik}" in "%{tik}" (write tick, logicalStart ' +
        'or logicalEnd)',
    ]);
  });

  it('checks target.replaceRange: mode replace, a normalised column, templates that render, a type that fits', () => {
    const range = (mode: string, column: string, from: string, type: string) =>
      minimal({
        job:
          `      mode: ${mode}\n      columns: { buchungstag: ${type} }\n      replaceRange:\n` +
          `        column: ${column}\n        from: "${from}"\n        to: "%{logicalEnd:yyyy-MM-dd}"`,
      });
    const ok = validateConfigText(range('replace', 'buchungstag', '%{logicalEnd-7d:yyyy-MM-dd}', 'date'), 'j', ENV);
    expect(ok.jobs.j1!.target.replaceRange).toEqual({
      column: 'buchungstag',
      from: '%{logicalEnd-7d:yyyy-MM-dd}',
      to: '%{logicalEnd:yyyy-MM-dd}',
    });
    expect(problemsOf(range('append', 'buchungstag', '%{logicalEnd-7d:yyyy-MM-dd}', 'date'))).toEqual([
      "jobs.yaml:18:9: jobs.j1.target.replaceRange: replaceRange replaces one period's rows and needs mode replace " +
        '(mode is append): set mode: replace, or remove replaceRange',
    ]);
    expect(problemsOf(range('replace', 'Buchungstag', '%{logicalEnd-7x}', 'date'))).toEqual([
      'jobs.yaml:18:17: jobs.j1.target.replaceRange.column: "Buchungstag" is not a normalised column name: did you ' +
        'mean "buchungstag"? (report columns are loaded lower case, umlauts as ae oe ue ss, every other run of ' +
        'characters as _; docs/loaded-tables.md "Column names")',
      'jobs.yaml:19:15: jobs.j1.target.replaceRange.from: malformed time "%{logicalEnd-7x}" in "%{logicalEnd-7x}" ' +
        '(write a name and an optional offset, e.g. %{logicalEnd-7d:yyyy-MM-dd}; units d, h, min)',
    ]);
    expect(problemsOf(range('replace', 'buchungstag', '%{logicalEnd-7d:dd.MM.yyyy}', 'date'))).toEqual([
      'jobs.yaml:19:15: jobs.j1.target.replaceRange.from: the range column buchungstag is declared date, but from ' +
        'renders as "24.01.2026" is not a date (yyyy-MM-dd): give the template a format the type reads, e.g. ' +
        '"%{logicalEnd:yyyy-MM-dd}" for a date (docs/loaded-tables.md "Replacing one period")',
    ]);
    expect(problemsOf(range('replace', 'buchungstag', '%{logicalEnd-7d}', 'boolean'))).toHaveLength(2);
  });

  it('names missing required keys and validates a badly named job anyway', () => {
    const problems = problemsOf(
      minimal().replace('      mandant: 7777\n', '') +
        '\n  "bad job!":\n    connection: erp\n    report: { mandant: 1, name: x, pagign: ' +
        '100 }\n    target: { table: t }',
    );
    expect(problems).toEqual([
      'jobs.yaml:11:7: jobs.j1.report.mandant: missing required key "mandant" (Client number ' +
        '(mandant) the report runs in, or a list of them (docs/loaded-tables.md "Many mandants"))',
      'jobs.yaml:15:3: jobs["bad job!"]: bad name "bad job!": job names use letters, digits, _ . -',
      'jobs.yaml:17:36: jobs["bad job!"].report.pagign: unknown key "pagign" (did you mean "paging"?)',
    ]);
  });

  it('hints at quoting when ${VAR} breaks a flow map, and caps the cascade of syntax errors', () => {
    const problems = problemsOf(minimal({ job: '    retry: { attempts: ${N}, backoffMs: 1 }\n    x: [1,\n' }));
    expect(problems[0]).toMatch(
      new RegExp(
        /^jobs\.yaml:15:\d+: YAML syntax error: .*\(inside \{ \} or \[ \], write values that use /.source +
          /\$\{VAR\} in quotes: "\$\{VAR\}"\)$/.source,
      ),
    );
    expect(problems.length).toBeLessThanOrEqual(11);
  });

  it('refuses duplicate keys, and lets jobs share a block through YAML merge keys', () => {
    const dup = minimal() + '\n  j1:\n    connection: erp';
    expect(problemsOf(dup)).toEqual([
      expect.stringMatching(/^jobs\.yaml:16:3: YAML syntax error: Map keys must be unique/),
    ]);
    const merged = minimal({ job: '  j2:\n    <<: *base\n    schedule: "0 1 * * *"' }).replace(
      '  j1:\n',
      '  j1: &base\n',
    );
    const cfg = validateConfigText(merged, 'jobs.yaml', ENV);
    expect(cfg.jobs.j2).toMatchObject({
      connection: 'erp',
      schedule: '0 1 * * *',
      report: { name: 'Sales/Orders', mandant: '7777' },
    });
    expect(cfg.jobs.j1!.schedule).toBeUndefined();
  });

  it('reports an unreadable file and an empty file', async () => {
    await expect(loadConfig(join(dir, 'nope.yaml'))).rejects.toMatchObject({
      problems: [`${join(dir, 'nope.yaml')}: file not found: pass --config PATH or set REPORT_ETL_CONFIG`],
    });
    expect(problemsOf('# nothing\n')).toEqual([
      'jobs.yaml:1:1: the file is empty: it needs connections and jobs (see the sample jobs.yaml)',
    ]);
  });
});

describe('resolveJob', () => {
  const cfg = validateConfigText(minimal(), 'jobs.yaml', ENV);
  it('returns the job with its connection', () => {
    const r = resolveJob(cfg, 'j1');
    expect(r.name).toBe('j1');
    expect(r.connectionName).toBe('erp');
    expect(r.connection.baseUrl).toBe('https://erp.example.com');
    expect(r.job.report.paging).toBe(10_000);
  });
  it('names the known jobs when the job is unknown', () => {
    expect(() => resolveJob(cfg, 'j2')).toThrow('unknown job "j2" in jobs.yaml (did you mean "j1"? known: j1)');
    expect(() => resolveJob(cfg, 'toString')).toThrow(ConfigError);
  });
});

describe('parseWindow', () => {
  it('reads s, m, h, d, w windows in ms', () => {
    expect([parseWindow('30m'), parseWindow('12h'), parseWindow('2d'), parseWindow('1w'), parseWindow('45s')]).toEqual([
      1_800_000, 43_200_000, 172_800_000, 604_800_000, 45_000,
    ]);
    expect([parseWindow('0d'), parseWindow('2 d'), parseWindow('1y'), parseWindow('')]).toEqual([
      undefined,
      undefined,
      undefined,
      undefined,
    ]);
  });
});

describe('schedule and output type in their own words', () => {
  it('refuses a step beyond its field (node-cron reads */61 as hourly), and suggests the output type meant', () => {
    const problems = problemsOf(minimal({ job: '    schedule: "*/61 * * * *"\n    timezone: UTC' }));
    expect(problems).toEqual([
      expect.stringContaining(
        'invalid cron expression "*/61 * * * *": step "/61" of the minute field must be 1 to 59 (a step of 60 or ' +
          'more matches only the first minute: write 0 instead of */61)',
      ),
    ]);
    const typo = problemsOf(
      minimal().replace('      name: Sales/Orders', '      name: Sales/Orders\n      outputType: xml-query'),
    );
    expect(typo).toEqual([
      expect.stringContaining('"xml-query" is not allowed (did you mean "xml_query"?): write one of'),
    ]);
  });
});
