/**
 * Checks the layout docs/architecture.md asks for: every import of src/ points down, and no module imports itself back
 * through others. `node scripts/check-architecture.ts` prints each problem and exits 1; test/architecture.test.ts
 * runs the same check.
 *
 * Rules:
 * - No import cycle between modules, type-only imports and re-exports included.
 * - Folders are layered (LAYERS, lowest first): a module imports its own folder or a lower layer only.
 * - Some folders must not load some packages (FORBIDDEN_PACKAGES), e.g. the pipeline knows nothing of BullMQ; some
 *   packages have one home (PACKAGE_HOMES), e.g. the OpenTelemetry SDK is started by app/ alone.
 * - A package is imported through its public entry points only: its name, or a subpath its package.json `exports`
 *   names. A file inside a package is its authors' to move or change in any release.
 */
import { existsSync, readdirSync, readFileSync } from 'node:fs';
import { dirname, join, normalize, relative, sep } from 'node:path';
import { fileURLToPath } from 'node:url';

/**
 * The layers, lowest first. `.` stands for the shared modules at the top of src/ (vocabulary, errors, logger …);
 * `main.ts` is the process entry and may import anything.
 */
export const LAYERS: readonly string[] = [
  '.',
  'copy-binary',
  'simulator',
  'report-api',
  'history',
  'warehouse',
  'pages',
  'config',
  'pipeline',
  'login',
  'alerts',
  'queue',
  'admin',
  'app',
  'cli',
  'main.ts',
];

/** Packages a folder must not import (docs/architecture.md "Layers" for third-party code). */
export const FORBIDDEN_PACKAGES: Readonly<Record<string, readonly string[]>> = {
  '.': ['bullmq', 'fastify', 'undici'],
  'report-api': ['pg', 'bullmq', 'fastify'],
  pages: ['pg', 'bullmq', 'undici', 'fastify'],
  'copy-binary': ['pg', 'bullmq', 'undici', 'fastify', 'ioredis'],
  warehouse: ['bullmq', 'undici', 'fastify'],
  history: ['bullmq', 'undici', 'fastify'],
  config: ['pg', 'bullmq', 'undici', 'fastify'],
  pipeline: ['bullmq', 'fastify'],
  login: ['bullmq', 'fastify'],
  alerts: ['bullmq', 'fastify'],
  simulator: ['pg', 'bullmq', 'ioredis'],
};

/**
 * Packages that only the named folders may import (docs/architecture.md "Observability"): the OpenTelemetry API is
 * used through src/tracing.ts (and app/tracing-sdk.ts, which registers the SDK); the SDK and its exporters are loaded
 * by app/tracing-sdk.ts alone, and only when traces are exported.
 */
export const PACKAGE_HOMES: Readonly<Record<string, readonly string[]>> = {
  '@opentelemetry/api': ['.', 'app'],
  '@opentelemetry/core': ['app'],
  '@opentelemetry/sdk-trace': ['app'],
  '@opentelemetry/resources': ['app'],
  '@opentelemetry/context-async-hooks': ['app'],
  '@opentelemetry/exporter-trace-otlp-http': ['app'],
  '@opentelemetry/exporter-trace-otlp-proto': ['app'],
};

/** One import of one module. */
export interface ImportEdge {
  /** Importing module, relative to the src folder, with '/' separators. */
  from: string;
  /** The module imported (relative to src) or the package name. */
  to: string;
  /** The specifier as written, e.g. `@bull-board/api/bullMQAdapter`. */
  spec: string;
  /** The 1-based line of the import. */
  line: number;
}

// import x from '…' | import type { a } from '…' | import * as x from '…' | import x, { a } from '…' |
// export { a } from '…' | export * from '…' | export type * from '…'; also bare `import '…'` and `import('…')`.
const STATIC = new RegExp(
  /^[ \t]*(?:import|export)(?:[ \t]+type)?[ \t]*/.source +
    /(?:\{[^}]*\}|\*(?:[ \t]+as[ \t]+\w+)?|\w+(?:[ \t]*,[ \t]*(?:\{[^}]*\}|\*[ \t]+as[ \t]+\w+))?)/.source +
    /[ \t\n]*from[ \t]*['"]([^'"]+)['"]/.source,
  'gm',
);
const BARE = /^[ \t]*import[ \t]*['"]([^'"]+)['"]/gm;
const DYNAMIC = /\bimport\(\s*['"]([^'"]+)['"]\s*\)/g;

function listModules(dir: string, base = dir): string[] {
  const out: string[] = [];
  for (const e of readdirSync(dir, { withFileTypes: true })) {
    const p = join(dir, e.name);
    if (e.isDirectory()) out.push(...listModules(p, base));
    else if (e.name.endsWith('.ts')) out.push(relative(base, p).split(sep).join('/'));
  }
  return out.sort();
}

/** Drops comments so that an example in a docstring is not taken for an import; strings are kept as they are. */
function stripComments(text: string): string {
  return text.replace(/\/\*[\s\S]*?\*\//g, (c) => c.replace(/[^\n]/g, ' ')).replace(/(^|[^:'"`\\])\/\/[^\n]*/g, '$1');
}

/**
 * Reads every import of every module under `srcDir`.
 * @returns edges to modules (relative specifiers resolved) and to packages (bare specifiers, `node:` left out)
 */
export function readImports(srcDir: string): ImportEdge[] {
  const edges: ImportEdge[] = [];
  for (const from of listModules(srcDir)) {
    const text = stripComments(readFileSync(join(srcDir, from), 'utf8'));
    for (const re of [STATIC, BARE, DYNAMIC]) {
      re.lastIndex = 0;
      for (const m of text.matchAll(re)) {
        const spec = m[1]!;
        if (spec.startsWith('node:')) continue;
        const line = text.slice(0, m.index).split('\n').length;
        if (spec.startsWith('.'))
          edges.push({
            from,
            to: normalize(join(dirname(from), spec))
              .split(sep)
              .join('/'),
            spec,
            line,
          });
        else
          edges.push({
            from,
            to: spec.startsWith('@') ? spec.split('/').slice(0, 2).join('/') : spec.split('/')[0]!,
            spec,
            line,
          });
      }
    }
  }
  return edges;
}

/**
 * Whether `spec` is a public entry point of the package `name` installed under `packagesDir`: the name itself, or a
 * subpath that the package's `exports` names (exactly, or through one `*` pattern). A package without `exports`
 * has no public subpath.
 */
export function isPublicEntry(spec: string, name: string, packagesDir: string): boolean {
  if (spec === name) return true;
  const manifest = join(packagesDir, name, 'package.json');
  if (!existsSync(manifest)) return false;
  const { exports } = JSON.parse(readFileSync(manifest, 'utf8')) as { exports?: unknown };
  if (exports === null || typeof exports !== 'object' || Array.isArray(exports)) return false;
  const subpath = `.${spec.slice(name.length)}`;
  return Object.keys(exports).some((key) => {
    const star = key.indexOf('*');
    return star < 0 ? key === subpath : subpath.startsWith(key.slice(0, star)) && subpath.endsWith(key.slice(star + 1));
  });
}

/** The layer name of a module: its top folder, `.` for a shared module at the top, `main.ts` for the entry. */
export function layerOf(module: string): string {
  if (module === 'main.ts') return 'main.ts';
  return module.includes('/') ? module.split('/')[0]! : '.';
}

/** Every cycle of the module graph, each as the list of modules in it (Tarjan's strongly connected components). */
export function findCycles(edges: readonly ImportEdge[]): string[][] {
  const graph = new Map<string, string[]>();
  for (const e of edges) {
    if (!e.to.endsWith('.ts')) continue;
    if (!graph.has(e.from)) graph.set(e.from, []);
    graph.get(e.from)!.push(e.to);
    if (!graph.has(e.to)) graph.set(e.to, []);
  }
  let index = 0;
  const idx = new Map<string, number>();
  const low = new Map<string, number>();
  const stack: string[] = [];
  const onStack = new Set<string>();
  const cycles: string[][] = [];
  const visit = (v: string): void => {
    idx.set(v, index);
    low.set(v, index++);
    stack.push(v);
    onStack.add(v);
    for (const w of graph.get(v)!) {
      if (!idx.has(w)) {
        visit(w);
        low.set(v, Math.min(low.get(v)!, low.get(w)!));
      } else if (onStack.has(w)) low.set(v, Math.min(low.get(v)!, idx.get(w)!));
    }
    if (low.get(v) === idx.get(v)) {
      const scc: string[] = [];
      let w: string;
      do {
        w = stack.pop()!;
        onStack.delete(w);
        scc.push(w);
      } while (w !== v);
      if (scc.length > 1 || graph.get(v)!.includes(v)) cycles.push(scc.sort());
    }
  };
  for (const v of [...graph.keys()].sort()) if (!idx.has(v)) visit(v);
  return cycles;
}

/**
 * Checks `srcDir` against the rules above.
 * @param packagesDir where the imported packages are installed (default: node_modules beside `srcDir`)
 * @returns one line per problem (`file:line: what`), empty when the layout holds
 */
export function checkArchitecture(srcDir: string, packagesDir = join(srcDir, '..', 'node_modules')): string[] {
  const edges = readImports(srcDir);
  const problems: string[] = [];
  for (const cycle of findCycles(edges)) problems.push(`import cycle: ${cycle.join(' -> ')}`);
  for (const e of edges) {
    const from = layerOf(e.from);
    const rank = LAYERS.indexOf(from);
    if (e.to.endsWith('.ts')) {
      const to = layerOf(e.to);
      if (to === from) continue;
      if (rank === -1 || LAYERS.indexOf(to) === -1)
        problems.push(
          `${e.from}:${e.line}: ${from} or ${to} is not a layer of LAYERS in scripts/check-architecture.ts`,
        );
      else if (LAYERS.indexOf(to) > rank)
        problems.push(
          `${e.from}:${e.line}: ${from} imports ${e.to}, a higher layer (${to}); ` +
            `imports point down: ${LAYERS.join(' < ')}`,
        );
    } else if (FORBIDDEN_PACKAGES[from]?.includes(e.to)) {
      problems.push(`${e.from}:${e.line}: ${from} must not import the package ${e.to}`);
    } else if (PACKAGE_HOMES[e.to] && !PACKAGE_HOMES[e.to]!.includes(from)) {
      problems.push(
        `${e.from}:${e.line}: ${from} must not import the package ${e.to}; only ${PACKAGE_HOMES[e.to]!.join(', ')} may`,
      );
    } else if (!isPublicEntry(e.spec, e.to, packagesDir)) {
      problems.push(
        `${e.from}:${e.line}: imports ${e.spec}, which the package ${e.to} does not export; ` +
          `import its name or a subpath its package.json "exports" names`,
      );
    }
  }
  return problems;
}

if (process.argv[1] && fileURLToPath(import.meta.url) === process.argv[1]) {
  const src = fileURLToPath(new URL('../src/', import.meta.url));
  const problems = checkArchitecture(src);
  for (const p of problems) process.stderr.write(`${p}\n`);
  process.stdout.write(
    problems.length
      ? `${problems.length} layout problem${problems.length === 1 ? '' : 's'}\n`
      : 'layout ok: no import cycle, every import points down, packages by their public entry points\n',
  );
  process.exitCode = problems.length ? 1 : 0;
}
