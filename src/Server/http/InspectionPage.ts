/**
 * `GET /_local/`: the inspection page of the local service, one plain HTML page with a small script and no build
 * step. It reads `GET /_local/state` every second (same origin, so the `/_local` guard lets it through) and shows the
 * organizations with their usage, the boxes with their status and listeners, the recent `/v1` requests with their
 * idempotency keys, the webhook deliveries with their attempts, the audit log and the injected faults; and the
 * service's clock (`GET /_local/clock`: real or virtual, its offset), with an "advance" control on a virtual clock
 * (`POST /_local/clock/advance`, ClockRoutes.ts). Every value is
 * written as text (`textContent`), never as HTML: box names and keys come from clients. A status's colour is its
 * tone in StatusTone.ts, the table the command line uses too.
 *
 * Source: docs/ASSUMPTIONS.md "Local service".
 *
 * @since 0.1.0
 */
import { HttpServerResponse } from "@effect/platform"
import * as StatusTone from "../../Domain/StatusTone.js"

/** The path of the page. */
export const path = "/_local/"

/** How often the page reads the state, in milliseconds. */
export const refreshMillis = 1000

const style = `
  body { font: 14px/1.4 system-ui, sans-serif; margin: 0; color: #1d2330; background: #f6f7f9; }
  header { background: #1d2330; color: #fff; padding: 12px 20px; display: flex; gap: 24px; align-items: baseline; }
  header h1 { font-size: 18px; margin: 0; }
  header span { opacity: .8; font-size: 13px; }
  main { padding: 8px 20px 40px; }
  section { background: #fff; border: 1px solid #dde1e7; border-radius: 6px; margin: 14px 0; padding: 4px 14px 10px; }
  h2 { font-size: 15px; margin: 10px 0 6px; }
  h2 small { font-weight: normal; color: #6b7280; }
  table { border-collapse: collapse; width: 100%; }
  th, td { text-align: left; padding: 4px 8px; border-bottom: 1px solid #eef0f3; vertical-align: top; }
  th { font-size: 12px; color: #6b7280; font-weight: 600; }
  td { font-family: ui-monospace, monospace; font-size: 12.5px; }
  .empty { color: #9aa1ab; font-style: italic; padding: 4px 8px; }
  .status { font-weight: 600; }
  .good { color: #0f7b3f; } .bad { color: #b42318; } .moving { color: #b54708; }
`

const script = `
  const good = ${JSON.stringify(StatusTone.goodStatuses)}, bad = ${JSON.stringify(StatusTone.badStatuses)};
  const tone = (text) => good.includes(text) ? "good" : bad.includes(text) ? "bad" : "moving";
  const cell = (row, value, className) => {
    const td = row.insertCell();
    td.textContent = value === null || value === undefined || value === "" ? "-" : String(value);
    if (className) td.className = className;
    return td;
  };
  const table = (id, columns, rows, describe) => {
    const target = document.getElementById(id);
    const count = document.getElementById(id + "-count");
    if (count) count.textContent = "(" + rows.length + ")";
    if (rows.length === 0) { target.replaceChildren(Object.assign(document.createElement("div"), { className: "empty", textContent: "none yet" })); return; }
    const element = document.createElement("table");
    const head = element.createTHead().insertRow();
    for (const column of columns) head.appendChild(Object.assign(document.createElement("th"), { textContent: column }));
    const body = element.createTBody();
    for (const item of rows) describe(body.insertRow(), item);
    target.replaceChildren(element);
  };
  const render = (state) => {
    document.getElementById("summary").textContent = "runtime v" + state.guest_schema_version + " · " + state.in_flight +
      " in flight · " + state.idempotency_keys + " idempotency keys" + (state.draining ? " · draining" : "");
    table("organizations", ["id", "credits", "boxes", "background responses", "stored bytes", "created"], state.organizations, (row, org) => {
      cell(row, org.id); cell(row, org.credits); cell(row, org.usage.boxes); cell(row, org.usage.background_responses);
      cell(row, org.usage.stored_bytes); cell(row, org.created_at);
    });
    table("boxes", ["id", "name", "organization", "status", "listeners", "clipboard", "created"], state.boxes, (row, box) => {
      row.dataset.boxId = box.id;
      cell(row, box.id); cell(row, box.name); cell(row, box.org_id);
      cell(row, box.status + (box.error_message ? ": " + box.error_message : ""), "status " + tone(box.status));
      cell(row, box.listeners.map((listener) => listener.guest_port + "/" + listener.protocol + " " + listener.address).join("\\n"));
      cell(row, box.clipboard ? box.clipboard.media_type + ", " + box.clipboard.bytes + " bytes" : null);
      cell(row, box.created_at);
    });
    table("requests", ["at", "method", "path", "status", "idempotency key", "replayed", "ms"], state.recent_requests, (row, request) => {
      cell(row, request.at); cell(row, request.method); cell(row, request.path);
      cell(row, request.status, "status " + (request.status < 400 ? "good" : "bad"));
      cell(row, request.idempotency_key); cell(row, request.replayed ? "yes" : ""); cell(row, request.duration_ms);
    });
    table("deliveries", ["response", "url", "round", "attempt", "answer", "at"], state.webhook_deliveries.slice().reverse(), (row, delivery) => {
      cell(row, delivery.response_id); cell(row, delivery.url); cell(row, delivery.round); cell(row, delivery.attempt);
      cell(row, delivery.status !== null ? delivery.status : delivery.error, "status " + (delivery.ok ? "good" : "bad"));
      cell(row, delivery.at);
    });
    table("audit", ["at", "organization", "user", "box", "operation", "reason"], state.audit_log.slice().reverse(), (row, entry) => {
      cell(row, entry.at); cell(row, entry.org_id); cell(row, entry.user_id); cell(row, entry.box_id); cell(row, entry.operation); cell(row, entry.reason);
    });
    table("faults", ["counter", "value"], Object.entries(state.faults), (row, [name, value]) => {
      cell(row, name); cell(row, typeof value === "object" ? JSON.stringify(value) : value);
    });
  };
  const renderClock = (clock) => {
    document.getElementById("clock").textContent = "clock " + clock.mode +
      (clock.offset_seconds > 0 ? " +" + clock.offset_seconds + " s" : "") + " · " + clock.now;
    document.getElementById("advance").hidden = clock.mode !== "virtual";
  };
  document.getElementById("advance").addEventListener("submit", async (event) => {
    event.preventDefault();
    const seconds = Number(document.getElementById("advance-seconds").value);
    const response = await fetch("/_local/clock/advance", {
      method: "POST", headers: { "content-type": "application/json" }, body: JSON.stringify({ seconds })
    });
    const answer = await response.json();
    if (response.ok) renderClock(answer); else document.getElementById("clock").textContent = answer.error.message;
  });
  const refresh = async () => {
    try {
      const response = await fetch("/_local/state", { cache: "no-store" });
      if (!response.ok) throw new Error("HTTP " + response.status);
      render(await response.json());
      const clock = await fetch("/_local/clock", { cache: "no-store" });
      if (clock.ok) renderClock(await clock.json());
      document.getElementById("updated").textContent = "updated " + new Date().toLocaleTimeString();
    } catch (error) {
      document.getElementById("updated").textContent = "cannot read the state: " + error.message;
    } finally {
      setTimeout(refresh, ${refreshMillis});
    }
  };
  refresh();
`

const section = (id: string, title: string) =>
  `<section><h2>${title} <small id="${id}-count"></small></h2><div id="${id}"><div class="empty">loading…</div></div></section>`

/** The page's HTML (a constant: the data comes from `/_local/state`). */
export const html = `<!doctype html>
<html lang="en">
<head>
<meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
<title>boxkit · local service</title>
<style>${style}</style>
</head>
<body>
<header><h1>boxkit local service</h1><span id="summary"></span><span id="clock"></span>
<form id="advance" hidden><input id="advance-seconds" type="number" min="0" step="any" value="60" aria-label="seconds">
<button>advance</button></form><span id="updated"></span></header>
<main>
${section("boxes", "Boxes")}
${section("requests", "Recent requests")}
${section("organizations", "Organizations")}
${section("deliveries", "Webhook deliveries")}
${section("audit", "Audit log")}
${section("faults", "Injected faults")}
</main>
<script>${script}</script>
</body>
</html>
`

const bytes = new TextEncoder().encode(html)

/**
 * The page as an answer: `text/html`, with a content security policy that lets it load nothing from elsewhere and
 * talk to its own origin only.
 */
export const response = HttpServerResponse.uint8Array(bytes, {
  contentType: "text/html; charset=utf-8",
  headers: {
    "content-security-policy":
      "default-src 'none'; script-src 'unsafe-inline'; style-src 'unsafe-inline'; connect-src 'self'; base-uri 'none'; form-action 'none'; frame-ancestors 'none'",
    "cache-control": "no-store"
  }
})
