/**
 * The process entry: runs the command line and sets the exit code. bin/report-etl.js loads it from the sources
 * (Node strips the types); the Docker image runs it compiled, as dist/main.js (`npm run build`), which saves the
 * type stripper's memory (about 30 MB of RSS) in production.
 */
import { main } from './cli/main.ts';

main(process.argv).then(
  (code) => {
    process.exitCode = code;
  },
  (err: unknown) => {
    process.stderr.write(`report-etl: ${err instanceof Error ? (err.stack ?? err.message) : String(err)}\n`);
    process.exitCode = 2;
  },
);
