// The graph view: a concept's causes and effects with Cytoscape.js (vendored). Clicking a
// concept adds its own neighbourhood; double-clicking opens its page; clicking an edge opens
// its evidence. Causes are orange, effects blue, edge width grows with distinct sentences.
(function () {
  "use strict";
  document.addEventListener("DOMContentLoaded", function () {
    var box = document.getElementById("graph");
    if (!box || typeof cytoscape === "undefined") { return; }
    var api = box.dataset.api, root = box.dataset.root, expanded = {};
    var cy = cytoscape({
      container: box,
      wheelSensitivity: 0.3,
      maxZoom: 1.6,
      style: [
        { selector: "node", style: { "label": "data(label)", "font-size": 11, "text-wrap": "wrap", "text-max-width": 110,
            "text-valign": "bottom", "text-margin-y": 4, "width": 22, "height": 22, "background-color": "#8a94a0", "color": "#1d232b" } },
        { selector: "node[role = 'cause']", style: { "background-color": "#d9622b" } },
        { selector: "node[role = 'effect']", style: { "background-color": "#2f74c0" } },
        { selector: "node[role = 'center']", style: { "background-color": "#6f4bb8", "width": 34, "height": 34, "font-weight": "bold" } },
        { selector: "node[kind = 'instance']", style: { "shape": "round-rectangle" } },
        { selector: "edge", style: { "curve-style": "bezier", "target-arrow-shape": "triangle", "line-color": "#b5bdc6",
            "target-arrow-color": "#b5bdc6", "width": "mapData(support, 1, 10, 1.5, 9)", "arrow-scale": 0.9 } },
        { selector: "edge[?confirmed]", style: { "line-color": "#3a9b57", "target-arrow-color": "#3a9b57" } }
      ]
    });
    function add(qid) {
      if (expanded[qid]) { return; }
      expanded[qid] = true;
      fetch(api + encodeURIComponent(qid), { headers: { Accept: "application/json" } })
        .then(function (r) { return r.json(); })
        .then(function (data) {
          var fresh = [];
          (data.nodes || []).forEach(function (n) {
            if (cy.getElementById(n.data.id).empty()) {
              if (qid !== root && n.data.role === "center") { n.data.role = "cause"; }
              fresh.push(n);
            }
          });
          (data.edges || []).forEach(function (e) { if (cy.getElementById(e.data.id).empty()) { fresh.push(e); } });
          cy.add(fresh);
          cy.layout({ name: "cose", animate: false, randomize: false, nodeRepulsion: 9000, idealEdgeLength: 90 }).run();
          box.dataset.nodes = String(cy.nodes().length);
        });
    }
    window.causalkgGraph = cy; // for the browser test and the console
    cy.on("tap", "node", function (ev) { add(ev.target.id()); });
    cy.on("dbltap", "node", function (ev) { window.location.href = "/concept/" + encodeURIComponent(ev.target.id()); });
    cy.on("tap", "edge", function (ev) { window.location.href = "/edge/" + encodeURIComponent(ev.target.id()); });
    add(root);
  });
})();
