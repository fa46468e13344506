// What a limiter refuses when it is built (or when its clock is read),
// before any round trip: a LimitError naming the field, as the Go API's
// *LimitError does. No server needed.
import { test } from "node:test";
import assert from "node:assert/strict";
import { SlidingWindow, TokenBucket, ZSetLog, AR1, Semaphore, LimitError } from "../index.js";

// Never called: the limiters are only built.
const noClient = { evalsha() {}, call() {} };

function refused(make, index, field, text) {
  assert.throws(make, (e) => {
    assert.ok(e instanceof LimitError, `${e}`);
    assert.equal(e.index, index, e.message);
    assert.equal(e.field, field, e.message);
    assert.ok(e.message.includes(text), `${e.message} should say ${text}`);
    return true;
  });
}

test("a bare number of a duration is refused with what to write", () => {
  // The habit of a rate-limiter-flexible user: 60 meant seconds; it was a 60 ms window.
  refused(() => new SlidingWindow(noClient, [{ max: 10, duration: 60 }]), 0, "Duration",
    'duration: 60 names no unit (seconds or milliseconds?): write durationMs: 60 for 60 ms, or duration: "60s" for 60 seconds');
  refused(() => new SlidingWindow(noClient, [{ max: 10, durationMs: 60_000, resolution: 1000 }]), 0, "Resolution", "resolutionMs: 1000");
  refused(() => new TokenBucket(noClient, [{ capacity: 5, refillAmount: 1, refillInterval: 1000 }]), 0, "RefillInterval", "refillIntervalMs: 1000");
  refused(() => new ZSetLog(noClient, [{ max: 5, window: 1000 }]), 0, "Window", "windowMs: 1000");
  refused(() => new AR1(noClient, [{ max: 5, factor: 2, resolution: 1000 }]), 0, "Resolution", "resolutionMs: 1000");
  refused(() => new Semaphore(noClient, { max: 5, lease: 30 }), 0, "Lease", 'leaseMs: 30 for 30 ms, or lease: "30s"');
});

test("durations in ms or with units name the same key and arguments", () => {
  const forms = [
    [{ max: 10, durationMs: 60_000, resolutionMs: 6000 }, { max: 10, duration: "60s", resolution: "6s" }, { max: 10, duration: "1m", resolution: "6000ms" }, { max: 10, duration: "60s" }],
    [{ max: 10, durationMs: 5_400_000, resolutionMs: 1500.007 }, { max: 10, duration: "1h30m", resolution: "1.500007s" }, { max: 10, duration: "1.5h", resolution: "1500007us" }],
  ];
  for (const same of forms) {
    const [first, ...rest] = same.map((w) => new SlidingWindow(noClient, [w]));
    for (const l of rest) {
      assert.deepEqual(l.args(1, ""), first.args(1, ""));
      assert.ok(l.key("k").equals(first.key("k")));
    }
  }
  const bucket = new TokenBucket(noClient, [{ capacity: 5, refillAmount: 1, refillInterval: "250ms" }]);
  assert.deepEqual(bucket.args(1, "").slice(-3), ["5", "1", "250"]);
  assert.deepEqual(new Semaphore(noClient, { max: 2, lease: "30s" }).slots, { max: 2, leaseMs: 30_000 });
});

test("durations that cannot be right", () => {
  const cases = [
    [{ durationMs: 0.0004 }, "below the resolution floor of 1 µs"],
    [{ duration: "0.4us" }, "below the resolution floor of 1 µs"],
    [{ durationMs: 1.0005 }, "whole number of microseconds"],
    [{ duration: "10" }, 'a duration with units, such as "10s"'],
    [{ duration: "10x" }, "a duration with units"],
    [{ duration: "" }, "a duration with units"],
    [{ duration: "-5s" }, "a duration with units"],
    [{ duration: true }, "a duration with units"],
    [{ durationMs: "60" }, 'durationMs must be a finite number of milliseconds, got "60"'],
    [{ durationMs: NaN }, "finite number"],
    [{ durationMs: Infinity }, "finite number"],
    [{ durationMs: 1e300 }, "at most 2^52"],
    [{ durationMs: 0 }, "must be positive"],
    [{ durationMs: -5 }, "must be positive"],
    [{ durationMs: 5, duration: "5ms" }, "given twice"],
    [{}, 'is missing: write durationMs: <milliseconds> or duration: "<duration>"'],
  ];
  for (const [fields, text] of cases) {
    // The second limit is the bad one: the index is the limit's.
    refused(() => new SlidingWindow(noClient, [{ max: 1, durationMs: 1000 }, { max: 5, ...fields }]), 1, "Duration", text);
  }
});

test("a field no limit has is refused with the known fields", () => {
  refused(() => new SlidingWindow(noClient, [{ max: 1, durationMS: 1000 }]), 0, "durationMS",
    "is not a field of a sliding_window limit; the fields are max, duration, durationMs, resolution, resolutionMs");
  refused(() => new TokenBucket(noClient, [{ capacity: 1, refillAmount: 1, refillIntervalMs: 10, burst: 5 }]), 0, "burst", "refillIntervalMs");
  refused(() => new Semaphore(noClient, { max: 1, leaseMs: 10, ttl: 5 }), 0, "ttl", "the fields are max, lease, leaseMs");
});

test("a string factor is refused", () => {
  refused(() => new AR1(noClient, [{ max: 1, factor: "2", resolution: "1s" }]), 0, "Factor", 'must be a number, got "2"');
  refused(() => new AR1(noClient, [{ max: 1, factor: Infinity, resolution: "1s" }]), 0, "Factor", "must be in [1.001, 10^6]");
});

test("unknown options are refused with the known ones", () => {
  // {keyPrefix: "x"} silently used the default prefix.
  refused(() => new SlidingWindow(noClient, [{ max: 1, duration: "1s" }], { keyPrefix: "x" }), -1, "keyPrefix",
    "is not an option; the options are prefix, countDenied, clock, failOpen, functions, version");
  refused(() => new Semaphore(noClient, { max: 1, lease: "1s" }, { points: 5 }), -1, "points",
    "the options are prefix, clock, failOpen, functions, version");
  refused(() => new Semaphore(noClient, { max: 1, lease: "1s" }, { countDenied: true }), -1, "CountDenied", "does not apply");
  refused(() => new ZSetLog(noClient, [{ max: 1, window: "1s" }], "login"), -1, "options", "must be an object, got string");
  refused(() => new ZSetLog(noClient, [{ max: 1, window: "1s" }], { clock: Date.now() }), -1, "Clock", "must be a function");
});

test("a clock before 2000, or not a time, is refused", () => {
  const cases = [
    [1_700_000_000, "must read after 2000-01-01, got 1700000000 ms (1970-01-20T16:13:20.000Z): a clock in seconds?"],
    [new Date("1999-12-31T23:59:59Z"), "must read after 2000-01-01"],
    [new Date("nope"), "an invalid Date"],
    ["1700000000000", "got string"],
    [NaN, "milliseconds since the epoch"],
    [1_700_000_000_000n, "got bigint"],
  ];
  for (const [reading, text] of cases) {
    const limiter = new SlidingWindow(noClient, [{ max: 1, duration: "1s" }], { clock: () => reading });
    refused(() => limiter.args(1), -1, "Clock", text);
    const sem = new Semaphore(noClient, { max: 1, lease: "1s" }, { clock: () => reading });
    refused(() => sem.args(1), -1, "Clock", text);
  }
  const at2000 = new SlidingWindow(noClient, [{ max: 1, duration: "1s" }], { clock: () => new Date("2000-01-01T00:00:01Z") });
  assert.equal(at2000.args(1)[2], "946684801000");
});

test("the version option: default 7, 5 and 6 pinnable, others refused", () => {
  const makers = [
    (o) => new SlidingWindow(noClient, [{ max: 1, duration: "1s" }], o),
    (o) => new AR1(noClient, [{ max: 1, factor: 2, resolution: "1s" }], o),
    (o) => new Semaphore(noClient, { max: 1, lease: "1s" }, o),
  ];
  for (const make of makers) {
    assert.equal(make().version, 7);
    assert.equal(make({ version: 0 }).version, 7);
    for (const version of [5, 6]) {
      const pinned = make({ version });
      assert.equal(pinned.version, version);
      assert.notEqual(pinned.script.sha1, make().script.sha1);
    }
    for (const bad of [4, 8, "5", 5.5, true, -1]) refused(() => make({ version: bad }), -1, "Version", "has versions 5, 6, 7");
  }
  assert.ok(makers[0]({ version: 5 }).key("a").includes(":sliding_window:v5:"));
  assert.ok(makers[0]({ version: 6 }).key("a").includes(":sliding_window:v6:"));
  assert.ok(makers[0]().key("a").includes(`:sliding_window:v${makers[0]().script.stateVersion}:`));
});
