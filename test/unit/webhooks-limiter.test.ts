import { expect } from 'chai';
import { keyedLimiter } from '../../src/webhooks/limiter.js';

/** A task that runs until released, recording how many ran at once overall and per key. */
const harness = () => {
  let running = 0;
  let peak = 0;
  const runningByKey = new Map<string, number>();
  const peakByKey = new Map<string, number>();
  const started: string[] = [];
  const releases: (() => void)[] = [];
  const task = (key: string, name: string) => () => {
    started.push(name);
    running += 1;
    peak = Math.max(peak, running);
    runningByKey.set(key, (runningByKey.get(key) ?? 0) + 1);
    peakByKey.set(key, Math.max(peakByKey.get(key) ?? 0, runningByKey.get(key)!));
    return new Promise<string>((resolve) =>
      releases.push(() => {
        running -= 1;
        runningByKey.set(key, runningByKey.get(key)! - 1);
        resolve(name);
      }),
    );
  };
  const releaseAll = async () => {
    while (releases.length > 0) {
      releases.shift()!();
      await new Promise((resolve) => setImmediate(resolve));
    }
  };
  return {
    task,
    started,
    releases,
    releaseAll,
    peak: () => peak,
    peakOf: (key: string) => peakByKey.get(key) ?? 0,
  };
};

const tick = () => new Promise((resolve) => setImmediate(resolve));

describe('the keyed limiter', () => {
  it('runs at most `overall` tasks at once, across keys', async () => {
    const limiter = keyedLimiter(3, 10);
    const h = harness();
    const results = Array.from({ length: 8 }, (_, i) => limiter.run(`k${i}`, h.task(`k${i}`, `t${i}`)));
    await tick();
    expect(h.started).to.have.length(3);
    await h.releaseAll();
    expect(await Promise.all(results)).to.deep.equal(['t0', 't1', 't2', 't3', 't4', 't5', 't6', 't7']);
    expect(h.peak()).to.equal(3);
  });

  it('runs at most `perKey` tasks of one key at once, in the order they came', async () => {
    const limiter = keyedLimiter(10, 2);
    const h = harness();
    const results = ['a1', 'a2', 'a3', 'a4'].map((name) => limiter.run('a', h.task('a', name)));
    await tick();
    expect(h.started).to.deep.equal(['a1', 'a2']);
    await h.releaseAll();
    await Promise.all(results);
    expect(h.started).to.deep.equal(['a1', 'a2', 'a3', 'a4']);
    expect(h.peakOf('a')).to.equal(2);
  });

  it('lets other keys run while one key has used up its slots: a hanging receiver stalls only itself', async () => {
    const limiter = keyedLimiter(4, 1);
    const h = harness();
    void limiter.run('slow', h.task('slow', 'slow1'));
    void limiter.run('slow', h.task('slow', 'slow2'));
    void limiter.run('fast', h.task('fast', 'fast1'));
    void limiter.run('other', h.task('other', 'other1'));
    await tick();
    expect(h.started).to.deep.equal(['slow1', 'fast1', 'other1']);
    await h.releaseAll();
  });

  it('passes results and failures through, and frees the slot of a failed task', async () => {
    const limiter = keyedLimiter(1, 1);
    const failed = limiter.run('a', () => Promise.reject(new Error('boom')));
    const next = limiter.run('a', () => Promise.resolve(42));
    expect(await failed.catch((error: Error) => error.message)).to.equal('boom');
    expect(await next).to.equal(42);
  });

  it('is idle at once when nothing runs, and otherwise once everything has finished', async () => {
    const limiter = keyedLimiter(1, 1);
    await limiter.idle();
    const h = harness();
    void limiter.run('a', h.task('a', 'one'));
    void limiter.run('a', h.task('a', 'two'));
    let idle = false;
    const waiting = limiter.idle().then(() => (idle = true));
    await tick();
    expect(idle).to.equal(false);
    h.releases.shift()!();
    await tick();
    await tick();
    expect(idle).to.equal(false);
    await h.releaseAll();
    await waiting;
    expect(idle).to.equal(true);
  });

  it('hands out a slot at once only when the key has one free and none of its tasks waits', async () => {
    const limiter = keyedLimiter(10, 2);
    const h = harness();
    const first = limiter.tryAcquire('a');
    expect(first).to.be.a('function');
    void limiter.run('a', h.task('a', 'a1'));
    await tick();
    expect(h.started).to.deep.equal(['a1']);
    // Both of a's slots are taken now: the next task waits, and no slot is handed out past it.
    void limiter.run('a', h.task('a', 'a2'));
    expect(limiter.tryAcquire('a')).to.equal(null);
    expect(limiter.tryAcquire('b')).to.be.a('function');
    first!();
    first!(); // given back once only
    await tick();
    expect(h.started).to.deep.equal(['a1', 'a2']);
    expect(limiter.tryAcquire('a')).to.equal(null);
    await h.releaseAll();
  });

  it('works off a long backlog of one key in order, beside other keys', async () => {
    const limiter = keyedLimiter(3, 2);
    const done: string[] = [];
    const backlog = Array.from({ length: 5000 }, (_, i) =>
      limiter.run('busy', async () => {
        await tick();
        done.push(`busy${i}`);
      }),
    );
    const other = limiter.run('quiet', () => {
      done.push('quiet');
      return Promise.resolve();
    });
    await Promise.all([...backlog, other]);
    expect(done.filter((name) => name.startsWith('busy'))).to.deep.equal(
      Array.from({ length: 5000 }, (_, i) => `busy${i}`),
    );
    // The quiet key did not wait for the busy key's backlog.
    expect(done.indexOf('quiet')).to.be.below(5);
  });

  it('fails a task that throws before returning a promise, and frees its slot', async () => {
    const limiter = keyedLimiter(1, 1);
    const thrown = limiter.run('a', () => {
      throw new Error('at once');
    });
    expect(await thrown.catch((error: Error) => error.message)).to.equal('at once');
    expect(await limiter.run('a', () => Promise.resolve('next'))).to.equal('next');
  });

  it('gives a slot back early when the task releases it, once', async () => {
    const limiter = keyedLimiter(10, 1);
    const h = harness();
    let finish!: () => void;
    const first = limiter.run('a', async (release) => {
      release();
      release();
      await new Promise<void>((resolve) => (finish = resolve));
    });
    void limiter.run('a', h.task('a', 'second'));
    await tick();
    // The first task still runs, but its slot went to the second.
    expect(h.started).to.deep.equal(['second']);
    void limiter.run('a', h.task('a', 'third'));
    await tick();
    expect(h.started).to.deep.equal(['second']);
    finish();
    await first;
    await h.releaseAll();
    expect(h.started).to.deep.equal(['second', 'third']);
  });

  it("holds at most `perGroup` slots for one group (a tenant), so another group's task runs at once", async () => {
    const limiter = keyedLimiter(4, 2, 3);
    const h = harness();
    // Tenant a: three subscriptions, two tasks each; it may hold 3 of the 4 slots.
    for (const key of ['a1', 'a2', 'a3'])
      for (const n of [1, 2]) void limiter.run(key, h.task(key, `${key}.${n}`), { group: 'a' });
    await tick();
    expect(h.started).to.have.length(3);
    void limiter.run('b1', h.task('b1', 'b1.1'), { group: 'b' });
    await tick();
    expect(h.started).to.have.length(4);
    expect(h.started.at(-1)).to.equal('b1.1');
    expect(limiter.tryAcquire('a4', 'a'), 'the group is at its share').to.equal(null);
    await h.releaseAll();
    expect(h.started).to.have.length(7);
  });

  it('starts a task asked for `first` ahead of the tasks of its key that were waiting before it', async () => {
    const limiter = keyedLimiter(10, 1);
    const h = harness();
    for (const n of [1, 2, 3]) void limiter.run('a', h.task('a', `delivery${n}`));
    void limiter.run('a', h.task('a', 'test'), { first: true });
    await tick();
    expect(h.started).to.deep.equal(['delivery1']);
    await h.releaseAll();
    expect(h.started).to.deep.equal(['delivery1', 'test', 'delivery2', 'delivery3']);
  });

  it('starts every task, also when tasks give their slot back and queue more of their key as they start', async () => {
    // As the attempt queue does: an attempt claimed ahead that waited too long gives its slot back and
    // queues the next ones in the same turn. A pass started inside another once emptied and deleted the
    // key's queue, then the outer pass deleted the queue made meanwhile, and its tasks waited for ever.
    let seed = 7;
    const random = () => (seed = (seed * 1103515245 + 12345) % 2 ** 31) / 2 ** 31;
    for (const perKey of [1, 2, 3, 4]) {
      for (let trial = 0; trial < 10; trial += 1) {
        const limiter = keyedLimiter(32, perKey);
        let queued = 0;
        let finished = 0;
        const runs: Promise<void>[] = [];
        const queue = (): void => {
          queued += 1;
          runs.push(
            limiter.run('a', async (release) => {
              if (random() < 0.5) release();
              const more = Math.floor(random() * 3);
              for (let n = 0; n < more && queued < 40; n += 1) queue();
              await tick();
              finished += 1;
            }),
          );
        };
        for (let n = 0; n < perKey * 2; n += 1) queue();
        // Every run settles within a few turns; one left waiting never does.
        const allSettled = async () => {
          for (let awaited = 0; awaited < runs.length;) {
            awaited = runs.length;
            await Promise.all(runs.slice(0, awaited));
          }
        };
        await Promise.race([allSettled(), new Promise((resolve) => setTimeout(resolve, 500))]);
        expect(finished, `${perKey} per key, trial ${trial}`).to.equal(queued);
      }
    }
  });
});
