// The peers of `make bench`: BullMQ and RSMQ moving messages through the same
// Redis as ssq, measured the way ssq-bench's `pipeline` scenario measures ssq.
//
//   node peer.js --system bullmq|rsmq --redis-port P --redis-pid PID
//                --concurrency C --duration S --message-size B --json OUT
//
// C producers each add one message at a time while C consumers take them one
// at a time (BullMQ: a Worker of concurrency C, jobs removed on completion;
// RSMQ: receiveMessage then deleteMessage, a 10 ms pause after an empty
// receive, as RSMQ has no blocking receive). Producers stop after S seconds;
// the run ends when every message sent is consumed. The figure is CPU time
// (this process and redis-server) per message sent and consumed, read from
// /proc before the first send and after the last consume. A warm-up round of
// one second, unmeasured, comes first (connections, scripts, the JIT).
'use strict';
const fs = require('fs');

function options() {
  const out = { system: '', redisPort: 6379, redisPid: 0, concurrency: 8, duration: 5, messageSize: 256, json: '' };
  const argv = process.argv.slice(2);
  for (let i = 0; i < argv.length; i += 2) {
    const key = argv[i].replace(/^--/, '').replace(/-(.)/g, (_, c) => c.toUpperCase());
    if (!(key in out)) throw new Error(`unknown option ${argv[i]}`);
    out[key] = typeof out[key] === 'number' ? Number(argv[i + 1]) : argv[i + 1];
  }
  if (!['bullmq', 'rsmq'].includes(out.system)) throw new Error('--system bullmq or rsmq');
  return out;
}

/** CPU seconds (user + system) of a process, from /proc/PID/stat. */
function cpuSeconds(pid) {
  const stat = fs.readFileSync(`/proc/${pid}/stat`, 'utf8');
  const fields = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
  return (Number(fields[11]) + Number(fields[12])) / 100;
}

const sleep = (ms) => new Promise((resolve) => setTimeout(resolve, ms));

/** One round: producers for `seconds`, then until all sent are consumed. */
async function round(peer, o, seconds) {
  let sent = 0;
  let consumed = 0;
  let producing = true;
  let allConsumed;
  const drained = new Promise((resolve) => { allConsumed = resolve; });
  const onConsumed = () => {
    consumed += 1;
    if (!producing && consumed >= sent) allConsumed();
  };
  const stopConsuming = peer.consume(o.concurrency, onConsumed);
  const producers = [];
  for (let p = 0; p < o.concurrency; p++) {
    producers.push((async () => {
      while (producing) {
        await peer.send();
        sent += 1;
      }
    })());
  }
  await sleep(seconds * 1000);
  producing = false;
  await Promise.all(producers);
  if (consumed < sent) await drained;
  await stopConsuming();
  return { sent, consumed };
}

async function bullmq(o) {
  const { Queue, Worker } = require('bullmq');
  const connection = { host: '127.0.0.1', port: o.redisPort, maxRetriesPerRequest: null };
  const name = `peer-bench-${process.pid}`;
  const queue = new Queue(name, { connection });
  const body = 'x'.repeat(o.messageSize);
  const jobOptions = { removeOnComplete: true, removeOnFail: true };
  return {
    send: () => queue.add('message', body, jobOptions),
    consume(concurrency, onConsumed) {
      const worker = new Worker(name, async () => {}, { connection, concurrency, removeOnComplete: { count: 0 } });
      worker.on('completed', onConsumed);
      return () => worker.close();
    },
    close: async () => { await queue.obliterate({ force: true }); await queue.close(); },
  };
}

async function rsmq(o) {
  const RedisSMQ = require('rsmq');
  const rsmq = new RedisSMQ({ host: '127.0.0.1', port: o.redisPort, ns: 'rsmq-bench' });
  const qname = `peer${process.pid}`;
  await rsmq.createQueueAsync({ qname, maxsize: -1 });
  const message = 'x'.repeat(o.messageSize);
  return {
    send: () => rsmq.sendMessageAsync({ qname, message }),
    consume(concurrency, onConsumed) {
      let running = true;
      const consumers = [];
      for (let c = 0; c < concurrency; c++) {
        consumers.push((async () => {
          while (running) {
            const received = await rsmq.receiveMessageAsync({ qname, vt: 30 });
            if (!received.id) { await sleep(10); continue; }
            await rsmq.deleteMessageAsync({ qname, id: received.id });
            onConsumed();
          }
        })());
      }
      return async () => { running = false; await Promise.all(consumers); };
    },
    close: async () => { await rsmq.deleteQueueAsync({ qname }); await rsmq.quitAsync(); },
  };
}

async function main() {
  const o = options();
  const peer = await (o.system === 'bullmq' ? bullmq(o) : rsmq(o));
  await round(peer, o, 1);
  const clientBefore = cpuSeconds(process.pid);
  const redisBefore = cpuSeconds(o.redisPid);
  const started = process.hrtime.bigint();
  const { sent, consumed } = await round(peer, o, o.duration);
  const seconds = Number(process.hrtime.bigint() - started) / 1e9;
  const clientCpu = cpuSeconds(process.pid) - clientBefore;
  const redisCpu = cpuSeconds(o.redisPid) - redisBefore;
  await peer.close();
  const result = {
    label: o.system, scenario: 'pipeline', concurrency: o.concurrency, message_size: o.messageSize,
    messages: sent, consumed, seconds, messages_per_second: consumed / seconds,
    client_cpu_seconds: clientCpu, server_cpu_seconds: redisCpu,
    cpu_ms_per_1000_messages: ((clientCpu + redisCpu) * 1e6) / sent,
  };
  console.log(`${o.system} c=${o.concurrency}: ${sent} messages in ${seconds.toFixed(1)} s, `
    + `${result.cpu_ms_per_1000_messages.toFixed(1)} ms CPU per 1,000 (client ${clientCpu.toFixed(2)} s, Redis ${redisCpu.toFixed(2)} s)`);
  if (o.json) fs.writeFileSync(o.json, JSON.stringify(result, null, 2));
  process.exit(0);
}

main().catch((error) => { console.error(error); process.exit(1); });
