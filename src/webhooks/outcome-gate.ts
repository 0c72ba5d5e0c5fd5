/**
 * Lets waiting callers through together: when `most` wait, or `delayMs` after the first began to wait.
 * The outcomes of successful attempts pass it before they are appended, so that the outcomes of answers
 * that arrive a moment apart (each in a turn of the event loop of its own) share the event store's group
 * commit instead of paying one each. A success has given its slot back already, so the wait delays only
 * the record, never the next attempt. The deliverer also opens it whenever it appends a batch of claims,
 * so that a backlog's outcomes go into the claims' commits.
 */
export const outcomeGate = (most: number, delayMs: number) => {
  let waiting: (() => void)[] = [];
  let timer: NodeJS.Timeout | null = null;

  const open = () => {
    if (timer) clearTimeout(timer);
    timer = null;
    const through = waiting;
    waiting = [];
    for (const pass of through) pass();
  };

  /** Resolves when the gate opens for this caller and the others waiting with it. */
  const pass = (): Promise<void> =>
    new Promise<void>((resolve) => {
      waiting.push(resolve);
      if (waiting.length >= most) open();
      else timer ??= setTimeout(open, delayMs);
    });

  return { pass, open };
};

export type OutcomeGate = ReturnType<typeof outcomeGate>;

/** How long a success's outcome may wait for others to share its commit, and how many may share it. */
export const outcomeDelayMs = 20;
export const outcomeBatch = 64;
