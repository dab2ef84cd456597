// hookq's live view: keeps `#main` current and tails a log, over Server-Sent Events. The page
// works without it. No framework, no build step.
(function () {
  "use strict";
  var script = document.currentScript;
  // The script is served at <root>/assets/live.js: the view's root, under whatever prefix.
  var root = new URL("../", script ? script.src : location.href);
  // The generation the page shows: `#main[data-generation]` as rendered, then each one heard.
  var known = null;
  var inFlight = false;
  var queued = false;
  var stale = false;
  var retry = null;

  function generationOf(doc) {
    var main = doc.getElementById("main");
    var g = main ? main.getAttribute("data-generation") : null;
    return g === null || g === "" || isNaN(Number(g)) ? null : Number(g);
  }

  // A person typing into a form or selecting text in `#main` would lose it to a swap.
  function busy() {
    var main = document.getElementById("main");
    if (!main) { return false; }
    var active = document.activeElement;
    if (active && main.contains(active) && /^(INPUT|SELECT|TEXTAREA)$/.test(active.tagName)) {
      return true;
    }
    var selection = window.getSelection ? window.getSelection() : null;
    return !!(selection && !selection.isCollapsed && main.contains(selection.anchorNode));
  }

  // Fetches the page again and swaps `#main`: one fetch at a time, and one more after it when
  // changes came meanwhile. A hidden tab or a busy reader waits.
  function refresh() {
    if (document.hidden) {
      stale = true;
      return;
    }
    if (busy()) {
      if (retry === null) {
        retry = setTimeout(function () { retry = null; refresh(); }, 1000);
      }
      return;
    }
    if (inFlight) {
      queued = true;
      return;
    }
    inFlight = true;
    queued = false;
    stale = false;
    fetch(location.href, { credentials: "same-origin", headers: { "Accept": "text/html" } })
      .then(function (response) {
        return response.ok ? response.text() : null;
      })
      .then(function (html) {
        if (html === null) { return; }
        var doc = new DOMParser().parseFromString(html, "text/html");
        var fresh = doc.getElementById("main");
        var main = document.getElementById("main");
        if (!fresh || !main) { return; }
        var g = generationOf(doc);
        if (g !== null && (known === null || g > known)) { known = g; }
        // What an action said is shown once, on the page it led to: the change the action
        // itself made must not swap it away.
        var flash = document.getElementById("flash");
        main.innerHTML = fresh.innerHTML;
        if (flash && !document.getElementById("flash")) {
          main.insertBefore(flash, main.firstChild);
        }
        tailLog();
      })
      .catch(function () { /* the server is away: the next change tries again */ })
      .then(function () {
        inFlight = false;
        if (queued) { refresh(); }
      });
  }

  // The log this page shows, tailed: `pre#log[data-tail]`, the tail's URL relative to the
  // page's own, from `data-offset`, the bytes of the file the page shows, in `data-style`, the
  // style (its classes) in effect there.
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
    url.searchParams.set("style", pre.getAttribute("data-style") || "");
    tail = new EventSource(url.href);
    tail.addEventListener("append", function (e) {
      // Where the page's text now ends, `N` or `N S`, for a tail opened again (see `stop`).
      var at = e.lastEventId.indexOf(" ");
      pre.setAttribute("data-offset", at < 0 ? e.lastEventId : e.lastEventId.slice(0, at));
      pre.setAttribute("data-style", at < 0 ? "" : e.lastEventId.slice(at + 1));
      var end = document.documentElement;
      var follow = window.innerHeight + window.scrollY >= end.scrollHeight - 4;
      // Rendered and escaped by the server, as the page's own text is.
      pre.insertAdjacentHTML("beforeend", e.data);
      if (follow) { window.scrollTo(0, end.scrollHeight); }
    });
    tail.addEventListener("reset", function () {
      pre.textContent = "";
      pre.setAttribute("data-offset", "0");
      pre.setAttribute("data-style", "");
    });
    // The log was pruned while shown: say so above what was read of it; nothing more comes.
    tail.addEventListener("pruned", function (e) {
      if (tail) { tail.close(); tail = null; }
      if (!document.getElementById("pruned")) {
        var note = document.createElement("p");
        note.id = "pruned";
        note.className = "note";
        note.textContent = e.data;
        pre.parentNode.insertBefore(note, pre);
      }
    });
  }

  var events = null;

  function listen() {
    if (typeof EventSource === "undefined") { return; }
    if (known === null) { known = generationOf(document); }
    events = new EventSource(new URL("events", root).href);
    events.addEventListener("hello", function (e) {
      // Connected, or connected again (perhaps to a restarted server): what changed since
      // the page was rendered is shown now.
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

  // A page the browser keeps in its back/forward cache would keep its streams open, and a
  // browser opens six connections to one server at most: after a few clicks through the view,
  // the next page would wait for one. So the streams close when the page is put away and open
  // again, catching up, when it is shown again.
  function stop() {
    if (events) { events.close(); events = null; }
    if (tail) { tail.close(); tail = null; }
    tailed = null;
  }

  window.addEventListener("pagehide", stop);
  window.addEventListener("pageshow", function (e) {
    if (e.persisted) { start(); }
  });
  document.addEventListener("visibilitychange", function () {
    if (!document.hidden && stale) { refresh(); }
  });

  if (document.readyState === "loading") {
    document.addEventListener("DOMContentLoaded", start);
  } else {
    start();
  }
})();
