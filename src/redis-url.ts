/**
 * What `REDIS_URL` names: one Redis server (`redis://…`, `rediss://…`, as ioredis reads it) or a Redis Cluster,
 * written `redis-cluster://[user:password@]host:port[,host:port…]` (`rediss-cluster://` for TLS): any of the
 * cluster's nodes will do as a start, ioredis finds the others (docs/architecture.md "A fleet").
 */
import { ConfigError } from './errors.ts';

/** A Redis Cluster's start nodes and credentials. */
export interface RedisClusterUrl {
  nodes: { host: string; port: number }[];
  username?: string | undefined;
  password?: string | undefined;
  tls: boolean;
}

const CLUSTER = /^(rediss?)-cluster:\/\/(?:([^:@/]*)(?::([^@/]*))?@)?([^/?#]+)\/?$/;

/** Whether `url` names a Redis Cluster. */
export function isRedisClusterUrl(url: string): boolean {
  return /^rediss?-cluster:\/\//.test(url);
}

/**
 * Reads a `redis-cluster://` URL.
 * @throws ConfigError naming what is wrong and the form to write
 */
export function parseRedisClusterUrl(url: string): RedisClusterUrl {
  const m = CLUSTER.exec(url);
  const form = 'write REDIS_URL=redis-cluster://[user:password@]host:port[,host:port...]';
  if (!m) throw new ConfigError([`REDIS_URL is not a Redis Cluster URL: ${form}`]);
  const nodes = m[4]!.split(',').map((hp) => {
    const at = hp.lastIndexOf(':');
    const host = at < 0 ? hp : hp.slice(0, at);
    const port = at < 0 ? 6379 : Number(hp.slice(at + 1));
    if (!host || !Number.isInteger(port) || port < 1 || port > 65_535)
      throw new ConfigError([`REDIS_URL names a cluster node "${hp}" that is not host:port: ${form}`]);
    return { host: host.replace(/^\[|\]$/g, ''), port };
  });
  const decode = (s: string | undefined) => (s === undefined || s === '' ? undefined : decodeURIComponent(s));
  return { nodes, username: decode(m[2]), password: decode(m[3]), tls: m[1] === 'rediss' };
}

/**
 * The installation's key prefix for the Redis at `url`. On a Redis Cluster every multi-key operation (BullMQ's
 * scripts, the report slots) must stay in one hash slot, so the prefix must carry a hash tag (`{…}`): the default
 * becomes `{report-etl}`, and a prefix without one is refused.
 * @param explicit whether the user chose `prefix` (else it is the default, which is then hash-tagged)
 * @throws ConfigError for a chosen prefix without a hash tag on a cluster
 */
export function prefixForRedis(prefix: string, url: string | undefined, explicit: boolean): string {
  if (url === undefined || !isRedisClusterUrl(url) || /\{[^}]+\}/.test(prefix)) return prefix;
  if (!explicit) return `{${prefix}}`;
  throw new ConfigError([
    `the queue prefix "${prefix}" has no hash tag, which a Redis Cluster needs (REDIS_URL is a cluster): write it as "{${prefix}}" (--queue-prefix or REPORT_ETL_QUEUE_PREFIX)`,
  ]);
}
