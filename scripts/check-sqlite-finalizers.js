// Part of the image's build: fails it when the better-sqlite3 binary just installed aborts the process
// while the garbage collector finalizes its statements. better-sqlite3 12 compiled against the headers of
// Node.js 24.19 or later does so (`Assertion failed: (env) != nullptr` in RemoveEnvironmentCleanupHook,
// from node::ObjectWrap's destructor when a collection runs outside JavaScript); its prebuilt binaries,
// built against older headers, and better-sqlite3 13 do not. Such an image would start, then die at random.
import { stat } from 'node:fs';
import { createRequire } from 'node:module';

const require = createRequire(import.meta.url);
const Database = require('better-sqlite3');
const db = new Database(':memory:');

const rounds = 300;
let round = 0;
/** Statements left to the garbage collector, with allocations made from I/O callbacks. */
const next = () => {
  for (let i = 0; i < 2000; i++) db.prepare(`select ${i} as n`).get();
  if (++round < rounds) stat(import.meta.filename, next);
  else
    console.log(
      `better-sqlite3 survived ${rounds * 2000} finalized statements on Node.js ${process.version}`,
    );
};
next();
