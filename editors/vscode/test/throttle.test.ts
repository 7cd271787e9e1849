import assert from "node:assert/strict";
import { beforeEach, afterEach, mock, test } from "node:test";

import { Throttle } from "../src/throttle";

let clock = 0;

function advance(ms: number): void {
  clock += ms;
  mock.timers.tick(ms);
}

beforeEach(() => {
  clock = 0;
  mock.timers.enable({ apis: ["setTimeout"] });
});

afterEach(() => {
  mock.timers.reset();
});

test("a burst of pokes runs the task once now and once at the end of the interval", () => {
  let runs = 0;
  const throttle = new Throttle(() => runs++, 1000, () => true, () => clock);
  throttle.poke();
  advance(0);
  assert.equal(runs, 1);
  for (let i = 0; i < 10; i++) {
    advance(50);
    throttle.poke();
  }
  assert.equal(runs, 1);
  advance(499);
  assert.equal(runs, 1);
  advance(1);
  assert.equal(runs, 2);
  advance(5000);
  assert.equal(runs, 2);
});

test("nothing runs without a poke", () => {
  let runs = 0;
  const throttle = new Throttle(() => runs++, 1000, () => true, () => clock);
  advance(10_000);
  throttle.resume();
  advance(10_000);
  assert.equal(runs, 0);
});

test("a poke while unfocused waits for resume", () => {
  let runs = 0;
  let focused = false;
  const throttle = new Throttle(() => runs++, 1000, () => focused, () => clock);
  throttle.poke();
  advance(3000);
  assert.equal(runs, 0);
  focused = true;
  throttle.resume();
  advance(0);
  assert.equal(runs, 1);
  throttle.resume();
  advance(3000);
  assert.equal(runs, 1);
});

test("dispose drops a pending run", () => {
  let runs = 0;
  const throttle = new Throttle(() => runs++, 1000, () => true, () => clock);
  throttle.poke();
  advance(0);
  throttle.poke();
  throttle.dispose();
  advance(5000);
  assert.equal(runs, 1);
});
