/* One sample: the media with the evidence drawn, the prompt, every intervention's reply with
   its scores, and the saved top / bottom / random heads' attention overlays. */
(function () {
  "use strict";
  var HS = window.HS;
  var params = HS.params();
  var task = HS.task(params.task);
  var views = HS.store["data/heads.js"] || [];

  function text(id, value) {
    document.getElementById(id).textContent = value;
  }

  function showFields(detail, row) {
    var dl = HS.clear(document.getElementById("fields"));
    var fields = Object.assign({ target: null }, detail.fields);
    Object.keys(fields).forEach(function (k) {
      var v = fields[k];
      dl.appendChild(HS.el("dt", { text: k }));
      dl.appendChild(HS.el("dd", { text: typeof v === "string" ? v : JSON.stringify(v) }));
    });
    dl.appendChild(HS.el("dt", { text: "correct in" }));
    var ok = row.c.split("").filter(function (m) { return m === "1"; }).length;
    dl.appendChild(HS.el("dd", { text: ok + " of " + row.c.length + " columns" }));
  }

  function showPrompts(table, detail) {
    var box = HS.clear(document.getElementById("prompts"));
    detail.prompts.forEach(function (p) {
      var who = detail.prompts.length > 1 ? p.columns.map(function (c) { return "#" + (c + 1); }).join(" ") : null;
      box.appendChild(HS.el("div", { class: "prompt-block" }, [
        who ? HS.el("div", { class: "hint", text: "columns " + who }) : null,
        HS.el("pre", { class: "prompt", text: p.text }),
      ]));
    });
  }

  function doc0(detail) {
    return detail.media || { evidence: {} };
  }

  function showReplies(table, detail, row, choose) {
    var body = HS.clear(document.querySelector("#replies tbody"));
    table.columns.forEach(function (c) {
      var reps = detail.replies[c.id] || [];
      var replyCell = HS.el("td", { class: "reply" });
      var scoresCell = HS.el("td", { class: "scores" });
      reps.forEach(function (r) {
        var prefix = r.draw !== undefined ? "draw " + r.draw + ": " : "";
        var region = "";
        if (r.region && r.region.length && doc0(detail).evidence.kind === "box") region = " → box [" + r.region[0].box.join(", ") + "] px";
        else if (r.region && r.region.length) region = " → " + r.region.length + " " + (doc0(detail).evidence.kind === "page" ? "page(s)" : "frame(s)") + " predicted";
        else if (r.region) region = " → nothing read";
        replyCell.appendChild(HS.el("div", { text: prefix + (r.error ? "error: " + r.error : r.output) + region }));
        scoresCell.appendChild(HS.el("div", { text: prefix + JSON.stringify(r.scores || {}) }));
      });
      if (!reps.length) replyCell.appendChild(HS.el("span", { class: "empty", text: "not run on this sample" }));
      var mark = row.c[c.id];
      body.appendChild(HS.el("tr", { class: "reply-row" + (c.baseline ? " baseline" : ""), "data-col": c.id, onclick: function () { choose(c.id); } }, [
        HS.el("td", { text: "#" + (c.id + 1) }),
        HS.el("td", { text: c.title }),
        replyCell,
        HS.el("td", { class: "num", text: HS.fmt(row.s[c.id]) + (c.score_key ? " (" + c.score_key + ")" : "") }),
        HS.el("td", { class: "mark " + (mark === "1" ? "ok" : mark === "0" ? "bad" : "unk"), text: mark === "1" ? "✓" : mark === "0" ? "✗" : "·" }),
        scoresCell,
      ]));
    });
  }

  /* The document's media (rebuilt by its task), the gold evidence and the chosen reply's
     predicted region, in the medium's original pixels. */
  function showMedia(table, detail, chosen) {
    var box = HS.clear(document.getElementById("media"));
    var doc = detail.media;
    if (!doc || !doc.media.length) {
      box.appendChild(HS.el("p", { class: "empty", text: (doc && doc.note) || "No media for this sample." }));
      return;
    }
    var reps = detail.replies[chosen] || [];
    var predicted = reps.length && reps[0].region ? reps[0].region : []; /* the first draw's */
    var col = table.columns[chosen];
    var title = "media · gold" + (doc.evidence.kind ? " " + doc.evidence.kind : ": none (not a grounded task)");
    var caption = null;
    if (reps.some(function (r) { return "region" in r; })) {
      var what = { box: "box", tube: "span and box", page: "pages" }[doc.evidence.kind];
      caption = "predicted " + what + " (dashed blue): reply of #" + (chosen + 1) + " " + col.title + (reps.length > 1 ? " (first draw)" : "") + (predicted.length ? "" : " — none could be read from it") + "; click a reply to draw its " + what;
    } else if (doc.predicted_note) {
      caption = doc.predicted_note;
    } else if (doc.evidence.kind) {
      caption = "no predicted region was logged for this reply (see the reply and its scores below)";
    }
    var side = doc.media[0].kind === "image" ? 320 : 200;
    var card = HS.overlayCard(title, doc, null, caption, null, { maxSide: side, predicted: predicted });
    if (doc.n_media > doc.media.length) card.appendChild(HS.el("div", { class: "hint", text: "stored " + doc.media.length + " of the " + doc.n_media + " media shown to the model (those with evidence first, then evenly spaced)" }));
    box.appendChild(card);
  }

  function showMaps(allMaps) {
    var media = document.getElementById("maps-media");
    var heads = HS.clear(document.getElementById("head-overlays"));
    var found = 0;
    allMaps.forEach(function (pair) {
      var view = pair[0], maps = pair[1];
      if (!maps) return;
      var s = maps.samples.filter(function (x) { return String(x.doc_id) === String(params.id); })[0];
      if (!s) return;
      found += 1;
      var who = views.length > 1 ? view.model + " · " + view.run + " · " : "";
      if (who) media.appendChild(HS.el("p", { class: "hint", text: who }));
      heads.appendChild(HS.legendBar(s.scale, true));
      var order = { top: 0, bottom: 1, random: 2 };
      var idx = maps.heads.map(function (h, i) { return i; });
      idx.sort(function (a, b) { return order[maps.heads[a].why] - order[maps.heads[b].why] || maps.heads[a].rank - maps.heads[b].rank; });
      idx.forEach(function (k) {
        var h = maps.heads[k];
        var caption = h.why + " head, rank " + h.rank + " · " + HS.headCaption(s, k);
        var link = "heads.html" + HS.hash({ task: params.task, head: h.name });
        heads.appendChild(HS.overlayCard(who + h.name + " (" + h.why + ")", s, s.attn[k], caption, link));
      });
    });
    if (!found) {
      var note = "No attention maps were saved for this sample (headscope rank --maps N saves N samples per task).";
      heads.appendChild(HS.el("p", { class: "empty", text: note }));
    }
  }

  function show(table) {
    var i = -1;
    table.samples.forEach(function (s, j) { if (String(s.id) === String(params.id)) i = j; });
    if (i < 0) throw new Error("no sample " + params.id + " in task " + params.task);
    var row = table.samples[i];
    text("sample-title", params.task + " · " + row.id);
    document.title = params.task + " · " + row.id;
    var prev = table.samples[i - 1], next = table.samples[i + 1];
    document.getElementById("prev-sample").href = prev ? HS.sampleLink(params.task, prev.id) : "#";
    document.getElementById("next-sample").href = next ? HS.sampleLink(params.task, next.id) : "#";
    document.getElementById("back").href = "samples.html" + HS.hash({ task: params.task });
    var chunk = task.chunks + Math.floor(i / table.chunk_size) + ".js";
    var shown = views.filter(function (v) { return v.tasks[params.task] && v.tasks[params.task].maps; });
    return Promise.all([
      HS.load(chunk),
      Promise.all(shown.map(function (v) {
        return HS.load(v.tasks[params.task].maps).then(function (m) { return [v, m]; });
      })),
    ]).then(function (got) {
      var detail = got[0].samples[i % table.chunk_size];
      showFields(detail, row);
      showPrompts(table, detail);
      var chosen = table.columns.filter(function (c) { return c.baseline; }).map(function (c) { return c.id; })[0] || 0;
      showReplies(table, detail, row, function (c) { showMedia(table, detail, c); });
      showMedia(table, detail, chosen);
      showMaps(got[1]);
      HS.ready();
    });
  }

  window.addEventListener("hashchange", function () { location.reload(); });
  if (!task) {
    HS.fail("unknown task " + params.task);
  } else {
    HS.load(task.table).then(show).catch(HS.fail);
  }
})();
