/**
 * jobs.yaml: the schema (src/config/schema.ts), `${VAR}` interpolation, loading with every problem listed,
 * watching for changes, and the rendered configuration reference.
 */
export * from './schema.ts';
export { interpolate, formatPath, SECRET_KEY, WHOLE_REFERENCE } from './interpolate.ts';
export type { ConfigPath, InterpolateHooks } from './interpolate.ts';
export { loadConfig, validateConfigText, resolveJob, parseWindow, isTimeZone } from './load.ts';
export { closestMatch } from './problems.ts';
export type { LoadedConfig, ResolvedJob } from './load.ts';
export { watchConfig } from './watch.ts';
export type { ConfigWatchHandlers, ConfigWatcher } from './watch.ts';
export { renderConfigReference, referenceSections, schemaAt, optionsAt, configJsonSchema } from './reference.ts';
export type { JsonSchemaNode } from './reference.ts';
