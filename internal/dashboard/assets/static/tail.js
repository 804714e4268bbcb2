// Live tail: records of the chosen topic from /api/tail (server-sent
// events), newest first. Pause stops rendering (the last rows are still
// kept); the filter shows the records whose JSON contains its text. The
// DOM never holds more than data-rows rows.
"use strict";
(function () {
  const prefix = document.body.dataset.prefix || "";
  const select = document.getElementById("topic");
  const pauseBtn = document.getElementById("pause");
  const filterIn = document.getElementById("filter");
  const rowsEl = document.getElementById("tail-rows");
  const statusEl = document.getElementById("tail-status");
  const droppedEl = document.getElementById("dropped");
  const table = document.getElementById("tail");
  const MAX = Number(table.dataset.rows) || 200;

  let source = null;
  let paused = false;
  let kept = [];     // the last MAX records, oldest first
  let pending = [];  // records received since the last render
  let scheduled = false;
  let received = 0;  // records of this topic so far (table[data-received])

  function matches(item) {
    const f = filterIn.value;
    return !f || item.data.includes(f);
  }
  function cell(tr, cls, text) {
    const td = document.createElement("td");
    td.className = cls;
    td.textContent = text;
    tr.appendChild(td);
  }
  // jsonUnits splits compact JSON after each "," and ":" outside strings:
  // the places where a long record may wrap.
  function jsonUnits(json) {
    const units = [];
    let start = 0, inString = false, escaped = false;
    for (let i = 0; i < json.length; i++) {
      const c = json[i];
      if (inString) {
        if (escaped) escaped = false;
        else if (c === "\\") escaped = true;
        else if (c === '"') inString = false;
      } else if (c === '"') {
        inString = true;
      } else if (c === "," || c === ":") {
        units.push(json.slice(start, i + 1));
        start = i + 1;
      }
    }
    if (start < json.length) units.push(json.slice(start));
    return units;
  }
  // valueCell shows a record's JSON, each unit in a span that the
  // stylesheet keeps whole on a line (it wraps inside only when longer
  // than a line): long records wrap between tokens, not inside them.
  function valueCell(tr, json) {
    const td = document.createElement("td");
    td.className = "value";
    for (const u of jsonUnits(json)) {
      const span = document.createElement("span");
      span.textContent = u;
      td.appendChild(span);
    }
    tr.appendChild(td);
  }
  function makeRow(item) {
    const ev = item.ev;
    const tr = document.createElement("tr");
    tr.className = "tail-row";
    cell(tr, "time", ev.time ? String(ev.time).replace("T", " ") : "");
    cell(tr, "partition num", ev.partition);
    cell(tr, "offset num", ev.offset);
    valueCell(tr, JSON.stringify(ev.value));
    return tr;
  }
  function trim() {
    while (rowsEl.children.length > MAX) rowsEl.lastElementChild.remove();
  }
  function rebuild() {
    pending = [];
    rowsEl.replaceChildren(...kept.filter(matches).reverse().map(makeRow));
    trim();
  }
  function render() {
    scheduled = false;
    if (paused) return;
    const frag = document.createDocumentFragment();
    for (let i = pending.length - 1; i >= 0; i--) {
      if (matches(pending[i])) frag.appendChild(makeRow(pending[i]));
    }
    pending = [];
    rowsEl.prepend(frag);
    trim();
  }
  function push(item) {
    table.dataset.received = String(++received);
    kept.push(item);
    if (kept.length > MAX) kept.shift();
    if (paused) return;
    pending.push(item);
    if (pending.length > MAX) pending.shift();
    if (!scheduled) {
      scheduled = true;
      requestAnimationFrame(render);
    }
  }
  function setStatus(text) { statusEl.textContent = text; }

  function connect(topic) {
    if (source) source.close();
    source = null;
    kept = [];
    pending = [];
    received = 0;
    table.dataset.received = "0";
    rowsEl.replaceChildren();
    droppedEl.textContent = "0";
    if (!topic) {
      setStatus("idle");
      return;
    }
    history.replaceState(null, "", "?topic=" + encodeURIComponent(topic));
    setStatus("connecting");
    const es = new EventSource(prefix + "/api/tail?topic=" + encodeURIComponent(topic));
    source = es;
    es.onopen = function () { setStatus("live"); };
    es.onmessage = function (e) {
      let ev;
      try { ev = JSON.parse(e.data); } catch (_) { return; }
      push({ data: e.data, ev: ev });
    };
    es.addEventListener("dropped", function (e) { droppedEl.textContent = e.data; });
    es.addEventListener("tail-error", function (e) {
      let msg = e.data;
      try { msg = JSON.parse(e.data).error; } catch (_) { /* keep the raw text */ }
      setStatus("stopped: " + msg);
      es.close();
    });
    es.addEventListener("end", function () {
      setStatus("ended");
      es.close();
    });
    es.onerror = function () {
      if (es.readyState === EventSource.CLOSED) setStatus("disconnected");
      else setStatus("reconnecting");
    };
  }

  select.addEventListener("change", function () { connect(select.value); });
  pauseBtn.addEventListener("click", function () {
    paused = !paused;
    pauseBtn.textContent = paused ? "Resume" : "Pause";
    pauseBtn.setAttribute("aria-pressed", String(paused));
    if (!paused) rebuild();
  });
  filterIn.addEventListener("input", function () { if (!paused) rebuild(); });
  if (select.value) connect(select.value);
})();
