/** The README gives the two commands, and its Commands table matches the CLI. */
import { readFileSync } from 'node:fs';
import { Command } from 'commander';
import { expect, it } from 'vitest';
import { allCommands } from '../src/cli/commands.ts';

it('README.md gives the two commands, and every command it documents exists in the CLI', async () => {
  const readme = readFileSync(new URL('../README.md', import.meta.url), 'utf8');
  expect(readme).toContain('npm ci && npm run demo');
  expect(readme).toContain('npm ci && npm test');
  const program = new Command('report-etl');
  for (const register of await allCommands())
    register(program, { out: () => undefined, err: () => undefined, exit: () => undefined });
  const names = new Set(program.commands.map((c) => c.name()));
  const section = readme.slice(
    readme.indexOf('## Commands'),
    readme.indexOf('\n## ', readme.indexOf('## Commands') + 1),
  );
  const documented = [...section.matchAll(/^\| `([a-z]+)[ `]/gm)].map((m) => m[1]!);
  expect(documented.length).toBeGreaterThan(10);
  for (const name of documented) expect(names.has(name), `README documents "${name}"`).toBe(true);
  for (const name of names) expect(documented, `README lacks "${name}"`).toContain(name);
});
