// Preloaded by `npm run demo` (node --import): turns on Node's compile cache (os.tmpdir()/node-compile-cache) before
// the TypeScript script and the sources it imports load, so that from the second start on they come from V8's code
// cache without the type stripper: less memory and a quicker start. NODE_DISABLE_COMPILE_CACHE=1 turns it off.
import { enableCompileCache } from 'node:module';

enableCompileCache?.();
