// Type-ahead for every input with data-typeahead (the search box, the paths form): asks the
// JSON API as the user types and lists concepts with kind, QID and degree. Without JavaScript
// the forms still work (the search page, the paths page).
(function () {
  "use strict";
  function attach(input) {
    var list = document.createElement("ul");
    list.className = "typeahead";
    list.hidden = true;
    list.setAttribute("role", "listbox");
    input.parentNode.appendChild(list);
    var timer = null, seq = 0, active = -1;
    var isSearch = input.id === "q";
    function clear() { list.innerHTML = ""; list.hidden = true; active = -1; }
    function show(results) {
      list.innerHTML = "";
      results.forEach(function (r) {
        var li = document.createElement("li");
        var a = document.createElement("a");
        a.href = "/concept/" + encodeURIComponent(r.qid);
        var name = document.createElement("span");
        name.textContent = r.label;
        var meta = document.createElement("span");
        meta.className = "meta";
        meta.textContent = r.kind + " · " + r.qid + " · degree " + r.degree;
        var top = document.createElement("span");
        top.className = "row";
        top.appendChild(name); top.appendChild(meta);
        a.appendChild(top);
        if (r.hint) { // the description, or kind and classes: tells same-label concepts apart
          var hint = document.createElement("span");
          hint.className = "hint";
          hint.textContent = r.hint;
          a.appendChild(hint);
        }
        a.addEventListener("click", function (ev) {
          if (!isSearch) { ev.preventDefault(); input.value = r.qid; clear(); }
        });
        li.appendChild(a);
        list.appendChild(li);
      });
      list.hidden = results.length === 0;
    }
    input.addEventListener("input", function () {
      clearTimeout(timer);
      var q = input.value.trim();
      if (!q) { clear(); return; }
      timer = setTimeout(function () {
        var mine = ++seq;
        fetch(input.dataset.typeahead + "?limit=8&q=" + encodeURIComponent(q), { headers: { Accept: "application/json" } })
          .then(function (r) { return r.json(); })
          .then(function (data) { if (mine === seq) { show(data.results || []); } })
          .catch(function () { clear(); });
      }, 120);
    });
    input.addEventListener("keydown", function (ev) {
      var items = list.querySelectorAll("li");
      if (ev.key === "ArrowDown" || ev.key === "ArrowUp") {
        if (!items.length) { return; }
        ev.preventDefault();
        active = (active + (ev.key === "ArrowDown" ? 1 : items.length - 1)) % items.length;
        items.forEach(function (li, i) { li.classList.toggle("active", i === active); });
      } else if (ev.key === "Enter" && active >= 0 && items[active]) {
        ev.preventDefault();
        items[active].querySelector("a").click();
      } else if (ev.key === "Escape") { clear(); }
    });
    document.addEventListener("click", function (ev) { if (ev.target !== input && !list.contains(ev.target)) { clear(); } });
  }
  document.addEventListener("DOMContentLoaded", function () {
    document.querySelectorAll("input[data-typeahead]").forEach(attach);
  });
})();
