// A user's node:test suite over the npm packages (tests/packages/npm.sh
// installs them from their `npm pack` tarballs into a fresh directory and
// runs this there): the helper's server, reset, the virtual clock and
// faults, through the AWS SDK for JavaScript v3.
"use strict";
const { before, beforeEach, after, test } = require("node:test");
const assert = require("node:assert/strict");
const {
  SQSClient,
  CreateQueueCommand,
  ListQueuesCommand,
  SendMessageCommand,
  ReceiveMessageCommand,
} = require("@aws-sdk/client-sqs");
const ssq = require("ssq");

let server;
let sqs;

before(async () => {
  server = await ssq.start();
  sqs = new SQSClient({
    endpoint: server.endpoint,
    region: "us-east-1",
    credentials: { accessKeyId: "test", secretAccessKey: "test" },
    maxAttempts: 3,
  });
});
beforeEach(async () => {
  await server.reset();
  await server.faults.clear();
});
after(() => server.stop());

test("the binary is the platform package's", () => {
  assert.match(ssq.binaryPath(), new RegExp(`node_modules/ssq-${process.platform}-${process.arch}/bin/ssq$`));
});

test("a queue made in one test is gone in the next (1 of 2)", async () => {
  await sqs.send(new CreateQueueCommand({ QueueName: "left-behind" }));
  const { QueueUrls } = await sqs.send(new ListQueuesCommand({}));
  assert.equal(QueueUrls.length, 1);
});

test("a queue made in one test is gone in the next (2 of 2)", async () => {
  const { QueueUrls = [] } = await sqs.send(new ListQueuesCommand({}));
  assert.deepEqual(QueueUrls, []);
});

test("a delayed message arrives when the clock has moved", async () => {
  const { QueueUrl } = await sqs.send(new CreateQueueCommand({ QueueName: "jobs" }));
  await sqs.send(new SendMessageCommand({ QueueUrl, MessageBody: "later", DelaySeconds: 900 }));
  const early = await sqs.send(new ReceiveMessageCommand({ QueueUrl }));
  assert.equal(early.Messages, undefined);
  const before = await server.clock.now();
  const after = await server.clock.advance(900);
  assert.equal(after - before, 900_000);
  const { Messages } = await sqs.send(new ReceiveMessageCommand({ QueueUrl }));
  assert.equal(Messages[0].Body, "later");
});

test("an injected fault is answered as AWS would, and the SDK retries it", async () => {
  const { QueueUrl } = await sqs.send(new CreateQueueCommand({ QueueName: "orders" }));
  await server.faults.add([{ action: "SendMessage", error: "InternalError", count: 1 }]);
  assert.equal((await server.faults.list()).length, 1);
  const sent = await sqs.send(new SendMessageCommand({ QueueUrl, MessageBody: "order 1" }));
  assert.equal(sent.$metadata.attempts, 2);
  await server.faults.add({ action: "SendMessage", error: "InternalError", count: 5 });
  await assert.rejects(
    sqs.send(new SendMessageCommand({ QueueUrl, MessageBody: "order 2" })),
    (error) => error.name === "InternalError",
  );
});
