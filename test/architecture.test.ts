/**
 * The layout of src/ (docs/architecture.md "Layers"): no import cycle, type-only imports included, every import points
 * down the layers of scripts/check-architecture.ts, and packages are imported by their public entry points. The
 * second test shows the check finds what it looks for.
 */
import { mkdtemp, mkdir, writeFile, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { expect, it } from 'vitest';
import { checkArchitecture } from '../scripts/check-architecture.ts';

it('src/ has no import cycle, every import points down, packages by their public entry points', () => {
  expect(checkArchitecture(fileURLToPath(new URL('../src/', import.meta.url)))).toEqual([]);
});

it(
  'finds a type-only cycle, an upward import, a forbidden package, a package outside its home, ' +
    'a re-export cycle and a file inside a package',
  async () => {
    const dir = await mkdtemp(join(tmpdir(), 'report-etl-arch-'));
    try {
      const file = async (path: string, text: string) => {
        await mkdir(join(dir, path, '..'), { recursive: true });
        await writeFile(join(dir, path), text);
      };
      await file('pages/a.ts', "import type { B } from './b.ts';\nexport type A = B;\n");
      await file(
        'pages/b.ts',
        "/** import { nothing } from './a.ts' is only a comment */\nimport type {\n  A,\n} from " +
          "'./a.ts';\nexport type B = A | 1;\n",
      );
      await file('warehouse/w.ts', "import { q } from '../queue/q.ts';\nexport const w = q;\n");
      await file('queue/q.ts', 'export const q = 1;\n');
      await file(
        'pipeline/p.ts',
        "import { Queue } from 'bullmq';\nexport { x } from './r.ts';\nexport const p = Queue;\n",
      );
      await file('pipeline/r.ts', "export * from './p.ts';\nexport const x = 1;\n");
      // The tracing SDK is app/'s alone; the pipeline traces through src/tracing.ts.
      await file('pipeline/t.ts', "const sdk = await import('@opentelemetry/sdk-trace');\nexport const t = sdk;\n");
      // undici has no `exports`: its files are not its interface. @bull-board/api exports ./bullMQAdapter and ./dist/*.
      await file(
        'report-api/u.ts',
        "import { request } from 'undici';\nimport Agent from 'undici/lib/dispatcher/agent.js';\nimport { " +
          "BullMQAdapter } from '@bull-board/api/bullMQAdapter';\nimport type { X } from " +
          "'@bull-board/api/dist/x.js';\nexport const u = [request, Agent, BullMQAdapter];\n",
      );
      const problems = checkArchitecture(dir, fileURLToPath(new URL('../node_modules/', import.meta.url)));
      expect(problems).toContain('import cycle: pages/a.ts -> pages/b.ts');
      expect(problems).toContain('import cycle: pipeline/p.ts -> pipeline/r.ts');
      expect(
        problems.some((p) => p.startsWith('warehouse/w.ts:1: warehouse imports queue/q.ts, a higher layer (queue)')),
      ).toBe(true);
      expect(problems).toContain('pipeline/p.ts:1: pipeline must not import the package bullmq');
      expect(problems).toContain(
        'report-api/u.ts:2: imports undici/lib/dispatcher/agent.js, which the package undici does not export; ' +
          'import its name or a subpath its package.json "exports" names',
      );
      expect(problems).toContain(
        'pipeline/t.ts:1: pipeline must not import the package @opentelemetry/sdk-trace; only app may',
      );
      expect(problems).toHaveLength(6);
    } finally {
      await rm(dir, { recursive: true, force: true });
    }
  },
);
