// Hippocampus UI: confirmation before destructive forms, "/" to jump to the search or text box,
// and the consolidation button's live progress (the job's own progress callback, polled).
(function () {
  "use strict";
  // This browser's binding (ui_support.bound): a random value in localStorage, which is per origin,
  // port included, so a page on another port cannot read or set it. The login form sends it, every
  // form sends it back, and a page whose session was opened with another value is left at once.
  var KEY = "hippocampus-ui-bind";
  function binding() {
    try {
      var value = window.localStorage.getItem(KEY);
      if (!value) {
        var bytes = new Uint8Array(24);
        window.crypto.getRandomValues(bytes);
        value = Array.prototype.map.call(bytes, function (b) { return ("0" + b.toString(16)).slice(-2); }).join("");
        window.localStorage.setItem(KEY, value);
      }
      return value;
    } catch (err) { return ""; }
  }
  var bind = binding();
  document.querySelectorAll("form[method=post]").forEach(function (form) {
    var field = document.createElement("input");
    field.type = "hidden"; field.name = "bind"; field.value = bind;
    form.appendChild(field);
  });
  var session = document.querySelector("meta[name=hippocampus-session]");
  if (session && window.crypto && window.crypto.subtle && window.TextEncoder) {  // subtle: secure contexts only
    window.crypto.subtle.digest("SHA-256", new TextEncoder().encode(bind)).then(function (digest) {
      var hex = Array.prototype.map.call(new Uint8Array(digest), function (b) { return ("0" + b.toString(16)).slice(-2); }).join("");
      if (hex !== session.content) { window.location.replace(session.getAttribute("data-login") + "?foreign=1"); }
    });
  }
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
  // each cell of a wide table names its column, for the one-card-a-row layout of a phone (ui.css)
  function label(root) {
    root.querySelectorAll("table.memories, table.history, table.runs").forEach(function (table) {
      var names = Array.prototype.map.call(table.querySelectorAll("thead th"), function (th) { return th.textContent.trim(); });
      table.querySelectorAll("tbody tr").forEach(function (tr) {
        Array.prototype.forEach.call(tr.children, function (td, i) { if (names[i] && !td.hasAttribute("colspan")) { td.setAttribute("data-label", names[i]); } });
      });
    });
  }
  label(document);
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
    // "done in 1.2 s: examined 40, merged 3" from the run's statistics (only what changed)
    function summary(stats) {
      var parts = [];
      Object.keys(stats).forEach(function (k) { if (k !== "seconds" && stats[k]) { parts.push(k.replace(/_/g, " ") + " " + stats[k]); } });
      return "Done in " + (stats.seconds || 0).toFixed(1) + " s" + (parts.length ? ": " + parts.join(", ") : ": nothing to change") + ".";
    }
    // the counts, charts and runs of this page, fetched again and swapped in (no reload, no stale counts)
    function refresh() {
      fetch(window.location.href, { credentials: "same-origin" }).then(function (r) { return r.text(); }).then(function (html) {
        var fresh = new DOMParser().parseFromString(html, "text/html");
        ["total", "charts", "counts", "runs"].forEach(function (id) {
          var now = document.getElementById(id), next = fresh.getElementById(id);
          if (now && next) { now.replaceWith(document.importNode(next, true)); }
        });
        label(document);
      });
    }
    function poll(url) {
      fetch(url, { credentials: "same-origin" }).then(function (r) { return r.json(); }).then(function (s) {
        if (s.total > 0) { bar.max = s.total; bar.value = s.done; }
        phase.textContent = s.finished ? (s.error ? "failed: " + s.error : "done") : s.phase + (s.total > 0 ? " " + s.done + " of " + s.total : "");
        if (s.finished) {
          bar.max = 1; bar.value = 1; button.disabled = false;
          if (s.stats) { out.textContent = summary(s.stats); out.hidden = false; refresh(); }
          return;
        }
        setTimeout(function () { poll(url); }, 300);
      }).catch(function (err) { phase.textContent = "failed: " + err.message; button.disabled = false; });
    }
  });
})();
