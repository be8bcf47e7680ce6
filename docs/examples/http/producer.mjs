// A Node.js producer for `streamdelay serve`: only the standard library (built-in fetch, Node >= 18).
//
//   STREAMDELAY_HTTP_URL=http://127.0.0.1:8080 STREAMDELAY_TOKEN=... node producer.mjs [id-prefix]
//
// It enqueues, on the queue STREAMDELAY_QUEUE (default "orders") and the topic STREAMDELAY_TOPIC
// (default "order.close"):
//   - <prefix>ok-1 one job per request (POST /v1/queues/{queue}/jobs), due in a moment;
//   - <prefix>ok-2 and <prefix>ok-3 with one request (POST /v1/queues/{queue}/jobs:batch); the
//     ok-3 has a ttr of 2 s and takes 2 s of work ("work_ms"), so the consumer touches it
//     (the heartbeat) while it works, else the server would reclaim it and deliver it again;
//   - <prefix>poison, a job whose body says "fail": the consumers fail it each time, so after
//     max_attempts (3) deliveries it is a dead letter.
// Enqueueing an id whose job still waits is a no-op (200 instead of 201, "created": false).
// Each result is printed as one JSON line. See docs/http.md for the API.

const base = (process.env.STREAMDELAY_HTTP_URL ?? "http://127.0.0.1:8080").replace(/\/+$/, "");
const token = process.env.STREAMDELAY_TOKEN ?? "";
const queue = process.env.STREAMDELAY_QUEUE ?? "orders";
const topic = process.env.STREAMDELAY_TOPIC ?? "order.close";
const prefix = process.argv[2] ?? "demo-";

/** POST a JSON body to a path under /v1/queues/{queue}; returns [status, parsed JSON reply]. */
async function post(path, body) {
  const headers = { "content-type": "application/json", accept: "application/json" };
  if (token) headers.authorization = `Bearer ${token}`;
  const url = `${base}/v1/queues/${encodeURIComponent(queue)}${path}`;
  const response = await fetch(url, { method: "POST", headers, body: JSON.stringify(body) });
  const text = await response.text();
  const reply = text ? JSON.parse(text) : null;
  if (!response.ok) {
    // Every error has the same shape: {"error": {"code", "message", "field"}}.
    const error = reply?.error ?? {};
    throw new Error(`POST ${path}: HTTP ${response.status} ${error.code}: ${error.message}` +
                    (error.field ? ` (field ${error.field})` : ""));
  }
  return [response.status, reply];
}

// One job per request: 201 when it was created, 200 when a job with this id existed.
const [status, one] = await post("/jobs", {
  topic, id: `${prefix}ok-1`, body: { order_id: 1 }, delay: 0.2, ttr: 30,
});
console.log(JSON.stringify({ route: "jobs", status, ...one }));

// Several jobs in one request: the reply lists a result per job, in order.
const [batchStatus, batch] = await post("/jobs:batch", {
  jobs: [
    { topic, id: `${prefix}ok-2`, body: { order_id: 2 } },
    { topic, id: `${prefix}ok-3`, body: { order_id: 3, work_ms: 2000 }, ttr: 2,
      headers: { source: "node" } },
  ],
});
console.log(JSON.stringify({ route: "jobs:batch", status: batchStatus, ...batch }));

// A job the consumers always fail: retried, then dead after its 3rd attempt.
const [poisonStatus, poison] = await post("/jobs", {
  topic, id: `${prefix}poison`, body: { order_id: 4, fail: true }, max_attempts: 3,
});
console.log(JSON.stringify({ route: "jobs", status: poisonStatus, ...poison }));
