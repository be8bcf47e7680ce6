// BullMQ, the original Node.js library, in the peers harness (benchmarks/peers/bullmq_node_peer.py
// starts it). Its node_modules live outside the repository's tracked files: BENCH_NODE (default
// <repo>/.bench-node, gitignored), installed by `make bench-peers` with npm.
//   node peer.cjs enqueue   jobs as JSON [[id, due epoch s], ...] on stdin; one `queue.add` per
//                           job, awaited in turn (delay = due - now, ms); prints the loop's seconds
//   node peer.cjs worker    one `Worker` (its defaults: concurrency 1; BENCH_CONCURRENCY sets
//                           another), the no-op handler; stops on SIGTERM
// The handler does what benchmarks/peers/record.py does: append "<job id> <epoch s>" to the file
// BENCH_RECORDS, one write on an O_APPEND descriptor per job.
'use strict';
const fs = require('fs');
const path = require('path');
const { performance } = require('perf_hooks');

const root = process.env.BENCH_NODE || path.join(__dirname, '..', '..', '..', '.bench-node');
const { Queue, Worker } = require(path.join(root, 'node_modules', 'bullmq'));

function connection() {
  const url = new URL(process.env.BENCH_URL || 'redis://127.0.0.1:6379/0');
  return { host: url.hostname, port: Number(url.port || 6379), maxRetriesPerRequest: null };
}

const PAD = 'x'.repeat(70); // record.py's body: {"id": ..., "pad": ...}, ~100 bytes of JSON

async function enqueue() {
  const chunks = [];
  for await (const chunk of process.stdin) chunks.push(chunk);
  const jobs = JSON.parse(Buffer.concat(chunks).toString());
  const queue = new Queue('bench', { connection: connection() });
  await queue.waitUntilReady();
  const began = performance.now();
  for (const [id, due] of jobs) {
    await queue.add('noop', { id, pad: PAD },
                    { jobId: id, delay: Math.max(0, Math.floor(due * 1000 - Date.now())) });
  }
  const seconds = (performance.now() - began) / 1000;
  await queue.close();
  process.stdout.write(`${seconds}\n`);
}

async function serve() {
  const fd = fs.openSync(process.env.BENCH_RECORDS, 'a');
  const options = { connection: connection() };
  if (process.env.BENCH_CONCURRENCY) options.concurrency = Number(process.env.BENCH_CONCURRENCY);
  const worker = new Worker('bench', async (job) => {
    const now = (performance.timeOrigin + performance.now()) / 1000;
    fs.writeSync(fd, `${job.data.id} ${now.toFixed(6)}\n`);
  }, options);
  worker.on('error', (err) => process.stderr.write(`${err}\n`));
  const stop = async () => { await worker.close(); process.exit(0); };
  process.on('SIGTERM', stop);
  process.on('SIGINT', stop);
}

(process.argv[2] === 'enqueue' ? enqueue() : serve()).catch((err) => {
  process.stderr.write(`${err && err.stack || err}\n`);
  process.exit(1);
});
