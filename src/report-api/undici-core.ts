/**
 * The two parts of undici that report-etl uses — the keep-alive Agent and the request API — loaded without the rest
 * of the package: its index also loads fetch, WebSocket, EventSource, the mock agents and the cache stores, 30 to 45 ms
 * of every start of a `report-etl run` (issue 14). undici declares no `exports` map, so its files are reachable by
 * path; test/undici-core.test.ts checks that these are the very objects the package's index exports, so an upgrade that
 * moves them fails there, not in production.
 */
import { createRequire } from 'node:module';
import type { Agent as AgentClass, Dispatcher } from 'undici';

const require = createRequire(import.meta.url);

/** undici's Agent (lib/dispatcher/agent.js), as `import { Agent } from 'undici'`. */
export const Agent = require('undici/lib/dispatcher/agent.js') as typeof AgentClass;
/** An undici Agent. */
export type Agent = AgentClass;

type RequestOptions = Omit<Dispatcher.RequestOptions, 'origin' | 'path' | 'method'> & Partial<Pick<Dispatcher.RequestOptions, 'method'>> & { dispatcher?: Dispatcher };

const dispatchRequest = require('undici/lib/api/api-request.js') as (this: Dispatcher, opts: Dispatcher.RequestOptions) => Promise<Dispatcher.ResponseData>;

let sharedAgent: AgentClass | undefined;

/**
 * `request(url, options)` as undici's: one request through `options.dispatcher` (default: one keep-alive Agent of this
 * process, as undici's global dispatcher), method GET unless given.
 * @returns the response; the caller consumes or destroys its body
 * @throws what undici throws (network errors, timeouts, an aborted signal)
 */
export function request(url: string, options: RequestOptions = {}): Promise<Dispatcher.ResponseData> {
  const { dispatcher, ...rest } = options;
  const u = new URL(url);
  const through = dispatcher ?? (sharedAgent ??= new Agent());
  return dispatchRequest.call(through, { ...rest, origin: u.origin, path: `${u.pathname}${u.search}`, method: options.method ?? 'GET' } as Dispatcher.RequestOptions);
}
