// ssq for JavaScript test suites: `start()` runs an ssq (an SQS-compatible
// queue server) on a free loopback port with its control API and virtual
// clock, and returns a `Server` whose endpoint the AWS SDK is pointed at.
// The same works in node:test, Jest and Vitest (README.md): start one in a
// before-all hook, `reset()` in a before-each, `stop()` in an after-all.
// `binaryPath()` finds the binary: SSQ_BIN when set, else the one of this
// platform's package (ssq-<os>-<cpu>, an optional dependency npm installs
// only where it runs, as esbuild and biome ship theirs).
"use strict";
const { spawn } = require("node:child_process");
const fs = require("node:fs");
const net = require("node:net");
const path = require("node:path");

/** The platform packages this release was built for, by `<os>-<cpu>`. */
const PLATFORMS = ["linux-x64", "linux-arm64", "darwin-x64", "darwin-arm64"];

function binaryPath() {
  if (process.env.SSQ_BIN) {
    return process.env.SSQ_BIN;
  }
  const platform = `${process.platform}-${process.arch}`;
  if (!PLATFORMS.includes(platform)) {
    throw new Error(
      `ssq has no binary for ${platform} (it is built for ${PLATFORMS.join(", ")}): ` +
        "build one from source (cargo install) and set SSQ_BIN to it",
    );
  }
  let manifest;
  try {
    manifest = require.resolve(`ssq-${platform}/package.json`);
  } catch {
    throw new Error(
      `the package ssq-${platform} is not installed: npm installs it with ssq unless optional ` +
        "dependencies are turned off (--omit=optional, --no-optional); install it, or set SSQ_BIN",
    );
  }
  const binary = path.join(path.dirname(manifest), "bin", "ssq");
  if (!fs.existsSync(binary)) {
    throw new Error(`${binary} is missing: reinstall ssq-${platform}`);
  }
  return binary;
}

function freePort() {
  return new Promise((resolve, reject) => {
    const server = net.createServer();
    server.once("error", reject);
    server.listen(0, "127.0.0.1", () => {
      const { port } = server.address();
      server.close(() => resolve(port));
    });
  });
}

const sleep = (ms) => new Promise((resolve) => setTimeout(resolve, ms));

/** Servers started here and not stopped: killed if the process exits first. */
const running = new Set();
process.once("exit", () => {
  for (const child of running) {
    child.kill("SIGKILL");
  }
});

class Server {
  /**
   * An ssq at `endpoint`: one `start()` ran, or one already running
   * (`new Server("http://127.0.0.1:9324")`). The control calls need it to
   * run with --control-api; `clock.advance` needs --clock virtual.
   */
  constructor(endpoint, child = null) {
    this.endpoint = endpoint.replace(/\/+$/, "");
    this.child = child;
    this.clock = {
      /** The time the queues see, in milliseconds. */
      now: async () => (await this.#call("GET", "/_ssq/clock")).now_millis,
      /** Moves the virtual clock forward; the new time in milliseconds. */
      advance: async (seconds) =>
        (await this.#call("POST", "/_ssq/clock", { advance_seconds: seconds })).now_millis,
    };
    this.faults = {
      /** Adds a fault rule or a list of them (ssq's docs/testing.md). */
      add: (rules) => this.#call("POST", "/_ssq/faults", rules),
      /** The fault rules in force, each with the count it has left. */
      list: async () => (await this.#call("GET", "/_ssq/faults")).rules,
      /** Removes every fault rule. */
      clear: () => this.#call("DELETE", "/_ssq/faults"),
    };
  }

  /** Deletes every queue and topic: `{ queues_deleted, topics_deleted }`. */
  reset() {
    return this.#call("POST", "/_ssq/reset");
  }

  /** Stops a server `start()` ran: SIGTERM, then SIGKILL after 10 s. */
  async stop() {
    const child = this.child;
    if (!child || child.exitCode !== null || child.signalCode !== null) {
      return;
    }
    const exited = new Promise((resolve) => child.once("exit", resolve));
    child.kill("SIGTERM");
    const timer = setTimeout(() => child.kill("SIGKILL"), 10_000);
    await exited;
    clearTimeout(timer);
    running.delete(child);
  }

  async #call(method, route, body) {
    const response = await fetch(`${this.endpoint}${route}`, {
      method,
      headers: { "content-type": "application/json" },
      body: body === undefined ? undefined : JSON.stringify(body),
    });
    const text = await response.text();
    if (!response.ok) {
      throw new Error(`${method} ${route}: ${response.status} ${text}`);
    }
    return text ? JSON.parse(text) : {};
  }
}

/**
 * Starts a memory-only ssq with the control API and the virtual clock on a
 * free loopback port, and resolves once it is ready. `options.args` adds
 * flags; `options.timeoutMs` (10 s) bounds the wait.
 */
async function start(options = {}) {
  const { args = [], timeoutMs = 10_000 } = options;
  const port = await freePort();
  const argv = ["--listen", `127.0.0.1:${port}`, "--control-api", "--clock", "virtual", ...args];
  const child = spawn(binaryPath(), argv, {
    stdio: ["ignore", "inherit", "inherit"],
    env: { ...process.env, RUST_LOG: process.env.RUST_LOG ?? "error" },
  });
  running.add(child);
  let failed = null;
  child.once("error", (error) => (failed = error));
  // A suite's process may exit with the server still running: not for it.
  child.unref();
  const server = new Server(`http://127.0.0.1:${port}`, child);
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    if (failed) {
      throw new Error(`could not run ssq: ${failed.message}`);
    }
    if (child.exitCode !== null) {
      throw new Error(`ssq exited with ${child.exitCode} before it was ready: ssq ${argv.join(" ")}`);
    }
    try {
      if ((await fetch(`${server.endpoint}/ready`)).status === 200) {
        return server;
      }
    } catch {
      // not listening yet
    }
    if (Date.now() > deadline) {
      await server.stop();
      throw new Error(`ssq was not ready within ${timeoutMs} ms: ssq ${argv.join(" ")}`);
    }
    await sleep(20);
  }
}

module.exports = { start, Server, binaryPath, PLATFORMS };
