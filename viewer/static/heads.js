/* Heads: the L×H RAM heatmap of each ranking for one task; a chosen head's saved
   attention overlays beside the ground-truth evidence. */
(function () {
  "use strict";
  var HS = window.HS;
  var views = HS.store["data/heads.js"] || [];
  var taskSelect = document.getElementById("task-select");
  if (!taskSelect) return;
  var state = HS.params();

  var tasks = [];
  views.forEach(function (v) {
    Object.keys(v.tasks).forEach(function (t) {
      if (tasks.indexOf(t) < 0) tasks.push(t);
    });
  });
  tasks.forEach(function (t) {
    taskSelect.appendChild(HS.el("option", { value: t, text: t }));
  });
  if (tasks.indexOf(state.task) < 0) state.task = tasks[0];
  taskSelect.value = state.task;
  taskSelect.addEventListener("change", function () {
    state = { task: taskSelect.value };
    render();
  });

  function mapsOf(view) {
    var entry = view.tasks[state.task];
    return entry && entry.maps ? HS.load(entry.maps) : Promise.resolve(null);
  }

  function heatmap(view, maps) {
    var entry = view.tasks[state.task];
    var L = view.num_layers, H = view.num_heads;
    var peak = 0;
    entry.mean.forEach(function (row) {
      row.forEach(function (v) { if (v > peak) peak = v; });
    });
    var saved = {};
    (maps ? maps.heads : []).forEach(function (h) { saved[h.name] = h.why; });
    var grid = HS.el("div", { class: "grid", style: "grid-template-columns: 3em repeat(" + H + ", minmax(14px, 26px))" });
    for (var l = L - 1; l >= 0; l--) {
      grid.appendChild(HS.el("span", { class: "axis", text: "L" + l }));
      for (var h = 0; h < H; h++) {
        var name = "L" + l + "H" + h;
        var v = entry.mean[l][h];
        var cell = HS.el("button", {
          type: "button",
          class: "cell" + (saved[name] ? " saved " + saved[name] : "") + (state.head === name ? " chosen" : ""),
          style: "background:" + HS.colour(peak > 0 ? v / peak : 0),
          title: name + " RAM " + HS.fmt(v, 4) + (saved[name] ? " · map saved (" + saved[name] + ")" : ""),
          "data-head": name,
          "data-view": view.id,
          onclick: choose,
        });
        grid.appendChild(cell);
      }
    }
    grid.appendChild(HS.el("span", { class: "axis" }));
    for (var j = 0; j < H; j++) grid.appendChild(HS.el("span", { class: "axis", text: j % 2 === 0 || H <= 16 ? "H" + j : "" }));
    return HS.el("div", { class: "heatmap", "data-view": view.id }, [
      HS.el("h3", { text: view.model + " · " + view.run + " · " + state.task }),
      HS.el("div", { class: "hint", text: entry.n + " samples · top heads " + entry.top.join(", ") + " · peak RAM " + HS.fmt(peak, 4) }),
      grid,
    ]);
  }

  function choose(ev) {
    state.head = ev.currentTarget.getAttribute("data-head");
    render();
  }

  function overlays(view, maps) {
    var box = HS.el("div", { class: "view-overlays", "data-view": view.id }, [HS.el("h3", { text: view.model + " · " + view.run })]);
    if (!maps) {
      box.appendChild(HS.el("p", { class: "empty", text: "No attention maps saved for this task (headscope rank --maps N saves them)." }));
      return box;
    }
    var k = -1;
    maps.heads.forEach(function (h, i) { if (h.name === state.head) k = i; });
    if (k < 0) {
      var saved = HS.el("div", { class: "saved-heads" }, [HS.el("span", { text: "No map saved for " + state.head + "; saved heads: " })]);
      maps.heads.forEach(function (h) {
        saved.appendChild(HS.el("button", { type: "button", class: "chip " + h.why, "data-head": h.name, onclick: choose, text: h.name + " (" + h.why + ", rank " + h.rank + ")" }));
      });
      box.appendChild(saved);
      return box;
    }
    var head = maps.heads[k];
    var chips = HS.el("div", { class: "saved-heads" }, [HS.el("span", { class: "hint", text: "saved heads: " })]);
    maps.heads.forEach(function (h) {
      chips.appendChild(HS.el("button", { type: "button", class: "chip " + h.why + (h.name === state.head ? " chosen" : ""), "data-head": h.name, onclick: choose, text: h.name + " (" + h.why + ", rank " + h.rank + ")" }));
    });
    box.appendChild(chips);
    box.appendChild(HS.el("p", { class: "hint", text: head.name + ": " + head.why + " head, RAM rank " + head.rank + ", mean RAM " + HS.fmt(head.ram, 4) }));
    box.appendChild(HS.legendBar(undefined, true));
    box.appendChild(HS.el("p", { class: "hint", text: "Each sample's scale is the largest share any of its saved heads (" + maps.heads.map(function (h) { return h.name; }).join(", ") + ") puts on one token; it is printed under each card." }));
    var pairs = HS.el("div", { class: "pairs" });
    box.appendChild(pairs);
    maps.samples.forEach(function (s) {
      var caption = HS.headCaption(s, k) + " · scale 0 … " + HS.share(s.scale);
      var pair = HS.el("div", { class: "pair", "data-doc": s.doc_id }, [
        HS.overlayCard(s.doc_id + " · evidence", s, null, s.prompt, s.logged ? HS.sampleLink(state.task, s.doc_id) : null),
        HS.overlayCard(s.doc_id + " · " + head.name, s, s.attn[k], caption),
      ]);
      pairs.appendChild(pair);
    });
    return box;
  }

  function render() {
    var shown = views.filter(function (v) { return v.tasks[state.task]; });
    Promise.all(shown.map(mapsOf)).then(function (allMaps) {
      if (!state.head) {
        var saved = allMaps.filter(function (m) { return m && m.heads.length; })[0];
        var first = saved ? saved.heads[0].name : shown[0] && shown[0].tasks[state.task].top[0];
        state.head = first || null;
      }
      HS.setParams(state);
      var heat = HS.clear(document.getElementById("heatmaps"));
      shown.forEach(function (v, i) { heat.appendChild(heatmap(v, allMaps[i])); });
      document.getElementById("head-title").textContent = state.head ? "Head " + state.head + " on " + state.task : "No head chosen";
      var over = HS.clear(document.getElementById("overlays"));
      if (state.head) shown.forEach(function (v, i) { over.appendChild(overlays(v, allMaps[i])); });
      HS.ready();
    }).catch(HS.fail);
  }

  render();
})();
