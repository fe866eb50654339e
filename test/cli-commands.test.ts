/**
 * The command table (src/cli/commands.ts): each command's module is loaded only when it is registered (start-up
 * cost), so the table's names must be what the modules register, and a command line that names no
 * command (--help, a typo) must still see every command.
 */
import { Command } from 'commander';
import { describe, expect, it } from 'vitest';
import { allCommands, commands, commandsFor } from '../src/cli/commands.ts';
import { runCli } from './support/cli-process.ts';

const quiet = { out: () => undefined, err: () => undefined, exit: () => undefined };

function registered(registrations: ReadonlyArray<(p: Command, c: typeof quiet) => void>): string[] {
  const program = new Command('report-etl');
  for (const register of registrations) register(program, quiet);
  return program.commands.map((c) => c.name());
}

describe('command table', () => {
  it('names each command as its module registers it, once, in --help order', async () => {
    for (const entry of commands) expect(registered([await entry.load()]), entry.name).toEqual([entry.name]);
    expect(registered(await allCommands())).toEqual(commands.map((c) => c.name));
    expect(new Set(commands.map((c) => c.name)).size).toBe(commands.length);
  });

  it('registers only the command a command line names, and every command otherwise', async () => {
    expect(registered(await commandsFor(['run', 'orders', '--param', 'X=1']))).toEqual(['run']);
    expect(registered(await commandsFor(['documents', 'some-run-id']))).toEqual(['documents']);
    for (const args of [[], ['--help'], ['-V'], ['help', 'run'], ['rnu', 'orders']]) {
      expect(registered(await commandsFor(args)), args.join(' ')).toEqual(commands.map((c) => c.name));
    }
  });
});

describe('the command line with lazily loaded commands', () => {
  it("--help lists every command; a command's --help shows its own options", async () => {
    const help = await runCli(['--help']);
    expect(help.code).toBe(0);
    for (const { name } of commands) expect(help.stdout, name).toMatch(new RegExp(`^  ${name}\\b`, 'm'));
    const runHelp = await runCli(['run', '--help']);
    expect(runHelp.code).toBe(0);
    expect(runHelp.stdout).toContain('--run-key <key>');
    const viaHelp = await runCli(['help', 'backfill']);
    expect(viaHelp.code).toBe(0);
    expect(viaHelp.stdout).toContain('Usage: report-etl backfill');
  });

  it('a misspelt command is a usage error that suggests the command meant', async () => {
    const typo = await runCli(['rnu', 'orders']);
    expect(typo.code).toBe(2);
    expect(typo.stderr).toContain("unknown command 'rnu'");
    expect(typo.stderr).toContain('(Did you mean run?)');
  });
});

describe('--config', () => {
  it('every command takes it, so that a wrapper may pass it to each', async () => {
    const program = new Command('report-etl');
    for (const register of await allCommands()) register(program, quiet);
    for (const c of program.commands)
      expect(
        c.options.map((o) => o.long),
        c.name(),
      ).toContain('--config');
  });

  it('a command that needs no jobs.yaml accepts it and goes on; runs warns that it gives no zones', async () => {
    const migrate = await runCli(['migrate', '--config', '/nonexistent/jobs.yaml']);
    expect(migrate.stderr).not.toContain('unknown option');
    expect(migrate.code, migrate.stderr).toBe(0);
    const runs = await runCli(['runs', '--job', 'no_such_job_anywhere', '--config', '/nonexistent/jobs.yaml']);
    expect(runs.stderr).not.toContain('unknown option');
    expect(runs.stderr).toContain('/nonexistent/jobs.yaml: file not found');
    expect(runs.stderr).toContain('times are printed in UTC');
  });
});
