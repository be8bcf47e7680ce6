// streamdelay dashboard: refresh every [data-live] element from its URL (an HTML fragment
// rendered by the server with the same templates) without reloading the page.
// Shipped in the package; no framework, no CDN (docs/dashboard.md#live).
(function () {
  "use strict";
  var EVERY_MS = 2000;
  var badge = null;
  // the site's root: "/", or the path it is mounted under (docs/integrations.md), which is
  // where this script is served from less "static/dashboard.js"
  var ROOT = new URL("..", document.currentScript.src).pathname;

  function stamp(ok) {
    if (!badge) { return; }
    badge.hidden = false;
    badge.className = ok ? "live" : "live stale";
    // UTC, 24 h: the one clock of every page (the server's times are UTC too)
    badge.textContent = ok ? "live · updated " + new Date().toISOString().slice(11, 19) + " UTC"
                           : "live · update failed, retrying";
  }

  function refresh(el) {
    var url = el.getAttribute("data-live");
    return fetch(url, { credentials: "same-origin", headers: { "X-Requested-With": "fetch" } })
      .then(function (res) {
        if (res.status === 401 || res.status === 403) {
          // next= is a path of the site, as its own links are (without the mount's prefix)
          window.location.href = ROOT + "login?next=" + encodeURIComponent(
            window.location.pathname.slice(ROOT.length - 1) + window.location.search);
          return null;
        }
        if (!res.ok) { throw new Error("HTTP " + res.status); }
        return res.text();
      })
      .then(function (html) {
        if (html !== null && html !== el.innerHTML) { el.innerHTML = html; }
        return true;
      });
  }

  function tick() {
    if (document.hidden) { return; }
    var els = document.querySelectorAll("[data-live]");
    if (!els.length) { return; }
    Promise.all(Array.prototype.map.call(els, refresh))
      .then(function () { stamp(true); }, function () { stamp(false); });
  }

  document.addEventListener("DOMContentLoaded", function () {
    badge = document.getElementById("live");
    if (document.querySelector("[data-live]")) {
      stamp(true);
      window.setInterval(tick, EVERY_MS);
      document.addEventListener("visibilitychange", tick);
    }
  });
})();
