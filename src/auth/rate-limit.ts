import { TooManyRequestsError } from '../core/errors.js';

/**
 * Failed-authentication limits: the port the login and token routes use. The counters live in a store that
 * every process shares (src/auth/failure-store.ts), so a limit holds across instances.
 */
export interface FailureLimiter {
  /**
   * Counts one attempt for the key, atomically in the store, before the credential is checked: attempts in
   * parallel cannot all slip under the limit. Answers the milliseconds to wait when this attempt is over
   * the limit, or 0.
   */
  take(key: string): Promise<number>;
  /** Takes back one counted attempt: it succeeded, or it was refused for another key. */
  giveBack(key: string): Promise<void>;
  reset(key: string): Promise<void>;
}

/** A limit: at most `max` failures per key in a fixed window that starts at the first failure. */
export interface FailurePolicy {
  /** Names the counters in the store; letters, digits and `_`. */
  name: string;
  max: number;
  windowMs: number;
}

export interface FailureLimiterStore {
  limiter(policy: FailurePolicy): FailureLimiter;
  close(): Promise<void>;
}

/**
 * Several limits over one kind of attempt, each keyed by a part of it. Every attempt counts as a failure
 * until it succeeds, so the count holds however many attempts run at once.
 */
export interface FailureGuard<A> {
  /** Counts the attempt; refuses it with 429 and Retry-After when any of its keys is over its limit. */
  begin(attempt: A): Promise<void>;
  /** Uncounts an attempt that succeeded. */
  succeeded(attempt: A): Promise<void>;
}

interface Limit<A> {
  limiter: FailureLimiter;
  key: (attempt: A) => string;
  /** Cleared by a success: only for keys a success proves harmless (the pair of account and address). */
  resetOnSuccess?: boolean;
}

export const failureGuard = <A>(limits: Limit<A>[], message: string): FailureGuard<A> => ({
  begin: async (attempt) => {
    const waits = await Promise.all(limits.map(({ limiter, key }) => limiter.take(key(attempt))));
    const wait = Math.max(0, ...waits);
    if (wait === 0) return;
    // A refused attempt checks nothing, so it counts against none of its keys: an address over its own
    // limit cannot go on to use up an account's.
    await Promise.all(limits.map(({ limiter, key }) => limiter.giveBack(key(attempt))));
    throw new TooManyRequestsError(message, Math.ceil(wait / 1000));
  },
  succeeded: async (attempt) => {
    await Promise.all(
      limits.map(({ limiter, key, resetOnSuccess }) =>
        resetOnSuccess ? limiter.reset(key(attempt)) : limiter.giveBack(key(attempt)),
      ),
    );
  },
});

const minutes = (n: number) => n * 60_000;

/** A login names an account (tenant and e-mail) and comes from an address. */
export interface LoginAttempt {
  tenantId: string;
  email: string;
  address: string;
}

/**
 * Failed logins. The pair (account, address) is the tight limit, so one user mistyping locks out nobody
 * else. The account's own limits stop one account being guessed from many addresses, with a longer daily
 * step as back-off. The address limit is high, so that one attacker behind an office's or a proxy's address
 * cannot lock the others out, yet stops one address spraying a password over many accounts. Unknown
 * accounts are counted the same way, so a 429 says nothing about whether an e-mail exists.
 */
export const loginLimits = (store: FailureLimiterStore): FailureGuard<LoginAttempt> => {
  const account = (a: LoginAttempt) => `${a.tenantId}\n${a.email}`;
  return failureGuard<LoginAttempt>(
    [
      {
        limiter: store.limiter({ name: 'login_account_address', max: 5, windowMs: minutes(15) }),
        key: (a) => `${account(a)}\n${a.address}`,
        resetOnSuccess: true,
      },
      { limiter: store.limiter({ name: 'login_account', max: 20, windowMs: minutes(15) }), key: account },
      {
        limiter: store.limiter({ name: 'login_account_day', max: 100, windowMs: minutes(24 * 60) }),
        key: account,
      },
      {
        limiter: store.limiter({ name: 'login_address', max: 200, windowMs: minutes(15) }),
        key: (a) => a.address,
      },
    ],
    'Too many failed logins; try again later',
  );
};

/** A client authentication at the token endpoint: the client id as sent, from an address. */
export interface ClientAttempt {
  clientId: string;
  address: string;
}

/**
 * Failed client authentications. Client secrets are 256 random bits, so guessing one is hopeless; the
 * limits only bound the work an address can make the endpoint do. There is no limit per client id alone:
 * client ids are not secret, and such a limit would let anyone lock a working integration out.
 */
export const clientLimits = (store: FailureLimiterStore): FailureGuard<ClientAttempt> =>
  failureGuard<ClientAttempt>(
    [
      {
        limiter: store.limiter({ name: 'client_id_address', max: 10, windowMs: minutes(15) }),
        key: (a) => `${a.clientId}\n${a.address}`,
        resetOnSuccess: true,
      },
      {
        limiter: store.limiter({ name: 'client_address', max: 200, windowMs: minutes(15) }),
        key: (a) => a.address,
      },
    ],
    'Too many failed client authentications; try again later',
  );
