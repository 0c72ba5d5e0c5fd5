import { expect } from 'chai';
import { ValidationError } from '../../src/core/errors.js';
import { boundsProblem, depthExceeded, freeFormBounds } from '../../src/core/json-bounds.js';
import { parseInferReply } from '../../src/cv/models/remote.js';
import { CvModelError } from '../../src/cv/models/port.js';
import { mergePatch } from '../../src/core/merge-patch.js';
import { decodeOrThrow } from '../../src/http/codec.js';
import { CreateObservationBody, PatchObservationBody } from '../../src/observations/codecs.js';

/** An object `{"a": {"a": … {}}}` nested `depth` levels deep, the outer object included. */
const nested = (depth: number): Record<string, unknown> => {
  let value: Record<string, unknown> = {};
  for (let level = 1; level < depth; level++) value = { a: value };
  return value;
};

const withKeys = (count: number) => Object.fromEntries(Array.from({ length: count }, (_, i) => [`k${i}`, i]));

const errorsOf = (run: () => unknown) => {
  try {
    run();
  } catch (error) {
    if (error instanceof ValidationError) return error.errors;
    throw error;
  }
  throw new Error('expected a validation error');
};

const nestsDeeperThan = (text: string, limit: number) => depthExceeded(text, limit) !== undefined;

describe('the depth scan of JSON text', () => {
  it('counts the nesting of objects and arrays', () => {
    expect(nestsDeeperThan('{"a":[{"b":[]}]}', 4)).to.equal(false);
    expect(nestsDeeperThan('{"a":[{"b":[]}]}', 3)).to.equal(true);
    expect(nestsDeeperThan('1', 0)).to.equal(false);
    expect(nestsDeeperThan('[]', 0)).to.equal(true);
  });

  it('does not count brackets inside strings', () => {
    expect(nestsDeeperThan('{"[[[[": "{{{{]]]]"}', 1)).to.equal(false);
    expect(nestsDeeperThan('["{", "[", "}", "]"]', 1)).to.equal(false);
  });

  it('knows where a string with escaped quotes and backslashes ends', () => {
    // The string holds `\"[[[`: the escaped quote does not end it.
    expect(nestsDeeperThan(String.raw`["\"[[[", 1]`, 1)).to.equal(false);
    // The string holds one backslash: the quote after it ends the string, so the brackets count.
    expect(nestsDeeperThan(String.raw`["\\", [[1]]]`, 2)).to.equal(true);
    expect(nestsDeeperThan(String.raw`["\\", [[1]]]`, 3)).to.equal(false);
    expect(nestsDeeperThan(String.raw`["\u005b\"", [1]]`, 2)).to.equal(false);
  });

  it('does not count closing brackets ahead of opening ones as room for more', () => {
    // Invalid JSON, for the parser to refuse; the scan must not let it hide depth.
    expect(nestsDeeperThan(`]]]]${'['.repeat(10)}`, 8)).to.equal(true);
  });

  it('names the member of the outer object that nests too deep', () => {
    expect(depthExceeded('{"a": "x", "b": 1, "attributes": {"c": [[]]}, "d": {}}', 3)).to.deep.equal({
      field: 'attributes',
    });
    expect(depthExceeded(String.raw`{"a\"[": {"b": [[]]}}`, 3)).to.deep.equal({ field: 'a"[' });
    expect(depthExceeded('{"a": {"b": "c", "d": {"e": {}}}}', 3)).to.deep.equal({ field: 'a' });
    expect(depthExceeded('[{"a": [[]]}]', 3)).to.deep.equal({ field: '' });
    expect(depthExceeded('{"a": [[]]}', 3)).to.equal(undefined);
  });

  it('measures 100,000 levels without recursion, and stops at the limit', () => {
    const deep = `${'['.repeat(100_000)}${']'.repeat(100_000)}`;
    expect(nestsDeeperThan(deep, 64)).to.equal(true);
    expect(nestsDeeperThan(deep, 100_000)).to.equal(false);
    expect(nestsDeeperThan(`${'{"a":'.repeat(100_000)}1${'}'.repeat(100_000)}`, 64)).to.equal(true);
  });
});

describe('the bounds of free-form JSON', () => {
  it('accepts 32 levels and refuses 33, counting the value itself as the first', () => {
    expect(boundsProblem(nested(32))).to.equal(undefined);
    expect(boundsProblem(nested(33))).to.match(/at most 32 levels deep/);
    expect(boundsProblem({ a: [[[[1]]]] }, { ...freeFormBounds, maxDepth: 5 })).to.equal(undefined);
    expect(boundsProblem({ a: [[[[[]]]]] }, { ...freeFormBounds, maxDepth: 5 })).to.match(/5 levels/);
  });

  it('walks 100,000 levels without overflowing the stack', () => {
    let deep: unknown = 1;
    for (let level = 0; level < 100_000; level++) deep = [deep];
    expect(boundsProblem(deep)).to.match(/at most 32 levels deep/);
  });

  it('refuses more than 256 keys in any object, naming where', () => {
    expect(boundsProblem(withKeys(256))).to.equal(undefined);
    expect(boundsProblem(withKeys(257))).to.match(/at most 256 keys/);
    expect(boundsProblem({ inner: { deeper: withKeys(257) } })).to.match(/\(at inner\.deeper\)$/);
  });

  it('refuses more than 4096 members and items in all', () => {
    const wide = (items: number) =>
      Object.fromEntries(Array.from({ length: 20 }, (_, i) => [`k${i}`, Array<number>(items).fill(0)]));
    expect(boundsProblem(wide(203))).to.equal(undefined); // 20 keys and 20 × 203 items: 4080
    expect(boundsProblem(wide(204))).to.match(/at most 4096 members and items in all/); // 4100
  });

  it('refuses keys longer than 256 characters or holding U+0000', () => {
    expect(boundsProblem({ ['k'.repeat(256)]: 1 })).to.equal(undefined);
    expect(boundsProblem({ ['k'.repeat(257)]: 1 })).to.match(/keys of at most 256 characters/);
    expect(boundsProblem({ a: { 'nul\u0000': 1 } })).to.match(/U\+0000 \(at a\)$/);
  });
});

describe('a free-form field in a request codec', () => {
  it('is refused with 400 naming the field when nested 1,000 levels deep', () => {
    const errors = errorsOf(() =>
      decodeOrThrow(CreateObservationBody, { observedAt: '2026-05-01T09:30:00Z', attributes: nested(1000) }),
    );
    expect(errors).to.have.length(1);
    expect(errors[0]!.path).to.equal('attributes');
    expect(errors[0]!.message).to.match(/^must be nested at most 32 levels deep \(at a\.a/);
  });

  it('is refused in a patch too, and accepted within the bounds', () => {
    expect(
      errorsOf(() => decodeOrThrow(PatchObservationBody, { attributes: withKeys(300) })).map((e) => e.path),
    ).to.deep.equal(['attributes']);
    expect(decodeOrThrow(PatchObservationBody, { attributes: nested(32) }).attributes).to.deep.equal(
      nested(32),
    );
  });
});

describe('a merge patch', () => {
  it('keeps a key named __proto__ as a member, without touching the prototype', () => {
    const patch = JSON.parse('{"__proto__": {"polluted": true}, "a": 1}') as unknown;
    const merged = mergePatch({ b: 2 }, patch) as Record<string, unknown>;
    expect(Object.getPrototypeOf(merged)).to.equal(Object.prototype);
    expect(Object.keys(merged).sort()).to.deep.equal(['__proto__', 'a', 'b']);
    expect(JSON.stringify(merged)).to.equal('{"b":2,"__proto__":{"polluted":true},"a":1}');
    expect(({} as Record<string, unknown>).polluted).to.equal(undefined);
  });
});

describe("a remote CV model's result", () => {
  const reply = (detections: string, summary: string) => ({
    outputs: [
      { name: 'detections', datatype: 'BYTES', shape: [1], data: [detections] },
      { name: 'summary', datatype: 'BYTES', shape: [1], data: [summary] },
    ],
  });
  const failure = (run: () => unknown) => {
    try {
      run();
    } catch (error) {
      if (error instanceof CvModelError) return error;
      throw error;
    }
    throw new Error('expected the reply to be refused');
  };
  const box = '"label":"fox","confidence":0.9,"bbox":{"x":0,"y":0,"width":1,"height":1}';

  it('is refused as model_reply_invalid when its summary is nested too deep, at any depth', () => {
    for (const depth of [33, 1000, 100_000]) {
      const error = failure(() =>
        parseInferReply(reply('[]', `${'{"a":'.repeat(depth - 1)}{}${'}'.repeat(depth - 1)}`)),
      );
      expect(error.code).to.equal('model_reply_invalid');
      expect(error.message).to.match(/^summary must be nested at most 32 levels deep/);
    }
    expect(parseInferReply(reply('[]', JSON.stringify(nested(32)))).summary).to.deep.equal(nested(32));
  });

  it('is refused when a detection carries fields beyond the bounds', () => {
    const error = failure(() =>
      parseInferReply(reply(`[{${box},"extra":${JSON.stringify(nested(40))}}]`, '{}')),
    );
    expect(error.message).to.match(/^detections\.0 must be nested at most 32 levels deep/);
  });
});
