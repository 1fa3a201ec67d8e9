// The graph view: a concept's causes and effects drawn with Cytoscape.js and the fCoSE layout
// (both vendored under static/vendor/). Every concept is a box holding its label; after each
// layout a small pass pushes apart any boxes that still touch, so no label hides another.
// Clicking a concept adds its own neighbourhood; double-clicking opens its page; clicking an
// edge shows its evidence in the side panel. The expanded concepts and the filters live in the
// page's URL (?expand=Q1,Q2&min_support=2&level=class), so a view can be shared as a link.
// "PNG" and "SVG" download what is drawn (the SVG is written here from the drawn positions).
(function () {
  "use strict";
  var COLOURS = { center: "#6f4bb8", cause: "#d9622b", effect: "#2f74c0", other: "#8a94a0" };
  var GAP = 8; // the least gap, in model pixels, between two concept boxes
  var FONT = "system-ui, -apple-system, 'Segoe UI', Roboto, sans-serif";
  var measure = document.createElement("canvas").getContext("2d");

  // The box of a concept: its wrapped label (bold for the centre) with a margin around it.
  function sizeOf(display, bold) {
    measure.font = (bold ? "bold " : "") + "12px " + FONT;
    var lines = display.split("\n"), w = 0;
    lines.forEach(function (line) { w = Math.max(w, measure.measureText(line).width); });
    return { w: Math.ceil(w) + 18, h: lines.length * 15 + 12 };
  }

  function params() { return new URLSearchParams(window.location.search); }

  function boxesOverlap(a, b) {
    return a.x1 < b.x2 + GAP && b.x1 < a.x2 + GAP && a.y1 < b.y2 + GAP && b.y1 < a.y2 + GAP;
  }

  // Push overlapping boxes apart along the axis where they overlap least, a few rounds at most.
  function separate(cy) {
    var nodes = cy.nodes();
    for (var round = 0; round < 200; round++) {
      var moved = false;
      for (var i = 0; i < nodes.length; i++) {
        for (var j = i + 1; j < nodes.length; j++) {
          var a = nodes[i], b = nodes[j];
          var ba = a.boundingBox({ includeLabels: true }), bb = b.boundingBox({ includeLabels: true });
          if (!boxesOverlap(ba, bb)) { continue; }
          var dx = Math.min(ba.x2, bb.x2) - Math.max(ba.x1, bb.x1) + GAP + 1;
          var dy = Math.min(ba.y2, bb.y2) - Math.max(ba.y1, bb.y1) + GAP + 1;
          var pa = a.position(), pb = b.position();
          if (dx < dy) {
            var sx = (pa.x <= pb.x ? -1 : 1) * dx / 2;
            a.position({ x: pa.x + sx, y: pa.y }); b.position({ x: pb.x - sx, y: pb.y });
          } else {
            var sy = (pa.y <= pb.y ? -1 : 1) * dy / 2;
            a.position({ x: pa.x, y: pa.y + sy }); b.position({ x: pb.x, y: pb.y - sy });
          }
          moved = true;
        }
      }
      if (!moved) { return; }
    }
  }

  function download(name, blob) {
    var a = document.createElement("a");
    a.href = URL.createObjectURL(blob);
    a.download = name;
    document.body.appendChild(a);
    a.click();
    setTimeout(function () { URL.revokeObjectURL(a.href); a.remove(); }, 0);
  }

  function esc(s) {
    return String(s).replace(/&/g, "&amp;").replace(/</g, "&lt;").replace(/>/g, "&gt;").replace(/"/g, "&quot;");
  }

  // An SVG of what is drawn: boxes, labels, edges with arrowheads, in model coordinates.
  function toSVG(cy) {
    var bb = cy.elements().boundingBox({ includeLabels: true }), pad = 20;
    var w = Math.ceil(bb.w + 2 * pad), h = Math.ceil(bb.h + 2 * pad), ox = pad - bb.x1, oy = pad - bb.y1;
    var out = ['<svg xmlns="http://www.w3.org/2000/svg" width="' + w + '" height="' + h + '" viewBox="0 0 ' + w + " " + h +
      '" font-family="system-ui, sans-serif" font-size="12">',
      '<defs><marker id="arrow" viewBox="0 0 10 10" refX="10" refY="5" markerWidth="7" markerHeight="7" orient="auto-start-reverse">' +
      '<path d="M0,0 L10,5 L0,10 z" fill="context-stroke"/></marker></defs>',
      '<rect width="100%" height="100%" fill="#ffffff"/>'];
    cy.edges().forEach(function (e) {
      var s = e.sourceEndpoint(), t = e.targetEndpoint();
      out.push('<line x1="' + (s.x + ox).toFixed(1) + '" y1="' + (s.y + oy).toFixed(1) + '" x2="' + (t.x + ox).toFixed(1) +
        '" y2="' + (t.y + oy).toFixed(1) + '" stroke="' + e.style("line-color") + '" stroke-width="' +
        parseFloat(e.style("width")).toFixed(1) + '" marker-end="url(#arrow)"><title>' + esc(e.id()) + "</title></line>");
    });
    cy.nodes().forEach(function (n) {
      var b = n.boundingBox({ includeLabels: false }), dashed = n.data("kind") === "instance";
      out.push('<rect x="' + (b.x1 + ox).toFixed(1) + '" y="' + (b.y1 + oy).toFixed(1) + '" width="' + b.w.toFixed(1) +
        '" height="' + b.h.toFixed(1) + '" rx="' + (dashed ? 2 : 10) + '" fill="' + n.style("background-color") +
        '" stroke="#1d232b" stroke-opacity="0.35"' + (dashed ? ' stroke-dasharray="4 3"' : "") + "/>");
      var lines = String(n.data("label")).split("\n"), p = n.position();
      lines.forEach(function (line, i) {
        out.push('<text x="' + (p.x + ox).toFixed(1) + '" y="' + (p.y + oy + (i - (lines.length - 1) / 2) * 14 + 4).toFixed(1) +
          '" text-anchor="middle" fill="#ffffff">' + esc(line) + "</text>");
      });
    });
    out.push("</svg>");
    return out.join("\n");
  }

  function wrap(label) {
    // break long labels at spaces near 22 characters, so a box stays compact
    var words = String(label).split(" "), lines = [], cur = "";
    words.forEach(function (w) {
      if (cur && (cur + " " + w).length > 22) { lines.push(cur); cur = w; } else { cur = cur ? cur + " " + w : w; }
    });
    if (cur) { lines.push(cur); }
    return lines.join("\n");
  }

  function mark(text, part, cls) {
    // text with the first occurrence of part wrapped in <mark class=cls> (built with DOM nodes)
    var frag = document.createDocumentFragment(), i = part ? text.indexOf(part) : -1;
    if (i < 0) { frag.appendChild(document.createTextNode(text)); return frag; }
    frag.appendChild(document.createTextNode(text.slice(0, i)));
    var m = document.createElement("mark"); m.className = cls; m.textContent = part; frag.appendChild(m);
    frag.appendChild(document.createTextNode(text.slice(i + part.length)));
    return frag;
  }

  function showEvidence(panel, edgeId) {
    panel.hidden = false;
    panel.innerHTML = "";
    var h = document.createElement("h2"); h.textContent = "Evidence"; panel.appendChild(h);
    var close = document.createElement("button");
    close.type = "button"; close.className = "secondary close"; close.textContent = "×";
    close.setAttribute("aria-label", "close the evidence panel");
    close.addEventListener("click", function () {
      panel.hidden = true;
      var cy = window.causalkgGraph;
      if (cy) { cy.resize(); cy.fit(undefined, 30); }
    });
    h.appendChild(close);
    var wait = document.createElement("p"); wait.className = "note"; wait.textContent = "loading " + edgeId + " …";
    panel.appendChild(wait);
    fetch("/edge/" + encodeURIComponent(edgeId) + "?format=json", { headers: { Accept: "application/json" } })
      .then(function (r) { return r.json(); })
      .then(function (e) {
        panel.removeChild(wait);
        var title = document.createElement("p"); title.className = "edge-title";
        var a = document.createElement("a"); a.href = e.url; a.textContent = e.cause.label + " → " + e.effect.label;
        title.appendChild(a); panel.appendChild(title);
        var facts = document.createElement("p"); facts.className = "note";
        facts.textContent = e.level + " · " + e.sentences + " sentence" + (e.sentences === 1 ? "" : "s") +
          (e.base_kg ? " · ✓ Base KG" : "") + (e.confidence != null ? " · confidence " + e.confidence.toFixed(2) : "");
        panel.appendChild(facts);
        e.evidence.slice(0, 3).forEach(function (x) {
          var q = document.createElement("blockquote");
          if (x.kind !== "sentence") {
            var k = document.createElement("span"); k.className = "source-kind";
            k.textContent = (x.kind === "infobox" ? "infobox field " : "list item ") + (x.field || "") + ": ";
            q.appendChild(k);
          }
          var text = x.text, holder = document.createElement("span");
          var ci = text.indexOf(x.cause_text), ei = text.indexOf(x.effect_text);
          if (ci >= 0 && ei >= 0 && ci + x.cause_text.length <= ei) {
            holder.appendChild(mark(text.slice(0, ei), x.cause_text, "cause"));
            holder.appendChild(mark(text.slice(ei), x.effect_text, "effect"));
          } else if (ci >= 0 && ei >= 0 && ei + x.effect_text.length <= ci) {
            holder.appendChild(mark(text.slice(0, ci), x.effect_text, "effect"));
            holder.appendChild(mark(text.slice(ci), x.cause_text, "cause"));
          } else {
            holder.appendChild(mark(text, x.cause_text, "cause"));
          }
          q.appendChild(holder);
          var src = document.createElement("span"); src.className = "note";
          src.textContent = " — " + (x.page || "") + (x.from_edge ? " (via " + x.from_edge + ")" : "");
          q.appendChild(src);
          panel.appendChild(q);
        });
        var more = document.createElement("p");
        var all = document.createElement("a"); all.href = e.url; all.textContent = "all evidence and the judge form →";
        more.appendChild(all); panel.appendChild(more);
        panel.dataset.edge = edgeId;
      })
      .catch(function () { wait.textContent = "could not load the evidence of " + edgeId; });
  }

  document.addEventListener("DOMContentLoaded", function () {
    var box = document.getElementById("graph");
    if (!box || typeof cytoscape === "undefined") { return; }
    var api = box.dataset.api, root = box.dataset.root, expanded = [], pending = 0;
    var panel = document.getElementById("evidence-panel");
    var form = document.getElementById("graph-filters");
    var q = params();
    var filters = { min_support: q.get("min_support") || "", level: q.get("level") || "" };
    if (form) {
      form.elements.min_support.value = filters.min_support || "1";
      form.elements.level.value = filters.level;
    }
    var cy = cytoscape({
      container: box,
      wheelSensitivity: 0.3,
      maxZoom: 1.6,
      minZoom: 0.2,
      style: [
        { selector: "node", style: { "label": "data(display)", "shape": "round-rectangle", "width": "data(w)", "height": "data(h)",
            "font-size": 12, "font-family": FONT, "font-weight": "normal", "text-wrap": "wrap", "text-valign": "center", "text-halign": "center",
            "color": "#ffffff", "background-color": COLOURS.other, "border-width": 1, "border-color": "#1d232b",
            "border-opacity": 0.35 } },
        { selector: "node[role = 'cause']", style: { "background-color": COLOURS.cause } },
        { selector: "node[role = 'effect']", style: { "background-color": COLOURS.effect } },
        { selector: "node[role = 'center']", style: { "background-color": COLOURS.center, "font-weight": "bold" } },
        { selector: "node[kind = 'instance']", style: { "shape": "rectangle", "border-style": "dashed", "border-width": 2 } },
        { selector: "node.expanded", style: { "border-width": 3, "border-opacity": 0.9, "border-color": "#1d232b" } },
        { selector: "edge", style: { "curve-style": "bezier", "target-arrow-shape": "triangle", "line-color": "#9aa4af",
            "target-arrow-color": "#9aa4af", "width": "mapData(support, 1, 10, 1.5, 8)", "arrow-scale": 1 } },
        { selector: "edge[?confirmed]", style: { "line-color": "#3a9b57", "target-arrow-color": "#3a9b57" } },
        { selector: "edge:selected", style: { "line-color": "#1d232b", "target-arrow-color": "#1d232b" } }
      ]
    });
    window.causalkgGraph = cy; // for the browser test and the console

    function saveState() {
      var p = params();
      var more = expanded.filter(function (x) { return x !== root; });
      if (more.length) { p.set("expand", more.join(",")); } else { p.delete("expand"); }
      ["min_support", "level"].forEach(function (k) {
        if (filters[k] && !(k === "min_support" && filters[k] === "1")) { p.set(k, filters[k]); } else { p.delete(k); }
      });
      var qs = p.toString();
      window.history.replaceState(null, "", window.location.pathname + (qs ? "?" + qs : ""));
      var share = document.getElementById("share-link");
      if (share) { share.href = window.location.href; }
    }

    function relayout(fresh) {
      var opts = { name: typeof cytoscapeFcose !== "undefined" ? "fcose" : "cose", animate: false, quality: "proof",
        randomize: !!fresh, nodeDimensionsIncludeLabels: true, nodeSeparation: 90, idealEdgeLength: 110,
        nodeRepulsion: 12000, packComponents: false, fit: true, padding: 30 };
      var layout = cy.layout(opts);
      layout.one("layoutstop", function () {
        // a wide drawing in a tall box (a phone) is turned a quarter, so the labels stay large
        var bb = cy.nodes().boundingBox();
        if ((bb.w > bb.h) !== (cy.width() > cy.height()) && Math.max(bb.w, bb.h) > 1.3 * Math.min(bb.w, bb.h)) {
          cy.nodes().positions(function (n) { var p = n.position(); return { x: p.y, y: p.x }; });
        }
        separate(cy);
        cy.fit(undefined, 30);
        box.dataset.nodes = String(cy.nodes().length);
        box.dataset.ready = pending === 0 ? "1" : "0";
      });
      layout.run();
    }

    function add(qid, first) {
      if (expanded.indexOf(qid) >= 0) { return; }
      expanded.push(qid);
      pending += 1;
      box.dataset.ready = "0";
      var url = api + encodeURIComponent(qid) + "?" + new URLSearchParams({
        min_support: filters.min_support || "0", level: filters.level || "" }).toString();
      fetch(url, { headers: { Accept: "application/json" } })
        .then(function (r) { return r.json(); })
        .then(function (data) {
          var fresh = [];
          (data.nodes || []).forEach(function (n) {
            n.data.display = wrap(n.data.label);
            var dims = sizeOf(n.data.display, n.data.id === root);
            n.data.w = dims.w; n.data.h = dims.h;
            if (cy.getElementById(n.data.id).empty()) {
              if (qid !== root && n.data.role === "center") { n.data.role = "cause"; }
              fresh.push(n);
            }
          });
          (data.edges || []).forEach(function (e) { if (cy.getElementById(e.data.id).empty()) { fresh.push(e); } });
          cy.add(fresh);
          cy.getElementById(root).data("role", "center");
          cy.getElementById(qid).addClass("expanded");
          pending -= 1;
          saveState();
          relayout(first);
        })
        .catch(function () { pending -= 1; });
    }

    function reload() {
      cy.elements().remove();
      var was = expanded.slice();
      expanded = [];
      add(root, true);
      was.forEach(function (x) { if (x !== root) { add(x, false); } });
    }

    cy.on("tap", "node", function (ev) { add(ev.target.id(), false); });
    cy.on("dbltap", "node", function (ev) { window.location.href = "/concept/" + encodeURIComponent(ev.target.id()); });
    cy.on("tap", "edge", function (ev) {
      if (!panel) { return; }
      var opening = panel.hidden;
      showEvidence(panel, ev.target.id());
      if (opening) { cy.resize(); cy.fit(undefined, 30); } // the panel took room from the drawing
    });
    if (form) {
      form.addEventListener("submit", function (ev) {
        ev.preventDefault();
        filters.min_support = form.elements.min_support.value;
        filters.level = form.elements.level.value;
        saveState();
        reload();
      });
    }
    var png = document.getElementById("export-png"), svg = document.getElementById("export-svg");
    if (png) { png.addEventListener("click", function () { download("causalkg-" + root + ".png", cy.png({ full: true, scale: 2, bg: "#ffffff", output: "blob" })); }); }
    if (svg) { svg.addEventListener("click", function () { download("causalkg-" + root + ".svg", new Blob([toSVG(cy)], { type: "image/svg+xml" })); }); }
    window.causalkgGraphSVG = function () { return toSVG(cy); };

    add(root, true);
    (q.get("expand") || "").split(",").forEach(function (x) { x = x.trim(); if (/^Q[0-9]+$/.test(x)) { add(x, false); } });
  });
})();
