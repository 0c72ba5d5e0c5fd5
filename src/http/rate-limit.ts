import type { Context, Middleware } from 'koa';
import { RateLimiterMemory, RateLimiterRes, type RateLimiterAbstract } from 'rate-limiter-flexible';
import { TooManyRequestsError } from '../core/errors.js';
import type { RateLimitPolicy } from './rate-limit-policy.js';

/** Where one caller stands after a request: what is left of its window, and when the window ends. */
export interface RequestCount {
  remaining: number;
  msBeforeReset: number;
  /** Over the limit: the request is refused. */
  refused: boolean;
}

/** Counts requests under one policy: each `hit` counts one, atomically, in the key's fixed window. */
export interface RequestLimiter {
  hit(key: string): Promise<RequestCount>;
}

/**
 * Where the request counts live: in this process, or in a store every instance shares. Kept by
 * rate-limiter-flexible: a fixed window per key that starts at its first request.
 */
export interface RequestWindows {
  limiter(policy: RateLimitPolicy): RequestLimiter;
  close(): Promise<void>;
}

/** consume rejects with the RateLimiterRes once the points are spent, and with an Error when the store fails. */
export const fromLibrary = (limiter: RateLimiterAbstract): RequestLimiter => ({
  hit: async (key) => {
    try {
      const res = await limiter.consume(key);
      return { remaining: res.remainingPoints, msBeforeReset: res.msBeforeNext, refused: false };
    } catch (rejection) {
      if (rejection instanceof RateLimiterRes)
        return { remaining: 0, msBeforeReset: rejection.msBeforeNext, refused: true };
      throw rejection;
    }
  },
});

/** RATE_LIMIT's windows are whole seconds (parseRateLimit), the library's unit. */
export const libraryOptions = (policy: RateLimitPolicy) => ({
  keyPrefix: 'requests',
  points: policy.limit,
  duration: policy.windowMs / 1000,
});

/** Keys one policy keeps in memory at most: a flood of addresses must not grow the process without bound. */
export const maxMemoryKeys = 100_000;

/**
 * RateLimiterMemory keeps every key until its window ends, with no cap; `recent` (in the order of their
 * last request) lets the least recently seen key go first once there are more than `maxKeys`. A key let
 * go starts a fresh window, as one whose window ended.
 */
const boundedMemoryLimiter = (policy: RateLimitPolicy, maxKeys: number): RequestLimiter => {
  const library = new RateLimiterMemory(libraryOptions(policy));
  const limiter = fromLibrary(library);
  const recent = new Set<string>();
  return {
    hit: async (key) => {
      recent.delete(key);
      recent.add(key);
      if (recent.size > maxKeys) {
        const oldest = recent.values().next().value!;
        recent.delete(oldest);
        await library.delete(oldest);
      }
      return limiter.hit(key);
    },
  };
};

/** Counts in this process: N instances behind a balancer allow up to N times the limit. */
export const memoryWindows = (maxKeys = maxMemoryKeys): RequestWindows => ({
  limiter: (policy) => boundedMemoryLimiter(policy, maxKeys),
  close: () => Promise.resolve(),
});

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
 * The counts live in `windows` (rate-limiter-flexible): in memory by default, where each instance counts
 * on its own; in the database every instance shares when there is one (src/http/rate-limit-postgres.ts).
 * The windows follow the process's clock (Date.now), not the injected one.
 */
export const rateLimit = ({
  policy,
  auth,
  windows = memoryWindows(),
}: {
  policy: RateLimitPolicy;
  auth: CallerIdentity;
  windows?: RequestWindows | undefined;
}): Middleware => {
  const windowSeconds = Math.round(policy.windowMs / 1000);
  const policyHeader = `"default";q=${policy.limit};w=${windowSeconds}`;
  const limiter = windows.limiter(policy);

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
    const count = await limiter.hit(key);
    const resetSeconds = Math.max(1, Math.ceil(count.msBeforeReset / 1000));
    ctx.set('RateLimit-Policy', policyHeader);
    ctx.set('RateLimit', `"default";r=${count.remaining};t=${resetSeconds}`);
    if (count.refused) {
      throw new TooManyRequestsError(
        `More than ${policy.limit} requests in ${windowSeconds} s; retry in ${resetSeconds} s`,
        resetSeconds,
      );
    }
    await next();
  };
};
