/**
 * src/ uses pg, pg-copy-streams, undici, BullMQ and ioredis through what their authors document, never their internals
 * (a private or deprecated member changes or goes in any release, as pg's `activeQuery` does in pg 9). Read with
 * TypeScript's parser, and its types where a name alone cannot tell. Refused:
 * - a member whose name starts with `_` (these libraries' private members; report-etl's own code has none);
 * - pg's Client internals: `activeQuery`, `queryQueue`, `secretKey`, and `.connection` (its protocol connection, whose
 *   `.stream` is the socket) or `.cancel` (the protocol's cancel request) of an object pg's types declare;
 * - a cast that gives one of these libraries' objects members its types lack (`client as pg.Client & { cancel… }`,
 *   `client as { connection?: … }`): the way around the two rules above;
 * - `setFlagsFromString`: V8 flags changed at run time.
 * Nothing is allowed per file today ({@link ALLOWED} lists a member with its reason when one must be).
 */
import { existsSync, readdirSync, readFileSync } from 'node:fs';
import { join, relative } from 'node:path';
import { fileURLToPath } from 'node:url';
import ts from 'typescript';
import { expect, it } from 'vitest';

const LIBRARIES =
  /\/node_modules\/(@types\/)?(pg|pg-pool|pg-protocol|pg-copy-streams|undici|undici-types|bullmq|ioredis)\//;
const PG_INTERNALS = new Set(['activeQuery', 'queryQueue', 'secretKey']);
const PG_TYPED_INTERNALS = new Set(['connection', 'cancel']);
/** Members allowed per file (see the file comment). */
const ALLOWED: Readonly<Record<string, readonly string[]>> = {};

const PACKAGES = ['pg', 'pg-copy-streams', 'undici', 'undici-types', 'bullmq', 'ioredis', '@types/pg'];

/** The names the packages' types mark @deprecated: the accesses whose types are worth reading. */
function deprecatedNames(modules: string): Set<string> {
  const names = new Set<string>();
  for (const pkg of PACKAGES.map((p) => join(modules, p)).filter(existsSync)) {
    for (const f of readdirSync(pkg, { recursive: true, encoding: 'utf8' }).filter((n) => n.endsWith('.d.ts'))) {
      const text = readFileSync(join(pkg, f), 'utf8');
      if (!text.includes('@deprecated')) continue;
      const visit = (node: ts.Node): void => {
        const name = (node as ts.NamedDeclaration).name;
        if (name && ts.isIdentifier(name) && ts.getJSDocDeprecatedTag(node)) names.add(name.text);
        ts.forEachChild(node, visit);
      };
      visit(ts.createSourceFile(f, text, ts.ScriptTarget.Latest, true));
    }
  }
  return names;
}

/** Each access to a library's internals in the .ts files under `dir`, as `file:line: what`. */
function libraryInternals(dir: string): string[] {
  const files = readdirSync(dir, { recursive: true, encoding: 'utf8' })
    .filter((f) => f.endsWith('.ts'))
    .map((f) => join(dir, f));
  const program = ts.createProgram(files, {
    module: ts.ModuleKind.NodeNext,
    moduleResolution: ts.ModuleResolutionKind.NodeNext,
    target: ts.ScriptTarget.ES2023,
    allowImportingTsExtensions: true,
    noEmit: true,
    skipLibCheck: true,
    types: ['node'],
  });
  const checker = program.getTypeChecker();
  const deprecated = deprecatedNames(fileURLToPath(new URL('../node_modules/', import.meta.url)));
  const fromLibrary = (declarations: readonly ts.Declaration[] | undefined): boolean =>
    (declarations ?? []).some((d) => LIBRARIES.test(d.getSourceFile().fileName));
  const isLibraryType = (t: ts.Type): boolean =>
    t.isUnionOrIntersection()
      ? t.types.some(isLibraryType)
      : fromLibrary((t.aliasSymbol ?? t.getSymbol())?.declarations);
  const found: string[] = [];
  for (const file of files) {
    const source = program.getSourceFile(file)!;
    const name = relative(dir, file);
    const report = (node: ts.Node, what: string, key: string): void => {
      if (ALLOWED[name]?.includes(key)) return;
      found.push(`${name}:${source.getLineAndCharacterOfPosition(node.getStart()).line + 1}: ${what}`);
    };
    const visit = (node: ts.Node): void => {
      if (ts.isPropertyAccessExpression(node)) {
        const member = node.name.text;
        if (member.startsWith('_')) report(node, `reads the private member ${member}`, member);
        else if (PG_INTERNALS.has(member)) report(node, `reads pg's internal ${member}`, member);
        else if (
          member === 'stream' &&
          ts.isPropertyAccessExpression(node.expression) &&
          node.expression.name.text === 'connection'
        )
          report(node, "reads pg's socket (.connection.stream)", 'connection');
        else if (PG_TYPED_INTERNALS.has(member) || deprecated.has(member)) {
          const symbol = checker.getSymbolAtLocation(node.name);
          if (!fromLibrary(symbol?.declarations)) {
            // report-etl's own, or the standard library's
          } else if (PG_TYPED_INTERNALS.has(member)) report(node, `reads pg's internal ${member}`, member);
          else if (symbol!.getJsDocTags(checker).some((t) => t.name === 'deprecated'))
            report(node, `reads the deprecated ${member}`, member);
        }
      } else if (ts.isIdentifier(node) && node.text === 'setFlagsFromString')
        report(node, 'changes V8 flags at run time (setFlagsFromString)', node.text);
      else if (isCast(node) && hasTypeLiteral(node.type) && isLibraryType(checker.getTypeAtLocation(castFrom(node))))
        report(node, `casts a library's object to members its types lack (${node.type.getText(source)})`, 'cast');
      ts.forEachChild(node, visit);
    };
    visit(source);
  }
  return found;
}

function isCast(node: ts.Node): node is ts.AsExpression | ts.TypeAssertion {
  return ts.isAsExpression(node) || ts.isTypeAssertionExpression(node);
}

/** What `x as unknown as T` casts: `x`. */
function castFrom(node: ts.AsExpression | ts.TypeAssertion): ts.Expression {
  let e = node.expression;
  while (ts.isParenthesizedExpression(e) || isCast(e)) e = e.expression;
  return e;
}

function hasTypeLiteral(node: ts.Node): boolean {
  return ts.isTypeLiteralNode(node) || (ts.forEachChild(node, (c) => hasTypeLiteral(c) || undefined) ?? false);
}

it('src/ reads no private, deprecated or internal member of pg, pg-copy-streams, undici, BullMQ or ioredis', () => {
  expect(libraryInternals(fileURLToPath(new URL('../src/', import.meta.url)))).toEqual([]);
});

it('finds each kind of access it refuses', async () => {
  const { mkdtemp, writeFile, rm } = await import('node:fs/promises');
  // Inside the repository, so that the packages' types resolve from its node_modules.
  const dir = await mkdtemp(join(fileURLToPath(new URL('../', import.meta.url)), '.internals-'));
  try {
    await writeFile(
      join(dir, 'bad.ts'),
      [
        "import pg from 'pg';",
        "import { setFlagsFromString } from 'node:v8';",
        'export function bad(pool: pg.Pool, client: pg.PoolClient, config: { connection: string }): unknown[] {',
        '  const c = new pg.Client(pool.options);',
        '  return [',
        '    (client as pg.PoolClient & { activeQuery?: unknown }).activeQuery,',
        '    (client as { connection?: { stream?: unknown } }).connection?.stream,',
        '    c.connection,',
        '    (pool as unknown as { _clients: unknown[] })._clients,',
        '    config.connection,',
        "    setFlagsFromString('--x'),",
        '  ];',
        '}',
        "export const end = (redis: import('ioredis').Redis): void => redis.end();",
      ].join('\n'),
    );
    expect(libraryInternals(dir)).toEqual([
      'bad.ts:2: changes V8 flags at run time (setFlagsFromString)',
      "bad.ts:6: reads pg's internal activeQuery",
      "bad.ts:6: casts a library's object to members its types lack (pg.PoolClient & { activeQuery?: unknown })",
      "bad.ts:7: reads pg's socket (.connection.stream)",
      "bad.ts:7: casts a library's object to members its types lack ({ connection?: { stream?: unknown } })",
      "bad.ts:8: reads pg's internal connection",
      'bad.ts:9: reads the private member _clients',
      "bad.ts:9: casts a library's object to members its types lack ({ _clients: unknown[] })",
      'bad.ts:11: changes V8 flags at run time (setFlagsFromString)',
      'bad.ts:14: reads the deprecated end',
    ]);
  } finally {
    await rm(dir, { recursive: true, force: true });
  }
});
