/* Overview: sortable leaderboard tables (numbers sort as numbers, missing values last). */
(function () {
  "use strict";
  function key(td, numeric) {
    var raw = td.getAttribute("data-sort");
    if (!numeric) return raw;
    var v = parseFloat(raw);
    return Number.isNaN(v) ? null : v;
  }

  function sortBy(table, col, th) {
    var numeric = th.getAttribute("data-numeric") === "1";
    var asc = th.getAttribute("data-dir") !== "asc";
    Array.prototype.forEach.call(table.tHead.rows[0].cells, function (c) {
      c.removeAttribute("data-dir");
    });
    th.setAttribute("data-dir", asc ? "asc" : "desc");
    var body = table.tBodies[0];
    var rows = Array.prototype.slice.call(body.rows);
    rows.sort(function (a, b) {
      var x = key(a.cells[col], numeric);
      var y = key(b.cells[col], numeric);
      if (x === null || y === null) return x === y ? 0 : x === null ? 1 : -1;
      var d = numeric ? x - y : String(x).localeCompare(String(y));
      return asc ? d : -d;
    });
    rows.forEach(function (r) {
      body.appendChild(r);
    });
  }

  document.querySelectorAll("table.sortable").forEach(function (table) {
    Array.prototype.forEach.call(table.tHead.rows[0].cells, function (th, col) {
      th.addEventListener("click", function () {
        sortBy(table, col, th);
      });
      th.title = "sort";
    });
  });
  window.HS.ready();
})();
