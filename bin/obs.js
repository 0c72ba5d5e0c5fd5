#!/usr/bin/env node
// `obs`, the operator's command line (src/cli/main.ts), as a command: `bin` in package.json, on PATH in
// the image. In a checkout with its development dependencies it runs JavaScript that esbuild compiled from
// today's src/, projections/ and client/src/ into .cache/obs/<fingerprint>/: compiled once per state of the sources
// (about a second), so that a later start loads plain JavaScript instead of compiling TypeScript through
// tsx at every start, and a change to any source file is compiled before it runs. Without them (the image,
// where src/ and esbuild are absent) it runs the compiled dist/src/cli/main.js with plain node.
import { createHash } from 'node:crypto';
import { existsSync, mkdirSync, readdirSync, renameSync, rmSync, statSync } from 'node:fs';
import { fileURLToPath } from 'node:url';

const root = fileURLToPath(new URL('..', import.meta.url));
// client/src: `obs audit verify --file` runs the client package's verifier, the one auditors run.
const sourceDirs = ['src', 'projections', 'client/src'];
const compiled = new URL('../dist/src/cli/main.js', import.meta.url);
const cacheDir = `${root}.cache/obs`;
/** Compiled trees kept: the current one and a few before it, which a process started a moment ago may still load. */
const keptTrees = 3;

/** Every TypeScript source below the folders, as root-relative paths. */
const sourcesOf = (dir, found = []) => {
  for (const entry of readdirSync(`${root}${dir}`, { withFileTypes: true })) {
    const path = `${dir}/${entry.name}`;
    if (entry.isDirectory()) sourcesOf(path, found);
    else if (entry.name.endsWith('.ts')) found.push(path);
  }
  return found;
};

/** Names the state of the sources: their paths, sizes and modification times (a few milliseconds). */
const fingerprintOf = (sources) => {
  const hash = createHash('sha256');
  for (const path of sources) {
    const { size, mtimeMs } = statSync(`${root}${path}`);
    hash.update(`${path}\0${size}\0${mtimeMs}\n`);
  }
  return hash.digest('hex').slice(0, 16);
};

/** esbuild's API, or undefined when it is not installed (`npm ci --omit=dev`). */
const esbuildOrNothing = async () => {
  try {
    return await import('esbuild');
  } catch {
    return undefined;
  }
};

/**
 * The entry point compiled from the sources as they are now, compiling them first if this state is new, or
 * undefined when it is new and esbuild is not installed. Each state has its own folder, written under a
 * temporary name and renamed into place, so two commands started together never load a half-written tree.
 * esbuild is loaded only to compile: loading it costs more than the rest of a start.
 */
const compiledFromSources = async () => {
  const sources = sourceDirs.flatMap((dir) => sourcesOf(dir));
  const fingerprint = fingerprintOf(sources);
  const tree = `${cacheDir}/${fingerprint}`;
  const entry = new URL(`file://${tree}/src/cli/main.js`);
  if (existsSync(tree)) return entry;
  const esbuild = await esbuildOrNothing();
  if (!esbuild) return undefined;
  const partial = `${cacheDir}/.${fingerprint}-${process.pid}`;
  mkdirSync(cacheDir, { recursive: true });
  await esbuild.build({
    absWorkingDir: root,
    entryPoints: sources,
    outdir: partial,
    outbase: '.',
    format: 'esm',
    platform: 'node',
    target: 'node20',
    tsconfig: 'tsconfig.json',
    logLevel: 'error',
  });
  try {
    renameSync(partial, tree);
  } catch {
    rmSync(partial, { recursive: true, force: true }); // another command compiled the same state first
  }
  const older = readdirSync(cacheDir)
    .filter((name) => !name.startsWith('.') && name !== fingerprint)
    .sort((a, b) => statSync(`${cacheDir}/${b}`).mtimeMs - statSync(`${cacheDir}/${a}`).mtimeMs);
  for (const name of older.slice(keptTrees - 1))
    rmSync(`${cacheDir}/${name}`, { recursive: true, force: true });
  return entry;
};

const fromSources = existsSync(`${root}src/cli/main.ts`) ? await compiledFromSources() : undefined;
if (fromSources) {
  await import(fromSources.href);
} else if (existsSync(compiled)) {
  await import(compiled.href);
} else {
  console.error(
    'obs: neither src/cli/main.ts with esbuild (npm ci) nor dist/src/cli/main.js (npm run build) is here',
  );
  process.exitCode = 1;
}
