// groundcrew pages: live updates of a run or an incident (server-sent
// events) and the "copy as Markdown" button. No inline script: the page's
// CSP allows only this file.
(function () {
  "use strict";
  var status = document.getElementById("live-status");
  var main = document.getElementById("live");
  var url = main && main.getAttribute("data-events");
  if (url && window.EventSource) {
    var es = new EventSource(url);
    var say = function (t) { if (status) { status.textContent = t; } };
    var update = function (e) {
      // keep what the reader opened or closed
      var state = {};
      main.querySelectorAll("details[id]").forEach(function (d) { state[d.id] = d.open; });
      main.innerHTML = e.data;
      main.querySelectorAll("details[id]").forEach(function (d) {
        if (Object.prototype.hasOwnProperty.call(state, d.id)) { d.open = state[d.id]; }
      });
      main.setAttribute("data-version", e.lastEventId);
      say("live · updated " + new Date().toLocaleTimeString());
    };
    es.addEventListener("run", update);
    es.addEventListener("incident", update);
    es.addEventListener("end", function (e) { es.close(); say(e.data || "no more changes"); });
    es.addEventListener("expired", function () { es.close(); say("live updates stopped: the link has expired"); });
    es.onerror = function () { if (es.readyState !== EventSource.CLOSED) { say("reconnecting…"); } };
  }
  var copy = document.getElementById("copy-md");
  if (copy) {
    copy.addEventListener("click", function () {
      var src = copy.getAttribute("data-src");
      fetch(src, { credentials: "same-origin" })
        .then(function (r) { if (!r.ok) { throw new Error(r.status); } return r.text(); })
        .then(function (t) { return navigator.clipboard.writeText(t); })
        .then(function () { copy.textContent = "✓ Copied"; },
              function () { window.location.href = src; });
    });
  }
})();
