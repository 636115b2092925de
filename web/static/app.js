// driftwatch: small enhancements only; every action works without this file.
(function () {
  "use strict";

  // Copy buttons: <button data-copy="#id">.
  document.addEventListener("click", function (event) {
    var button = event.target.closest("[data-copy]");
    if (!button) return;
    var source = document.querySelector(button.getAttribute("data-copy"));
    if (!source || !navigator.clipboard) return;
    navigator.clipboard.writeText(source.textContent.trim()).then(function () {
      var label = button.textContent;
      button.textContent = "Copied";
      setTimeout(function () { button.textContent = label; }, 1500);
    });
  });

  // Confirmation: <button data-confirm="Delete?"> (the server asks again without JS).
  document.addEventListener("click", function (event) {
    var button = event.target.closest("[data-confirm]");
    if (button && !window.confirm(button.getAttribute("data-confirm"))) event.preventDefault();
  });

  // Select all watches of the page.
  document.addEventListener("change", function (event) {
    if (!event.target.matches("[data-select-all]")) return;
    var boxes = document.querySelectorAll('input[name="ids"]');
    for (var i = 0; i < boxes.length; i++) boxes[i].checked = event.target.checked;
  });

  // Live status on the watches page: re-fetch the rows (server-rendered), slower while the
  // tab is hidden, keeping what is selected; the title says how many watches fail.
  var table = document.querySelector("[data-live]");
  if (!table) return;
  var body = document.getElementById("watch-rows");
  var base = 15000, delay = base, timer = null;
  function schedule() {
    clearTimeout(timer);
    timer = setTimeout(refresh, document.hidden ? Math.min(delay * 4, 300000) : delay);
  }
  function refresh() {
    var checked = {};
    var boxes = body.querySelectorAll('input[name="ids"]:checked');
    for (var i = 0; i < boxes.length; i++) checked[boxes[i].value] = true;
    fetch(table.getAttribute("data-live"), { credentials: "same-origin", headers: { "accept": "text/html" } })
      .then(function (response) {
        if (!response.ok) throw new Error(response.status);
        var failing = parseInt(response.headers.get("x-failing") || "0", 10);
        document.title = (failing > 0 ? "(" + failing + " failing) " : "") + "Watches · driftwatch";
        return response.text();
      })
      .then(function (html) {
        body.innerHTML = html;
        var again = body.querySelectorAll('input[name="ids"]');
        for (var i = 0; i < again.length; i++) if (checked[again[i].value]) again[i].checked = true;
        delay = base;
      })
      .catch(function () { delay = Math.min(delay * 2, 300000); })
      .then(schedule);
  }
  document.addEventListener("visibilitychange", function () { if (!document.hidden) { delay = base; schedule(); } });
  schedule();
})();
