/**
 * The process entry: runs the command line and sets the exit code. bin/report-etl.js loads it compiled, bundled as
 * dist/bundle/main.js (else as dist/main.js), when that build is not older than the sources, else from the sources
 * (Node strips the types); the Docker image runs dist/bundle/main.js. The build saves the type stripper's memory
 * (about 30 MB of RSS) and start-up time.
 */
import { enableCompileCache } from 'node:module';
import { main } from './cli/main.ts';

// V8's code cache on disk (os.tmpdir()/node-compile-cache) for the modules each command loads lazily: they load in
// about half the time after the first start (issue 14). NODE_DISABLE_COMPILE_CACHE=1 turns it off.
enableCompileCache?.();

main(process.argv).then(
  (code) => {
    process.exitCode = code;
  },
  (err: unknown) => {
    process.stderr.write(`report-etl: ${err instanceof Error ? (err.stack ?? err.message) : String(err)}\n`);
    process.exitCode = 2;
  },
);
