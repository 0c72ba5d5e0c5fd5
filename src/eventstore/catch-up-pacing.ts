/** The pace of every catch-up reader, whichever store it reads: the embedded one's and PostgreSQL's. */

/** Yields to the event loop: a subscriber far behind must not starve timers and HTTP while it catches up. */
export const yieldToEventLoop = () => new Promise((resolve) => setImmediate(resolve));

/**
 * How often a subscriber is told at most that its position moved past events it does not read. Each such
 * report is a commit of its checkpoint (a projection's) and a read after it, and a busy store moves every
 * subscriber's position on every commit. Nothing waits on these reports: a read-your-writes wait asks the
 * store whether any event the projection reads lies before the position it waits for (runner.ts). They only
 * bound how far back a restart reads events it skips again, so once a second is plenty.
 */
export const skipReportMs = 1000;
