import { expect } from 'chai';
import {
  aheadBudgetMs,
  aheadLimit,
  claimsToTake,
  newLane,
  noteSlot,
  paceOf,
  slotQueueToFill,
} from '../../src/webhooks/claim-ahead.js';
import { outcomeGate } from '../../src/webhooks/outcome-gate.js';

const laneWith = (waiting: number, held: { claiming?: number; stocked?: number } = {}) => {
  const lane = newLane('t_1', 1);
  for (let n = 0; n < waiting; n += 1) lane.waiting.push(`d_${n}`);
  lane.claiming = held.claiming ?? 0;
  lane.stocked = held.stocked ?? 0;
  return lane;
};

describe('claiming webhook deliveries ahead of their slots', () => {
  describe('the budget a claim may wait for its slot', () => {
    it('is half the slack the claim time-out leaves beyond the receiver time-out', () => {
      expect(aheadBudgetMs({ claimTimeoutMs: 30_000, timeoutMs: 20_000 })).to.equal(5000);
    });

    it('is nothing when the claim time-out leaves no slack', () => {
      expect(aheadBudgetMs({ claimTimeoutMs: 10_000, timeoutMs: 20_000 })).to.equal(0);
    });
  });

  describe('how many claims a subscription holds ahead', () => {
    const settings = { perSubscription: 4 };

    it('is none until an attempt of the subscription has ended', () => {
      expect(aheadLimit(settings, 5000, null)).to.equal(0);
    });

    it('is at most four times the slots for a fast receiver', () => {
      expect(aheadLimit(settings, 5000, 1)).to.equal(16);
    });

    it('is as many as the slots go through in half the budget for a slow one, and none for a hung one', () => {
      expect(aheadLimit(settings, 5000, 1000)).to.equal(10);
      expect(aheadLimit(settings, 5000, 20_000)).to.equal(0);
    });

    it('is none without a budget', () => {
      expect(aheadLimit(settings, 0, 1)).to.equal(0);
    });
  });

  describe('the pace of a subscription', () => {
    it('is the time its attempts held their slots, or longer while one in flight has taken longer', () => {
      const lane = newLane('t_1');
      let now = 0;
      expect(paceOf(lane, now)).to.equal(null);
      const ended = noteSlot(lane, () => now);
      now = 10;
      ended();
      ended();
      expect(lane.attemptMs).to.equal(10);
      noteSlot(lane, () => now);
      now = 5000;
      expect(paceOf(lane, now)).to.equal(4990);
    });
  });

  describe('the claims taken at once', () => {
    it('are a batch up to the limit once at most half of it is held', () => {
      expect(claimsToTake(laneWith(100), 16)).to.equal(16);
      expect(claimsToTake(laneWith(100, { stocked: 8 }), 16)).to.equal(8);
      expect(claimsToTake(laneWith(100, { stocked: 6, claiming: 3 }), 16)).to.equal(0);
      expect(claimsToTake(laneWith(3), 16)).to.equal(3);
    });

    it('are none when nothing may be claimed ahead, and then the slots are queued for unclaimed', () => {
      const lane = laneWith(10);
      expect(claimsToTake(lane, 0)).to.equal(0);
      expect(slotQueueToFill(lane, 4)).to.equal(4);
      lane.inSlotQueue = 3;
      expect(slotQueueToFill(lane, 4)).to.equal(1);
    });
  });

  describe('the gate the outcomes of successes pass', () => {
    it('lets them through together, when enough wait or after the delay', async () => {
      const gate = outcomeGate(3, 20);
      const passed: number[] = [];
      const first = [1, 2, 3].map((n) => gate.pass().then(() => passed.push(n)));
      await Promise.all(first);
      expect(passed).to.deep.equal([1, 2, 3]);
      const started = Date.now();
      await gate.pass();
      expect(Date.now() - started).to.be.at.least(15);
    });

    it('lets them through at once when opened, as a batch of claims is appended', async () => {
      const gate = outcomeGate(64, 60_000);
      const waiting = Promise.all([gate.pass(), gate.pass()]);
      gate.open();
      await waiting;
    });
  });
});
