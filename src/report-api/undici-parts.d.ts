/**
 * Types of the two undici files src/report-api/undici-core.ts imports by path (CommonJS modules: their default
 * export is `module.exports`). undici ships no types for them; these are the types of what its index re-exports.
 */
declare module 'undici/lib/dispatcher/agent.js' {
  import type { Agent } from 'undici';
  const AgentClass: typeof Agent;
  export default AgentClass;
}

declare module 'undici/lib/api/api-request.js' {
  import type { Dispatcher } from 'undici';
  /** undici's `Dispatcher.prototype.request`, called with the dispatcher as `this`. */
  const request: (this: Dispatcher, opts: Dispatcher.RequestOptions) => Promise<Dispatcher.ResponseData>;
  export default request;
}
