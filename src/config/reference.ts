/**
 * The jobs.yaml reference (docs/configuration.md "Configuration reference") from the schema's JSON Schema export, so
 * that it cannot drift; also the options at a YAML path, for "did you mean" hints.
 */
import { z } from 'zod';
import { configSchema } from './schema.ts';
import type { ConfigPath } from './interpolate.ts';

/** The subset of JSON Schema (draft 2020-12) zod emits for the config schema. */
export interface JsonSchemaNode {
  type?: string | string[];
  description?: string;
  default?: unknown;
  enum?: unknown[];
  anyOf?: JsonSchemaNode[];
  properties?: Record<string, JsonSchemaNode>;
  required?: string[];
  additionalProperties?: JsonSchemaNode | boolean;
  propertyNames?: JsonSchemaNode;
  items?: JsonSchemaNode;
  minimum?: number;
  exclusiveMinimum?: number;
  minLength?: number;
  pattern?: string;
  format?: string;
}

let cached: JsonSchemaNode | undefined;

/** The input-side JSON Schema of jobs.yaml; memoized. */
function configJsonSchema(): JsonSchemaNode {
  cached ??= z.toJSONSchema(configSchema, {
    io: 'input',
    unrepresentable: 'any',
    override: (ctx) => {
      // zod omits some defaults (a record whose values transform); take them from the wrapper itself.
      const s = ctx.zodSchema;
      if (s instanceof z.ZodDefault && ctx.jsonSchema.default === undefined)
        ctx.jsonSchema.default = s.def.defaultValue;
    },
  }) as JsonSchemaNode;
  return cached;
}

/** Follows one key into a schema node: object property, record value, array item, or a union branch. */
function step(node: JsonSchemaNode, key: string | number): JsonSchemaNode | undefined {
  if (typeof key === 'number') return node.items;
  if (node.properties?.[key]) return node.properties[key];
  if (typeof node.additionalProperties === 'object' && node.propertyNames) return node.additionalProperties;
  for (const branch of node.anyOf ?? []) {
    const found = step(branch, key);
    if (found) return found;
  }
  return undefined;
}

/** The schema node of the option at a YAML path (`['jobs', 'x', 'report', 'paging']`), if any. */
export function schemaAt(path: ConfigPath): JsonSchemaNode | undefined {
  let node: JsonSchemaNode | undefined = configJsonSchema();
  for (const key of path) {
    if (!node) return undefined;
    node = step(node, key);
  }
  return node;
}

/** The option names allowed in the object at `path` (`[]` when it is not a fixed-key object). */
export function optionsAt(path: ConfigPath): string[] {
  const node = schemaAt(path);
  if (!node) return [];
  const objects = [node, ...(node.anyOf ?? [])].filter((n) => n.properties);
  return objects.flatMap((n) => Object.keys(n.properties!));
}

/** A short type text for a schema node: `integer (≥ 10)`, `"json" | "txt"`, `map of object`, `list of string`. */
export function typeText(node: JsonSchemaNode): string {
  if (node.enum) return node.enum.map((v) => JSON.stringify(v)).join(' | ');
  if (node.anyOf) return node.anyOf.map(typeText).join(' | ');
  if (node.type === 'array') return `list of ${node.items ? typeText(node.items) : 'any'}`;
  if (node.type === 'object' && !node.properties && typeof node.additionalProperties === 'object') {
    return `map of ${typeText(node.additionalProperties)}`;
  }
  if (node.type === 'object' && node.properties) return 'object';
  const type = Array.isArray(node.type) ? node.type.join(' | ') : (node.type ?? 'any');
  const min = node.minimum ?? (node.exclusiveMinimum !== undefined ? node.exclusiveMinimum + 1 : undefined);
  if ((type === 'integer' || type === 'number') && min !== undefined) return `${type} (≥ ${min})`;
  if (node.format === 'uri') return 'URL';
  return type;
}

function cell(text: string): string {
  return text.replaceAll('|', '\\|').replaceAll('\n', ' ');
}

/** The fixed-key object sections of the schema, in document order, with their titles. */
function referenceSections(): { title: string; path: string[]; node: JsonSchemaNode }[] {
  const sections: { title: string; path: string[]; node: JsonSchemaNode }[] = [];
  const visit = (node: JsonSchemaNode, title: string, path: string[]) => {
    if (node.properties) {
      sections.push({ title, path, node });
      for (const [key, child] of Object.entries(node.properties))
        visit(child, title === '' ? key : `${title}.${key}`, [...path, key]);
    } else if (typeof node.additionalProperties === 'object' && node.propertyNames) {
      visit(node.additionalProperties, `${title}.<name>`, [...path, '<name>']);
    }
    for (const branch of node.anyOf ?? []) if (branch.properties) visit(branch, title, path);
  };
  visit(configJsonSchema(), '', []);
  return sections;
}

/**
 * The jobs.yaml reference as markdown: per object a `###` section with a table of option, type, default and
 * description, which docs/configuration.md embeds (scripts/update-config-reference.ts).
 */
export function renderConfigReference(): string {
  const out: string[] = [];
  const sections = referenceSections();
  const titles = new Set(sections.map((s) => s.title));
  for (const { title, node } of sections) {
    out.push(`### \`${title === '' ? '(top level)' : title}\``, '');
    if (node.description) out.push(node.description, '');
    out.push('| option | type | default | description |', '|---|---|---|---|');
    const required = new Set(node.required ?? []);
    for (const [key, child] of Object.entries(node.properties ?? {})) {
      const dflt =
        child.default !== undefined ? `\`${JSON.stringify(child.default)}\`` : required.has(key) ? 'required' : '—';
      const at = `${title === '' ? '' : `${title}.`}${key}`;
      const nested = [at, `${at}.<name>`].find((t) => titles.has(t));
      const see = nested ? `${child.description ? ' ' : ''}See \`${nested}\`.` : '';
      out.push(
        `| \`${key}\` | ${cell(typeText(child))} | ${cell(dflt)} | ${cell(`${child.description ?? ''}${see}`)} |`,
      );
    }
    out.push('');
  }
  return out.join('\n');
}
