// Fortemi's graph picture: a note's neighbourhood from the `graph` query, drawn as SVG.
//
// The note, memory, depth and maxNodes come from the URL (?note=&memory=&depth=&maxNodes=)
// or the form. The bearer token is the one GraphiQL keeps in this browser (same storage
// key), or one typed here. Layout: nodes start on rings by depth (the start in the centre),
// then a Fruchterman-Reingold force simulation with a fixed number of cooling steps, so
// the same answer is always drawn the same way. Communities colour the nodes; semantic
// links are solid blue, explicit ones solid dark and thicker, wiki ones dashed orange;
// a link's opacity follows its score.
(function () {
  "use strict";

  var TOKEN_KEY = "fortemi.graphiql.token";
  var SVG = "http://www.w3.org/2000/svg";
  var PALETTE = [
    "#4e79a7", "#f28e2b", "#59a14f", "#e15759", "#76b7b2", "#edc948",
    "#b07aa1", "#ff9da7", "#9c755f", "#8cd17d", "#86bcb6", "#d37295",
  ];
  var OTHER = "#bab0ac";
  var EDGES = {
    SEMANTIC: { colour: "#4e79a7", width: 1.5, dash: null, label: "semantic (by meaning)" },
    EXPLICIT: { colour: "#333333", width: 2.5, dash: null, label: "explicit (linked by hand)" },
    WIKI: { colour: "#f28e2b", width: 2, dash: "6 4", label: "wiki ([[link]] in content)" },
  };
  var QUERY =
    "query($id: ID!, $depth: Int, $maxNodes: Int) { graph(noteId: $id, depth: $depth, " +
    "maxNodes: $maxNodes) { graphVersion nodes { id title depth community communityLabel " +
    "communityConfidence archived } edges { source target edgeType score bidirectional } " +
    "meta { totalNodes truncatedNodes truncationReasons clamped } } }";

  var svg = document.getElementById("fortemi-graph");
  var legend = document.getElementById("fortemi-graph-legend");
  var status = document.getElementById("fortemi-graph-status");
  var form = document.getElementById("fortemi-graph-form");
  var fields = {
    note: document.getElementById("fortemi-graph-note"),
    memory: document.getElementById("fortemi-graph-memory"),
    depth: document.getElementById("fortemi-graph-depth"),
    maxNodes: document.getElementById("fortemi-graph-max"),
    token: document.getElementById("fortemi-graph-token"),
  };
  var endpoint = svg.getAttribute("data-endpoint") || "/graphql";

  function show(text, state) {
    status.textContent = text;
    status.setAttribute("data-state", state);
  }

  function storedToken() {
    try {
      return window.localStorage.getItem(TOKEN_KEY) || "";
    } catch (error) {
      return "";
    }
  }

  function keepToken(token) {
    try {
      if (token) window.localStorage.setItem(TOKEN_KEY, token);
    } catch (error) {
      // Storage can be off (private windows): the token then lasts until the page closes.
    }
  }

  function element(name, attributes, parent) {
    var node = document.createElementNS(SVG, name);
    Object.keys(attributes).forEach(function (key) {
      if (attributes[key] !== null && attributes[key] !== undefined) {
        node.setAttribute(key, String(attributes[key]));
      }
    });
    if (parent) parent.appendChild(node);
    return node;
  }

  function colour(community) {
    return community < PALETTE.length ? PALETTE[community] : OTHER;
  }

  // Rings by depth, then forces: every pair repels, every edge attracts; the step shrinks.
  function layout(nodes, edges, width, height) {
    var index = {};
    var byDepth = {};
    nodes.forEach(function (node, i) {
      index[node.id] = i;
      (byDepth[node.depth] = byDepth[node.depth] || []).push(i);
    });
    var ring = Math.min(width, height) / (2 * (Object.keys(byDepth).length + 1));
    var x = new Float64Array(nodes.length);
    var y = new Float64Array(nodes.length);
    Object.keys(byDepth).forEach(function (depth) {
      var members = byDepth[depth];
      members.forEach(function (i, k) {
        var angle = (2 * Math.PI * k) / members.length + Number(depth);
        x[i] = width / 2 + Number(depth) * ring * Math.cos(angle);
        y[i] = height / 2 + Number(depth) * ring * Math.sin(angle);
      });
    });
    var links = edges
      .filter(function (e) { return e.source in index && e.target in index; })
      .map(function (e) { return [index[e.source], index[e.target]]; });
    var n = nodes.length;
    var k = Math.sqrt((width * height) / Math.max(n, 1)) * 0.6;
    var steps = n > 400 ? 80 : 200;
    var temperature = Math.min(width, height) / 8;
    var dx = new Float64Array(n);
    var dy = new Float64Array(n);
    for (var step = 0; step < steps; step++) {
      dx.fill(0);
      dy.fill(0);
      for (var i = 0; i < n; i++) {
        for (var j = i + 1; j < n; j++) {
          var ux = x[i] - x[j];
          var uy = y[i] - y[j];
          var d2 = ux * ux + uy * uy + 0.01;
          var push = (k * k) / d2;
          dx[i] += ux * push; dy[i] += uy * push;
          dx[j] -= ux * push; dy[j] -= uy * push;
        }
      }
      links.forEach(function (pair) {
        var a = pair[0], b = pair[1];
        var vx = x[a] - x[b];
        var vy = y[a] - y[b];
        var d = Math.sqrt(vx * vx + vy * vy) + 0.01;
        var pull = d / k;
        dx[a] -= vx * pull; dy[a] -= vy * pull;
        dx[b] += vx * pull; dy[b] += vy * pull;
      });
      for (var m = 0; m < n; m++) {
        var length = Math.sqrt(dx[m] * dx[m] + dy[m] * dy[m]) + 0.01;
        var move = Math.min(length, temperature);
        x[m] += (dx[m] / length) * move;
        y[m] += (dy[m] / length) * move;
      }
      temperature *= 0.97;
    }
    fit(x, y, width, height);
    return { x: x, y: y, index: index };
  }

  // Scale and centre the drawing into the box, keeping room for labels on the right.
  function fit(x, y, width, height) {
    var margin = 24, label = 90;
    var minX = Infinity, maxX = -Infinity, minY = Infinity, maxY = -Infinity;
    for (var i = 0; i < x.length; i++) {
      minX = Math.min(minX, x[i]); maxX = Math.max(maxX, x[i]);
      minY = Math.min(minY, y[i]); maxY = Math.max(maxY, y[i]);
    }
    var spanX = Math.max(maxX - minX, 1), spanY = Math.max(maxY - minY, 1);
    var scale = Math.min((width - 2 * margin - label) / spanX, (height - 2 * margin) / spanY);
    var offsetX = (width - label - spanX * scale) / 2, offsetY = (height - spanY * scale) / 2;
    for (var j = 0; j < x.length; j++) {
      x[j] = x.length === 1 ? width / 2 : offsetX + (x[j] - minX) * scale;
      y[j] = y.length === 1 ? height / 2 : offsetY + (y[j] - minY) * scale;
    }
  }

  function draw(graph) {
    while (svg.firstChild) svg.removeChild(svg.firstChild);
    var box = svg.getBoundingClientRect();
    var width = Math.max(box.width, 320);
    var height = Math.max(box.height, 320);
    svg.setAttribute("viewBox", "0 0 " + width + " " + height);
    var at = layout(graph.nodes, graph.edges, width, height);
    var lines = element("g", { class: "fortemi-edges" }, svg);
    graph.edges.forEach(function (edge) {
      var style = EDGES[edge.edgeType];
      var a = at.index[edge.source], b = at.index[edge.target];
      var line = element("line", {
        class: "fortemi-edge fortemi-edge-" + edge.edgeType.toLowerCase(),
        x1: at.x[a], y1: at.y[a], x2: at.x[b], y2: at.y[b],
        stroke: style.colour, "stroke-width": style.width, "stroke-dasharray": style.dash,
        "stroke-opacity": 0.25 + 0.75 * edge.score,
      }, lines);
      element("title", {}, line).textContent =
        style.label + ", score " + edge.score.toFixed(2) + (edge.bidirectional ? ", both ways" : "");
    });
    var dots = element("g", { class: "fortemi-nodes" }, svg);
    var labelled = graph.nodes.length <= 60;
    graph.nodes.forEach(function (node, i) {
      var group = element("g", {
        class: "fortemi-node", "data-id": node.id, "data-community": node.community,
        transform: "translate(" + at.x[i] + "," + at.y[i] + ")", tabindex: 0,
      }, dots);
      element("circle", {
        r: node.depth === 0 ? 11 : 7, fill: colour(node.community),
        stroke: node.depth === 0 ? "#111111" : "#ffffff", "stroke-width": node.depth === 0 ? 3 : 1.5,
        "fill-opacity": node.archived ? 0.45 : 1,
      }, group);
      element("title", {}, group).textContent =
        node.title + "\ndepth " + node.depth + ", community " + node.community +
        (node.communityLabel ? " (" + node.communityLabel + ")" : "") +
        ", confidence " + node.communityConfidence.toFixed(2) + (node.archived ? ", archived" : "");
      if (labelled || node.depth === 0) {
        element("text", { x: 12, y: 4 }, group).textContent =
          node.title.length > 40 ? node.title.slice(0, 39) + "…" : node.title;
      }
      group.addEventListener("click", function () {
        fields.note.value = node.id;
        run();
      });
    });
    drawLegend(graph);
  }

  function drawLegend(graph) {
    legend.textContent = "";
    var heading = document.createElement("h2");
    heading.textContent = "Links";
    legend.appendChild(heading);
    Object.keys(EDGES).forEach(function (kind) {
      var row = document.createElement("div");
      row.className = "fortemi-legend-row";
      var sample = document.createElementNS(SVG, "svg");
      sample.setAttribute("width", "36");
      sample.setAttribute("height", "10");
      element("line", {
        x1: 0, y1: 5, x2: 36, y2: 5, stroke: EDGES[kind].colour,
        "stroke-width": EDGES[kind].width, "stroke-dasharray": EDGES[kind].dash,
      }, sample);
      row.appendChild(sample);
      row.appendChild(document.createTextNode(" " + EDGES[kind].label));
      legend.appendChild(row);
    });
    var counts = {};
    var labels = {};
    graph.nodes.forEach(function (node) {
      counts[node.community] = (counts[node.community] || 0) + 1;
      if (node.communityLabel) labels[node.community] = node.communityLabel;
    });
    var communities = document.createElement("h2");
    communities.textContent = "Communities";
    legend.appendChild(communities);
    Object.keys(counts).slice(0, PALETTE.length + 1).forEach(function (community) {
      var row = document.createElement("div");
      row.className = "fortemi-legend-row";
      var swatch = document.createElementNS(SVG, "svg");
      swatch.setAttribute("width", "14");
      swatch.setAttribute("height", "14");
      element("circle", { cx: 7, cy: 7, r: 6, fill: colour(Number(community)) }, swatch);
      row.appendChild(swatch);
      var name = Number(community) < PALETTE.length ? labels[community] || "community " + community : "others";
      row.appendChild(document.createTextNode(" " + name + " (" + counts[community] + ")"));
      legend.appendChild(row);
    });
    var notes = graph.meta.truncationReasons.concat(graph.meta.clamped);
    if (notes.length) {
      var truncated = document.createElement("h2");
      truncated.textContent = "Left out";
      legend.appendChild(truncated);
      notes.forEach(function (text) {
        var p = document.createElement("p");
        p.textContent = text;
        legend.appendChild(p);
      });
    }
  }

  function run() {
    var note = fields.note.value.trim();
    var token = fields.token.value.trim().replace(/^bearer\s+/i, "");
    if (!note) {
      show("Enter a note id", "missing");
      return;
    }
    keepToken(token);
    var params = new URLSearchParams();
    params.set("note", note);
    if (fields.memory.value.trim()) params.set("memory", fields.memory.value.trim());
    params.set("depth", fields.depth.value);
    params.set("maxNodes", fields.maxNodes.value);
    window.history.replaceState(null, "", "?" + params.toString());
    var headers = { "Content-Type": "application/json" };
    if (token) headers.Authorization = "Bearer " + token;
    if (fields.memory.value.trim()) headers["X-Fortemi-Memory"] = fields.memory.value.trim();
    show("Loading...", "loading");
    window
      .fetch(endpoint, {
        method: "POST",
        headers: headers,
        body: JSON.stringify({
          query: QUERY,
          variables: {
            id: note,
            depth: Number(fields.depth.value),
            maxNodes: Number(fields.maxNodes.value),
          },
        }),
      })
      .then(function (response) {
        return response.json();
      })
      .then(function (body) {
        if (body.errors && body.errors.length) {
          var error = body.errors[0];
          var code = (error.extensions && error.extensions.code) || "ERROR";
          show(code + ": " + error.message, "error");
          return;
        }
        var graph = body.data.graph;
        draw(graph);
        show(
          graph.nodes.length + " of " + graph.meta.totalNodes + " notes, " +
            graph.edges.length + " links",
          "drawn"
        );
      })
      .catch(function (error) {
        show("The request failed: " + error, "error");
      });
  }

  form.addEventListener("submit", function (event) {
    event.preventDefault();
    run();
  });

  var query = new URLSearchParams(window.location.search);
  fields.note.value = query.get("note") || "";
  fields.memory.value = query.get("memory") || "";
  if (query.get("depth")) fields.depth.value = query.get("depth");
  if (query.get("maxNodes")) fields.maxNodes.value = query.get("maxNodes");
  fields.token.value = storedToken();
  if (fields.note.value) {
    run();
  } else {
    show("Enter a note id (or open /graph?note=<id>&memory=<name>)", "missing");
  }
})();
