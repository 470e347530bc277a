// The RAG demo page: sends the question to POST /v1/rag/query and shows
//  1. the answer, with the runs the model accepted from a drafter shaded; a run copied from a
//     retrieved passage is a link to the marked spot in that passage (spans[i].passage/passage_start);
//  2. the retrieved passages, best first, with the cited ones flagged and the copied spots marked;
//  3. what speculation did: tokens drafted, model passes, time.
// With "Iterative retrieval" ticked it asks for an iterative answer ({"iterative": true, "retriever",
// "speculative_retrieval"}) and shows every stride's retrieval instead: the chunk, whether it came
// from the retriever or from the speculative cache and was confirmed or rolled back, its time, and
// the time spent retrieving vs generating.
// The "Add documents" form posts to POST /v1/rag/documents (one typed document, or the examples).
"use strict";

(function () {
  const { postJSON, element, showError, seconds } = window.SpecdraftDemo;
  const askForm = document.getElementById("ask-form");
  const askButton = document.getElementById("ask");
  const status = document.getElementById("status");
  const errorBox = document.getElementById("error");
  const results = document.getElementById("results");
  const addForm = document.getElementById("add-form");
  const addStatus = document.getElementById("add-status");
  const examples = JSON.parse(document.getElementById("examples").textContent);

  askForm.addEventListener("submit", async (event) => {
    event.preventDefault();
    const iterative = document.getElementById("iterative").checked;
    const payload = iterative ? {
      question: document.getElementById("question").value,
      index: document.getElementById("index").value,
      iterative: true,
      retriever: document.getElementById("retriever").value,
      speculative_retrieval: document.getElementById("speculative-retrieval").checked,
    } : {
      question: document.getElementById("question").value,
      index: document.getElementById("index").value,
      drafter: document.getElementById("drafter").value,
      top_k: Number(document.getElementById("top-k").value),
    };
    askButton.disabled = true;
    status.textContent = "Retrieving and answering…";
    showError(errorBox, null);
    try {
      const body = await postJSON(askForm.dataset.api, payload);
      if (iterative) renderIterative(body); else render(body);
    } catch (error) {
      results.hidden = true;
      showError(errorBox, error.message);
    } finally {
      askButton.disabled = false;
      status.textContent = "";
    }
  });

  addForm.addEventListener("submit", (event) => {
    event.preventDefault();
    const id = document.getElementById("doc-id").value.trim();
    addDocuments([{ id: id, text: document.getElementById("doc-text").value }]);
  });
  document.getElementById("add-examples").addEventListener("click", () => addDocuments(examples));

  async function addDocuments(documents) {
    addStatus.textContent = "Adding…";
    showError(errorBox, null);
    try {
      const body = await postJSON(addForm.dataset.api, { index: document.getElementById("index").value, documents });
      const added = body.added.documents;
      addStatus.textContent = `Added ${added} ${added === 1 ? "document" : "documents"} (${body.added.chunks} passages); ` +
        `index ${body.index} holds ${body.documents}.`;
    } catch (error) {
      addStatus.textContent = "";
      showError(errorBox, error.message);
    }
  }

  // --- rendering --------------------------------------------------------------------------------
  function render(body) {
    document.getElementById("retrievals-card").hidden = true;
    document.getElementById("passages-card").hidden = false;
    const marks = markPlan(body.passages, body.spans);
    renderAnswer(document.getElementById("answer"), body, marks);
    renderPassages(document.getElementById("passages"), body, marks);
    const stats = body.stats;
    document.getElementById("draft-share").textContent =
      `${stats.accepted_tokens} of ${stats.generated_tokens} tokens drafted`;
    document.getElementById("stats").textContent =
      `${stats.generated_tokens} tokens in ${stats.target_forward_passes} model passes, ${seconds(stats.wall_s)}, drafter ${body.drafter}`;
    document.getElementById("citations").textContent =
      body.citations.length ? `the answer quotes ${body.citations.join(", ")}` : "none quoted";
    results.hidden = false;
  }

  function renderIterative(body) {
    document.getElementById("retrievals-card").hidden = false;
    document.getElementById("passages-card").hidden = true;
    document.getElementById("answer").textContent = body.answer;
    const stats = body.stats;
    const count = (status) => body.retrievals.filter((r) => r.status === status).length;
    document.getElementById("draft-share").textContent = `${body.token_ids.length} tokens`;
    document.getElementById("stats").textContent =
      `${body.retrievals.length} retrievals (${body.retriever}${body.speculative_retrieval ? ", speculative" : ""}), ${seconds(stats.wall_s)}`;
    document.getElementById("retrieval-summary").textContent = body.speculative_retrieval
      ? `${count("confirmed")} from the cache and confirmed, ${count("rolled_back")} rolled back, ${count("exact")} searched`
      : `${body.retrievals.length} searched`;
    document.getElementById("retrieval-time").textContent =
      `retrieving ${seconds(stats.retrieval_s)} (waited ${seconds(stats.retrieval_wait_s)}), generating ${seconds(stats.generation_s)}, wall ${seconds(stats.wall_s)}`;
    const list = document.getElementById("retrievals");
    list.replaceChildren();
    for (const record of body.retrievals) {
      const item = document.createElement("li");
      item.dataset.status = record.status;
      item.dataset.source = record.source;
      const label = record.status === "exact" ? "retriever" : record.status === "confirmed" ? "cache, confirmed" : "rolled back";
      item.append(element("span", label, `badge ${record.status}`), " ",
        element("code", record.doc_ids[0] || String(record.doc)), " ",
        element("span", `stride ${record.stride} · from token ${record.start_token} · ${seconds(record.seconds)}`, "meta"));
      if (record.status === "rolled_back" && record.guessed.length) {
        item.append(" ", element("span", `cache guessed chunk ${record.guessed[0]}`, "guess"));
      }
      item.append(element("div", `query: …${record.query.slice(-80)}`, "meta"));
      list.append(item);
    }
    results.hidden = false;
  }

  // For each linked span (by its index in body.spans): the id of the <mark> it points to. Spans that
  // copied the same spot share a mark; marks in one passage never overlap.
  function markPlan(passages, spans) {
    const byPassage = new Map(passages.map((p) => [p.id, []]));
    const target = new Map();
    spans.forEach((span, i) => {
      if (span.source !== "draft" || span.passage === null || !byPassage.has(span.passage)) return;
      const length = Array.from(span.text.trim()).length;
      const ranges = byPassage.get(span.passage);
      const same = ranges.find((r) => span.passage_start < r.end && r.start < span.passage_start + length);
      if (same) {
        target.set(i, same.id);
      } else {
        const id = `copied-${i}`;
        ranges.push({ id, start: span.passage_start, end: span.passage_start + length });
        target.set(i, id);
      }
    });
    return { byPassage, target };
  }

  function renderAnswer(container, body, marks) {
    container.replaceChildren();
    const number = new Map(body.passages.map((p, i) => [p.id, i + 1]));
    body.spans.forEach((span, i) => {
      if (span.source !== "draft") {
        container.append(span.text);
      } else if (marks.target.has(i)) {
        const link = element("a", span.text, "draft");
        link.href = `#${marks.target.get(i)}`;
        link.dataset.passage = span.passage;
        link.title = `copied from passage [${number.get(span.passage)}] ${span.passage}`;
        link.addEventListener("click", () => highlight(marks.target.get(i)));
        container.append(link);
      } else {
        const run = element("span", span.text, "draft unlinked");
        run.title = "drafted, but not from a passage";
        container.append(run);
      }
    });
  }

  function renderPassages(list, body, marks) {
    list.replaceChildren();
    body.passages.forEach((passage, i) => {
      const item = document.createElement("li");
      item.id = `passage-${i + 1}`;
      item.dataset.id = passage.id;
      const meta = element("span", `${passage.id} · score ${passage.score.toFixed(3)}`, "meta");
      if (body.citations.includes(passage.id)) meta.append(" · ", element("span", "quoted", "cited"));
      item.append(meta, markedText(passage.text, marks.byPassage.get(passage.id)));
      list.append(item);
    });
  }

  // `text` with the given code-point ranges wrapped in <mark id=...>.
  function markedText(text, ranges) {
    const chars = Array.from(text);
    const block = document.createElement("div");
    let cursor = 0;
    for (const range of [...ranges].sort((a, b) => a.start - b.start)) {
      block.append(chars.slice(cursor, range.start).join(""));
      const mark = element("mark", chars.slice(range.start, range.end).join(""));
      mark.id = range.id;
      block.append(mark);
      cursor = range.end;
    }
    block.append(chars.slice(cursor).join(""));
    return block;
  }

  function highlight(markId) {
    document.querySelectorAll(".passages .active").forEach((node) => node.classList.remove("active"));
    const mark = document.getElementById(markId);
    mark.classList.add("active");
    mark.closest("li").classList.add("active");
  }
})();
