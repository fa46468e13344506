// An acquire whose outcome is unknown (issue 30 row H3): the call ran on the
// server but its caller never saw the reply (the client's timeout). The
// semaphore sent a lease id of its choosing with the acquire and releases it
// in the background, so the slot comes back long before the lease's 30 s;
// failOpen never admits such an acquire. Real servers (see servers.js); only
// the reply is lost, by a proxy of the client.
import { test } from "node:test";
import assert from "node:assert/strict";
import { randomUUID } from "node:crypto";
import { Semaphore, UnavailableError } from "../index.js";
import { eachTarget } from "./servers.js";

const fresh = () => `job-${randomUUID()}-{é}%`;

// isAcquire: ARGV n, unit, now, mode, max, lease[, id], mode "0", n >= 1.
const isAcquire = (args) => args.length >= 6 && String(args[3]) === "0" && Number(args[0]) >= 1;

// lostReplies returns a proxy of client whose next `lose` acquires run on the
// server and then reject with a timeout, as a reply lost on the way back.
function lostReplies(client, lose) {
  const state = { lose, swallowed: [], sent: [] };
  const wrap = (fn, argsOf) => async (...a) => {
    const reply = await fn(...a);
    const args = argsOf(a);
    state.sent.push(args);
    if (state.lose > 0 && isAcquire(args)) {
      state.lose--;
      state.swallowed.push(reply);
      const e = new Error("Command timed out (the test lost the reply)");
      e.name = "TimeoutError";
      throw e;
    }
    return reply;
  };
  const proxy = new Proxy(client, {
    get(target, name) {
      const v = Reflect.get(target, name);
      if (typeof v !== "function") return v;
      const fn = v.bind(target);
      if (name === "call") return wrap(fn, (a) => (/^(EVALSHA|EVAL|FCALL)$/i.test(a[0]) ? a.slice(4) : []));
      if (name === "evalSha" || name === "eval" || name === "fCall") return wrap(fn, (a) => a[1].arguments);
      return fn;
    },
  });
  return { proxy, state };
}

test("an acquire whose reply is lost is released, never admitted", (t) => eachTarget(t, async (t, client) => {
  for (const failOpen of [false, true]) {
    const who = fresh();
    const { proxy, state } = lostReplies(client, 3);
    const sem = new Semaphore(proxy, { max: 2, leaseMs: 30e3 }, { prefix: "node-unknown", failOpen });
    const patient = new Semaphore(client, { max: 2, leaseMs: 30e3 }, { prefix: "node-unknown" });
    for (let i = 0; i < 3; i++) {
      await assert.rejects(sem.acquire(who), (e) => e instanceof UnavailableError && /timed out/.test(e.message),
        `failOpen ${failOpen}: acquire ${i} never admitted`);
    }
    assert.equal(state.swallowed[0][0], 1, `failOpen ${failOpen}: the first acquire took a slot: ${JSON.stringify(state.swallowed)}`);
    // The releases are bounded in time (2 s); settled() waits for them.
    await sem.settled();
    assert.equal((await patient.peek(who)).remaining, 2, `failOpen ${failOpen}: both slots back after the releases`);
    const { lease, result } = await patient.acquire(who);
    assert.ok(lease && result.allowed && !lease.local, JSON.stringify(result));
    await lease.release();
  }
}));

test("settled() waits for the background releases", (t) => eachTarget(t, async (t, client) => {
  const who = fresh();
  const { proxy } = lostReplies(client, 2);
  const sem = new Semaphore(proxy, { max: 2, leaseMs: 30e3 }, { prefix: "node-unknown" });
  await assert.rejects(sem.acquire(who), UnavailableError);
  await assert.rejects(sem.acquire(who), UnavailableError);
  await sem.settled();
  assert.equal((await sem.peek(who)).remaining, 2, "both slots back once the releases settled");
}));

test("v5 sends no lease id, v6 its random one", (t) => eachTarget(t, async (t, client) => {
  const who = fresh();
  for (const [version, want] of [[5, 6], [6, 7]]) {
    const { proxy, state } = lostReplies(client, 0);
    const sem = new Semaphore(proxy, { max: 2, leaseMs: 30e3 }, { prefix: "node-unknown", version });
    const { lease } = await sem.acquire(who);
    const args = state.sent.filter(isAcquire).at(-1);
    assert.equal(args.length, want, `v${version}: ${args}`);
    if (version === 6) assert.ok(Number(args[6]) === lease.id && lease.id >= 1 && lease.id <= 2 ** 52);
    await lease.release();
  }
}));
