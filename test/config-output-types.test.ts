/**
 * jobs.yaml and the output types (docs/loaded-tables.md "Output types"): validate accepts all 15, refuses the ones a
 * connection's productVersion does not have (docs/report-export-service.md "Versioning" 2) naming type, version and
 * connection, and the target options that do not fit the type; the simulator with --product-version answers a too-new
 * type as an older server would.
 */
import { request } from 'undici';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { validateConfigText } from '../src/config/load.ts';
import { ConfigError } from '../src/errors.ts';
import { startSimulator, type Simulator } from '../src/simulator/index.ts';
import { OUTPUT_TYPES } from '../src/vocabulary.ts';

const ENV = { REPORT_CLIENT_SECRET: 's3cr3t' };

function yaml(o: { outputType: string; productVersion?: number; target?: string[] }): string {
  return [
    'connections:',
    '  erp:',
    '    baseUrl: https://erp.example.com',
    '    clientId: etl',
    '    clientSecret: ${REPORT_CLIENT_SECRET}',
    ...(o.productVersion === undefined ? [] : [`    productVersion: ${o.productVersion}`]),
    'jobs:',
    '  j:',
    '    connection: erp',
    '    report:',
    '      mandant: 7777',
    '      name: Sales/Orders',
    `      outputType: ${o.outputType}`,
    '    target:',
    '      table: erp.t',
    ...(o.target ?? []).map((l) => `      ${l}`),
  ].join('\n');
}

function problems(text: string): string[] {
  try {
    validateConfigText(text, 'jobs.yaml', ENV);
    return [];
  } catch (err) {
    expect(err).toBeInstanceOf(ConfigError);
    return (err as ConfigError).problems;
  }
}

describe('validate', () => {
  it.each(OUTPUT_TYPES)('accepts %s without productVersion (unset means any)', (t) => {
    expect(problems(yaml({ outputType: t }))).toEqual([]);
  });

  it('refuses pdf before 2025 and excel/word before 2026, naming type, version and connection', () => {
    expect(problems(yaml({ outputType: 'pdf', productVersion: 2024 }))).toEqual([
      'jobs.yaml:13:19: jobs.j.report.outputType: output type pdf needs product version 2025 or later, ' +
        'but connection "erp" has productVersion 2024 (docs/report-export-service.md "Versioning" 2): ' +
        'choose another output type or raise productVersion if the server is newer',
    ]);
    expect(problems(yaml({ outputType: 'pdf', productVersion: 2025 }))).toEqual([]);
    for (const t of ['excel-xlsx_data', 'excel-xlsx_matrix', 'excel-xlsx', 'word-docx']) {
      expect(problems(yaml({ outputType: t, productVersion: 2025 }))[0]).toContain(
        `output type ${t} needs product version 2026 or later, but connection "erp" has productVersion 2025`,
      );
      expect(problems(yaml({ outputType: t, productVersion: 2026 }))).toEqual([]);
    }
    expect(problems(yaml({ outputType: 'xml', productVersion: 2020 }))).toEqual([]);
  });

  it('refuses merge for documents, and target options the output type has no use for', () => {
    expect(problems(yaml({ outputType: 'pdf', target: ['mode: merge', 'key: [page]'] }))[0]).toContain(
      'target.mode: mode merge does not apply to documents (outputType pdf): use replace or append',
    );
    expect(problems(yaml({ outputType: 'json', target: ['rowsAt: /body/orders'] }))[0]).toContain(
      'rowsAt applies to json_userdef and json_userdef_compact only (outputType is json)',
    );
    expect(problems(yaml({ outputType: 'json_userdef', target: ['rowsAt: body/orders'] }))[0]).toContain(
      'rowsAt must be a JSON pointer (RFC 6901)',
    );
    expect(problems(yaml({ outputType: 'pdf', target: ['load: rows'] }))[0]).toContain(
      'load: rows applies to excel-xlsx_data only (outputType is pdf)',
    );
    expect(problems(yaml({ outputType: 'xml', target: ['columns: { page: bigint }'] }))[0]).toContain(
      'outputType xml loads fixed columns',
    );
    expect(
      problems(yaml({ outputType: 'excel-xlsx_data', target: ['load: rows', 'columns: { betrag: numeric }'] })),
    ).toEqual([]);
    expect(
      problems(
        yaml({ outputType: 'json_userdef', target: ['rowsAt: /body/orders', 'mode: merge', 'key: [auftrag_nr]'] }),
      ),
    ).toEqual([]);
  });

  it('refuses a merge key that is none of the fixed columns of a lines or document table, before any run', () => {
    expect(problems(yaml({ outputType: 'txt_all', target: ['mode: merge', 'key: [page, lin]'] }))).toEqual([
      expect.stringContaining(
        'target.key[1]: lin is not a column of what outputType txt_all loads (did you mean "line"?): ' +
          'its table has the fixed columns page, line, fields',
      ),
    ]);
    expect(problems(yaml({ outputType: 'xml', target: ['mode: merge', 'key: [seite]'] }))).toEqual([
      expect.stringContaining(
        'target.key[0]: seite is not a column of what outputType xml loads: ' +
          'its table has the fixed columns page, document',
      ),
    ]);
    expect(problems(yaml({ outputType: 'xml', target: ['mode: merge', 'key: [document]'] }))).toEqual([
      expect.stringContaining(
        'target.key[0]: document is of type xml, which PostgreSQL cannot compare, ' +
          'so it cannot be a merge key: merge by page',
      ),
    ]);
    expect(problems(yaml({ outputType: 'xml', target: ['mode: merge', 'key: [page]'] }))).toEqual([]);
    // Documents cannot merge at all: one problem says so, not one per key.
    expect(problems(yaml({ outputType: 'pdf', target: ['mode: merge', 'key: [pag]'] }))).toEqual([
      expect.stringContaining('mode merge does not apply to documents'),
    ]);
    expect(problems(yaml({ outputType: 'txt_allcstr', target: ['mode: merge', 'key: [page, line]'] }))).toEqual([]);
    expect(problems(yaml({ outputType: 'json_userdef', target: ['mode: merge', 'key: [page]'] }))).toEqual([]);
  });
});

describe('simulator --product-version', () => {
  let sim: Simulator;
  beforeAll(async () => {
    sim = await startSimulator({ productVersion: 2025 });
  });
  afterAll(async () => {
    await sim?.close();
  });

  it('answers a type the version does not have 400 "Unknown outputType", and serves the others', async () => {
    const t = await request(`${sim.url}/oauth/oauth2/v1/token`, {
      method: 'POST',
      headers: {
        'content-type': 'application/x-www-form-urlencoded',
        authorization: `Basic ${Buffer.from('demo-client:demo-secret').toString('base64')}`,
      },
      body: 'grant_type=client_credentials',
    });
    const token = ((await t.body.json()) as { access_token: string }).access_token;
    const start = async (outputType: string) => {
      const r = await request(`${sim.url}/api/svcreport/v1/report/7777/Drift`, {
        method: 'POST',
        headers: { authorization: `Bearer ${token}`, 'content-type': 'application/json', accept: 'application/json' },
        body: JSON.stringify({ outputType, paging: 100 }),
      });
      return { status: r.statusCode, body: (await r.body.json()) as Record<string, unknown> };
    };
    const docx = await start('word-docx');
    expect(docx.status).toBe(400);
    expect(docx.body.detail).toBe("Unknown outputType 'word-docx'");
    const pdf = await start('pdf');
    expect(pdf.status).toBe(200);
    await request(`${sim.url}/api/svcreport/v1/jobs/${String(pdf.body.id)}`, {
      method: 'DELETE',
      headers: { authorization: `Bearer ${token}` },
    }).then((r) => r.body.dump());
  });
});
