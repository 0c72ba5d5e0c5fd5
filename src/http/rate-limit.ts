import type { Context, Middleware } from 'koa';
import { parseDuration } from '../core/durations.js';
import { TooManyRequestsError } from '../core/errors.js';
import type { Clock } from '../core/ids.js';

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

/** Windows kept at most in memory; beyond this the oldest are dropped (a dropped key starts a fresh window). */
const maxKeys = 100_000;

/** Where the request counts live: in this process, or in a store every instance shares. */
export interface RequestWindows {
  /**
   * Counts one request for the key, atomically: in its current fixed window, or in a new one of `windowMs`
   * from `now` when the last one ended. Answers the count so far and when the window ends (epoch ms).
   */
  hit(key: string, now: number, windowMs: number): Promise<{ count: number; resetAt: number }>;
  close(): Promise<void>;
}

/** Counts in this process: N instances behind a balancer allow up to N times the limit. */
export const memoryWindows = (): RequestWindows => {
  const windows = new Map<string, { count: number; resetAt: number }>();
  let sweptAt = 0;
  const sweep = (now: number, windowMs: number) => {
    if (now - sweptAt < windowMs) return;
    sweptAt = now;
    for (const [key, window] of windows) if (window.resetAt <= now) windows.delete(key);
  };
  return {
    hit: (key, now, windowMs) => {
      sweep(now, windowMs);
      let window = windows.get(key);
      if (!window || window.resetAt <= now) {
        windows.delete(key);
        window = { count: 0, resetAt: now + windowMs };
        windows.set(key, window);
        if (windows.size > maxKeys) windows.delete(windows.keys().next().value!);
      }
      window.count += 1;
      return Promise.resolve({ ...window });
    },
    close: () => Promise.resolve(),
  };
};

/** Paths never limited: load balancers poll health. */
const unlimited = new Set(['/health', '/health/live', '/health/ready']);

/**
 * Who is calling: the service's authenticator (src/auth/authenticate.ts), which app.ts passes in; it
 * rejects a request without a valid credential.
 */
export interface CallerIdentity {
  authenticate(ctx: Context): Promise<{ actor: string }>;
}

/**
 * Request rate limits in fixed windows, per credential: a credential that authenticates is counted by its
 * identity (an API key, a user or an OAuth client, across all of its tokens; the platform key), anything
 * else by the client's address. Every limited response says where the caller stands, in the headers of
 * draft-ietf-httpapi-ratelimit-headers: `RateLimit-Policy: "default";q=600;w=60` and
 * `RateLimit: "default";r=<remaining>;t=<seconds to reset>`. Past the limit: 429 with Retry-After.
 *
 * The counts live in `windows`: in memory by default, where each instance counts on its own; in the
 * database every instance shares when there is one (src/http/rate-limit-postgres.ts).
 */
export const rateLimit = ({
  policy,
  auth,
  clock,
  windows = memoryWindows(),
}: {
  policy: RateLimitPolicy;
  auth: CallerIdentity;
  clock: Clock;
  windows?: RequestWindows | undefined;
}): Middleware => {
  const windowSeconds = Math.round(policy.windowMs / 1000);
  const policyHeader = `"default";q=${policy.limit};w=${windowSeconds}`;

  const keyOf = async (ctx: Context): Promise<string> => {
    try {
      return `principal:${(await auth.authenticate(ctx)).actor}`;
    } catch {
      return `address:${ctx.ip}`;
    }
  };

  return async (ctx, next) => {
    if (unlimited.has(ctx.path)) {
      await next();
      return;
    }
    const key = await keyOf(ctx);
    const now = clock().getTime();
    const window = await windows.hit(key, now, policy.windowMs);
    const resetSeconds = Math.max(1, Math.ceil((window.resetAt - now) / 1000));
    ctx.set('RateLimit-Policy', policyHeader);
    ctx.set('RateLimit', `"default";r=${Math.max(0, policy.limit - window.count)};t=${resetSeconds}`);
    if (window.count > policy.limit) {
      throw new TooManyRequestsError(
        `More than ${policy.limit} requests in ${windowSeconds} s; retry in ${resetSeconds} s`,
        resetSeconds,
      );
    }
    await next();
  };
};
