/** The pace of every catch-up reader, whichever store it reads: the embedded one's and PostgreSQL's. */

/** Yields to the event loop: a subscriber far behind must not starve timers and HTTP while it catches up. */
export const yieldToEventLoop = () => new Promise((resolve) => setImmediate(resolve));

/**
 * How often a subscriber is told at most that its position moved past events it does not read. Each such
 * report is a commit of its checkpoint (a projection's), and a busy store moves every subscriber's position
 * on every commit: unthrottled, the other subscribers commit more often than the writers do.
 */
export const skipReportMs = 20;
