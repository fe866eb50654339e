/** The process entry (docs/architecture.md "One build"): runs the command line and sets the exit code. */
import { enableCompileCache } from 'node:module';
import { main } from './cli/main.ts';

// V8's code cache on disk halves the load time of the modules each command loads lazily
// (NODE_DISABLE_COMPILE_CACHE=1 turns it off).
enableCompileCache?.();

// A reader that stops early (`report-etl runs | head`) closes the pipe: no error of ours, but an unhandled EPIPE.
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
