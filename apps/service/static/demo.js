// What the demo pages share: talking to the JSON API and building DOM nodes from text.
// User and model text is only ever inserted as text nodes, never as HTML.
"use strict";

window.SpecdraftDemo = (function () {
  const KEY_STORAGE = "specdraft-api-key";

  // A server started with --api-key-file answers 401 without a key: ask for one, keep it in this
  // browser's local storage, and send it as a bearer token.
  async function send(url, payload) {
    const headers = { "Content-Type": "application/json" };
    const key = window.localStorage.getItem(KEY_STORAGE);
    if (key) headers["Authorization"] = `Bearer ${key}`;
    try {
      return await fetch(url, { method: "POST", headers: headers, body: JSON.stringify(payload) });
    } catch (error) {
      throw new Error(`Could not reach the server: ${error.message}`);
    }
  }

  // POST `payload` as JSON; the parsed answer, or an Error whose message is the API's own.
  async function postJSON(url, payload) {
    let response = await send(url, payload);
    if (response.status === 401) {
      const key = window.prompt("This server needs an API key (a 'write' key to add documents):");
      if (key) {
        window.localStorage.setItem(KEY_STORAGE, key.trim());
        response = await send(url, payload);
      }
    } else if (response.status === 403) {
      const body = await response.clone().json().catch(() => null);
      if (body && body.error && body.error.code === "insufficient_scope") {
        const key = window.prompt("This needs an API key with write scope:");
        if (key) {
          window.localStorage.setItem(KEY_STORAGE, key.trim());
          response = await send(url, payload);
        }
      }
    }
    const body = await response.json().catch(() => null);
    if (!response.ok) {
      const message = body && body.error ? body.error.message : response.statusText;
      throw new Error(`Error ${response.status}: ${message}`);
    }
    if (body === null) throw new Error("The server's answer is not JSON.");
    return body;
  }

  // <tag class=className>text</tag>
  function element(tag, text, className) {
    const node = document.createElement(tag);
    node.textContent = text;
    if (className) node.className = className;
    return node;
  }

  // Show `message` in the error box, or hide the box when it is null.
  function showError(box, message) {
    box.hidden = message === null;
    box.textContent = message || "";
  }

  function seconds(s) {
    return `${s < 1 ? s.toFixed(2) : s.toFixed(1)} s`;
  }

  return { postJSON, element, showError, seconds };
})();
