/**
 * `REDIS_URL`: one Redis server (`redis://…`, `rediss://…`) or a Redis Cluster,
 * `redis-cluster://[user:password@]host:port[,host:port…]` (`rediss-cluster://` for TLS), whose nodes ioredis finds
 * from any of them (docs/architecture.md "A fleet").
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
 * The installation's key prefix for the Redis at `url`. On a Redis Cluster, BullMQ's scripts and the report slots
 * need one hash slot, so the prefix must carry a hash tag (`{…}`): the default gets one, a chosen one must have it.
 * @param explicit whether the user chose `prefix`
 * @throws ConfigError for a chosen prefix without a hash tag on a cluster
 */
export function prefixForRedis(prefix: string, url: string | undefined, explicit: boolean): string {
  if (url === undefined || !isRedisClusterUrl(url) || /\{[^}]+\}/.test(prefix)) return prefix;
  if (!explicit) return `{${prefix}}`;
  throw new ConfigError([
    `the queue prefix "${prefix}" has no hash tag, which a Redis Cluster needs (REDIS_URL is a cluster): ` +
      `write it as "{${prefix}}" (--queue-prefix or REPORT_ETL_QUEUE_PREFIX)`,
  ]);
}
