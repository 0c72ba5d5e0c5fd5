import { readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import sharp from 'sharp';
import { startServer } from './http.js';
import { projectRoot, removeTempDir, stopChild, type Child } from './processes.js';
import { benchService, provision } from './provision.js';
import { latencyFigures, type LatencyFigures } from './stats.js';

/**
 * The `images` phase (issue 11, finding 2): logins while image bombs and the worst images within the
 * decode budget are uploaded. Against src/main.ts with its default decode settings (MEDIA_DECODE_CONCURRENCY
 * 1, MEDIA_MAX_PIXELS 40 MP, MEDIA_MAX_DECODED_BYTES 160 MB) unless BENCH_IMAGES_CONCURRENCY says otherwise.
 * - Baseline: one login after another (`POST /v1/auth/token`, scrypt N=2^15) for `durationS` seconds.
 * - Load: the same logins while 4 uploaders each send, in a loop, the worst image within the budget (5000 ×
 *   4000 16-bit RGBA: 8 bytes a pixel, 160,000,000 bytes decoded, a different file each time so that nothing
 *   is deduplicated) and the bomb of the review (7000 × 7000 16-bit RGBA, 381 KB, 392 MB decoded).
 * The service's RSS is read from /proc/<pid>/status every 50 ms. Target: login p99 under 1 s under load.
 */

export interface ImagesResults {
  durationS: number;
  uploaders: number;
  decodeConcurrency: number;
  worstAccepted: { width: number; height: number; bytes: number; decodedBytes: number };
  bomb: { width: number; height: number; bytes: number; decodedBytes: number };
  loginsIdle: LatencyFigures & { count: number };
  loginsUnderUploads: LatencyFigures & { count: number };
  uploads: { accepted: number; refusedTooLarge: number; refusedBusy: number; other: number };
  acceptedUploadMs: LatencyFigures;
  bombRefusalMs: LatencyFigures;
  rssMiB: { idle: number; peakIdle: number; peakUnderUploads: number; after: number };
  targetLoginP99Ms: number;
}

const deepPng = (width: number, height: number) =>
  sharp(Buffer.alloc(width * height * 8), { raw: { width, height, channels: 4 } })
    .toColourspace('rgb16')
    .png({ compressionLevel: 9 })
    .toBuffer();

const crcTable = Array.from({ length: 256 }, (_, n) => {
  let c = n;
  for (let k = 0; k < 8; k += 1) c = c & 1 ? 0xedb88320 ^ (c >>> 1) : c >>> 1;
  return c >>> 0;
});
const crc32 = (bytes: Uint8Array) => {
  let c = 0xffffffff;
  for (const byte of bytes) c = crcTable[(c ^ byte) & 0xff]! ^ (c >>> 8);
  return (c ^ 0xffffffff) >>> 0;
};

/** The same PNG with a tEXt chunk before IEND: other bytes (another SHA-256), the same pixels. */
const variant = (png: Buffer, n: number): Buffer => {
  const body = Buffer.concat([Buffer.from('tEXt'), Buffer.from(`bench\0${n}`, 'latin1')]);
  const chunk = Buffer.alloc(body.length + 8);
  chunk.writeUInt32BE(body.length - 4, 0);
  body.copy(chunk, 4);
  chunk.writeUInt32BE(crc32(body), body.length + 4);
  return Buffer.concat([png.subarray(0, png.length - 12), chunk, png.subarray(png.length - 12)]);
};

const rssMiB = (pid: number) => {
  try {
    return Number(/VmRSS:\s+(\d+)/.exec(readFileSync(`/proc/${pid}/status`, 'utf8'))![1]) / 1024;
  } catch {
    return 0;
  }
};

const postJson = async (url: string, body: unknown, headers: Record<string, string> = {}) => {
  const response = await fetch(url, {
    method: 'POST',
    headers: { 'content-type': 'application/json', ...headers },
    body: JSON.stringify(body),
  });
  const text = await response.text();
  if (response.status >= 300) throw new Error(`POST ${url} answered ${response.status}: ${text}`);
  return JSON.parse(text) as Record<string, unknown>;
};

export const runImages = async ({ durationS }: { durationS: number }): Promise<ImagesResults> => {
  const uploaders = 4;
  const decodeConcurrency = process.env.BENCH_IMAGES_CONCURRENCY ?? '1';
  const [worst, bomb] = await Promise.all([deepPng(5000, 4000), deepPng(7000, 7000)]);
  const { dataDir, adminKey, env } = benchService('images');
  let server: { child: Child; base: string } | null = null;
  try {
    server = await startServer('src/main.ts', 'images', {
      ...env,
      MEDIA_DECODE_CONCURRENCY: decodeConcurrency,
    });
    const { base, child } = server;
    const pid = child.process.pid!;
    const principal = await provision(base, adminKey);
    const { tenantId, tenantAdminKey } = principal;
    const email = 'bench-images@example.com';
    const password = 'a long bench password, not a secret';
    await postJson(
      `${base}/v1/tenants/${tenantId}/users`,
      { email, password, scopes: ['observations:read'] },
      { 'x-api-key': tenantAdminKey },
    );
    const observation = await postJson(
      `${base}/v1/tenants/${tenantId}/observations`,
      { observedAt: '2026-05-01T09:30:00Z', notes: 'bench images' },
      principal.headers,
    );
    const mediaUrl = `${base}/v1/tenants/${tenantId}/observations/${observation.id as string}/media`;

    let peak = 0;
    const sampler = setInterval(() => (peak = Math.max(peak, rssMiB(pid))), 50);
    const logins = async (until: number) => {
      const ms: number[] = [];
      while (Date.now() < until) {
        const started = performance.now();
        const response = await fetch(`${base}/v1/auth/token`, {
          method: 'POST',
          headers: { 'content-type': 'application/json' },
          body: JSON.stringify({ email, password, tenantId }),
        });
        await response.arrayBuffer();
        if (response.status !== 200) throw new Error(`POST /v1/auth/token answered ${response.status}`);
        ms.push(performance.now() - started);
      }
      return ms;
    };

    // Warm-up: a login and an upload, unmeasured.
    await logins(Date.now() + 1);
    await fetch(mediaUrl, { method: 'POST', headers: principal.headers, body: variant(worst, -1) });
    await new Promise((resolve) => setTimeout(resolve, 1000));
    const idle = rssMiB(pid);
    peak = idle;
    const loginsIdle = await logins(Date.now() + durationS * 1000);
    const peakIdle = peak;

    const uploads = { accepted: 0, refusedTooLarge: 0, refusedBusy: 0, other: 0 };
    const acceptedMs: number[] = [];
    const bombMs: number[] = [];
    let next = 0;
    const upload = async (bytes: Buffer, into: number[]) => {
      const started = performance.now();
      const response = await fetch(mediaUrl, { method: 'POST', headers: principal.headers, body: bytes });
      await response.arrayBuffer();
      const ms = performance.now() - started;
      if (response.status === 201) {
        uploads.accepted += 1;
        into.push(ms);
      } else if (response.status === 413) {
        uploads.refusedTooLarge += 1;
        into.push(ms);
      } else if (response.status === 503) uploads.refusedBusy += 1;
      else uploads.other += 1;
    };
    const until = Date.now() + durationS * 1000;
    const uploader = async () => {
      while (Date.now() < until) {
        await upload(variant(worst, (next += 1)), acceptedMs);
        await upload(bomb, bombMs);
      }
    };
    peak = rssMiB(pid);
    const [loginsUnderUploads] = await Promise.all([
      logins(until),
      ...Array.from({ length: uploaders }, uploader),
    ]);
    const peakUnderUploads = peak;
    clearInterval(sampler);
    await new Promise((resolve) => setTimeout(resolve, 1000));
    const size = (image: Buffer, width: number, height: number) => ({
      width,
      height,
      bytes: image.length,
      decodedBytes: width * height * 8,
    });
    const round = (value: number) => Math.round(value);
    const withCount = (ms: number[]) => ({ ...latencyFigures(ms.map(round)), count: ms.length });
    return {
      durationS,
      uploaders,
      decodeConcurrency: Number(decodeConcurrency),
      worstAccepted: size(worst, 5000, 4000),
      bomb: size(bomb, 7000, 7000),
      loginsIdle: withCount(loginsIdle),
      loginsUnderUploads: withCount(loginsUnderUploads),
      uploads,
      acceptedUploadMs: latencyFigures(acceptedMs.map(round)),
      bombRefusalMs: latencyFigures(bombMs.map(round)),
      rssMiB: {
        idle: round(idle),
        peakIdle: round(peakIdle),
        peakUnderUploads: round(peakUnderUploads),
        after: round(rssMiB(pid)),
      },
      targetLoginP99Ms: 1000,
    };
  } catch (error) {
    throw new Error(`${(error as Error).message}\nserver output:\n${server?.child.output() ?? ''}`, {
      cause: error,
    });
  } finally {
    if (server) await stopChild(server.child);
    removeTempDir(dataDir);
  }
};

/** Prints the figures and, unless BENCH_WRITE=0, keeps them in docs/bench/images.json. */
export const reportImages = (results: ImagesResults): string[] => {
  const { loginsIdle: idle, loginsUnderUploads: loaded, rssMiB: rss } = results;
  console.log(
    [
      `images: login p50/p99 ${idle.p50Ms}/${idle.p99Ms} ms idle, ${loaded.p50Ms}/${loaded.p99Ms} ms under ${results.uploaders} parallel uploads (target p99 < ${results.targetLoginP99Ms} ms)`,
      `images: uploads ${JSON.stringify(results.uploads)}; accepted p50 ${results.acceptedUploadMs.p50Ms} ms, bomb refused p50/p99 ${results.bombRefusalMs.p50Ms}/${results.bombRefusalMs.p99Ms} ms`,
      `images: RSS ${rss.idle} MiB idle, peak ${rss.peakIdle} MiB during idle logins, ${rss.peakUnderUploads} MiB under uploads`,
    ].join('\n'),
  );
  if (process.env.BENCH_WRITE === '0') return [];
  const file = join(projectRoot, 'docs', 'bench', 'images.json');
  writeFileSync(file, `${JSON.stringify(results, null, 2)}\n`);
  return [file];
};
