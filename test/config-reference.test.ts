import { readFileSync } from 'node:fs';
import { describe, expect, it } from 'vitest';
import { z } from 'zod';
import { configSchema } from '../src/config/schema.ts';
import { renderConfigReference } from '../src/config/reference.ts';
import { withReference } from '../scripts/update-config-reference.ts';

/**
 * Walks the zod schema itself (not the JSON Schema the renderer uses), collecting every object's option
 * names under a section title like `jobs.<name>.report`.
 */
function zodObjects(schema: z.ZodType, title: string, out: Map<string, string[]>): void {
  const def = (schema as unknown as { _zod: { def: Record<string, unknown> & { type: string } } })._zod.def;
  switch (def.type) {
    case 'object': {
      const shape = (schema as z.ZodObject).shape as Record<string, z.ZodType>;
      out.set(title, Object.keys(shape));
      for (const [k, v] of Object.entries(shape)) zodObjects(v, title === '' ? k : `${title}.${k}`, out);
      return;
    }
    case 'record':
      return zodObjects(def.valueType as z.ZodType, `${title}.<name>`, out);
    case 'optional':
    case 'default':
    case 'nullable':
      return zodObjects(def.innerType as z.ZodType, title, out);
    case 'pipe':
      return zodObjects(def.in as z.ZodType, title, out);
    case 'union':
      for (const o of def.options as z.ZodType[]) zodObjects(o, title, out);
      return;
    default:
      return;
  }
}

describe('renderConfigReference', () => {
  const md = renderConfigReference();
  const sections = new Map<string, string>();
  for (const part of md.split(/^### /m).slice(1)) {
    const title = /^`([^`]+)`/.exec(part)![1]!;
    sections.set(title, part);
  }

  it('has a section with a row for every option of every schema object', () => {
    const objects = new Map<string, string[]>();
    zodObjects(configSchema, '', objects);
    expect([...objects.keys()].sort()).toEqual(
      [
        '',
        'alerts.<name>',
        'connections.<name>',
        'connections.<name>.archive',
        'defaults',
        'defaults.archive',
        'defaults.retry',
        'history',
        'jobs.<name>',
        'jobs.<name>.catchup',
        'jobs.<name>.retry',
        'jobs.<name>.report',
        'jobs.<name>.target',
        'jobs.<name>.target.archive',
        'jobs.<name>.target.guard',
        'jobs.<name>.target.replaceRange',
      ].sort(),
    );
    let rows = 0;
    for (const [title, keys] of objects) {
      const section = sections.get(title === '' ? '(top level)' : title);
      expect(section, `section ${title}`).toBeDefined();
      for (const key of keys) {
        expect(section, `${title}.${key}`).toMatch(new RegExp(`^\\| \`${key}\` \\|`, 'm'));
        rows++;
      }
    }
    expect(rows).toBeGreaterThanOrEqual(30);
  });

  it('gives type, default and description', () => {
    const report = sections.get('jobs.<name>.report')!;
    expect(report).toContain(
      '| `paging` | integer (≥ 10) | `10000` | Rows per page (docs/report-export-service.md "Limits": at least 10). |',
    );
    expect(report).toContain(
      '| `outputType` | "json" \\| "json_compact" \\| "txt" \\| "xml_query" \\| "txt_all" \\| "txt_cstr" \\| ' +
        '"txt_allcstr" \\| "xml" \\| "json_userdef" \\| "json_userdef_compact" \\| "pdf" \\| "excel-xlsx_data" \\| ' +
        '"excel-xlsx_matrix" \\| "excel-xlsx" \\| "word-docx" | `"json"` |',
    );
    expect(report).toContain(
      '| `mandant` | integer (≥ 0) \\| string \\| list of integer (≥ 1) | required | ' +
        'Client number (mandant) the report runs in, or a list of them',
    );
    expect(report).toContain('| `parameters` | map of string \\| number \\| boolean | `{}` |');
    expect(sections.get('connections.<name>')).toContain('| `baseUrl` | URL | required |');
    expect(sections.get('jobs.<name>')).toContain(
      '| `schedule` | string | — | Cron expression (5 or 6 fields); no schedule means manual runs only. |',
    );
  });

  it('is deterministic', () => {
    expect(renderConfigReference()).toBe(md);
  });
});

it('docs/configuration.md carries the reference generated from the schema (run `npm run docs` to update)', () => {
  const page = readFileSync(new URL('../docs/configuration.md', import.meta.url), 'utf8');
  expect(page).toBe(withReference(page, renderConfigReference()));
  expect(page).toContain('| `paging` | integer (≥ 10) | `10000` |');
});
