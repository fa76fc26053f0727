// calltime HTML report: sortable tables and tree controls. Vanilla JS, no network.
"use strict";

(function () {
  // Sorts a table's body by one column; numbers descend first (largest first), text ascends first.
  function sortBy(table, th) {
    var key = th.getAttribute("data-key");
    var numeric = th.getAttribute("data-type") === "number";
    var current = th.getAttribute("aria-sort");
    var descending = current ? current === "ascending" : numeric;
    var body = table.tBodies[0];
    var rows = Array.prototype.slice.call(body.rows);
    var value = function (row) {
      var cell = row.querySelector('td[data-key="' + key + '"]');
      var v = cell ? cell.getAttribute("data-v") : "";
      return numeric ? Number(v) : v;
    };
    rows.sort(function (a, b) {
      var x = value(a), y = value(b);
      var order = x < y ? -1 : x > y ? 1 : 0;
      return descending ? -order : order;
    });
    rows.forEach(function (row) { body.appendChild(row); });
    Array.prototype.forEach.call(table.tHead.rows[0].cells, function (cell) { cell.removeAttribute("aria-sort"); });
    th.setAttribute("aria-sort", descending ? "descending" : "ascending");
  }

  document.querySelectorAll("table.sortable").forEach(function (table) {
    Array.prototype.forEach.call(table.tHead.rows[0].cells, function (th) {
      th.addEventListener("click", function () { sortBy(table, th); });
    });
  });

  document.querySelectorAll("button[data-trees]").forEach(function (button) {
    button.addEventListener("click", function () {
      var open = button.getAttribute("data-trees") === "open";
      document.querySelectorAll("#slowest details.node").forEach(function (node) { node.open = open; });
    });
  });
})();
