// The ssq admin page. Served by ssq itself, no dependencies: it reads
// /admin/api/overview and /admin/api/messages, and acts through
// /admin/api/sqs, an SQS call in the JSON protocol, and /admin/api/sns, an
// SNS call in its Query form, which ssq runs exactly as a client's
// (durable, fenced, refused on a passive). Every value from the
// server enters the page as text, never as markup.
"use strict";

const csrf = document.querySelector('meta[name="ssq-csrf"]').content;
const main = document.getElementById("main");
const notices = document.getElementById("notices");
const REFRESH_MS = 3000;
let refreshTimer = null;

// ---- small DOM helpers ----------------------------------------------------

function h(tag, attributes, ...children) {
  const element = document.createElement(tag);
  for (const [name, value] of Object.entries(attributes || {})) {
    if (value === undefined || value === null || value === false) continue;
    if (name.startsWith("on")) element.addEventListener(name.slice(2), value);
    else if (name === "class") element.className = value;
    else element.setAttribute(name, value === true ? "" : value);
  }
  for (const child of children.flat(Infinity)) {
    if (child === undefined || child === null || child === false) continue;
    element.append(child instanceof Node ? child : String(child));
  }
  return element;
}

function svg(tag, attributes) {
  const element = document.createElementNS("http://www.w3.org/2000/svg", tag);
  for (const [name, value] of Object.entries(attributes)) element.setAttribute(name, value);
  return element;
}

// Replaces an element's children, leaving out the absent ones.
function show(element, ...children) {
  element.replaceChildren(...children.filter((child) => child !== null && child !== undefined && child !== false));
}

function notice(kind, text, ...more) {
  return h("div", { class: `notice ${kind}`, role: kind === "error" ? "alert" : "status" }, text, ...more);
}

// ---- talking to ssq ---------------------------------------------------------

async function sqs(action, input) {
  const response = await fetch("/admin/api/sqs", {
    method: "POST",
    headers: {
      "content-type": "application/x-amz-json-1.0",
      "x-amz-target": `AmazonSQS.${action}`,
      "x-ssq-csrf": csrf,
    },
    body: JSON.stringify(input),
  });
  const body = await response.json().catch(() => ({}));
  if (!response.ok) {
    const code = (body.__type || "").split("#").pop() || response.status;
    throw new Error(`${action} failed: ${code}: ${body.message || response.statusText}`);
  }
  return body;
}

// An SNS call: its parameters as a form; the answer's XML is not read,
// only whether it succeeded (and the error's message when not).
async function sns(parameters) {
  const response = await fetch("/admin/api/sns", {
    method: "POST",
    headers: { "content-type": "application/x-www-form-urlencoded", "x-ssq-csrf": csrf },
    body: new URLSearchParams(parameters).toString(),
  });
  const text = await response.text();
  if (!response.ok) {
    const message = new DOMParser().parseFromString(text, "application/xml").querySelector("Message");
    throw new Error(`${parameters.Action} failed: ${message ? message.textContent : response.statusText}`);
  }
  return text;
}

async function getJson(path) {
  const response = await fetch(path);
  const body = await response.json().catch(() => ({}));
  if (!response.ok) throw new Error(`${path}: ${body.message || response.statusText}`);
  return body;
}

// ---- formatting --------------------------------------------------------------

function age(seconds) {
  if (seconds === null || seconds === undefined) return "–";
  if (seconds < 60) return `${seconds} s`;
  if (seconds < 3600) return `${Math.floor(seconds / 60)} min`;
  if (seconds < 86400) return `${Math.floor(seconds / 3600)} h`;
  return `${Math.floor(seconds / 86400)} d`;
}

function time(millis) {
  return millis ? new Date(Number(millis)).toISOString().replace("T", " ").replace(/\.\d+Z$/, "Z") : "–";
}

function perSecond(value) {
  return value >= 10 ? value.toFixed(0) : value.toFixed(1);
}

// A rate: its latest value and a sparkline of the last minutes.
function rate(values, label) {
  const latest = values.length ? values[values.length - 1] : 0;
  const width = 80, height = 20;
  const chart = svg("svg", { width, height, viewBox: `0 0 ${width} ${height}`, role: "img", "aria-label": `${label} per second, last minutes` });
  if (values.length > 1) {
    const top = Math.max(...values, 0.001);
    const points = values.map((v, i) => [
      (i / (values.length - 1)) * width,
      height - 1 - (v / top) * (height - 2),
    ]);
    const line = points.map(([x, y]) => `${x.toFixed(1)},${y.toFixed(1)}`).join(" ");
    chart.append(svg("polygon", { class: "spark-area", points: `0,${height} ${line} ${width},${height}` }));
    chart.append(svg("polyline", { class: "spark", points: line }));
  }
  return h("span", { class: "rate", title: `${label}: ${perSecond(latest)}/s now` }, chart, `${perSecond(latest)}/s`);
}

function queueLink(key) {
  return h("a", { href: `#/queue/${encodeURIComponent(key)}` }, key);
}

// ---- the header and notices ---------------------------------------------------

function storageText(storage) {
  const lock = storage.lock === "etcd" ? `, led through etcd (${storage.lock_url})` : "";
  switch (storage.mode) {
    case "disk": return `on disk: ${storage.data_dir} (${mebibytes(storage.bytes)})`;
    case "redis": return `in Redis${lock}`;
    case "postgres": return `in Postgres${lock}`;
    case "mysql": return `in MySQL${lock}`;
    default: return "in memory only: lost on exit";
  }
}

function mebibytes(bytes) {
  return `${(bytes / 1048576).toFixed(1)} MiB`;
}

function showInstance(overview) {
  const role = document.getElementById("role");
  role.textContent = overview.role;
  role.classList.toggle("serving", overview.serving);
  const leader = document.getElementById("leader");
  leader.replaceChildren();
  if (overview.leader) {
    leader.append("leader ", h("a", { href: `${overview.leader.url}/` }, overview.leader.node_id), ` (epoch ${overview.leader.epoch})`);
  }
  document.getElementById("storage").textContent = storageText(overview.storage);
  if (overview.sharding) {
    const led = overview.sharding.shards.filter((s) => s.serving).length;
    leader.append(`leads ${led} of ${overview.sharding.count} shards (share ${overview.sharding.share ?? "unknown"})`);
  }
  notices.replaceChildren();
  if (overview.open) {
    notices.append(notice("open",
      "This page is open: ssq runs without --credentials, so anyone who can reach it can read and change every queue. " +
      "Start ssq with --credentials to require sign-in (docs/browsing.md)."));
  }
  if (overview.sharding) {
    if (!overview.serving) {
      notices.append(notice("passive", "This instance leads no shard right now: it forwards every call to the shard's leader."));
    }
  } else if (!overview.serving) {
    const where = overview.leader
      ? h("span", {}, " The leader is ", h("a", { href: `${overview.leader.url}/` }, `${overview.leader.node_id} at ${overview.leader.url}`), ".")
      : " No leader is known yet.";
    notices.append(notice("passive", `This instance is ${overview.role}: it holds no queues and serves no calls; only the leader does.`, where));
  }
}

// ---- the queue list ------------------------------------------------------------

function queueList(overview) {
  const rows = overview.queues.map((q) => h("tr", { "data-queue": q.key },
    h("td", { class: "text" }, queueLink(q.key)),
    h("td", { class: "text muted" }, q.fifo ? "FIFO" : "standard"),
    h("td", { class: "num visible" }, q.visible),
    h("td", { class: "num in-flight" }, q.in_flight),
    h("td", { class: "num delayed" }, q.delayed),
    h("td", { class: "num oldest" }, age(q.oldest_age_seconds)),
    h("td", {}, rate(q.rates.sent, "sends")),
    h("td", {}, rate(q.rates.received, "receives")),
    h("td", {}, rate(q.rates.deleted, "deletes")),
    h("td", { class: "text links" },
      q.dead_letter_queue ? h("span", {}, "→ ", queueLink(q.dead_letter_queue)) : null,
      q.sources.length ? h("span", {}, "← ", q.sources.map(queueLink)) : null),
  ));
  const empty = overview.sharding
    ? "No queues in the shards this instance leads."
    : overview.serving ? "No queues yet: create one with any SQS client." : "This instance holds no queues: only the leader does.";
  return h("div", {},
    h("h2", {}, "Queues"),
    h("table", { id: "queues" },
      h("thead", {}, h("tr", {},
        h("th", { class: "text" }, "queue"), h("th", { class: "text" }, "type"),
        h("th", {}, "visible"), h("th", {}, "in flight"), h("th", {}, "delayed"), h("th", {}, "oldest"),
        h("th", {}, "sends"), h("th", {}, "receives"), h("th", {}, "deletes"),
        h("th", { class: "text" }, "dead-letter queue ← sources"))),
      h("tbody", {}, rows.length ? rows : h("tr", {}, h("td", { colspan: 10, class: "text muted" }, empty)))),
    h("p", { class: "muted" }, `Rates per second, sampled every ${overview.sample_seconds} s; sparklines show the last minutes.`));
}

// The shard map of a sharded group: who leads each shard. The queue list
// above shows the queues of the shards this instance leads.
function shardMap(sharding) {
  const rows = sharding.shards.map((s) => h("tr", { "data-shard": s.shard },
    h("td", { class: "num" }, s.shard),
    h("td", { class: "text" }, s.leader ? h("a", { href: `${s.leader.url}/` }, s.leader.node_id) : "none known"),
    h("td", { class: "num" }, s.leader ? s.leader.epoch : ""),
    h("td", { class: "text muted" }, s.serving ? "served here" : s.role)));
  return h("div", {},
    h("h2", {}, "Shards"),
    h("p", { class: "muted" }, `Members: ${sharding.members.join(", ") || "none known"}. Each leads at most ${sharding.share ?? "?"} shards.`),
    h("table", { id: "shards" },
      h("thead", {}, h("tr", {},
        h("th", {}, "shard"), h("th", { class: "text" }, "leader"), h("th", {}, "epoch"), h("th", { class: "text" }, "here"))),
      h("tbody", {}, rows)));
}

// ---- topics ------------------------------------------------------------------

function topicLink(topic) {
  return h("a", { href: `#/topic/${encodeURIComponent(topic.arn)}` }, topic.name);
}

function topicList(overview) {
  if (!overview.topics.length) return null;
  const rows = overview.topics.map((t) => h("tr", { "data-topic": t.arn },
    h("td", { class: "text" }, topicLink(t)),
    h("td", { class: "text muted" }, t.fifo ? "FIFO" : "standard"),
    h("td", { class: "num" }, t.subscriptions.length),
    h("td", { class: "num" }, t.published),
    h("td", { class: "num" }, t.delivered),
    h("td", { class: "num" }, t.failed),
    h("td", { class: "num" }, t.filtered_out)));
  return h("div", {},
    h("h2", {}, "Topics"),
    h("table", { id: "topics" },
      h("thead", {}, h("tr", {},
        h("th", { class: "text" }, "topic"), h("th", { class: "text" }, "type"), h("th", {}, "subscriptions"),
        h("th", {}, "published"), h("th", {}, "delivered"), h("th", {}, "failed"), h("th", {}, "filtered out"))),
      h("tbody", {}, rows)),
    h("p", { class: "muted" }, "Counts since this instance started, under CloudWatch's names in /metrics."));
}

function subscriptionRows(topic) {
  return topic.subscriptions.map((s) => h("tr", { "data-subscription": s.arn },
    h("td", { class: "text" }, s.protocol),
    h("td", { class: "text" }, s.endpoint),
    h("td", { class: "text muted" },
      s.pending ? "pending confirmation" : "confirmed",
      s.raw ? ", raw" : "",
      s.replay_status ? `, replay ${s.replay_status}` : ""),
    h("td", { class: "text body-preview" }, s.filter_policy || ""),
    h("td", { class: "num" }, s.delivered),
    h("td", { class: "num" }, s.failed),
    h("td", { class: "num" }, s.filtered_out),
    h("td", { class: "num" }, s.redriven),
    h("td", { class: "num" }, webhook(s) ? s.tries : ""),
    h("td", { class: "num", "data-waiting": s.waiting },
      webhook(s) ? (s.waiting ? `${s.waiting} (oldest ${s.oldest_waiting_seconds} s)` : "0") : "")));
}

// HTTP/S subscriptions have deliveries that wait and are tried again.
function webhook(subscription) {
  return subscription.protocol === "http" || subscription.protocol === "https";
}

// Publishes a test message: a FIFO topic's needs a group and, without
// content-based deduplication, an id; the form gives both.
function publishForm(topic, after) {
  const message = h("textarea", { name: "message", required: true }, "Hello from the ssq admin page");
  const subject = h("input", { name: "subject" });
  const group = h("input", { name: "group", value: "ssq-admin" });
  const form = h("form", { class: "panel", id: "publish" },
    h("h3", {}, "Publish a test message"),
    h("label", {}, "Message", message),
    h("label", {}, "Subject", subject),
    topic.fifo ? h("label", {}, "MessageGroupId", group) : null,
    h("button", { class: "primary", type: "submit" }, "Publish"));
  form.addEventListener("submit", async (event) => {
    event.preventDefault();
    const parameters = { Action: "Publish", TopicArn: topic.arn, Message: message.value };
    if (subject.value) parameters.Subject = subject.value;
    if (topic.fifo) {
      parameters.MessageGroupId = group.value;
      parameters.MessageDeduplicationId = crypto.randomUUID();
    }
    try {
      await sns(parameters);
      notices.replaceChildren(notice("done", "Published."));
      await after();
    } catch (error) {
      fail(error);
    }
  });
  return form;
}

async function showTopic(arn) {
  const overview = await getJson("/admin/api/overview");
  showInstance(overview);
  const topic = overview.topics.find((t) => t.arn === arn);
  if (!topic) {
    show(main, h("p", {}, h("a", { href: "#/" }, "← Overview")), notice("error", `No topic ${arn} on this instance.`));
    return;
  }
  const refresh = async () => {
    const latest = (await getJson("/admin/api/overview")).topics.find((t) => t.arn === arn);
    if (latest) document.getElementById("subscriptions").replaceWith(subscriptionTable(latest));
  };
  show(main,
    h("p", {}, h("a", { href: "#/" }, "← Overview")),
    h("h2", { id: "topic-name" }, topic.name),
    h("p", { class: "muted" }, topic.arn),
    subscriptionTable(topic),
    publishForm(topic, refresh));
}

function subscriptionTable(topic) {
  return h("table", { id: "subscriptions" },
    h("thead", {}, h("tr", {},
      h("th", { class: "text" }, "protocol"), h("th", { class: "text" }, "endpoint"), h("th", { class: "text" }, "status"),
      h("th", { class: "text" }, "filter policy"), h("th", {}, "delivered"), h("th", {}, "failed"),
      h("th", {}, "filtered out"), h("th", {}, "to dead letters"), h("th", {}, "tries"), h("th", {}, "waiting"))),
    h("tbody", {}, topic.subscriptions.length
      ? subscriptionRows(topic)
      : h("tr", {}, h("td", { colspan: 10, class: "text muted" }, "No subscriptions."))));
}

async function showList() {
  const overview = await getJson("/admin/api/overview");
  showInstance(overview);
  show(main, h("div", {}, queueList(overview), topicList(overview), overview.sharding ? shardMap(overview.sharding) : null));
}

// ---- one queue -----------------------------------------------------------------

function stateOf(message) {
  const a = message.Attributes || {};
  if (a.IsDelayed === "true") return ["delayed", "delayed"];
  if (a.IsVisible === "false") return ["in-flight", "in flight"];
  return ["visible", "visible"];
}

function messageRows(message) {
  const a = message.Attributes || {};
  const [stateClass, stateText] = stateOf(message);
  const attributes = Object.entries(message.MessageAttributes || {});
  const detail = h("tr", { class: "detail", hidden: true },
    h("td", { colspan: 6, class: "text" },
      h("pre", { class: "body" }, message.Body),
      h("dl", { class: "attributes" },
        Object.entries(a).filter(([name]) => name !== "IsVisible" && name !== "IsDelayed")
          .map(([name, value]) => [h("dt", {}, name), h("dd", {}, value)]),
        attributes.map(([name, value]) => [
          h("dt", {}, `${name} (${value.DataType})`),
          h("dd", {}, value.StringValue !== undefined ? value.StringValue : `base64 ${value.BinaryValue}`),
        ]))));
  const summary = h("tr", { class: "message", "data-message-id": message.MessageId, onclick: () => { detail.hidden = !detail.hidden; } },
    h("td", { class: "text" }, h("span", { class: `state ${stateClass}` }, stateText)),
    h("td", { class: "text" }, time(a.SentTimestamp)),
    h("td", { class: "num receives" }, a.ApproximateReceiveCount),
    h("td", { class: "text" }, a.MessageGroupId || ""),
    h("td", { class: "text body-preview" }, message.Body.length > 200 ? `${message.Body.slice(0, 200)}…` : message.Body),
    h("td", { class: "text id" }, message.MessageId));
  return [summary, detail];
}

function browser(queue) {
  const body = h("tbody", {});
  const status = h("p", { class: "muted" });
  const more = h("button", { type: "button", hidden: true }, "Next page");
  let next = null;
  async function load(reset) {
    if (reset) { body.replaceChildren(); next = null; }
    const query = new URLSearchParams({ queue: queue.key, max: "50" });
    if (next) query.set("next", next);
    const page = await getJson(`/admin/api/messages?${query}`);
    for (const message of page.Messages) body.append(...messageRows(message));
    next = page.NextToken;
    more.hidden = !next;
    const shown = body.querySelectorAll("tr.message").length;
    status.textContent = shown ? `${shown} shown, in the order sent. Click a message for its body and attributes.` : "The queue holds no messages.";
  }
  more.addEventListener("click", () => load(false).catch(fail));
  const panel = h("section", { class: "panel", id: "browser" },
    h("h3", {}, "Messages ", h("button", { type: "button", onclick: () => load(true).catch(fail) }, "Refresh")),
    h("p", { class: "muted" }, "Every message, visible, in flight or delayed, without receiving it: receive counts, visibility and FIFO order stay as they are."),
    h("table", { class: "messages" },
      h("thead", {}, h("tr", {},
        h("th", { class: "text" }, "state"), h("th", { class: "text" }, "sent"), h("th", {}, "receives"),
        h("th", { class: "text" }, "group"), h("th", { class: "text" }, "body"), h("th", { class: "text" }, "message id"))),
      body),
    status, more);
  panel.reload = () => load(true);
  return panel;
}

function sendForm(queue, after) {
  const result = h("div", {});
  const attributeRows = h("div", {});
  function addAttribute() {
    attributeRows.append(h("div", { class: "row attribute" },
      h("input", { name: "attribute-name", placeholder: "name", "aria-label": "attribute name" }),
      h("select", { name: "attribute-type", "aria-label": "attribute type" },
        h("option", {}, "String"), h("option", {}, "Number"), h("option", {}, "Binary")),
      h("input", { name: "attribute-value", placeholder: "value (Binary: base64)", "aria-label": "attribute value" })));
  }
  addAttribute();
  const form = h("form", { id: "send" },
    h("label", { for: "send-body" }, "Body"),
    h("textarea", { id: "send-body", name: "body", required: true }),
    queue.fifo
      ? h("div", { class: "row" },
        h("div", {}, h("label", { for: "send-group" }, "Message group id"), h("input", { id: "send-group", name: "group", required: true })),
        h("div", {}, h("label", { for: "send-dedup" }, "Deduplication id"), h("input", { id: "send-dedup", name: "dedup", placeholder: "content-based if empty" })))
      : h("div", {}, h("label", { for: "send-delay" }, "Delay (seconds)"), h("input", { id: "send-delay", name: "delay", type: "number", min: 0, max: 900 })),
    h("label", {}, "Message attributes"),
    attributeRows,
    h("button", { type: "button", onclick: addAttribute }, "Add attribute"), " ",
    h("button", { type: "submit", class: "primary" }, "Send message"),
    result);
  form.addEventListener("submit", async (event) => {
    event.preventDefault();
    const data = new FormData(form);
    const input = { QueueUrl: queue.url, MessageBody: data.get("body") };
    if (data.get("group")) input.MessageGroupId = data.get("group");
    if (data.get("dedup")) input.MessageDeduplicationId = data.get("dedup");
    if (data.get("delay")) input.DelaySeconds = Number(data.get("delay"));
    const names = data.getAll("attribute-name"), types = data.getAll("attribute-type"), values = data.getAll("attribute-value");
    names.forEach((name, i) => {
      if (!name) return;
      input.MessageAttributes = input.MessageAttributes || {};
      input.MessageAttributes[name] = types[i] === "Binary"
        ? { DataType: types[i], BinaryValue: values[i] }
        : { DataType: types[i], StringValue: values[i] };
    });
    try {
      const sent = await sqs("SendMessage", input);
      result.replaceChildren(notice("done", `Sent message ${sent.MessageId}.`));
      form.querySelector("textarea").value = "";
      await after();
    } catch (error) {
      result.replaceChildren(notice("error", error.message));
    }
  });
  return h("section", { class: "panel" }, h("h3", {}, "Send a message"), form);
}

function purgePanel(queue, after) {
  const result = h("div", { id: "purge-result" });
  const confirmation = h("div", { hidden: true, id: "purge-confirmation" },
    h("p", {}, `Delete every message in ${queue.name}? This cannot be undone. SQS allows one purge per queue a minute.`),
    h("button", { type: "button", class: "danger", id: "purge-confirm", onclick: async () => {
      confirmation.hidden = true;
      try {
        await sqs("PurgeQueue", { QueueUrl: queue.url });
        result.replaceChildren(notice("done", `Purged ${queue.name}.`));
        await after();
      } catch (error) {
        result.replaceChildren(notice("error", error.message));
      }
    } }, "Purge queue"), " ",
    h("button", { type: "button", onclick: () => { confirmation.hidden = true; } }, "Cancel"));
  return h("section", { class: "panel" }, h("h3", {}, "Purge"),
    h("button", { type: "button", id: "purge", onclick: () => { confirmation.hidden = false; } }, "Purge…"),
    confirmation, result);
}

function redrivePanel(queue, after) {
  const progress = h("div", { id: "redrive-progress" });
  let polling = null;
  async function showTasks() {
    const listed = await sqs("ListMessageMoveTasks", { SourceArn: queue.arn, MaxResults: 1 });
    const task = (listed.Results || [])[0];
    if (!task) { progress.replaceChildren(h("p", { class: "muted" }, "No redrive has run from this queue.")); return; }
    const total = task.ApproximateNumberOfMessagesToMove;
    progress.replaceChildren(h("p", { class: "task", "data-status": task.Status },
      `Latest redrive: ${task.Status}, ${task.ApproximateNumberOfMessagesMoved}` + (total !== undefined ? ` of ${total}` : "") + " messages moved",
      task.FailureReason ? ` (${task.FailureReason})` : "", "."));
    if (task.Status === "RUNNING") { if (!polling) polling = setInterval(() => showTasks().catch(fail), 1000); }
    else if (polling) { clearInterval(polling); polling = null; await after(); }
  }
  const start = h("button", { type: "button", class: "primary", id: "redrive", onclick: async () => {
    try {
      await sqs("StartMessageMoveTask", { SourceArn: queue.arn });
      await showTasks();
    } catch (error) {
      progress.replaceChildren(notice("error", error.message));
    }
  } }, "Redrive to source queues");
  showTasks().catch(fail);
  return h("section", { class: "panel" }, h("h3", {}, "Dead-letter queue"),
    h("p", {}, "Sources: ", queue.sources.map(queueLink)),
    h("p", { class: "muted" }, "Redrive moves this queue's messages back to the queues they came from (StartMessageMoveTask)."),
    start, progress);
}

function counts(queue) {
  return h("div", { class: "counts", id: "counts" },
    h("div", {}, h("strong", { class: "visible" }, queue.visible), "visible"),
    h("div", {}, h("strong", { class: "in-flight" }, queue.in_flight), "in flight"),
    h("div", {}, h("strong", { class: "delayed" }, queue.delayed), "delayed"),
    h("div", {}, h("strong", {}, age(queue.oldest_age_seconds)), "oldest message"),
    h("div", {}, h("strong", {}, rate(queue.rates.sent, "sends")), "sends"),
    h("div", {}, h("strong", {}, rate(queue.rates.received, "receives")), "receives"),
    h("div", {}, h("strong", {}, rate(queue.rates.deleted, "deletes")), "deletes"));
}

// A line chart of series over time: [{label, cls, values}], times in ms.
function lineChart(title, times, series, format) {
  const width = 560, height = 140, left = 56, bottom = 18, top = 8;
  const chart = svg("svg", { class: "history", width, height, viewBox: `0 0 ${width} ${height}`, role: "img", "aria-label": title });
  const peak = Math.max(1, ...series.flatMap((s) => s.values));
  const first = times[0], span = Math.max(1, times[times.length - 1] - first);
  const x = (t) => left + ((t - first) / span) * (width - left - 4);
  const y = (v) => height - bottom - (v / peak) * (height - bottom - top);
  chart.append(svg("line", { class: "axis", x1: left, y1: height - bottom, x2: width - 4, y2: height - bottom }));
  for (const [value, label] of [[peak, format(peak)], [0, format(0)]]) {
    const text = svg("text", { class: "tick", x: left - 6, y: y(value) + 4, "text-anchor": "end" });
    text.textContent = label;
    chart.append(text);
  }
  const since = svg("text", { class: "tick", x: left, y: height - 3 });
  since.textContent = `${Math.round(span / 60000)} min ago`;
  chart.append(since);
  for (const s of series) {
    const points = s.values.map((v, i) => `${x(times[i]).toFixed(1)},${y(v).toFixed(1)}`).join(" ");
    chart.append(svg(times.length > 1 ? "polyline" : "circle", times.length > 1
      ? { class: `line ${s.cls}`, points }
      : { class: `line ${s.cls}`, cx: x(times[0]), cy: y(s.values[0]), r: 2 }));
  }
  const legend = h("p", { class: "legend" }, series.map((s) => h("span", { class: s.cls }, `■ ${s.label} `)));
  return h("div", {}, h("h4", {}, title), chart, legend);
}

// The queue's depth and its oldest message's age over the last hour (sampled
// every 30 s), ending with the counts shown now.
function depthPanel(queue, depths) {
  const now = [...depths, {
    at: depths.length ? Math.max(Date.now(), depths[depths.length - 1].at) : Date.now(),
    visible: queue.visible, in_flight: queue.in_flight, delayed: queue.delayed,
    oldest_age_seconds: queue.oldest_age_seconds || 0,
  }];
  const times = now.map((d) => d.at);
  return h("section", { class: "panel", id: "depth-history" }, h("h3", {}, "Last hour"),
    lineChart("Messages", times, [
      { label: "visible", cls: "visible", values: now.map((d) => d.visible) },
      { label: "in flight", cls: "in-flight", values: now.map((d) => d.in_flight) },
      { label: "delayed", cls: "delayed", values: now.map((d) => d.delayed) },
    ], (v) => String(Math.round(v))),
    lineChart("Age of the oldest message", times, [
      { label: "oldest message", cls: "age", values: now.map((d) => d.oldest_age_seconds) },
    ], (v) => age(v)));
}

// Fair queues: the tenants whose backlog waits behind quiet tenants' messages.
function noisyPanel(queue) {
  if (!queue.noisy_groups.length) return null;
  return h("section", { class: "panel", id: "noisy-groups" }, h("h3", {}, "Noisy message groups"),
    h("p", { class: "muted" }, "Receives take quiet groups' messages first while these groups' backlogs wait (fair queues)."),
    h("table", {},
      h("thead", {}, h("tr", {}, h("th", {}, "group"), h("th", { class: "num" }, "messages"),
        h("th", { class: "num" }, "in flight"), h("th", { class: "num" }, "last send"))),
      h("tbody", {}, queue.noisy_groups.map((g) => h("tr", {},
        h("td", {}, g.group), h("td", { class: "num" }, g.messages),
        h("td", { class: "num" }, g.in_flight), h("td", { class: "num" }, age(g.last_send_age_seconds)))))));
}

async function showQueue(key) {
  const overview = await getJson("/admin/api/overview");
  showInstance(overview);
  const queue = overview.queues.find((q) => q.key === key);
  if (!queue) {
    show(main, h("p", {}, h("a", { href: "#/" }, "← Queues")), notice("error", `No queue ${key} on this instance.`));
    return;
  }
  const [attributes, tags, depths] = await Promise.all([
    sqs("GetQueueAttributes", { QueueUrl: queue.url, AttributeNames: ["All"] }),
    sqs("ListQueueTags", { QueueUrl: queue.url }),
    getJson(`/admin/api/depth?queue=${encodeURIComponent(key)}`),
  ]);
  const messages = browser(queue);
  const refresh = async () => {
    const latest = (await getJson("/admin/api/overview")).queues.find((q) => q.key === key);
    if (latest) document.getElementById("counts").replaceWith(counts(latest));
    await messages.reload();
  };
  const definitionList = (entries) => entries.length
    ? h("dl", { class: "attributes" }, entries.map(([name, value]) => [h("dt", {}, name), h("dd", {}, value)]))
    : h("p", { class: "muted" }, "None.");
  show(main, 
    h("p", {}, h("a", { href: "#/" }, "← Queues")),
    h("h2", { id: "queue-name" }, queue.name),
    h("p", { class: "muted" }, queue.url),
    counts(queue),
    depthPanel(queue, depths),
    noisyPanel(queue),
    queue.dead_letter_queue ? h("p", {}, "Dead-letter queue: ", queueLink(queue.dead_letter_queue)) : null,
    queue.sources.length ? redrivePanel(queue, refresh) : null,
    messages,
    h("div", { class: "panels" },
      sendForm(queue, refresh),
      h("div", {}, purgePanel(queue, refresh),
        h("section", { class: "panel" }, h("h3", {}, "Attributes"), definitionList(Object.entries(attributes.Attributes || {}).sort())),
        h("section", { class: "panel" }, h("h3", {}, "Tags"), definitionList(Object.entries(tags.Tags || {}).sort())))));
  await messages.reload();
}

// ---- routing and refreshing ---------------------------------------------------------

function fail(error) {
  notices.append(notice("error", error.message));
}

async function route() {
  clearInterval(refreshTimer);
  refreshTimer = null;
  const match = location.hash.match(/^#\/queue\/(.+)$/);
  const topic = location.hash.match(/^#\/topic\/(.+)$/);
  try {
    if (match) {
      await showQueue(decodeURIComponent(match[1]));
    } else if (topic) {
      await showTopic(decodeURIComponent(topic[1]));
    } else {
      await showList();
      refreshTimer = setInterval(() => showList().catch(fail), REFRESH_MS);
    }
  } catch (error) {
    fail(error);
  }
}

window.addEventListener("hashchange", route);
route();
