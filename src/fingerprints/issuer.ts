import type { Logger } from 'pino';
import type { Check } from '../http/health.js';
import type { Fingerprint, RecordedFingerprint } from './fingerprint.js';
import type { FingerprintStore } from './store.js';

/**
 * PUBLIC_URL is the `iss` of every token the service issues, and every process refuses a token of another
 * issuer. So the processes that serve the API on one store must have the same PUBLIC_URL, or a client's
 * token works on one of them and gets 401 on the next (three `ROLE=api` processes on their own ports, with
 * PUBLIC_URL unset, each had its own). Unlike a secret, it rightly changes between runs (a development
 * service started again on another port), so its record stands only while a process with it runs: each
 * renews it, and one not renewed for `issuerLifetimeMs` (its processes stopped, or stalled) is taken over
 * by the next process to start. A process that stops gives the record up at once.
 */
export const issuerLifetimeMs = 60_000;

export const issuerFingerprint = (publicUrl: string, given: boolean): Fingerprint => ({
  name: 'PUBLIC_URL',
  values: [publicUrl],
  given,
  renewedWithinMs: issuerLifetimeMs,
});

export interface IssuerRenewal {
  /** `fail` once another PUBLIC_URL took the record over (this process stalled past the lifetime). */
  check(): Check;
  /** Stops renewing and gives the record up, so that a process with another PUBLIC_URL may start at once. */
  stop(): Promise<void>;
}

/**
 * Renews this process's PUBLIC_URL on the store every quarter of the lifetime. A renewal that finds
 * another one recorded means this process stalled while one with another PUBLIC_URL started: its tokens
 * and theirs are refused by each other, so it answers not ready (the load balancer then sends it nothing)
 * and says why, once. A store that fails is not such a finding: the renewal is tried again.
 */
export const issuerRenewal = ({
  store,
  publicUrl,
  by,
  logger,
  now = () => new Date(),
  intervalMs = issuerLifetimeMs / 4,
}: {
  store: FingerprintStore;
  publicUrl: string;
  by: string;
  logger: Logger;
  now?: () => Date;
  intervalMs?: number;
}): IssuerRenewal => {
  let taken: string | null = null;
  const row = (at: Date): RecordedFingerprint => ({
    name: 'PUBLIC_URL',
    fingerprint: publicUrl,
    recordedAt: at.toISOString(),
    recordedBy: by,
  });
  const renew = async () => {
    if (taken !== null) return;
    try {
      if (await store.replace(row(now()), publicUrl)) return;
      const recorded = (await store.read()).find((entry) => entry.name === 'PUBLIC_URL');
      // Removed by hand (the table emptied): recorded again, as by a process that starts.
      if (!recorded && (await store.insert(row(now())))) return;
      taken = `a process with PUBLIC_URL ${recorded?.fingerprint ?? '(none)'} (${recorded?.recordedBy ?? 'unknown'}) started while this one, with ${publicUrl}, did not renew its record: each refuses the tokens the other issues; start this one again with the PUBLIC_URL of the others (docs/operations.md#shared-secrets)`;
      logger.error({ publicUrl, recorded }, taken);
    } catch (error) {
      logger.warn({ err: error }, 'PUBLIC_URL record not renewed; trying again');
    }
  };
  // One renewal at a time: a store that is slow to answer is not asked again meanwhile. The first one at
  // once: a record found the same at start may be nearly as old as the lifetime.
  let renewing: Promise<void> | null = null;
  const renewNow = () => {
    renewing ??= renew().finally(() => {
      renewing = null;
    });
  };
  renewNow();
  const timer = setInterval(renewNow, intervalMs);
  timer.unref();
  return {
    check: () => (taken === null ? { status: 'pass' } : { status: 'fail', error: taken }),
    stop: async () => {
      clearInterval(timer);
      await renewing;
      // Another process with this PUBLIC_URL renews it again within a quarter of the lifetime.
      if (taken === null) await store.replace(row(new Date(0)), publicUrl).catch(() => false);
      await store.close();
    },
  };
};
