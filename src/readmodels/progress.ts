import type { BuildProgress } from './rebuild.js';

/**
 * How a rebuild shows its progress: on a terminal, one line redrawn in place with a bar, events/s and an
 * ETA; otherwise (a log file, CI) a plain line every few seconds and at each change of phase.
 */

export const formatDuration = (ms: number): string => {
  const seconds = Math.max(0, Math.round(ms / 1000));
  if (seconds < 60) return `${seconds}s`;
  const minutes = Math.floor(seconds / 60);
  if (minutes < 60) return `${minutes}m${String(seconds % 60).padStart(2, '0')}s`;
  return `${Math.floor(minutes / 60)}h${String(minutes % 60).padStart(2, '0')}m`;
};

const rate = (p: BuildProgress): number => (p.elapsedMs > 0 ? (p.events * 1000) / p.elapsedMs : 0);

/** Share of the run's positions done, and the time left at the pace so far (null before any progress). */
export const estimate = (p: BuildProgress): { fraction: number; etaMs: number | null } => {
  const total = p.target - p.from;
  const done = Math.min(p.checkpoint, p.target) - p.from;
  if (total <= 0) return { fraction: 1, etaMs: 0 };
  const fraction = Math.max(0, Math.min(1, done / total));
  const etaMs = done > 0 ? (p.elapsedMs * (total - done)) / done : null;
  return { fraction, etaMs };
};

const count = (n: number) => n.toLocaleString('en-US');

export const describeProgress = (p: BuildProgress): string => {
  const { fraction, etaMs } = estimate(p);
  const percent = `${Math.floor(fraction * 100)}%`;
  const speed = `${count(Math.round(rate(p)))} events/s`;
  const where = `position ${count(p.checkpoint)}/${count(p.target)}`;
  switch (p.phase) {
    case 'building':
      return `${p.projection}: ${percent}, ${where}, ${speed}, ETA ${etaMs === null ? '?' : formatDuration(etaMs)}`;
    case 'catching up':
      return `${p.projection}: catching up with the head, ${where}, ${speed}`;
    case 'swapping':
      return `${p.projection}: swapping in at position ${count(p.checkpoint)}`;
    case 'done':
      return `${p.projection}: done, ${count(p.events)} events in ${formatDuration(p.elapsedMs)} (${speed})`;
    case 'interrupted':
      return `${p.projection}: interrupted at position ${count(p.checkpoint)}`;
  }
};

export const progressBar = (p: BuildProgress, width = 24): string => {
  const { fraction, etaMs } = estimate(p);
  const filled = Math.round(fraction * width);
  const bar = `[${'#'.repeat(filled)}${'-'.repeat(width - filled)}]`;
  const eta = p.phase === 'building' ? `ETA ${etaMs === null ? '?' : formatDuration(etaMs)}` : p.phase;
  return `${p.projection} ${bar} ${String(Math.floor(fraction * 100)).padStart(3)}%  ${count(p.events)} events  ${count(Math.round(rate(p)))} events/s  ${eta}`;
};

export interface ProgressReporter {
  update: (progress: BuildProgress) => void;
  /** Ends the line being redrawn, if any. */
  finish: () => void;
}

export const progressReporter = (
  stream: NodeJS.WriteStream,
  { logEveryMs = 2000, redrawEveryMs = 100 }: { logEveryMs?: number; redrawEveryMs?: number } = {},
): ProgressReporter => {
  let last = 0;
  let phase: BuildProgress['phase'] | null = null;
  let drawn = false;
  return {
    update: (progress) => {
      const now = Date.now();
      const changed = progress.phase !== phase;
      phase = progress.phase;
      if (stream.isTTY) {
        if (!changed && now - last < redrawEveryMs) return;
        last = now;
        const line = progressBar(progress).slice(0, Math.max(20, (stream.columns || 100) - 1));
        stream.write(`\r${line}\x1b[K`);
        drawn = true;
        return;
      }
      if (!changed && now - last < logEveryMs) return;
      last = now;
      stream.write(`${describeProgress(progress)}\n`);
    },
    finish: () => {
      if (drawn) stream.write('\n');
      drawn = false;
      phase = null;
    },
  };
};
