// Overview: refresh the numbers from /api/overview every 2 s. The page is
// complete without this script; it only keeps it current.
"use strict";
(function () {
  const prefix = document.body.dataset.prefix || "";
  const status = document.getElementById("refresh-status");
  const SVG = "http://www.w3.org/2000/svg";
  // Sparkline geometry and number formats: the same as format.go.
  const W = 120, H = 24, PAD = 1;

  function rate(v) { return (Number(v) || 0).toFixed(1) + "/s"; }
  function ratio(valid, invalid) {
    const sum = valid + invalid;
    return sum > 0 ? (100 * invalid / sum).toFixed(2) + "%" : "\u2013";
  }
  function utc(iso) {
    const d = new Date(iso);
    return isNaN(d) || d.getUTCFullYear() < 2 ? "" : d.toISOString().slice(0, 19).replace("T", " ") + "Z";
  }
  function points(series) {
    let s = (series || []).slice();
    if (s.length === 0) return "";
    if (s.length === 1) s = [s[0], s[0]];
    let peak = 0;
    for (const v of s) if (isFinite(v) && v > peak) peak = v;
    return s.map(function (v, i) {
      const x = i * W / (s.length - 1);
      let y = H - PAD;
      if (peak > 0 && v > 0 && v <= peak) y -= v / peak * (H - 2 * PAD);
      return x.toFixed(1) + "," + y.toFixed(1);
    }).join(" ");
  }
  function setText(el, text) {
    if (el && el.textContent !== String(text)) el.textContent = String(text);
  }
  function setValue(el, v) {
    if (!el) return;
    el.dataset.value = String(v);
    setText(el, rate(v));
  }
  // find returns the element of parent with attr = key, creating it with
  // make() when there is none yet.
  function find(parent, attr, key, make) {
    for (const el of parent.querySelectorAll("[" + attr + "]")) {
      if (el.getAttribute(attr) === key) return el;
    }
    const empty = parent.querySelector(".empty");
    if (empty) empty.remove();
    const el = make();
    el.setAttribute(attr, key);
    parent.appendChild(el);
    return el;
  }
  function row(classes) {
    const tr = document.createElement("tr");
    for (const c of classes) {
      const td = document.createElement("td");
      td.className = c;
      tr.appendChild(td);
    }
    return tr;
  }

  function update(o) {
    setValue(document.getElementById("valid-rate"), o.validRate);
    setValue(document.getElementById("invalid-rate"), o.invalidRate);
    setText(document.getElementById("invalid-ratio"), ratio(o.validRate || 0, o.invalidRate || 0));
    setText(document.getElementById("overview-time"), utc(o.time));

    const streams = document.querySelector("#streams tbody");
    for (const s of o.streams || []) {
      const tr = find(streams, "data-topic", s.topic, function () {
        const tr = row(["topic", "kind", "rate num", "spark", "total num"]);
        tr.className = "stream";
        tr.querySelector(".topic").textContent = s.topic;
        const badge = document.createElement("span");
        badge.className = "badge kind-" + s.kind;
        badge.textContent = s.kind;
        tr.querySelector(".kind").appendChild(badge);
        const svg = document.createElementNS(SVG, "svg");
        svg.setAttribute("viewBox", "0 0 " + W + " " + H);
        svg.setAttribute("width", W);
        svg.setAttribute("height", H);
        svg.appendChild(document.createElementNS(SVG, "polyline"));
        tr.querySelector(".spark").appendChild(svg);
        return tr;
      });
      setValue(tr.querySelector(".rate"), s.rate);
      setText(tr.querySelector(".total"), s.total);
      const line = tr.querySelector(".spark polyline");
      if (line) line.setAttribute("points", points(s.recent));
    }

    const groups = document.querySelector("#groups tbody");
    for (const g of o.groups || []) {
      const tr = find(groups, "data-group", g.group, function () {
        const tr = row(["name", "state", "members num", "lag num", "topics"]);
        tr.className = "group";
        tr.querySelector(".name").textContent = g.group;
        return tr;
      });
      setText(tr.querySelector(".state"), g.state);
      setText(tr.querySelector(".members"), g.members);
      setText(tr.querySelector(".lag"), g.lag);
      setText(tr.querySelector(".topics"), (g.topics || []).map(function (t) { return t.topic + ": " + t.lag; }).join(", "));
    }

    const roles = document.getElementById("roles");
    for (const r of o.roles || []) {
      const li = find(roles, "data-role", r.role, function () {
        const li = document.createElement("li");
        for (const c of ["dot", "name", "status", "detail"]) {
          const span = document.createElement("span");
          span.className = c;
          li.appendChild(span);
          li.appendChild(document.createTextNode(" "));
        }
        li.querySelector(".name").textContent = r.role;
        return li;
      });
      li.className = "role " + (r.healthy ? "healthy" : "unhealthy");
      setText(li.querySelector(".status"), r.healthy ? "up" : "down");
      setText(li.querySelector(".detail"), r.detail || "");
    }
  }

  async function refresh() {
    if (!document.hidden) {
      try {
        const res = await fetch(prefix + "/api/overview", { headers: { Accept: "application/json" }, cache: "no-store" });
        const body = await res.json();
        if (!res.ok) throw new Error(body.error || res.statusText);
        update(body);
        status.textContent = "";
        status.className = "";
      } catch (err) {
        status.textContent = "(refresh failed: " + err.message + ")";
        status.className = "stale";
      }
    }
    setTimeout(refresh, 2000);
  }
  setTimeout(refresh, 2000);
})();
