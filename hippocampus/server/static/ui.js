// Hippocampus UI: confirmation before destructive forms, "/" to jump to the search or text box,
// and the consolidation button's live progress (the job's own progress callback, polled).
(function () {
  "use strict";
  document.addEventListener("submit", function (event) {
    var form = event.target;
    var question = form.getAttribute("data-confirm");
    if (question && !window.confirm(question)) { event.preventDefault(); }
  });
  document.addEventListener("keydown", function (event) {
    if (event.key !== "/" || /^(INPUT|TEXTAREA|SELECT)$/.test(document.activeElement.tagName)) { return; }
    var box = document.querySelector("[data-shortcut='/']");
    if (box) { event.preventDefault(); box.focus(); }
  });
  var form = document.getElementById("consolidate");
  if (!form) { return; }
  var bar = document.getElementById("progress"), phase = document.getElementById("phase"), out = document.getElementById("run-stats");
  form.addEventListener("submit", function (event) {
    event.preventDefault();
    var button = form.querySelector("button");
    button.disabled = true; bar.hidden = false; bar.removeAttribute("value"); out.hidden = true;
    phase.textContent = "starting";
    fetch(form.action, { method: "POST", body: new FormData(form), credentials: "same-origin" })
      .then(function (r) { if (!r.ok) { throw new Error("HTTP " + r.status); } return r.json(); })
      .then(function (started) { poll(form.getAttribute("data-progress") + encodeURIComponent(started.run_id)); })
      .catch(function (err) { phase.textContent = "failed: " + err.message; button.disabled = false; });
    function poll(url) {
      fetch(url, { credentials: "same-origin" }).then(function (r) { return r.json(); }).then(function (s) {
        if (s.total > 0) { bar.max = s.total; bar.value = s.done; }
        phase.textContent = s.finished ? (s.error ? "failed: " + s.error : "done") : s.phase + " " + s.done + "/" + s.total;
        if (s.finished) {
          bar.max = 1; bar.value = 1; button.disabled = false;
          if (s.stats) { out.textContent = JSON.stringify(s.stats, null, 1); out.hidden = false; }
          return;
        }
        setTimeout(function () { poll(url); }, 300);
      }).catch(function (err) { phase.textContent = "failed: " + err.message; button.disabled = false; });
    }
  });
})();
