// A Node.js consumer for `streamdelay serve`: only the standard library (built-in fetch, Node >= 18).
//
//   STREAMDELAY_HTTP_URL=http://127.0.0.1:8080 STREAMDELAY_TOKEN=... node consumer.mjs
//
// It reserves deliveries of STREAMDELAY_TOPIC (default "order.close") on STREAMDELAY_QUEUE (default
// "orders") in the consumer group STREAMDELAY_GROUP (default "workers"), with a long poll, and
// settles each by its receipt:
//   - a body with "fail": true fails (POST .../deliveries/{receipt}:fail): the server retries it
//     with backoff (or after STREAMDELAY_RETRY_DELAY seconds when set) and makes it a dead letter
//     after its max_attempts;
//   - a body with "work_ms": N takes N ms of work, and the delivery is touched (:touch) every
//     third of its ttr meanwhile: the heartbeat that keeps a long job from being reclaimed
//     (STREAMDELAY_HEARTBEAT=0 leaves the touches out, to watch the receipt go stale);
//   - everything else is acknowledged (:ack).
// A 409 means the receipt went stale (the delivery was reclaimed after its ttr, cancelled or
// replaced): the job is someone else's now, so it is only logged. The same at-least-once rules as a
// Python worker apply: a handler may see a job again, so make it idempotent.
// It stops on SIGINT / SIGTERM after the deliveries in hand, or after STREAMDELAY_IDLE_EXIT
// empty polls in a row (default 0: never). Each event is printed as one JSON line.

import os from "node:os";

const base = (process.env.STREAMDELAY_HTTP_URL ?? "http://127.0.0.1:8080").replace(/\/+$/, "");
const token = process.env.STREAMDELAY_TOKEN ?? "";
const queue = process.env.STREAMDELAY_QUEUE ?? "orders";
const topic = process.env.STREAMDELAY_TOPIC ?? "order.close";
const group = process.env.STREAMDELAY_GROUP ?? "workers";
const consumer = process.env.STREAMDELAY_CONSUMER ?? `node-${os.hostname()}-${process.pid}`;
const waitMs = Number(process.env.STREAMDELAY_WAIT_MS ?? 5000); // long poll, at most 30000
const idleExit = Number(process.env.STREAMDELAY_IDLE_EXIT ?? 0);
const retryDelay = process.env.STREAMDELAY_RETRY_DELAY; // seconds; unset: the server's backoff
const heartbeat = process.env.STREAMDELAY_HEARTBEAT !== "0";

let stopping = false;
for (const signal of ["SIGINT", "SIGTERM"]) process.on(signal, () => { stopping = true; });

const log = (event) => console.log(JSON.stringify(event));
const sleep = (ms) => new Promise((resolve) => setTimeout(resolve, ms));

/** POST JSON to a path under /v1/queues/{queue}; returns {status, reply} (reply null on 204). */
async function post(path, body) {
  const headers = { "content-type": "application/json", accept: "application/json" };
  if (token) headers.authorization = `Bearer ${token}`;
  const url = `${base}/v1/queues/${encodeURIComponent(queue)}${path}`;
  const response = await fetch(url, { method: "POST", headers, body: JSON.stringify(body ?? {}) });
  const text = await response.text();
  return { status: response.status, reply: text ? JSON.parse(text) : null };
}

/** Settle one delivery: "ack", "fail" or "touch" by its receipt; false when it went stale. */
async function settle(delivery, action, body) {
  const path = `/deliveries/${encodeURIComponent(delivery.receipt)}:${action}`;
  const { status, reply } = await post(path, body);
  if (status === 409) {
    log({ event: "stale", id: delivery.id, action });
    return false;
  }
  if (status >= 300) throw new Error(`${action} ${delivery.id}: HTTP ${status} ${JSON.stringify(reply)}`);
  return true;
}

/** Work for `ms` milliseconds, touching the delivery every third of its ttr (seconds) so the
 * server does not reclaim it; false when the receipt went stale meanwhile. */
async function work(delivery, ms) {
  const every = Math.max(50, (delivery.ttr * 1000) / 3);
  for (let done = 0; done < ms;) {
    const step = Math.min(every, ms - done);
    await sleep(step); // stands for a slice of real work
    done += step;
    if (heartbeat && done < ms) {
      if (!(await settle(delivery, "touch"))) return false; // the ttr counts again from now
      log({ event: "touched", id: delivery.id, attempt: delivery.attempt });
    }
  }
  return true;
}

/** The work itself: here a stand-in that fails poison jobs and takes a while for some. */
async function handle(delivery) {
  const body = delivery.body ?? {};
  if (body.work_ms && !(await work(delivery, Number(body.work_ms)))) return;
  if (body.fail) {
    const failure = { error: `order ${body.order_id} cannot be closed` };
    if (retryDelay !== undefined) failure.retry_delay = Number(retryDelay);
    if (await settle(delivery, "fail", failure)) {
      log({ event: "failed", id: delivery.id, attempt: delivery.attempt });
    }
    return;
  }
  if (await settle(delivery, "ack")) log({ event: "acked", id: delivery.id, attempt: delivery.attempt });
}

let idle = 0;
while (!stopping) {
  let status, reply;
  try {
    ({ status, reply } = await post(`/topics/${encodeURIComponent(topic)}:reserve`,
                                    { group, consumer, wait_ms: waitMs, count: 10 }));
  } catch (error) { // server restarting, network: wait and poll again
    log({ event: "unreachable", error: String(error.cause ?? error) });
    await sleep(1000);
    continue;
  }
  if (status === 204) { // nothing came within wait_ms
    idle += 1;
    if (idleExit > 0 && idle >= idleExit) break;
    continue;
  }
  if (status !== 200) {
    log({ event: "error", status, error: reply?.error });
    if (status >= 400 && status < 500) process.exit(1); // a mistake in the request: retrying will not help
    await sleep(1000);
    continue;
  }
  idle = 0;
  for (const delivery of reply.deliveries) {
    log({ event: "reserved", id: delivery.id, attempt: delivery.attempt });
    try {
      await handle(delivery);
    } catch (error) { // unsettled: the server delivers it again after its ttr
      log({ event: "error", id: delivery.id, error: String(error.cause ?? error) });
    }
  }
}
log({ event: "stopped", consumer });
