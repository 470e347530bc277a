// What the demo pages share: talking to the JSON API and building DOM nodes from text.
// User and model text is only ever inserted as text nodes, never as HTML.
"use strict";

window.SpecdraftDemo = (function () {
  // POST `payload` as JSON; the parsed answer, or an Error whose message is the API's own.
  async function postJSON(url, payload) {
    let response;
    try {
      response = await fetch(url, {
        method: "POST",
        headers: { "Content-Type": "application/json" },
        body: JSON.stringify(payload),
      });
    } catch (error) {
      throw new Error(`Could not reach the server: ${error.message}`);
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
