/**
 * The two parts of undici that report-etl uses — the keep-alive Agent and the request API — loaded without the rest
 * of the package: its index also loads fetch, WebSocket, EventSource, the mock agents and the cache stores, 30 to 45 ms
 * of every start of a `report-etl run` (issue 14). undici declares no `exports` map, so its files are reachable by
 * path; test/undici-core.test.ts checks that these are the very objects the package's index exports, so an upgrade that
 * moves them fails there, not in production.
 */
import type { Agent as AgentClass, Dispatcher } from 'undici';
// Static imports (declared in undici-parts.d.ts), so that the build's bundle (scripts/bundle.js) takes these files in
// too instead of loading them one by one from node_modules at every start.
import AgentExport from 'undici/lib/dispatcher/agent.js';
import dispatchRequest from 'undici/lib/api/api-request.js';

/** undici's Agent (lib/dispatcher/agent.js), as `import { Agent } from 'undici'`. */
export const Agent = AgentExport;
/** An undici Agent. */
export type Agent = AgentClass;

type RequestOptions = Omit<Dispatcher.RequestOptions, 'origin' | 'path' | 'method'> & Partial<Pick<Dispatcher.RequestOptions, 'method'>> & { dispatcher?: Dispatcher };

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
