/**
 * Bench only: the service exactly as `npm start` runs it (it imports src/main.ts, which starts it from the
 * environment), plus an answer to the endurance phase's memory probe over the IPC channel that only
 * bench/soak.ts opens. Nothing here adds a route: production never has this probe.
 *
 * Start with `node --expose-gc --import tsx bench/soak-child.ts` and an IPC channel (stdio 'ipc').
 *   parent → child   {type: 'soak-sample', id}
 *   child → parent   {type: 'soak-sample', id, rss, heapUsed, heapTotal, external, arrayBuffers, gcMs}
 * The figures are process.memoryUsage() in bytes, read right after a full garbage collection (global.gc()).
 * When the channel closes (the bench exited or died), the child sends itself SIGTERM, so that src/main.ts
 * stops the way it stops in production, and exits for good after 15 s if that has not happened.
 */

interface SampleRequest {
  type: 'soak-sample';
  id: number;
}

const gc = (globalThis as { gc?: () => void }).gc;
if (!gc) throw new Error('bench/soak-child.ts needs node --expose-gc');
const send = process.send?.bind(process);
if (!send) throw new Error('bench/soak-child.ts needs an IPC channel (spawn with stdio "ipc")');

const isSampleRequest = (message: unknown): message is SampleRequest =>
  typeof message === 'object' &&
  message !== null &&
  (message as { type?: unknown }).type === 'soak-sample' &&
  typeof (message as { id?: unknown }).id === 'number';

process.on('message', (message: unknown) => {
  if (!isSampleRequest(message)) return;
  const started = performance.now();
  gc();
  const gcMs = performance.now() - started;
  const { rss, heapUsed, heapTotal, external, arrayBuffers } = process.memoryUsage();
  send({ type: 'soak-sample', id: message.id, rss, heapUsed, heapTotal, external, arrayBuffers, gcMs });
});

process.once('disconnect', () => {
  setTimeout(() => process.exit(1), 15_000).unref();
  process.kill(process.pid, 'SIGTERM');
});

await import('../src/main.js');
