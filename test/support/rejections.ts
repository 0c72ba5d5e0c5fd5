/** What `promise` was rejected with, or null when it was fulfilled: for asserting on an expected failure. */
export const rejectionOf = (promise: Promise<unknown>): Promise<unknown> =>
  promise.then(
    () => null,
    (error: unknown) => error,
  );
