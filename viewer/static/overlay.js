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

  /* sample: a maps sample; weights: attention per token (or null for evidence only). */
  HS.drawSample = function (sample, weights, opts) {
    opts = opts || {};
    var maxSide = opts.maxSide || 200;
    if (!sample.media.length) {
      return HS.el("p", { class: "empty", text: sample.media_note || "no media saved" });
    }
    var by = tokensByMedium(sample);
    var peak = 0;
    if (weights) weights.forEach(function (w) { if (w > peak) peak = w; });
    var wrap = HS.el("div", { class: "media-row" });
    var shown = HS.shownMedia(sample);
    shown.forEach(function (m) {
      var medium = sample.media[m];
      var dims = size(medium, maxSide);
      var img = HS.el("img", { src: medium.src, width: dims[0], height: dims[1], alt: medium.kind + " " + medium.index });
      var canvas = HS.el("canvas", { width: dims[0], height: dims[1], class: "overlay" });
      var ctx = canvas.getContext("2d");
      var drawn = 0;
      if (weights && peak > 0) {
        by[m].forEach(function (t) {
          var r = sample.tokens.rects[t];
          ctx.fillStyle = HS.colour(weights[t] / peak);
          ctx.globalAlpha = 0.15 + 0.7 * (weights[t] / peak);
          ctx.fillRect(r[0] * dims[2], r[1] * dims[2], (r[2] - r[0]) * dims[2], (r[3] - r[1]) * dims[2]);
          drawn += 1;
        });
      }
      ctx.globalAlpha = 1;
      var boxes = 0;
      sample.evidence.regions.forEach(function (region) {
        if (region.media !== m) return;
        var b = region.box || [0, 0, medium.width, medium.height];
        ctx.strokeStyle = "#ff2d55";
        ctx.lineWidth = 2;
        ctx.setLineDash(region.box ? [] : [6, 3]);
        ctx.strokeRect(b[0] * dims[2] + 1, b[1] * dims[2] + 1, (b[2] - b[0]) * dims[2] - 2, (b[3] - b[1]) * dims[2] - 2);
        boxes += 1;
      });
      canvas.setAttribute("data-tokens", drawn);
      canvas.setAttribute("data-evidence", boxes);
      var label = medium.kind + " " + (medium.index + 1) + (boxes ? " · evidence" : "");
      wrap.appendChild(
        HS.el("figure", { class: "medium" + (boxes ? " has-evidence" : "") }, [
          HS.el("div", { class: "stack", style: "width:" + dims[0] + "px;height:" + dims[1] + "px" }, [img, canvas]),
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
  HS.overlayCard = function (title, sample, weights, caption, link) {
    var head = link ? HS.el("a", { href: link, text: title }) : HS.el("span", { text: title });
    return HS.el("div", { class: "card" + (weights ? " attention" : " evidence-only") }, [
      HS.el("div", { class: "card-title" }, [head]),
      HS.drawSample(sample, weights),
      caption ? HS.el("div", { class: "caption", text: caption }) : null,
    ]);
  };

  HS.legendBar = function () {
    var bar = HS.el("div", { class: "legend-bar" });
    for (var i = 0; i <= 10; i++) bar.appendChild(HS.el("span", { style: "background:" + HS.colour(i / 10) }));
    return HS.el("div", { class: "legend-line" }, [
      HS.el("span", { text: "attention (share of the head's peak token) " }),
      bar,
      HS.el("span", { class: "ev-key", text: " ▭ ground-truth evidence (dashed: whole page)" }),
    ]);
  };
})();
