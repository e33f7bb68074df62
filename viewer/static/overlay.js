/* Attention overlays: each medium (image, page, frame) as an <img> with a <canvas> on top
   holding the head's attention per token footprint and the ground-truth evidence outline.
   The image is never drawn into the canvas, so the canvas stays readable from file://. */
(function () {
  "use strict";
  var HS = window.HS;

  /* Media indices a token drawn on medium m covers (a video token may span several frames). */
  function covers(sample, m) {
    var media = sample.media;
    var fpt = sample.frames_per_token || 1;
    if (media[m].kind !== "frame" || fpt === 1) return [m];
    var out = [];
    media.forEach(function (other, j) {
      if (other.kind === "frame" && other.index >= media[m].index && other.index < media[m].index + fpt) {
        out.push(j);
      }
    });
    return out;
  }

  /* Per medium, the token indices drawn on it. */
  function tokensByMedium(sample) {
    var by = sample.media.map(function () {
      return [];
    });
    sample.tokens.media.forEach(function (m, t) {
      covers(sample, m).forEach(function (j) {
        by[j].push(t);
      });
    });
    return by;
  }

  /* At most MAX_MEDIA media per card (long videos, many pages): every medium holding
     evidence, then evenly spaced others, in order. */
  var MAX_MEDIA = 12;
  HS.shownMedia = function (sample) {
    var n = sample.media.length;
    var all = sample.media.map(function (m, i) { return i; });
    if (n <= MAX_MEDIA) return all;
    var keep = {};
    sample.evidence.regions.forEach(function (r) { keep[r.media] = true; });
    var picked = Object.keys(keep).map(Number).slice(0, MAX_MEDIA);
    var room = MAX_MEDIA - picked.length;
    for (var j = 0; j < room; j++) {
      var i = Math.round((j * (n - 1)) / Math.max(1, room - 1));
      if (!keep[i]) { keep[i] = true; picked.push(i); }
    }
    return picked.sort(function (a, b) { return a - b; });
  };

  function size(medium, maxSide) {
    var s = Math.min(maxSide / medium.width, maxSide / medium.height);
    return [Math.max(1, Math.round(medium.width * s)), Math.max(1, Math.round(medium.height * s)), s];
  }

  /* Outline each region on medium m: gold (solid red; dashed: a whole page) or predicted
     (dashed blue). Returns how many were drawn. */
  function outline(ctx, regions, m, medium, k, style) {
    var n = 0;
    (regions || []).forEach(function (region) {
      if (region.media !== m) return;
      var b = region.box || [0, 0, medium.width, medium.height];
      ctx.strokeStyle = style.colour;
      ctx.lineWidth = 2;
      ctx.setLineDash(style.dash || (region.box ? [] : [6, 3]));
      ctx.strokeRect(b[0] * k + 1, b[1] * k + 1, (b[2] - b[0]) * k - 2, (b[3] - b[1]) * k - 2);
      n += 1;
    });
    return n;
  }

  HS.GOLD = { colour: "#ff2d55" };
  HS.PRED = { colour: "#1e90ff", dash: [3, 3] };

  /* sample: media + evidence regions (+ tokens, when drawn with weights; + predicted regions).
     weights: one head's attention share per token, or null. The colour and opacity of a token
     are weights[t] / sample.scale: one scale for every head of the sample, so a head with no
     visual mass is drawn empty. Attention goes on canvas.attn, outlines on canvas.marks. */
  HS.drawSample = function (sample, weights, opts) {
    opts = opts || {};
    var maxSide = opts.maxSide || 200;
    if (!sample.media.length) {
      return HS.el("p", { class: "empty", text: sample.media_note || "no media saved" });
    }
    var by = sample.tokens ? tokensByMedium(sample) : null;
    var scale = sample.scale || 0;
    var wrap = HS.el("div", { class: "media-row" });
    var shown = HS.shownMedia(sample);
    shown.forEach(function (m) {
      var medium = sample.media[m];
      var dims = size(medium, maxSide);
      var img = HS.el("img", { src: medium.src, width: dims[0], height: dims[1], alt: medium.kind + " " + medium.index });
      var layers = [img];
      var drawn = 0;
      if (weights) {
        var attn = HS.el("canvas", { width: dims[0], height: dims[1], class: "overlay attn" });
        var ctx = attn.getContext("2d");
        if (scale > 0) by[m].forEach(function (t) {
          var v = Math.min(1, weights[t] / scale);
          if (!(v * 0.85 * 255 >= 1)) return; /* would round to fully transparent */
          var r = sample.tokens.rects[t];
          ctx.fillStyle = HS.colour(v);
          ctx.globalAlpha = 0.85 * v;
          ctx.fillRect(r[0] * dims[2], r[1] * dims[2], (r[2] - r[0]) * dims[2], (r[3] - r[1]) * dims[2]);
          drawn += 1;
        });
        attn.setAttribute("data-tokens", drawn);
        layers.push(attn);
      }
      var marks = HS.el("canvas", { width: dims[0], height: dims[1], class: "overlay marks" });
      var mctx = marks.getContext("2d");
      var boxes = outline(mctx, sample.evidence.regions, m, medium, dims[2], HS.GOLD);
      var preds = opts.predicted ? outline(mctx, opts.predicted, m, medium, dims[2], HS.PRED) : 0;
      marks.setAttribute("data-evidence", boxes);
      marks.setAttribute("data-predicted", preds);
      layers.push(marks);
      var src = medium.source !== undefined ? " (src " + medium.source + ")" : "";
      var label = medium.kind + " " + medium.index + src + (boxes ? " · gold" : "") + (preds ? " · predicted" : "");
      wrap.appendChild(
        HS.el("figure", { class: "medium" + (boxes ? " has-evidence" : "") }, [
          HS.el("div", { class: "stack", style: "width:" + dims[0] + "px;height:" + dims[1] + "px" }, layers),
          HS.el("figcaption", { text: label }),
        ])
      );
    });
    if (shown.length < sample.media.length) {
      wrap.appendChild(HS.el("div", { class: "hint", text: "showing " + shown.length + " of " + sample.media.length + " " + sample.media[0].kind + "s (those with evidence first)" }));
    }
    return wrap;
  };

  /* A card: title, the media with attention (or evidence only), and a caption line. */
  HS.overlayCard = function (title, sample, weights, caption, link, opts) {
    var head = link ? HS.el("a", { href: link, text: title }) : HS.el("span", { text: title });
    return HS.el("div", { class: "card" + (weights ? " attention" : " evidence-only") }, [
      HS.el("div", { class: "card-title" }, [head]),
      HS.drawSample(sample, weights, opts),
      caption ? HS.el("div", { class: "caption", text: caption }) : null,
    ]);
  };

  /* An attention share as text: 0, 3 decimals, or 2 significant digits when tiny. */
  HS.share = function (v) {
    if (v === null || v === undefined) return "—";
    if (typeof v === "string") return v;
    if (v === 0) return "0";
    return Math.abs(v) >= 0.001 ? v.toFixed(3) : v.toExponential(1);
  };

  /* The colour key: 0 … scale, the one scale of all heads of a sample. */
  HS.legendBar = function (scale, noPredicted) {
    var bar = HS.el("div", { class: "legend-bar" });
    for (var i = 0; i <= 10; i++) bar.appendChild(HS.el("span", { style: "background:" + HS.colour(i / 10) + ";opacity:" + (0.85 * i / 10) }));
    var top = scale === undefined ? "the sample's scale" : HS.share(scale);
    return HS.el("div", { class: "legend-line" }, [
      HS.el("span", { text: "attention share per token (mean over the question's rows): 0 " }),
      bar,
      HS.el("span", { class: "scale", text: " " + top + " — one scale for every head of a sample" }),
      HS.el("span", { class: "ev-key", text: " ▭ gold evidence (dashed: a whole page)" }),
      noPredicted ? null : HS.el("span", { class: "pred-key", text: " ┅ predicted" }),
    ]);
  };

  /* A head's numbers on one sample: visual mass, RAM, attention off the drawn tokens. */
  HS.headCaption = function (sample, k) {
    var off = sample.off[k] ? " · " + HS.fmt(100 * sample.off[k], 1) + "% of it on tokens without a footprint" : "";
    return "visual mass " + HS.share(sample.mass ? sample.mass[k] : null) + " · RAM " + HS.share(sample.ram[k]) + off;
  };
})();
