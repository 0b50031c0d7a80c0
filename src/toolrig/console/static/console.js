// toolrig console: live updates over server-sent events and copy buttons. No inline script, no eval.
"use strict";
(function () {
  function followPending(box) {
    var source = new EventSource(box.dataset.live);
    var none = document.getElementById("none-pending");
    source.addEventListener("pending", function (event) {
      var ids = JSON.parse(event.data);
      var shown = {};
      box.querySelectorAll("article.card[data-id]").forEach(function (card) {
        shown[card.dataset.id] = true;
        if (ids.indexOf(card.dataset.id) < 0 && card.dataset.status === "pending") {
          card.dataset.status = "decided";  // decided here or elsewhere: show how, without the buttons
          htmx.ajax("GET", box.dataset.card + card.dataset.id, {target: card, swap: "outerHTML"});
        }
      });
      ids.forEach(function (id) {
        if (!shown[id] && /^[0-9a-f]+$/.test(id)) {
          htmx.ajax("GET", box.dataset.card + id, {target: box, swap: "beforeend"});
        }
      });
      if (none) { none.hidden = box.querySelector("article.card") !== null; }
    });
  }

  function followRun(box) {
    var source = new EventSource(box.dataset.live);
    source.addEventListener("changed", function () {
      htmx.ajax("GET", box.dataset.refresh, {target: box, swap: "innerHTML"});
    });
  }

  function start() {
    document.querySelectorAll("[data-live]").forEach(function (box) {
      if (box.dataset.card) { followPending(box); } else { followRun(box); }
    });
  }

  document.addEventListener("click", function (event) {
    var button = event.target.closest("button[data-copy]");
    if (!button) { return; }
    var source = document.getElementById(button.dataset.copy);
    if (source && navigator.clipboard) {
      navigator.clipboard.writeText(source.textContent).then(function () {
        button.textContent = "Copied";
      }, function () {
        button.textContent = "Copy failed: select the text instead";
      });
    }
  });

  if (document.readyState === "loading") {
    document.addEventListener("DOMContentLoaded", start);
  } else {
    start();
  }
})();
