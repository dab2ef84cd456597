// hookq's live view: keeps `#main` current and tails a log, over Server-Sent Events. The page
// works without it. No framework, no build step.
(function () {
  "use strict";
  var script = document.currentScript;
  // The script is served at <root>/assets/live.js: the view's root, under whatever prefix.
  var root = new URL("../", script ? script.src : location.href);
  var known = null;
  var inFlight = false;
  var queued = false;

  function generationOf(doc) {
    var main = doc.getElementById("main");
    var g = main && main.getAttribute("data-generation");
    return g === null || g === undefined || g === "" ? null : Number(g);
  }

  function refresh() {
    if (inFlight) {
      queued = true;
      return;
    }
    inFlight = true;
    queued = false;
    fetch(location.href, { credentials: "same-origin", headers: { "Accept": "text/html" } })
      .then(function (response) {
        if (!response.ok) { return null; }
        return response.text();
      })
      .then(function (html) {
        if (html === null) { return; }
        var doc = new DOMParser().parseFromString(html, "text/html");
        var fresh = doc.getElementById("main");
        var main = document.getElementById("main");
        if (!fresh || !main) { return; }
        var g = generationOf(doc);
        if (g !== null && (known === null || g > known)) { known = g; }
        main.innerHTML = fresh.innerHTML;
        tailLog();
      })
      .catch(function () { /* offline: the next change tries again */ })
      .then(function () {
        inFlight = false;
        if (queued) { refresh(); }
      });
  }

  // The tailed log, if this page shows one: `pre#log[data-tail][data-offset]`.
  var tail = null;
  var tailed = null;

  function tailLog() {
    var pre = document.querySelector("pre#log[data-tail]");
    if (pre === tailed) { return; }
    if (tail) { tail.close(); tail = null; }
    tailed = pre;
    if (!pre || typeof EventSource === "undefined") { return; }
    var url = new URL(pre.getAttribute("data-tail"), location.href);
    url.searchParams.set("from", pre.getAttribute("data-offset") || "0");
    tail = new EventSource(url.href);
    tail.addEventListener("append", function (e) {
      var follow = window.innerHeight + window.scrollY >= document.body.scrollHeight - 4;
      pre.appendChild(document.createTextNode(e.data));
      if (follow) { window.scrollTo(0, document.body.scrollHeight); }
    });
    tail.addEventListener("reset", function () {
      pre.textContent = "";
    });
  }

  function listen() {
    if (typeof EventSource === "undefined") { return; }
    known = generationOf(document);
    var events = new EventSource(new URL("events", root).href);
    events.addEventListener("hello", function (e) {
      // Connected, or connected again: whatever changed meanwhile is shown now.
      var g = Number(e.data);
      if (known !== null && g !== known && !tailed) { refresh(); }
      known = g;
    });
    events.addEventListener("change", function (e) {
      var g = Number(e.data);
      if (known !== null && g <= known) { return; }
      known = g;
      // A tailed log is kept current by its own stream.
      if (!tailed) { refresh(); }
    });
  }

  function start() {
    tailLog();
    listen();
  }

  if (document.readyState === "loading") {
    document.addEventListener("DOMContentLoaded", start);
  } else {
    start();
  }
})();
