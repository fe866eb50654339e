/**
 * The process entry: runs the command line and sets the exit code. bin/report-etl.js and the Docker image run it
 * compiled, as dist/main.js (the one build: `npm run build`, also run by `npm ci`); `npm run dev -- <args>` runs it
 * from the sources (Node strips the types). The build saves the type stripper's memory (about 30 MB of RSS).
 */
import { enableCompileCache } from 'node:module';
import { main } from './cli/main.ts';

// V8's code cache on disk (os.tmpdir()/node-compile-cache) for the modules each command loads lazily: they load in
// about half the time after the first start. NODE_DISABLE_COMPILE_CACHE=1 turns it off.
enableCompileCache?.();

// A reader that stops early (`report-etl runs | head`) closes the pipe: the output is no longer wanted, which is no
// error of ours. Node reports it as an EPIPE error event on stdout, unhandled (a stack trace) unless listened for.
process.stdout.on('error', (err: NodeJS.ErrnoException) => {
  if (err.code !== 'EPIPE') throw err;
  process.exit(process.exitCode ?? 0);
});

main(process.argv).then(
  (code) => {
    process.exitCode = code;
  },
  (err: unknown) => {
    process.stderr.write(`report-etl: ${err instanceof Error ? (err.stack ?? err.message) : String(err)}\n`);
    process.exitCode = 2;
  },
);
