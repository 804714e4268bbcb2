// EventErrors: "Replay selected" posts the checked uuids to /api/replay
// and shows the result.
"use strict";
(function () {
  const prefix = document.body.dataset.prefix || "";
  const form = document.getElementById("replay-form");
  if (!form) return;
  const result = document.getElementById("replay-result");
  const button = document.getElementById("replay-button");
  const all = document.getElementById("select-all");
  function boxes() {
    return Array.from(form.querySelectorAll("input.replay-select:not(:disabled)"));
  }
  if (all) {
    all.addEventListener("change", function () {
      for (const b of boxes()) b.checked = all.checked;
    });
  }
  function show(text, ok, body) {
    result.textContent = text;
    result.className = ok ? "ok" : "failed";
    result.dataset.replayed = body && body.replayed !== undefined ? String(body.replayed) : "";
    result.dataset.skipped = body && body.skipped !== undefined ? String(body.skipped) : "";
  }
  form.addEventListener("submit", async function (e) {
    e.preventDefault();
    const uuids = boxes().filter(function (b) { return b.checked; }).map(function (b) { return b.value; });
    if (uuids.length === 0) {
      show("Select at least one replayable EventError.", false);
      return;
    }
    const headers = { "Content-Type": "application/json", Accept: "application/json" };
    button.disabled = true;
    show("Replaying " + uuids.length + "\u2026", true);
    try {
      const res = await fetch(prefix + "/api/replay", { method: "POST", headers: headers, body: JSON.stringify({ uuids: uuids }) });
      const body = await res.json().catch(function () { return { error: res.statusText }; });
      if (!res.ok) {
        show((res.status === 403 ? "Not allowed: " : "Replay failed: ") + (body.error || res.status), false);
        return;
      }
      let text = "Replayed " + body.replayed + ", skipped " + body.skipped + ".";
      if (body.reasons && body.reasons.length) text += " " + body.reasons.join("; ");
      if (body.replayed > 0) text += " Valid now: " + (body.valid || 0) + ".";
      const failed = body.failed || [];
      if (failed.length) {
        text += " Failed again (still replayable): " + failed.map(function (f) { return f.uuid + ": " + f.message; }).join("; ") + ".";
      }
      if (body.pending && body.pending.length) text += " No outcome yet (still replayable): " + body.pending.length + ".";
      show(text, failed.length === 0, body);
    } catch (err) {
      show("Replay failed: " + err.message, false);
    } finally {
      button.disabled = false;
    }
  });
})();
