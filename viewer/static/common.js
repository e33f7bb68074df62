/* headscope view: shared helpers (data loading, DOM building, colours, URL state).
   Data files are scripts calling HS.put(path, value), so pages work from file:// too. */
(function () {
  "use strict";
  var HS = (window.HS = window.HS || {});
  HS.store = HS.store || {};
  var pending = {};

  HS.put = function (key, value) {
    HS.store[key] = value;
  };

  /* Load data/<...>.js once; resolves with its value. */
  HS.load = function (path) {
    if (Object.prototype.hasOwnProperty.call(HS.store, path)) {
      return Promise.resolve(HS.store[path]);
    }
    if (pending[path]) return pending[path];
    pending[path] = new Promise(function (resolve, reject) {
      var s = document.createElement("script");
      s.src = path;
      s.onload = function () {
        if (Object.prototype.hasOwnProperty.call(HS.store, path)) resolve(HS.store[path]);
        else reject(new Error("data file " + path + " did not register its data"));
      };
      s.onerror = function () {
        reject(new Error("cannot load " + path));
      };
      document.head.appendChild(s);
    });
    return pending[path];
  };

  /* el("div", {class: "x", text: "hi", onclick: f}, [children]) */
  HS.el = function (tag, attrs, children) {
    var node = document.createElement(tag);
    Object.keys(attrs || {}).forEach(function (key) {
      var value = attrs[key];
      if (value === null || value === undefined || value === false) return;
      if (key === "text") node.textContent = String(value);
      else if (key.slice(0, 2) === "on") node.addEventListener(key.slice(2), value);
      else if (key === "class") node.className = value;
      else node.setAttribute(key, value === true ? "" : String(value));
    });
    (children || []).forEach(function (child) {
      if (child === null || child === undefined) return;
      node.appendChild(typeof child === "string" ? document.createTextNode(child) : child);
    });
    return node;
  };

  HS.clear = function (node) {
    while (node.firstChild) node.removeChild(node.firstChild);
    return node;
  };

  HS.params = function () {
    var out = {};
    location.hash.replace(/^#/, "").split("&").forEach(function (part) {
      if (!part) return;
      var i = part.indexOf("=");
      var key = decodeURIComponent(i < 0 ? part : part.slice(0, i));
      out[key] = i < 0 ? "" : decodeURIComponent(part.slice(i + 1));
    });
    return out;
  };

  HS.hash = function (params) {
    return (
      "#" +
      Object.keys(params)
        .filter(function (k) {
          return params[k] !== undefined && params[k] !== null && params[k] !== "";
        })
        .map(function (k) {
          return encodeURIComponent(k) + "=" + encodeURIComponent(params[k]);
        })
        .join("&")
    );
  };

  HS.setParams = function (params) {
    var target = HS.hash(params);
    if (location.hash !== target) history.replaceState(null, "", target);
  };

  /* Viridis-like colour of t in [0, 1]. */
  var STOPS = [
    [68, 1, 84],
    [59, 82, 139],
    [33, 145, 140],
    [94, 201, 98],
    [253, 231, 37],
  ];
  HS.colour = function (t) {
    if (!(t >= 0)) t = 0;
    if (t > 1) t = 1;
    var x = t * (STOPS.length - 1);
    var i = Math.min(Math.floor(x), STOPS.length - 2);
    var f = x - i;
    var c = [0, 1, 2].map(function (j) {
      return Math.round(STOPS[i][j] + f * (STOPS[i + 1][j] - STOPS[i][j]));
    });
    return "rgb(" + c.join(",") + ")";
  };

  HS.fmt = function (value, digits) {
    if (value === null || value === undefined) return "—";
    if (typeof value === "string") return value; /* "NaN", "Infinity", "-Infinity" as written */
    if (Number.isNaN(value)) return "NaN";
    return Number(value).toFixed(digits === undefined ? 3 : digits);
  };

  HS.fail = function (err) {
    var main = document.querySelector("main");
    var box = HS.el("p", { class: "error", text: String(err && err.message ? err.message : err) });
    if (main) main.insertBefore(box, main.firstChild);
    if (window.console) console.error(err);
  };

  /* The page's data is loaded and drawn: tests and the timing script wait for this mark;
     HS.readyMs is the time since navigation started (ms). */
  HS.ready = function () {
    HS.readyMs = performance.now();
    document.body.setAttribute("data-ready", "1");
  };

  HS.index = function () {
    return HS.store["data/index.js"];
  };

  HS.task = function (name) {
    var tasks = HS.index().tasks;
    for (var i = 0; i < tasks.length; i++) if (tasks[i].name === name) return tasks[i];
    return null;
  };

  HS.sampleLink = function (task, id) {
    return "sample.html" + HS.hash({ task: task, id: id });
  };
})();
