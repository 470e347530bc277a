// The edge demo: stream POST /v1/chat/completions and show the answer as it grows. Verified text plain,
// unverified text (written here while the server was unreachable) marked, the local draft in flight
// grey; the round-trip time of the last server call, live. Text is inserted as text nodes only.
"use strict";

(function () {
  const form = document.getElementById("ask-form");
  const final = document.getElementById("final");
  const drafted = document.getElementById("drafted");
  const rtt = document.getElementById("rtt");
  const roundTrips = document.getElementById("round-trips");
  const summary = document.getElementById("summary");
  const status = document.getElementById("status");
  const error = document.getElementById("error");
  const KEY_STORAGE = "specdraft-edge-key";
  window.edgeDemo = { rttUpdates: 0, chunks: [] };  // for tests and the curious: what the page received

  function append(text, verified) {
    const last = final.lastElementChild;
    const cls = verified ? "verified" : "unverified";
    if (last && last.className === cls) {
      last.textContent += text;
    } else {
      const span = document.createElement("span");
      span.className = cls;
      span.textContent = text;
      final.appendChild(span);
    }
  }

  function showChunk(chunk) {
    window.edgeDemo.chunks.push(chunk);
    const choice = (chunk.choices || [])[0];
    const text = choice && choice.delta ? choice.delta.content || "" : "";
    if (text) append(text, !chunk.unverified);
    if ("drafted" in chunk) drafted.textContent = chunk.drafted;
    if (typeof chunk.round_trip_ms === "number") {
      rtt.textContent = `${chunk.round_trip_ms.toFixed(1)} ms`;
      window.edgeDemo.rttUpdates += 1;
    }
    if (typeof chunk.round_trips === "number") roundTrips.textContent = chunk.round_trips;
    if (chunk.speculation) {
      const s = chunk.speculation;
      drafted.textContent = "";
      roundTrips.textContent = s.round_trips;
      summary.textContent = `${s.generated_tokens} tokens: ${s.verified_tokens} verified, ${s.unverified_tokens} unverified; ` +
        `${s.round_trips} round trips, ${s.server_forward_passes} server passes, ${s.tokens_per_s} tokens/s`;
    }
  }

  async function send(payload) {
    const headers = { "Content-Type": "application/json" };
    const key = window.localStorage.getItem(KEY_STORAGE);
    if (key) headers["Authorization"] = `Bearer ${key}`;
    let response = await fetch(form.dataset.api, { method: "POST", headers: headers, body: JSON.stringify(payload) });
    if (response.status === 401) {
      const entered = window.prompt("This endpoint needs an API key:");
      if (entered) {
        window.localStorage.setItem(KEY_STORAGE, entered.trim());
        headers["Authorization"] = `Bearer ${entered.trim()}`;
        response = await fetch(form.dataset.api, { method: "POST", headers: headers, body: JSON.stringify(payload) });
      }
    }
    return response;
  }

  async function ask(question) {
    final.textContent = ""; drafted.textContent = ""; summary.textContent = ""; error.hidden = true;
    window.edgeDemo = { rttUpdates: 0, chunks: [], done: false };
    status.textContent = "generating…";
    const payload = { messages: [{ role: "user", content: question }], stream: true, max_tokens: Number(form.dataset.maxTokens) };
    const response = await send(payload);
    if (!response.ok) {
      const body = await response.json().catch(() => null);
      throw new Error(body && body.error ? body.error.message : `HTTP ${response.status}`);
    }
    const reader = response.body.getReader();
    const decoder = new TextDecoder();
    let buffer = "";
    for (;;) {
      const { value, done } = await reader.read();
      if (done) break;
      buffer += decoder.decode(value, { stream: true });
      let cut;
      while ((cut = buffer.indexOf("\n\n")) >= 0) {
        const line = buffer.slice(0, cut).trim();
        buffer = buffer.slice(cut + 2);
        if (!line.startsWith("data:")) continue;
        const data = line.slice(5).trim();
        if (data === "[DONE]") continue;
        const chunk = JSON.parse(data);
        if (chunk.error) throw new Error(chunk.error.message);
        showChunk(chunk);
      }
    }
    status.textContent = "done";
    window.edgeDemo.done = true;
  }

  form.addEventListener("submit", (event) => {
    event.preventDefault();
    document.getElementById("ask").disabled = true;
    ask(document.getElementById("question").value)
      .catch((e) => { error.textContent = e.message; error.hidden = false; status.textContent = ""; })
      .finally(() => { document.getElementById("ask").disabled = false; });
  });
})();
