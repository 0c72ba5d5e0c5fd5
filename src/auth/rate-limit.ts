/**
 * Failed-login limits in fixed windows, per key (an e-mail, a client address). In memory: each instance
 * limits on its own, which bounds guessing per instance; a shared limiter would need a shared store.
 */
export interface FailureLimiter {
  /** Seconds until the key may try again, or 0 when it may try now. */
  blockedFor(key: string, now: number): number;
  recordFailure(key: string, now: number): void;
  reset(key: string): void;
}

export const failureLimiter = ({ max, windowMs }: { max: number; windowMs: number }): FailureLimiter => {
  const windows = new Map<string, { count: number; endsAt: number }>();
  const current = (key: string, now: number) => {
    const window = windows.get(key);
    if (window && window.endsAt > now) return window;
    windows.delete(key);
    return undefined;
  };
  return {
    blockedFor: (key, now) => {
      const window = current(key, now);
      return window && window.count >= max ? Math.ceil((window.endsAt - now) / 1000) : 0;
    },
    recordFailure: (key, now) => {
      const window = current(key, now) ?? { count: 0, endsAt: now + windowMs };
      window.count += 1;
      windows.set(key, window);
      if (windows.size > 100_000) windows.delete(windows.keys().next().value!);
    },
    reset: (key) => windows.delete(key),
  };
};
