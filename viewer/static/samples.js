/* Samples: per task, each sample's correctness under every intervention column, with
   per-column filters, presets, text search and pagination (PAGE rows in the DOM at once). */
(function () {
  "use strict";
  var HS = window.HS;
  var PAGE = 50;
  var taskSelect = document.getElementById("task-select");
  if (!taskSelect) return;
  var search = document.getElementById("search");
  var state = HS.params();
  var table = null;
  var matches = [];

  HS.index().tasks.forEach(function (t) {
    taskSelect.appendChild(HS.el("option", { value: t.name, text: t.name + " (" + t.n_samples + ")" }));
  });
  if (!HS.task(state.task)) state.task = HS.index().tasks[0].name;
  taskSelect.value = state.task;
  search.value = state.q || "";

  /* Filters as "col:mark,col:mark" (mark 1 correct, 0 wrong, - unknown). */
  function filters() {
    var out = {};
    (state.f || "").split(",").forEach(function (part) {
      var kv = part.split(":");
      if (kv.length === 2 && kv[1]) out[kv[0]] = kv[1];
    });
    return out;
  }

  function setFilters(map) {
    state.f = Object.keys(map).filter(function (k) { return map[k]; }).map(function (k) { return k + ":" + map[k]; }).join(",");
    state.p = 0;
  }

  function kOf(label) {
    var m = /(?:^|[:,])k=([^,\s)]+)/.exec(label);
    return m ? m[1] : null;
  }

  /* "correct at baseline, wrong under top-k ablation, right under random-k" for each k. */
  function presets(columns) {
    var out = [];
    var models = {};
    columns.forEach(function (c) { (models[c.model] = models[c.model] || []).push(c); });
    Object.keys(models).forEach(function (model) {
      var cols = models[model];
      var base = cols.filter(function (c) { return c.baseline; })[0];
      if (!base) return;
      cols.forEach(function (top) {
        if (!/^ablate:/.test(top.label) || !/select=top/.test(top.label)) return;
        var k = kOf(top.label);
        var rnd = cols.filter(function (c) { return /^ablate:/.test(c.label) && /select=random/.test(c.label) && kOf(c.label) === k; })[0];
        if (!rnd) return;
        var f = {};
        f[base.id] = "1";
        f[top.id] = "0";
        f[rnd.id] = "1";
        var name = "correct at baseline, wrong under top-k ablation, right under random (k=" + k + ")";
        out.push({ name: (Object.keys(models).length > 1 ? model + ": " : "") + name, filters: f });
      });
    });
    return out;
  }

  function legend() {
    var f = filters();
    var body = HS.clear(document.querySelector("#legend tbody"));
    table.columns.forEach(function (c) {
      var n = 0, ok = 0;
      table.samples.forEach(function (s) {
        if (s.c[c.id] !== "-") { n += 1; if (s.c[c.id] === "1") ok += 1; }
      });
      var select = HS.el("select", { "data-col": c.id, onchange: function (ev) {
        var map = filters();
        map[c.id] = ev.target.value;
        setFilters(map);
        update();
      } }, [
        HS.el("option", { value: "", text: "any" }),
        HS.el("option", { value: "1", text: "correct" }),
        HS.el("option", { value: "0", text: "wrong" }),
        HS.el("option", { value: "-", text: "unknown" }),
      ]);
      select.value = f[c.id] || "";
      body.appendChild(HS.el("tr", {}, [
        HS.el("td", { text: "#" + (c.id + 1) }),
        HS.el("td", { text: c.title + (c.draws ? " — score: mean over draws; a cell shows how many draws were right" : "") }),
        HS.el("td", { text: c.score_key || "—" }),
        HS.el("td", { class: "num", text: n ? ok + "/" + n : "—" }),
        HS.el("td", {}, [select]),
      ]));
    });
    var box = HS.clear(document.getElementById("presets"));
    presets(table.columns).forEach(function (p) {
      box.appendChild(HS.el("button", { type: "button", class: "preset", text: p.name, onclick: function () {
        setFilters(p.filters);
        legend();
        update();
      } }));
    });
    document.getElementById("rule").textContent = "Correct: the sample's per-sample score (the task's primary metric, or the first numeric score of its row) is ≥ " + table.correct_at + " (higher-is-better metrics in [0, 1]; else unknown).";
  }

  /* The reply column shows one intervention's replies (default: the baseline). */
  var showReplies = true;
  var replyCol = 0;

  function header() {
    var row = HS.el("tr", {}, [HS.el("th", { text: "doc id" }), HS.el("th", { text: "prompt (the part that differs)" }), HS.el("th", { text: "target" })]);
    table.columns.forEach(function (c) {
      row.appendChild(HS.el("th", { class: "mark-col", title: c.title, text: "#" + (c.id + 1) }));
    });
    var pick = HS.el("select", { id: "reply-col", onchange: function (ev) { replyCol = Number(ev.target.value); rows(); } });
    table.columns.forEach(function (c) { pick.appendChild(HS.el("option", { value: c.id, text: "#" + (c.id + 1) + " " + c.title })); });
    replyCol = (table.columns.filter(function (c) { return c.baseline; })[0] || table.columns[0]).id;
    pick.value = replyCol;
    row.appendChild(HS.el("th", { class: "reply-col" }, [HS.el("span", { text: "reply of " }), pick]));
    HS.clear(document.querySelector("#sample-list thead")).appendChild(row);
    var shared = table.prompt_shared || { prefix: "", suffix: "" };
    document.getElementById("shared-prompt").textContent = shared.prefix || shared.suffix
      ? "Every prompt of this task starts with \u201c" + shared.prefix + "\u201d" + (shared.suffix ? " and ends with \u201c" + shared.suffix + "\u201d" : "") + "; the list shows the rest (\u2026)."
      : "";
  }

  function filtered() {
    var f = filters();
    var cols = Object.keys(f);
    var q = (state.q || "").toLowerCase().trim();
    var out = [];
    table.samples.forEach(function (s, i) {
      for (var j = 0; j < cols.length; j++) if (s.c[cols[j]] !== f[cols[j]]) return;
      if (q && s.text.indexOf(q) < 0) return;
      out.push(i);
    });
    return out;
  }

  function rows() {
    var body = HS.clear(document.querySelector("#sample-list tbody"));
    var pages = Math.max(1, Math.ceil(matches.length / PAGE));
    var p = Math.min(Math.max(0, parseInt(state.p || "0", 10) || 0), pages - 1);
    state.p = p;
    matches.slice(p * PAGE, (p + 1) * PAGE).forEach(function (i) {
      var s = table.samples[i];
      var link = HS.sampleLink(table.task, s.id);
      var tr = HS.el("tr", { class: "sample-row", "data-doc": s.id }, [
        HS.el("td", {}, [HS.el("a", { href: link, text: String(s.id) })]),
        HS.el("td", { class: "prompt", text: s.prompt }),
        HS.el("td", { class: "target", text: s.target }),
      ]);
      for (var c = 0; c < s.c.length; c++) {
        var mark = s.c[c];
        var col = table.columns[c];
        var draws = s.k && s.k[c];
        var reply = s.r && s.r[c] !== null && s.r[c] !== undefined ? s.r[c] : "—";
        tr.appendChild(HS.el("td", {
          class: "mark " + (mark === "1" ? "ok" : mark === "0" ? "bad" : "unk") + (draws ? " draws" : ""),
          title: "#" + (c + 1) + " " + col.title + "\nscore " + HS.fmt(s.s[c]) + (draws ? " (mean over draws; " + draws + " draws right)" : "") + "\nreply" + (col.draws ? " (first draw)" : "") + ": " + reply,
          text: draws ? draws : mark === "1" ? "✓" : mark === "0" ? "✗" : "·",
        }));
      }
      if (showReplies) tr.appendChild(HS.el("td", { class: "reply", text: s.r[replyCol] === null ? "—" : s.r[replyCol] }));
      body.appendChild(tr);
    });
    document.getElementById("page-info").textContent = "page " + (p + 1) + " of " + pages;
    document.getElementById("prev").disabled = p === 0;
    document.getElementById("next").disabled = p >= pages - 1;
    document.getElementById("count").textContent = matches.length + " of " + table.samples.length + " samples";
  }

  function update() {
    matches = filtered();
    rows();
    HS.setParams(state);
    HS.ready();
  }

  function load() {
    document.body.removeAttribute("data-ready");
    HS.load(HS.task(state.task).table).then(function (t) {
      table = t;
      header();
      legend();
      update();
    }).catch(HS.fail);
  }

  taskSelect.addEventListener("change", function () {
    state = { task: taskSelect.value, q: search.value };
    load();
  });
  search.addEventListener("input", function () {
    state.q = search.value;
    state.p = 0;
    update();
  });
  document.getElementById("clear-filters").addEventListener("click", function () {
    state.f = "";
    state.q = "";
    search.value = "";
    state.p = 0;
    legend();
    update();
  });
  document.getElementById("prev").addEventListener("click", function () {
    state.p = (state.p || 0) - 1;
    rows();
    HS.setParams(state);
  });
  document.getElementById("next").addEventListener("click", function () {
    state.p = (state.p || 0) + 1;
    rows();
    HS.setParams(state);
  });
  load();
})();
