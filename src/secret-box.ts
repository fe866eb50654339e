/**
 * Encryption at rest of the refresh tokens of user-dependent service users: AES-256-GCM, keyed by
 * `REPORT_ETL_SECRET_KEY` (32 bytes as 64 hex digits or base64); without a key nothing is stored, never plaintext.
 * A sealed value is `v1:` + base64(iv 12 bytes || auth tag 16 bytes || ciphertext), with the caller's `context` as
 * additional authenticated data, so that a value copied to another row does not open there.
 */
import { createCipheriv, createDecipheriv, createHmac, randomBytes } from 'node:crypto';
import { ConfigError, EtlError } from './errors.ts';

/** The environment variable that holds the key. */
export const SECRET_KEY_ENV = 'REPORT_ETL_SECRET_KEY';

const SECRET_KEY_HOWTO =
  `set ${SECRET_KEY_ENV} to 32 random bytes as 64 hex digits, e.g. \`openssl rand -hex 32\` ` +
  '(keep it like a password: it decrypts the stored refresh tokens)';

/** A parsed key: the AES key and a short public id of it (to tell "another key" from "tampered"). */
export interface SecretKey {
  key: Buffer;
  /** First 16 hex digits of HMAC-SHA256(key, 'report-etl key id'); safe to store. */
  id: string;
}

/** Why `text` (the value of REPORT_ETL_SECRET_KEY) is not a usable key, or undefined when it is one. */
export function secretKeyProblem(text: string | undefined): string | undefined {
  if (text === undefined || text.trim() === '') return `${SECRET_KEY_ENV} is not set: ${SECRET_KEY_HOWTO}`;
  return decodeKey(text.trim())
    ? undefined
    : `${SECRET_KEY_ENV} is not 32 bytes in hex (64 digits) or base64: ${SECRET_KEY_HOWTO}`;
}

function decodeKey(text: string): Buffer | undefined {
  if (/^[0-9a-fA-F]{64}$/.test(text)) return Buffer.from(text, 'hex');
  if (/^[A-Za-z0-9+/_-]{43}=?$/.test(text)) {
    const b = Buffer.from(text, text.includes('-') || text.includes('_') ? 'base64url' : 'base64');
    if (b.length === 32) return b;
  }
  return undefined;
}

/**
 * Reads the key from the environment.
 * @throws ConfigError naming the variable and how to make a key, when it is missing or malformed
 */
export function secretKeyFromEnv(env: NodeJS.ProcessEnv = process.env): SecretKey {
  const problem = secretKeyProblem(env[SECRET_KEY_ENV]);
  if (problem !== undefined) throw new ConfigError([problem]);
  const key = decodeKey(env[SECRET_KEY_ENV]!.trim())!;
  return { key, id: createHmac('sha256', key).update('report-etl key id').digest('hex').slice(0, 16) };
}

/** Encrypts `plaintext` (UTF-8) with a fresh random IV, binding `context` as additional authenticated data. */
export function seal(key: SecretKey, plaintext: string, context: string): string {
  const iv = randomBytes(12);
  const cipher = createCipheriv('aes-256-gcm', key.key, iv);
  cipher.setAAD(Buffer.from(context, 'utf8'));
  const body = Buffer.concat([cipher.update(plaintext, 'utf8'), cipher.final()]);
  return `v1:${Buffer.concat([iv, cipher.getAuthTag(), body]).toString('base64')}`;
}

/**
 * Decrypts a value made by {@link seal} with the same `context`.
 * @throws EtlError CONFIG_INVALID when the value does not open (another key, another context, or altered); the
 *   message never quotes the value
 */
export function open(key: SecretKey, sealed: string, context: string): string {
  const raw = sealed.startsWith('v1:') ? Buffer.from(sealed.slice(3), 'base64') : Buffer.alloc(0);
  if (raw.length < 29) throw new EtlError('CONFIG_INVALID', 'a stored secret is not in the v1 format');
  try {
    const decipher = createDecipheriv('aes-256-gcm', key.key, raw.subarray(0, 12));
    decipher.setAAD(Buffer.from(context, 'utf8'));
    decipher.setAuthTag(raw.subarray(12, 28));
    return Buffer.concat([decipher.update(raw.subarray(28)), decipher.final()]).toString('utf8');
  } catch {
    throw new EtlError(
      'CONFIG_INVALID',
      `a stored secret could not be decrypted with ${SECRET_KEY_ENV} (another key, or the row was altered)`,
      { retryable: false },
    );
  }
}
