import { parseDuration } from '../core/durations.js';

// RATE_LIMIT's value, apart from the limiter that applies it (rate-limit.ts), so that reading the
// configuration loads no limiter.

/** At most `limit` requests per `windowMs` per credential (RATE_LIMIT, e.g. `600/1m`). */
export interface RateLimitPolicy {
  limit: number;
  windowMs: number;
}

/**
 * Parses RATE_LIMIT: `<requests>/<window>` such as `600/1m` or `100/30s` (whole seconds, at least 1 s), or
 * `off`. Undefined when the text is neither.
 */
export const parseRateLimit = (text: string): RateLimitPolicy | null | undefined => {
  if (text.trim().toLowerCase() === 'off') return null;
  const match = /^\s*([1-9]\d{0,8})\s*\/\s*(\S+)\s*$/.exec(text);
  if (!match) return undefined;
  const windowMs = parseDuration(match[2]!);
  if (windowMs === undefined || windowMs < 1000 || windowMs % 1000 !== 0) return undefined;
  return { limit: Number(match[1]), windowMs };
};
