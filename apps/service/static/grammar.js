// The grammar demo page: sends the text to POST /v1/grammar/correct with compare: true and shows
//  1. the corrections: the corrected text with added/changed words highlighted (<ins>) and removed
//     words struck through (<del>), built from the API's edits;
//  2. where the words came from: the corrected text with the pieces the model accepted from the
//     copy of the input shaded (source "draft") and the pieces it generated plain (source "target");
//  3. the measured speedup of speculative over plain decoding on the same text;
//  4. when the API's check of the answer fails (quality.ok false: it leaves out sentences or many
//     words, loops, ...), a warning with the reasons above all that, and the answer titled as the
//     model's answer, not as corrections (the text is still shown).
// User text is only ever inserted as text nodes, never as HTML (demo.js has the shared helpers).
"use strict";

(function () {
  const { postJSON, element, showError, seconds } = window.SpecdraftDemo;
  const form = document.getElementById("correct-form");
  const textarea = document.getElementById("text");
  const button = document.getElementById("correct");
  const status = document.getElementById("status");
  const errorBox = document.getElementById("error");
  const results = document.getElementById("results");

  form.addEventListener("submit", async (event) => {
    event.preventDefault();
    const text = textarea.value;
    setBusy(true);
    showError(errorBox, null);
    try {
      render(text, await postJSON(form.dataset.api, { text: text, compare: true }));
    } catch (error) {
      results.hidden = true;
      showError(errorBox, error.message);
    } finally {
      setBusy(false);
    }
  });

  textarea.addEventListener("keydown", (event) => {
    if (event.key === "Enter" && (event.ctrlKey || event.metaKey)) form.requestSubmit();
  });

  function setBusy(busy) {
    button.disabled = busy;
    status.textContent = busy ? "Correcting… (and once more without speculation, to time it)" : "";
  }

  // --- rendering --------------------------------------------------------------------------------
  function render(original, body) {
    renderDiff(document.getElementById("diff"), original, body.edits);
    renderSources(document.getElementById("sources"), body.pieces);
    const edits = body.edits.length;
    document.getElementById("edit-count").textContent =
      edits === 0 ? "no changes" : `${edits} ${edits === 1 ? "edit" : "edits"}`;
    const stats = body.stats;
    document.getElementById("draft-share").textContent =
      `${stats.accepted_tokens} of ${stats.generated_tokens} tokens copied from your input`;
    renderSpeedup(document.getElementById("speedup"), body.comparison);
    renderQuality(document.getElementById("quality"), body.quality);
    results.hidden = false;
  }

  // quality: {ok, warnings: [...], ...} (absent from an older server: treated as ok)
  function renderQuality(box, quality) {
    const ok = !quality || quality.ok;
    box.hidden = ok;
    document.getElementById("diff-title").textContent = ok ? "Corrections" : "The model's answer (not a correction)";
    document.getElementById("quality-warnings").replaceChildren(
      ...(ok ? [] : quality.warnings.map((warning) => element("li", warning))));
  }

  // Edits are {start, end, original, replacement} in code points of the original text.
  function renderDiff(container, original, edits) {
    const chars = Array.from(original); // code points, as the server counts them
    const slice = (from, to) => chars.slice(from, to).join("");
    const sorted = [...edits].sort((a, b) => a.start - b.start || a.end - b.end);
    container.replaceChildren();
    let cursor = 0;
    for (const edit of sorted) {
      container.append(slice(cursor, edit.start));
      if (edit.original) container.append(element("del", edit.original));
      if (edit.replacement) {
        const ins = element("ins", edit.replacement);
        if (edit.original) ins.title = `was: ${edit.original}`;
        container.append(ins);
      }
      cursor = edit.end;
    }
    container.append(slice(cursor, chars.length));
  }

  function renderSources(container, pieces) {
    container.replaceChildren();
    for (const piece of pieces) {
      container.append(piece.source === "draft" ? element("span", piece.text, "draft") : piece.text);
    }
  }

  // "2.7× faster than plain decoding (1.2 s vs 3.3 s), identical output, 14 vs 52 model passes"
  function renderSpeedup(container, comparison) {
    const c = comparison;
    const times = `${seconds(c.speculative_wall_s)} vs ${seconds(c.plain_wall_s)}`;
    const speed = c.speedup === null ? "timing unavailable"
      : c.speedup >= 1 ? `${c.speedup.toFixed(1)}× faster than plain decoding`
      : `${(1 / c.speedup).toFixed(1)}× slower than plain decoding`;
    const same = c.identical ? "identical output" : "OUTPUTS DIFFER";
    const passes = `${c.speculative_forward_passes} vs ${c.plain_forward_passes} model passes`;
    container.textContent = `${speed} (${times}), ${same}, ${passes}`;
    container.classList.toggle("slower", c.speedup === null || c.speedup < 1);
  }
})();
