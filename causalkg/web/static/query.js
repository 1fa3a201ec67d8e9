// The query page's editor: CodeMirror 5 with its SPARQL mode over the plain textarea (which
// stays the form field, so the page works without scripts), and completion of the declared
// prefixes (Ctrl-Space, or on typing a letter that starts a word).
(function () {
  "use strict";
  var area = document.querySelector("form.query textarea[name=query]");
  if (!area || typeof CodeMirror === "undefined") { return; }
  var prefixes = JSON.parse(area.getAttribute("data-prefixes") || "{}");
  var words = Object.keys(prefixes).map(function (p) { return p + ":"; })
    .concat(["SELECT", "WHERE", "PREFIX", "FILTER", "OPTIONAL", "ORDER BY", "LIMIT", "DISTINCT",
             "CONSTRUCT", "ASK", "DESCRIBE", "GRAPH", "UNION", "GROUP BY", "COUNT"]);

  function hint(cm) {
    var cur = cm.getCursor();
    var line = cm.getLine(cur.line);
    var start = cur.ch;
    while (start > 0 && /[\w:]/.test(line.charAt(start - 1))) { start -= 1; }
    var typed = line.slice(start, cur.ch);
    var list = words.filter(function (w) {
      return typed && w.toLowerCase().indexOf(typed.toLowerCase()) === 0 && w !== typed;
    }).map(function (w) {
      var iri = prefixes[w.slice(0, -1)];
      return {text: w, displayText: iri ? w + "  <" + iri + ">" : w};
    });
    return {list: list, from: CodeMirror.Pos(cur.line, start), to: CodeMirror.Pos(cur.line, cur.ch)};
  }

  var editor = CodeMirror.fromTextArea(area, {
    mode: "application/sparql-query", lineNumbers: true, matchBrackets: true, indentUnit: 2,
    extraKeys: {"Ctrl-Space": function (cm) { cm.showHint({hint: hint, completeSingle: false}); },
                "Ctrl-Enter": function (cm) { cm.save(); area.form.submit(); }}
  });
  editor.on("inputRead", function (cm, change) {
    if (change.origin === "+input" && /^[A-Za-z]$/.test(change.text[0])) {
      cm.showHint({hint: hint, completeSingle: false});
    }
  });
  document.querySelectorAll("a.example[data-example]").forEach(function (a) {
    a.addEventListener("click", function () { editor.save(); });
  });
}());
