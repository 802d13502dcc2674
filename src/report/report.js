// report.js - the page script of an fsprism report: arranges the embedded
// data object (#fsp-data) into Chart.js charts, each with its numbers in a
// table and a CSV download. Chart.js does the drawing; nothing here draws.
// Everything a chart plots is also put into #fsp-plotted (JSON), so that a
// test can read back exactly what was drawn. The percentiles, means and
// MB/s are those of `fsprism stats --format json` (each target's "stats");
// a compare's answer, findings and owners are `fsprism diagnose`'s.
// The page opens on the answer; tables are built when opened and charts
// drawn when they come near the screen, so that the page is quick to open.
(function () {
  "use strict";
  var D = JSON.parse(document.getElementById("fsp-data").textContent);
  var main = document.getElementById("fsp-report");
  var plotted = {};
  var handles = [];
  var nchart = 0;
  // Okabe-Ito: told apart with the common colour-vision deficiencies
  var OI = { black: "#000000", orange: "#E69F00", sky: "#56B4E9", green: "#009E73",
    yellow: "#F0E442", blue: "#0072B2", vermillion: "#D55E00", purple: "#CC79A7" };
  // series that are not targets (percentiles, kinds, ops), in this order
  var COLORS = [OI.blue, OI.orange, OI.green, OI.vermillion, OI.purple, OI.sky, OI.yellow,
    OI.black, "#999999", "#882255"];
  // one colour per target on every chart
  var TARGET_COLORS = { raw: OI.blue, fs: OI.orange, fsprism: OI.green, emu: OI.purple,
    "fsprism-fuse": OI.sky, "emu-fuse": OI.vermillion };
  var SPARE = [OI.black, "#999999", "#882255", OI.yellow];
  // one colour per direction where a chart shows one target
  var DIR_COLORS = { read: OI.blue, write: OI.vermillion, flush: "#999999", discard: OI.purple };
  var QS = [["mean_us", "mean"], ["p50_us", "p50"], ["p99_us", "p99"], ["p999_us", "p99.9"]];

  Chart.defaults.animation = false;
  Chart.defaults.responsive = true;
  Chart.defaults.maintainAspectRatio = false;
  Chart.defaults.font.size = 12;

  function el(tag, attrs, kids) {
    var e = document.createElement(tag);
    for (var k in attrs || {}) {
      if (k === "text") e.textContent = attrs[k];
      else e.setAttribute(k, attrs[k]);
    }
    (kids || []).forEach(function (c) { if (c) e.appendChild(c); });
    return e;
  }
  function add(parent, tag, attrs, kids) {
    var e = el(tag, attrs, kids);
    parent.appendChild(e);
    return e;
  }
  function section(title, note) {
    var s = add(main, "section", { "class": "sec" });
    add(s, "h2", { text: title });
    if (note) add(s, "p", { "class": "note", text: note });
    return s;
  }
  function note(parent, text) { return add(parent, "p", { "class": "note", text: text }); }
  function fmt(v) {
    if (v === null || v === undefined || (typeof v === "number" && !isFinite(v))) return "-";
    if (typeof v !== "number") return String(v);
    if (Number.isInteger(v)) return String(v);
    var a = Math.abs(v);
    return a >= 1000 ? v.toFixed(0) : a >= 10 ? v.toFixed(1) : a >= 0.01 || a === 0 ? v.toFixed(3) : v.toPrecision(3);
  }
  function csvCell(v) {
    var s = v === null || v === undefined ? "" : String(v);
    return /[",\n]/.test(s) ? '"' + s.replace(/"/g, '""') + '"' : s;
  }
  function table(parent, id, columns, rows) {
    var t = add(parent, "table", { "data-chart": id });
    var hr = add(t, "tr");
    // a column of text is left-aligned, its heading too
    var text = columns.map(function (c, i) {
      return !i || rows.some(function (r) { return typeof r[i] === "string"; });
    });
    columns.forEach(function (c, i) { add(hr, "th", { "class": text[i] ? "l" : "", text: c }); });
    rows.forEach(function (r) {
      var tr = add(t, "tr");
      r.forEach(function (v, i) {
        add(tr, "td", { "class": i && (typeof v === "number" || v === null) ? "" : "l", text: fmt(v) });
      });
    });
    return t;
  }

  // A table of the numbers with a CSV download of the same rows. Closed, it
  // is only its summary: the table is made the first time it is opened
  // (the tables of every chart made at once were most of the page's time).
  function numbers(parent, id, columns, rows, open) {
    var d = add(parent, "details", { "data-numbers": id });
    add(d, "summary", { text: "numbers (" + rows.length + " rows)" });
    var built = false;
    var build = function () {
      if (built) return;
      built = true;
      var csv = [columns.map(csvCell).join(",")].concat(rows.map(function (r) {
        return r.map(csvCell).join(",");
      })).join("\n") + "\n";
      add(d, "a", { href: "data:text/csv;charset=utf-8," + encodeURIComponent(csv),
        download: id + ".csv", text: "download as CSV" });
      table(d, id, columns, rows);
    };
    d.addEventListener("toggle", function () { if (d.open) build(); });
    if (open) { build(); d.open = true; }
    if (OPEN[id]) d.open = true;
    return d;
  }
  // #open=ID[,ID]: details to open as the page loads (the test opens one this way)
  var OPEN = {};
  (location.hash.match(/open=([^&]*)/) || ["", ""])[1].split(",").forEach(function (k) {
    if (k) OPEN[decodeURIComponent(k)] = 1;
  });

  // One chart: what it plots is recorded under its id now; it is drawn when
  // it comes near the screen (or at once with draw()). set() replaces its
  // datasets (a step menu) and records them again.
  function chart(parent, id, title, config, tall) {
    if (title) add(parent, "h3", { text: title });
    var box = add(parent, "div", { "class": tall ? "chart tall" : "chart" });
    if (typeof tall === "number") box.style.height = tall + "px";
    var canvas = add(box, "canvas", { id: id });
    config.options = config.options || {};
    config.options.plugins = config.options.plugins || {};
    var h = { id: id, config: config, canvas: canvas, chart: null };
    h.set = function (datasets) {
      config.data.datasets = datasets;
      if (h.chart) h.chart.update();
      record(id, config);
    };
    record(id, config);
    handles.push(h);
    nchart++;
    return h;
  }
  function draw(h) {
    if (!h.chart) h.chart = new Chart(h.canvas.getContext("2d"), h.config);
  }
  function record(id, config) {
    plotted[id] = {
      type: config.type,
      labels: config.data.labels || null,
      datasets: config.data.datasets.map(function (d) {
        return { label: d.label, fsp: d.fsp || null, data: d.data };
      })
    };
  }
  // A table whose rows a test reads back exactly (the numbers() table shows them rounded).
  function recordTable(id, columns, rows) {
    plotted[id] = { type: "table", columns: columns, rows: rows };
  }

  // ---- the data -------------------------------------------------------------
  function opRow(T, step, op) {
    var ops = (T.stats && T.stats.ops) || [];
    for (var i = 0; i < ops.length; i++)
      if (ops[i].step === step && ops[i].op === op) return ops[i];
    return null;
  }
  function mbs(T, step, op) {
    var r = opRow(T, step, op);
    return r ? r.mb_per_s : null;
  }
  function totalMbs(T, step) {
    var r = mbs(T, step, "read"), w = mbs(T, step, "write");
    if (r === null && w === null) return null;
    return Math.round(((r || 0) + (w || 0)) * 1000) / 1000;
  }
  function quant(T, step, op, key) {
    var r = opRow(T, step, op);
    return r && r.layers && r.layers.total ? r.layers.total[key] : null;
  }
  function engineTargets(R) {
    return R.targets.filter(function (T) { return T.kind === "run" && T.steps.length; });
  }
  function mountTargets(R) {
    return R.targets.filter(function (T) { return T.kind === "mount"; });
  }
  // The target of run R that matches one of the main run: by name, and a
  // run that is its own only target matches the other's only target.
  function findTarget(R, label) {
    if (!R) return null;
    for (var i = 0; i < R.targets.length; i++)
      if (R.targets[i].label === label) return R.targets[i];
    if (R.targets.length === 1 && MAIN.targets.length === 1 && R.kind !== "compare")
      return R.targets[0];
    return null;
  }
  var MAIN = D.runs[0], VS = D.runs.length > 1 ? D.runs[1] : null;
  function vsName(T) { return T.label + " (run " + T.run + ")"; }
  function color(i) { return COLORS[i % COLORS.length]; }
  var spare = {};
  function targetColor(label) {
    if (TARGET_COLORS[label]) return TARGET_COLORS[label];
    if (!(label in spare)) spare[label] = SPARE[Object.keys(spare).length % SPARE.length];
    return spare[label];
  }
  // A line: c a colour or a target's label; writes dashed, the --vs run
  // paler and dotted, the same on every chart.
  function line(label, data, c, style, fsp) {
    var col = typeof c === "number" ? color(c) : c.charAt(0) === "#" ? c : targetColor(c);
    style = style || {};
    if (style.vs) col += "99";
    return { label: label, data: data, borderColor: col, backgroundColor: col,
      borderDash: style.vs ? [2, 3] : style.op === "write" ? [6, 4] : [],
      pointStyle: style.op === "write" ? "triangle" : "circle",
      pointRadius: 3, borderWidth: 2, fill: false, fsp: fsp || null };
  }

  // The parameter the steps vary: the reviewers' x axis, and every step's name.
  function axis(steps) {
    function varies(k) {
      return steps.some(function (s) { return s[k] !== steps[0][k]; });
    }
    if (varies("read_pct")) return { key: "read_pct", name: "read/write mix (% reads)",
      label: function (s) { return s.read_pct + "/" + (100 - s.read_pct); } };
    if (varies("qd")) return { key: "qd", name: "queue depth",
      label: function (s) { return "QD" + s.qd; } };
    if (varies("block_size")) return { key: "block_size", name: "block size",
      label: function (s) { return s.block_size >= 1048576 ? s.block_size / 1048576 + "M" :
        s.block_size / 1024 + "k"; } };
    return { key: "step", name: "step", label: function (s) { return s.label || "step " + s.step; } };
  }
  var ENG = engineTargets(MAIN);
  var STEPS = ENG.length ? ENG[0].steps : [], AX = axis(STEPS);
  // a step's name on every chart and table: its mix (or QD, block size)
  function stepName(n, T) {
    var steps = T && T.steps && T.steps.length ? T.steps : STEPS;
    var ax = steps === STEPS ? AX : axis(steps);
    for (var i = 0; i < steps.length; i++) if (steps[i].step === n) return ax.label(steps[i]);
    return "step " + n;
  }

  // ---- header -----------------------------------------------------------------
  function header() {
    var t = "fsprism report: run " + MAIN.run + " (" + MAIN.kind + ")";
    if (VS) t += " vs run " + VS.run;
    add(main, "h1", { text: t });
    note(main, "database " + D.database + "; fsprism " + D.generator.version +
      ". Latencies in microseconds, throughput in MB/s (10^6 bytes per second of the step), as " +
      "fsprism stats prints them; every chart's numbers open under it (and as CSV).");
  }

  // ---- the answer (a compare's diagnosis: fsprism diagnose --format json) ---
  // The page opens on diagnose's "answer": its headlines and shapes, the
  // bathtub beside them, then its findings as one table. A diagnosis
  // without "answer" (an older fsprism) gets the same from its verdicts.
  var DX = MAIN.diagnosis && MAIN.diagnosis.available !== false ? MAIN.diagnosis : null;
  var ANS = DX && DX.answer ? DX.answer : null;
  var shownOwners = [];
  function answerStep(step, a, b) {
    var S = ANS ? ANS.steps || [] : [];
    for (var i = 0; i < S.length; i++)
      if (S[i].step === step && S[i].a === a && S[i].b === b) return S[i];
    return null;
  }
  // The owner the page shows for a step and pair, the same everywhere: the
  // answer's when there is one; each use is recorded for the test.
  function ownerOf(v) {
    var s = answerStep(v.step, v.a, v.b);
    var o = s ? s.owner_text || s.owner : v.owner;
    shownOwners.push([v.step, v.a, v.b, o]);
    return o;
  }
  function pairs(V) {
    var out = [], seen = {};
    V.forEach(function (v) {
      var k = v.a + "\u0000" + v.b;
      if (!seen[k]) { seen[k] = 1; out.push({ a: v.a, b: v.b }); }
    });
    return out;
  }
  // headlines from the verdicts, for a diagnosis without "answer"
  function verdictHeadlines(V) {
    var unit = AX.key === "read_pct" ? "mixes" : "steps";
    return pairs(V).map(function (p) {
      var vs = V.filter(function (v) { return v.a === p.a && v.b === p.b; });
      var slower = vs.filter(function (v) { return v.mbps.b < v.mbps.a; });
      if (!slower.length) return { text: p.b + " not slower than " + p.a + " at any of " + vs.length + " " + unit };
      var w = slower.reduce(function (x, v) { return v.mbps.rel < x.mbps.rel ? v : x; });
      return { text: p.b + " slower than " + p.a + " at " + slower.length + "/" + vs.length + " " + unit +
        ", worst " + stepName(w.step) + ": " + fmt(w.mbps.b) + " vs " + fmt(w.mbps.a) + " MB/s; owner " +
        ownerOf(w) };
    });
  }
  function shapeText(h) {
    if (h.text) return h.text;
    return h.target + ": " + (h.bathtub ? "bathtub: " + h.mixes + " mixes from " + h.first_pct + "% to " +
      h.last_pct + "% reads below 75% of the pure steps (" + fmt(h.pure_mbps) + " MB/s), lowest " +
      fmt(h.low_mbps) + " MB/s at " + h.low_pct + "% reads (" + fmt(h.depth) + "x); owner " + h.owner :
      "no bathtub");
  }

  function answer() {
    var s = add(main, "section", { "class": "sec answer", id: "fsp-answer" });
    var top = add(s, "div", { "class": "top" });
    var left = add(top, "div"), right = add(top, "div");
    if (MAIN.diagnosis && MAIN.diagnosis.available === false)
      note(left, "No diagnosis: " + MAIN.diagnosis.reason + ".");
    if (DX) {
      var V = DX.verdicts || [];
      var H = ANS ? ANS.headlines || [] : verdictHeadlines(V);
      var hl = add(left, "div", { id: "fsp-headline" });
      if (!H.length) add(hl, "p", { "class": "headline", text: "No pair of targets to judge in this compare." });
      H.forEach(function (h) { add(hl, "p", { "class": "headline", text: h.text }); });
      var shapes = ANS ? ANS.shapes || [] : DX.shapes || [];
      shapes.forEach(function (h) { add(left, "p", { "class": "shape", text: shapeText(h) }); });
      note(left, (DX.rounds === 1 ? "1 round: the round-to-round spread is unknown, so a difference " +
        "cannot be told from noise (compare --rounds 3 can)." : DX.rounds + " rounds: each difference " +
        "is judged against the spread of the rounds; the charts below show the last round.") + " From fsprism diagnose (docs/diagnose.md)" +
        (ANS ? "." : "; this diagnosis has no answer (an older fsprism): headlines from its verdicts."));
      plotted["answer-" + MAIN.run] = { type: "answer", compare_run: MAIN.run, answer: !!ANS,
        headlines: H.map(function (h) { return h.text; }),
        shapes: shapes.map(shapeText) };
    }
    curveTotal(right);
    if (DX) findings(s);
  }

  // b against a as the answer states it: the ratio of the two medians shown
  // beside it (the verdict's paired median of the rounds' ratios can differ)
  function change(a, b) {
    if (!a || b === null || b === undefined) return null;
    var r = b / a - 1;
    return (r > 0 ? "+" : "") + Math.round(r * 1000) / 10 + "%";
  }

  // One row per step and pair of neighbouring targets.
  function findings(s) {
    var V = DX.verdicts || [], R = MAIN;
    if (!V.length) return;
    add(s, "h2", { text: "Findings" });
    var cols = [AX.name === "step" ? "step" : "step (" + AX.name + ")", "a -> b", "MB/s a", "MB/s b",
      "change", "judged", "owner", "evidence"];
    var rows = V.map(function (v) {
      var as = answerStep(v.step, v.a, v.b);
      return [stepName(v.step), v.a + " -> " + v.b, v.mbps.a, v.mbps.b,
        change(v.mbps.a, v.mbps.b),
        as ? as.judgement : v.mbps.judgement, ownerOf(v), as && as.evidence ? as.evidence : (v.evidence || []).join("; ")];
    });
    var t = table(s, "findings-" + R.run, cols, rows);
    t.className = "findings";
    var st = ANS ? ANS.stalls || [] : [];
    if (st.length) {
      add(s, "h3", { text: "Stalls and outliers (" + st.length + ")" });
      st.slice(0, 8).forEach(function (x) { note(s, x.text); });
      numbers(s, "stalls-" + R.run, ["target", "run", "step", "kind", "at ms", "duration ms", "io us",
        "layer", "finding"], st.map(function (x) {
        return [x.target, x.run, x.label ? stepName(x.step) : x.step, x.kind, x.at_ms, x.duration_ms,
          x.io_us, x.layer, x.text]; }));
    }
  }

  // ---- what each part adds from a to b, per step -----------------------------
  // With the answer: diagnose's mid_us and tail_us (b - a per owner class,
  // us per IO, IOs around the median and at or above p99). Without: the
  // same from the stats' layer split, part by part (a part b lacks counts 0).
  var OWNER_COLORS = { drive: OI.blue, "fuse-transport": OI.orange, "fsprism-daemon": OI.green,
    "extra-io": OI.vermillion, "cow-relocation": OI.purple, "read-after-write": OI.sky,
    "request-size": OI.yellow, "emulation-cpu": OI.black, "native-fs-cpu": "#882255",
    unknown: "#777777", noise: "#cccccc" };
  var PART_COLORS = { submit: OI.blue, fs_submit: OI.blue, fuse_queue: OI.sky,
    daemon_recv: OI.purple, layer: OI.yellow, emu: "#882255", backing: OI.black,
    block_queue: OI.vermillion, device: OI.green, fuse_reply: "#44AA99", complete: OI.orange,
    fs_complete: OI.orange, lag: "#DDCC77", residual: "#bbbbbb" };
  function partDiff() {
    if (!DX || !(DX.verdicts || []).length) return;
    var s = section("What each part adds from one target to the next",
      ANS ? "Per step and pair of neighbouring targets, the latency per IO that each owner class adds " +
        "from a to b (b - a, us; below 0: b spends less there), left among the IOs around the median " +
        "(p45 to p55), right at or above p99, as fsprism diagnose measures them." :
        "Per step, direction and pair of neighbouring targets, b's mean of each part minus a's (us; a " +
        "part one target lacks counts 0), left the IOs around the median (p45 to p55), right at or " +
        "above p99: the stats' layer split (this diagnosis has no answer's owner classes).");
    pairs(DX.verdicts).forEach(function (p) {
      var A = findTarget(MAIN, p.a), B = findTarget(MAIN, p.b);
      var grid = add(s, "div", { "class": "grid" });
      [["mid_us", "mid_mean_us", "mid", "around the median"], ["tail_us", "tail_mean_us", "tail", "at or above p99"]].forEach(function (q) {
        var cats = [], ds = [], id = "partdiff-" + q[2] + "-" + p.a + "-" + p.b;
        if (ANS) {
          var S = (ANS.steps || []).filter(function (x) { return x.a === p.a && x.b === p.b; });
          var owners = [];
          S.forEach(function (x) {
            Object.keys(x[q[0]] || {}).forEach(function (o) { if (owners.indexOf(o) < 0) owners.push(o); });
          });
          cats = S.map(function (x) { return stepName(x.step); });
          ds = owners.map(function (o, i) {
            return { label: o, stack: "d", backgroundColor: OWNER_COLORS[o] || color(i),
              data: S.map(function (x) { var v = (x[q[0]] || {})[o]; return v === undefined ? null : v; }),
              fsp: { compare_run: MAIN.run, a: p.a, b: p.b, key: q[0], owner: o,
                steps: S.map(function (x) { return x.step; }) } };
          });
        } else {
          if (!A || !B) return;
          var LA = A.stats.layers, LB = B.stats.layers;
          if (!LA || !LB || LA.available === false || LB.available === false) {
            note(grid, p.a + " -> " + p.b + ": no layer split of both targets (they recorded no per-IO rows).");
            return;
          }
          var keys = [], parts = [];
          LB.steps.forEach(function (st) {
            var sa = null;
            LA.steps.forEach(function (x) { if (x.step === st.step && x.op === st.op) sa = x; });
            if (!sa) return;
            keys.push([st, sa]);
            [st, sa].forEach(function (x) {
              Object.keys(x.parts).forEach(function (k) { if (parts.indexOf(k) < 0) parts.push(k); });
            });
          });
          parts.sort(function (x, y) { return (x === "residual") - (y === "residual"); });
          cats = keys.map(function (k) { return stepName(k[0].step) + " " + k[0].op; });
          ds = parts.map(function (part, i) {
            return { label: part, stack: "d", backgroundColor: PART_COLORS[part] || color(i),
              data: keys.map(function (k) {
                var b = k[0].parts[part], a = k[1].parts[part];
                return Math.round(((b ? b[q[1]] : 0) - (a ? a[q[1]] : 0)) * 1000) / 1000;
              }),
              fsp: { run_a: A.run, run_b: B.run, part: part, key: q[1],
                steps: keys.map(function (k) { return k[0].step; }), ops: keys.map(function (k) { return k[0].op; }) } };
          });
        }
        if (!cats.length) return;
        var box = add(grid, "div");
        chart(box, id, p.a + " -> " + p.b + ", " + q[3] + ": us per IO that each " + (ANS ? "owner class" : "part") + " adds",
          { type: "bar", data: { labels: cats, datasets: ds },
            options: { scales: { x: { stacked: true }, y: { stacked: true, title: { display: true, text: "us per IO (b - a)" } } } } });
        numbers(box, id, ["step"].concat(ds.map(function (d) { return d.label; })),
          cats.map(function (c, k) { return [c].concat(ds.map(function (d) { return d.data[k]; })); }));
      });
    });
  }

  // ---- the diagnosis' verdicts in full ---------------------------------------
  function diagnosisDetails() {
    D.runs.forEach(function (R) {
      var g = R.diagnosis;
      if (!g || g.available === false || !(g.verdicts || []).length) return;
      var V = g.verdicts, main_ = R === MAIN;
      var s = section("Diagnosis of compare run " + R.run + ": the verdicts", "As fsprism diagnose " +
        "prints them: per step and pair, the mean latency difference per user IO (b - a) beside the " +
        "part its verdict's mechanism claims, and the evidence per user IO of both targets.");
      var own = function (v) { return main_ ? ownerOf(v) : v.owner_text || v.owner; };
      var cols = ["step", "label", "a", "b", "owner", "MB/s a", "MB/s b", "MB/s change", "judgement",
        "p50 a", "p50 b", "p99 a", "p99 b", "latency +us per IO", "claim us"];
      var rows = V.map(function (v) {
        var p50 = v.p50_us || {}, p99 = v.p99_us || {};
        return [v.step, v.label, v.a, v.b, own(v), v.mbps.a, v.mbps.b, v.mbps.rel, v.mbps.judgement,
          p50.a === undefined ? null : p50.a, p50.b === undefined ? null : p50.b,
          p99.a === undefined ? null : p99.a, p99.b === undefined ? null : p99.b, v.delta_us, v.claim_us];
      });
      var id = "diagnosis-" + R.run;
      var cats = V.map(function (v) { return stepName(v.step) + " " + v.a + "->" + v.b; });
      var idx = V.map(function (v, k) { return k; });
      chart(s, id, "Latency difference per user IO (b - a) and the verdict's claim (us)",
        { type: "bar", data: { labels: cats, datasets: [
          { label: "latency difference", data: V.map(function (v) { return v.delta_us; }),
            backgroundColor: OI.blue, fsp: { compare_run: R.run, key: "delta_us", verdict: idx } },
          { label: "claim", data: V.map(function (v) { return v.claim_us; }),
            backgroundColor: OI.orange, fsp: { compare_run: R.run, key: "claim_us", verdict: idx } }] },
          options: { indexAxis: "y", scales: { x: { title: { display: true, text: "us per IO" } },
            y: { ticks: { autoSkip: false } } } } },
        Math.max(340, 90 + 18 * V.length));
      numbers(s, id, cols, rows);
      recordTable(id + "-table", cols, rows);
      plotted[id + "-table"].compare_run = R.run;
      var ev = [];
      V.forEach(function (v) {
        var keys = [];
        [v.a_numbers, v.b_numbers].forEach(function (n) {
          Object.keys(n || {}).forEach(function (k) { if (keys.indexOf(k) < 0) keys.push(k); });
        });
        keys.forEach(function (k) {
          var av = v.a_numbers ? v.a_numbers[k] : null, bv = v.b_numbers ? v.b_numbers[k] : null;
          ev.push([stepName(v.step), v.a + " -> " + v.b, k, av === undefined ? null : av, bv === undefined ? null : bv]);
        });
      });
      add(s, "h3", { text: "Evidence per user IO of both targets" });
      numbers(s, id + "-evidence", ["step", "a -> b", "evidence per user IO", "a", "b"], ev);
    });
  }

  // ---- the reviewers' curves ------------------------------------------------
  // MB/s against what the steps vary, one line per target: the bathtub. In a
  // compare it stands beside the answer, so that the first screen has it.
  function curveTotal(parent) {
    var E = ENG;
    if (!E.length) return;
    var steps = STEPS, labels = steps.map(AX.label);
    var s = parent || section("Throughput against " + AX.name, null);
    var ds = [], rows = [];
    // with rounds, the medians the answer judged (its text table's numbers);
    // the other charts show the last round
    var med = parent && ANS && DX.rounds > 1 && !VS;
    function median(label, step) {
      var S = ANS.steps || [];
      for (var i = 0; i < S.length; i++) {
        if (S[i].step !== step) continue;
        if (S[i].a === label) return S[i].a_mbps;
        if (S[i].b === label) return S[i].b_mbps;
      }
      return null;
    }
    E.forEach(function (T) {
      if (med) {
        ds.push(line(T.label, steps.map(function (st) { return median(T.label, st.step); }), T.label, null,
          { answer: MAIN.run, target: T.label, step: steps.map(function (st) { return st.step; }),
            value: "median mb_per_s of the rounds" }));
        return;
      }
      ds.push(line(T.label, steps.map(function (st) { return totalMbs(T, st.step); }), T.label, null,
        { run: T.run, step: steps.map(function (st) { return st.step; }), value: "read+write mb_per_s" }));
      var V = findTarget(VS, T.label);
      if (V) ds.push(line(vsName(V), steps.map(function (st) { return totalMbs(V, st.step); }), T.label, { vs: 1 },
        { run: V.run, step: steps.map(function (st) { return st.step; }), value: "read+write mb_per_s" }));
    });
    draw(chart(s, "curve-total", "MB/s against " + AX.name + ", reads + writes, one line per target" +
      (med ? ", the median of the " + DX.rounds + " rounds" : "") +
      (VS ? " (dotted: run " + VS.run + ")" : ""), { type: "line", data: { labels: labels, datasets: ds },
      options: { scales: { x: { title: { display: true, text: AX.name } },
        y: { beginAtZero: true, title: { display: true, text: "MB/s" } } } } }));
    steps.forEach(function (st, k) {
      rows.push([labels[k]].concat(ds.map(function (d) { return d.data[k]; })));
    });
    numbers(s, "curve-total", [AX.name].concat(ds.map(function (d) { return d.label; })), rows);
  }

  function curves() {
    var E = ENG;
    if (!E.length) return;
    var steps = STEPS, labels = steps.map(AX.label);
    var s = section("Throughput against " + AX.name + ", reads and writes apart",
      "Per target (its colour on every chart), reads solid with circles, writes dashed with triangles" +
      (VS ? "; run " + VS.run + " paler and dotted" : "") + ": which direction pays for a dip.");
    var dr = [];
    E.forEach(function (T) {
      [T, findTarget(VS, T.label)].forEach(function (U, vi) {
        if (!U) return;
        ["read", "write"].forEach(function (op) {
          var data = steps.map(function (st) { return mbs(U, st.step, op); });
          if (data.every(function (v) { return v === null; })) return;
          dr.push(line((vi ? vsName(U) : U.label) + " " + op, data, T.label, { op: op, vs: vi },
            { run: U.run, step: steps.map(function (st) { return st.step; }), op: op, value: "mb_per_s" }));
        });
      });
    });
    chart(s, "curve-rw", null, { type: "line", data: { labels: labels, datasets: dr },
      options: { scales: { x: { title: { display: true, text: AX.name } },
        y: { beginAtZero: true, title: { display: true, text: "MB/s" } } } } });
    numbers(s, "curve-rw", [AX.name].concat(dr.map(function (d) { return d.label; })),
      steps.map(function (st, k) { return [labels[k]].concat(dr.map(function (d) { return d.data[k]; })); }));

    // a fill: MB/s per GB written
    var fills = E.filter(function (T) { return T.segments.length; });
    if (fills.length) {
      var fs = section("Throughput per GB of the fill", "Each segment's MB/s against where it starts (GB " +
        "into the target): the drop when a cache fills or the drive starts to clean.");
      var fds = fills.map(function (T) {
        var d = line(T.label, T.segments.map(function (g) { return { x: g[2], y: g[3] }; }), T.label, null,
          { run: T.run, value: "segment MB/s" });
        d.pointRadius = 1;
        return d;
      });
      chart(fs, "fill", null, { type: "scatter", data: { datasets: fds }, options: { showLine: true,
        scales: { x: { title: { display: true, text: "GB into the target" } },
          y: { beginAtZero: true, title: { display: true, text: "MB/s" } } } } });
      var frows = [];
      fills.forEach(function (T) {
        T.segments.forEach(function (g) { frows.push([T.label, g[0], g[1], g[2], g[3]]); });
      });
      numbers(fs, "fill", ["target", "step", "segment", "GB", "MB/s"], frows);
    }
  }

  // ---- latency ----------------------------------------------------------------
  function percentiles() {
    var s = section("Latency per step: p50, p99, p99.9 beside the mean",
      "Total latency of each IO as the application saw it (stats' total layer), log scale.");
    var grid = add(s, "div", { "class": "grid" });
    MAIN.targets.forEach(function (T) {
      var isRun = T.kind === "run" && T.steps.length;
      var keys = isRun ? T.steps.map(function (st) { return st.step; }) : null;
      var ops = isRun ? ["read", "write"] : (T.stats.ops || []).filter(function (r) {
        return r.count > 0 && r.op.indexOf("dev_") !== 0;
      }).map(function (r) { return r.op; });
      var groups = isRun ? ops.map(function (op) { return { op: op, steps: keys }; }) :
        [{ op: null, steps: [0] }];
      groups.forEach(function (g) {
        var cats = isRun ? T.steps.map(function (st) { return stepName(st.step, T); }) : ops;
        var pick = function (key, k) {
          return isRun ? quant(T, g.steps[k], g.op, key) : quant(T, 0, ops[k], key);
        };
        var n = isRun ? g.steps.length : ops.length;
        if (!n) return;
        var any = false;
        var ds = QS.map(function (q, i) {
          var data = [];
          for (var k = 0; k < n; k++) { data.push(pick(q[0], k)); if (data[k] !== null) any = true; }
          return { label: q[1], data: data, backgroundColor: COLORS[i], fsp: { run: T.run,
            op: g.op, key: q[0], steps: g.steps } };
        });
        if (!any) return;
        var V = findTarget(VS, T.label);
        if (V && isRun) QS.forEach(function (q, i) {
          ds.push({ label: q[1] + " (run " + V.run + ")", data: g.steps.map(function (st) {
            return quant(V, st, g.op, q[0]); }), backgroundColor: COLORS[i] + "66",
            fsp: { run: V.run, op: g.op, key: q[0], steps: g.steps } });
        });
        var id = "lat-" + T.run + "-" + (g.op || "ops");
        var box = add(grid, "div");
        var h3 = add(box, "h3", {});
        add(h3, "span", { "class": "swatch", style: "background:" + targetColor(T.label) });
        h3.appendChild(document.createTextNode(T.label + (g.op ? " " + g.op + "s" : ": operations")));
        chart(box, id, null, { type: "bar",
          data: { labels: cats, datasets: ds },
          options: { scales: { y: { type: "logarithmic", title: { display: true, text: "us" } } } } });
        numbers(box, id, [isRun ? "step" : "op"].concat(ds.map(function (d) { return d.label; })),
          cats.map(function (c, k) { return [c].concat(ds.map(function (d) { return d.data[k]; })); }));
      });
    });
  }

  // CDF per direction, the targets overlaid, for one step at a time (a menu).
  function cdfs() {
    var E = ENG, M = mountTargets(MAIN);
    if (!E.length && !M.length) return;
    var s = section("Latency CDF", "Share of IOs at or below a latency (log x): the tail is the " +
      "right end. All targets on the same axes, for the step chosen in the menu" +
      (VS ? "; run " + VS.run + " paler and dotted" : "") + ".");
    function cdfOf(T, step, op) {
      for (var i = 0; i < T.cdf.length; i++)
        if (T.cdf[i].step === step && T.cdf[i].op === op) return T.cdf[i];
      return null;
    }
    function xy(c) { return c ? c.points.map(function (p) { return { x: p[0], y: p[1] }; }) : []; }
    var opts = function () {
      return { showLine: true, scales: { x: { type: "logarithmic", title: { display: true, text: "latency (us)" } },
        y: { min: 0, max: 1, title: { display: true, text: "fraction of IOs" } } } };
    };
    if (E.length) {
      var grid = add(s, "div", { "class": "grid" });
      ["read", "write"].forEach(function (op) {
        var id = "cdf-" + op;
        var build = function (step) {
          var ds = [];
          E.forEach(function (T) {
            var c = cdfOf(T, step, op);
            if (c) ds.push(line(T.label, xy(c), T.label, { op: op }, { run: T.run, step: step, op: op }));
            var V = findTarget(VS, T.label), cv = V && cdfOf(V, step, op);
            if (cv) ds.push(line(vsName(V), xy(cv), T.label, { op: op, vs: 1 }, { run: V.run, step: step, op: op }));
          });
          ds.forEach(function (d) { d.pointRadius = 0; });
          return ds;
        };
        var have = STEPS.filter(function (st) { return build(st.step).length; });
        if (!have.length) return;
        var box = add(grid, "div");
        add(box, "h3", { text: op + "s (" + (op === "write" ? "dashed" : "solid") + ")" });
        var sel = add(box, "select", { id: id + "-step" });
        have.forEach(function (st) { add(sel, "option", { value: st.step, text: stepName(st.step) }); });
        var c = chart(box, id, null, { type: "scatter", data: { datasets: build(have[0].step) }, options: opts() });
        var tbl = add(box, "div");
        var fill = function () {
          tbl.textContent = "";
          var rows = [];
          c.config.data.datasets.forEach(function (d) { d.data.forEach(function (p) { rows.push([d.label, p.x, p.y]); }); });
          numbers(tbl, id, ["target", "latency us", "fraction"], rows);
        };
        fill();
        sel.addEventListener("change", function () {
          c.set(build(Number(sel.value)));
          fill();
        });
      });
    }
    M.forEach(function (T) {
      var ds = T.cdf.filter(function (c) { return c.step === 0; }).map(function (c, k) {
        var d = line(c.op, xy(c), k, null, { run: T.run, step: 0, op: c.op });
        d.pointRadius = 0;
        return d;
      });
      if (!ds.length) return;
      var id = "cdf-mount-" + T.run;
      chart(s, id, T.label + " (the mount's requests, per operation)", { type: "scatter",
        data: { datasets: ds }, options: opts() });
      var rows = [];
      ds.forEach(function (d) { d.data.forEach(function (p) { rows.push([d.label, p.x, p.y]); }); });
      numbers(s, id, ["op", "latency us", "fraction"], rows);
    });
  }

  // ---- the layer split per IO (each engine target's stats "layers") ---------
  // PART_COLORS (above): one colour per part whatever the target
  var LAYER_SETS = [["mid_mean_us", "mid", "IOs around the median (p45 to p55)"],
    ["tail_mean_us", "tail", "IOs at or above p99 (the tail)"]];
  function layers() {
    var E = MAIN.targets.filter(function (T) { return T.kind === "run"; });
    var s = section("Layer split per IO", "Each engine IO's total split into the parts that served " +
      "it (docs/prism.md), the residual its own part. Per target, a bar per step and direction: the " +
      "mean of each part over the IOs around the median and over the IOs at or above p99, so the " +
      "segments add up to those IOs' mean total (the cross). The table beside the bars is the tail " +
      "attribution: which part the tail's extra time comes from.");
    if (!E.length) {
      note(s, "No layer split: it is made for the IOs of an engine run (fsprism run, each target " +
        "of fsprism compare); this report's run is a " + MAIN.kind + ". A mount's own layers per " +
        "operation are in the latency charts above and in fsprism stats.");
      return;
    }
    E.forEach(function (T) {
      var show = [T], V = findTarget(VS, T.label);
      if (V && V.kind === "run") show.push(V);
      show.forEach(function (U, vi) {
        var L = U.stats.layers, name = vi ? vsName(U) : U.label;
        if (!L) { note(s, name + ": no layer split in its stats (a database of an older fsprism)."); return; }
        if (L.available === false) { note(s, name + ": no layer split: " + L.reason + "."); return; }
        if (!L.steps.length) { note(s, name + ": no layer split: no IO in its steps."); return; }
        var parts = [];
        L.steps.forEach(function (st) {
          Object.keys(st.parts).forEach(function (p) { if (parts.indexOf(p) < 0) parts.push(p); });
        });
        parts.sort(function (a, b) { return (a === "residual") - (b === "residual"); });
        var stepLabel = function (st) { return stepName(st.step, U) + " " + st.op; };
        var cats = L.steps.map(stepLabel);
        var where = { run: U.run, steps: L.steps.map(function (st) { return st.step; }),
          ops: L.steps.map(function (st) { return st.op; }) };
        add(s, "h3", { text: name + ": " + L.target + " target, " + L.ios + " IOs" });
        var grid = add(s, "div", { "class": "grid" });
        LAYER_SETS.forEach(function (q) {
          var ds = parts.map(function (p, i) {
            return { label: p, stack: "parts", backgroundColor: PART_COLORS[p] || color(i),
              data: L.steps.map(function (st) { return st.parts[p] ? st.parts[p][q[0]] : null; }),
              fsp: Object.assign({ part: p, key: q[0] }, where) };
          });
          ds.push({ type: "line", label: "total", stack: "total", showLine: false, pointStyle: "crossRot",
            pointRadius: 8, borderWidth: 2, borderColor: "#000", backgroundColor: "#000",
            data: L.steps.map(function (st) { return st.total[q[0]]; }),
            fsp: Object.assign({ part: "total", key: q[0] }, where) });
          var id = "layers-" + q[1] + "-" + U.run, box = add(grid, "div");
          chart(box, id, q[2] + ": mean of each part (us)", { type: "bar",
            data: { labels: cats, datasets: ds },
            options: { scales: { x: { stacked: true }, y: { stacked: true, beginAtZero: true,
              title: { display: true, text: "us" } } } } });
          numbers(box, id, ["step", "IOs"].concat(ds.map(function (d) { return d.label; })).concat(
            ["total p50", "total p99"]), L.steps.map(function (st, k) {
            return [cats[k], q[1] === "tail" ? st.tail_ios : st.mid_ios].concat(
              ds.map(function (d) { return d.data[k]; })).concat([st.total.p50_us, st.total.p99_us]);
          }));
        });
        // the tail attribution: each part's mean in the tail beside the same around the median
        var cols = ["step", "part", "tail mean us", "mid mean us", "tail - mid us", "share of the tail's extra"];
        var rows = [], exact = [];
        L.steps.forEach(function (st, k) {
          var extra = st.total.tail_mean_us - st.total.mid_mean_us;
          parts.concat(["total"]).forEach(function (p) {
            var x = p === "total" ? st.total : st.parts[p];
            if (!x) return;
            var d = Math.round((x.tail_mean_us - x.mid_mean_us) * 1000) / 1000;
            var share = extra > 0 ? Math.round(d / extra * 1000) / 1000 : null;
            rows.push([cats[k], p, x.tail_mean_us, x.mid_mean_us, d, share]);
            exact.push([st.step, st.op, p, x.tail_mean_us, x.mid_mean_us, d, share]);
          });
        });
        add(s, "p", { "class": "note", text: "Tail attribution of " + name + " (residual " +
          L.steps.map(function (st, k) { return cats[k] + " " + fmt(st.residual_pct) + "%"; }).join(", ") + ")" });
        numbers(s, "layers-attr-" + U.run, cols, rows);
        recordTable("layers-attr-" + U.run, ["step", "op"].concat(cols.slice(1)), exact);
        plotted["layers-attr-" + U.run].run = U.run;
      });
    });
  }

  // ---- over time ----------------------------------------------------------------
  // One chart per direction with every target on the same axes (seconds
  // since each target's own run began), then a heat map per target.
  function timelines() {
    var E = ENG.filter(function (T) { return T.timeline.length; });
    var s = section("Over time", "Throughput in the engine's timeline buckets, seconds since each " +
      "target's run began, all targets on the same axes (gaps between steps); then a latency heat map " +
      "per target from the recorded operations.");
    if (!E.length) note(s, "No timeline rows: the runs recorded none.");
    else {
      var grid = add(s, "div", { "class": "grid" });
      [["read", 1], ["write", 2]].forEach(function (o) {
        var ds = [], rows = [];
        E.forEach(function (T) {
          var pts = [];
          T.timeline.forEach(function (st, k) {
            if (k) pts.push({ x: st.rows[0][0], y: null });
            st.rows.forEach(function (p) {
              pts.push({ x: p[0], y: p[o[1]] });
              rows.push([T.label, stepName(st.step, T), p[0], p[o[1]]]);
            });
          });
          if (!pts.some(function (p) { return p.y; })) return;
          var d = line(T.label, pts, T.label, { op: o[0] }, { run: T.run, op: o[0] });
          d.pointRadius = 0;
          ds.push(d);
        });
        if (!ds.length) return;
        var id = "timeline-" + o[0], box = add(grid, "div");
        chart(box, id, o[0] + " MB/s (" + Math.round(E[0].timeline[0].bucket_s * 1000) + " ms buckets)",
          { type: "scatter", data: { datasets: ds }, options: { showLine: true,
            scales: { x: { title: { display: true, text: "s since the target's run began" } }, y: { beginAtZero: true,
              title: { display: true, text: "MB/s" } } } } });
        numbers(box, id, ["target", "step", "s", o[0] + " MB/s"], rows);
      });
    }
    var grid2 = add(s, "div", { "class": "grid" });
    MAIN.targets.forEach(function (T) { heatmap(grid2, s, T); });
  }

  // viridis (colour-blind safe, light for many), at nine stops
  var VIRIDIS = [[68, 1, 84], [71, 44, 122], [59, 81, 139], [44, 113, 142], [33, 144, 141],
    [39, 173, 129], [92, 200, 99], [170, 220, 50], [253, 231, 37]];
  function viridis(t) {
    t = Math.max(0, Math.min(1, t)) * (VIRIDIS.length - 1);
    var i = Math.min(VIRIDIS.length - 2, Math.floor(t)), f = t - i, a = VIRIDIS[i], b = VIRIDIS[i + 1];
    return "rgb(" + [0, 1, 2].map(function (k) { return Math.round(a[k] + (b[k] - a[k]) * f); }).join(",") + ")";
  }
  function heatmap(grid, s, T) {
    var h = T.heatmap;
    if (!h.available) {
      note(s, T.label + ": no latency heat map: the run stored no operation rows (record mode " +
        (T.facts.record_mode || "?") + "); record them with --record=full (or --record=sample:N).");
      return;
    }
    var max = 1;
    h.cells.forEach(function (c) { if (c[2] > max) max = c[2]; });
    var pts = h.cells.map(function (c) { return { x: c[0], y: c[1], count: c[2] }; });
    // log of the count, so that a few IOs still show beside the busiest cell
    var shade = function (n) { return viridis(Math.log(1 + n) / Math.log(1 + max)); };
    var id = "heatmap-" + T.run, box = add(grid, "div");
    chart(box, id, T.label + ": latency against time (" + h.ops + " operations)", { type: "scatter",
      data: { datasets: [{ label: "operations",
        data: pts, pointStyle: "rect", pointRadius: 4, fsp: { run: T.run, cell_s: h.col_s },
        backgroundColor: pts.map(function (p) { return shade(p.count); }),
        borderWidth: 0 }] },
      options: { plugins: { legend: { display: false }, tooltip: { callbacks: { label: function (c) {
        return c.raw.x + " s, " + fmt(c.raw.y) + " us: " + c.raw.count; } } } },
        scales: { x: { title: { display: true, text: "s (" + h.col_s + " s columns)" } },
          y: { type: "logarithmic", title: { display: true, text: "latency us (10 rows per decade)" } } } } }, true);
    // the colour scale: what each colour counts
    var scale = add(box, "div", { "class": "scale", id: id + "-scale" });
    add(scale, "span", { text: "operations per cell: " });
    var marks = [1], k = 1;
    while (k * 10 < max) { k *= 10; marks.push(k); }
    if (max > 1) marks.push(max);
    marks.forEach(function (n) {
      add(scale, "span", { "class": "swatch", style: "background:" + shade(n) });
      add(scale, "span", { text: String(n) + " " });
    });
    plotted[id].scale = marks.map(function (n) { return [n, shade(n)]; });
    numbers(box, id, ["s", "latency from us", "count"], h.cells);
  }
  // ---- device side ------------------------------------------------------------
  function device() {
    var s = section("Device side", "What reached the device: the block requests' offsets against time " +
      "(the access pattern the device saw), their queue and device times, and for the emulation its " +
      "write amplification, flushes, sequentiality and extents.");
    var any = false;
    MAIN.targets.forEach(function (T) {
      var b = T.block_positions;
      if (b && b.rows.length) {
        any = true;
        var stepsSeen = [];
        b.rows.forEach(function (r) { if (stepsSeen.indexOf(r[0]) < 0) stepsSeen.push(r[0]); });
        var id = "block-" + T.run;
        add(s, "h3", { text: T.label + ": block requests, offset against time" });
        var sel = add(s, "select", { id: id + "-step" });
        stepsSeen.forEach(function (st) { add(sel, "option", { value: st, text: stepName(st, T) }); });
        var build = function (step) {
          var by = {};
          b.rows.forEach(function (r) {
            if (r[0] !== step) return;
            (by[r[1]] = by[r[1]] || []).push({ x: r[2], y: r[3] });
          });
          return Object.keys(by).map(function (op, i) {
            return { label: op, data: by[op], backgroundColor: DIR_COLORS[op] || color(i), pointRadius: 1.5,
              fsp: { run: T.run, step: step } };
          });
        };
        var c = chart(s, id, null, { type: "scatter", data: { datasets: build(stepsSeen[0]) },
          options: { scales: { x: { title: { display: true, text: "s since the run began" } },
            y: { title: { display: true, text: "offset on the disk (GiB)" } } } } });
        note(s, b.requests + " requests in steps" + (b.every > 1 ? ", every " + b.every + "th shown" : ""));
        var tbl = add(s, "div");
        var fill = function (step) {
          tbl.textContent = "";
          numbers(tbl, id, ["step", "op", "s", "GiB", "bytes"], b.rows.filter(function (r) {
            return r[0] === step; }));
        };
        fill(stepsSeen[0]);
        sel.addEventListener("change", function () {
          c.set(build(Number(sel.value)));
          fill(Number(sel.value));
        });
      }
      var bl = T.stats.block;
      if (bl && bl.traced && bl.steps.length) {
        any = true;
        var id2 = "blocktimes-" + T.run;
        var cats = bl.steps.map(function (r) { return stepName(r.step, T) + " " + r.op; });
        var ds = [["queue", "p50_us"], ["queue", "p99_us"], ["device", "p50_us"], ["device", "p99_us"]].map(function (k, i) {
          return { label: k[0] + " " + k[1].replace("_us", ""), backgroundColor: color(i),
            data: bl.steps.map(function (r) { return r[k[0]] ? r[k[0]][k[1]] : null; }),
            fsp: { run: T.run, part: k[0], key: k[1] } };
        });
        chart(s, id2, T.label + ": block requests' queue and device time (us; " + bl.requests +
          " requests, " + bl.dropped + " dropped)", { type: "bar", data: { labels: cats, datasets: ds },
          options: { scales: { y: { type: "logarithmic" } } } });
        numbers(s, id2, ["step op", "requests", "mean KiB"].concat(ds.map(function (d) { return d.label; })),
          bl.steps.map(function (r, k) { return [cats[k], r.requests, r.mean_bytes / 1024].concat(
            ds.map(function (d) { return d.data[k]; })); }));
      } else if (bl && !bl.traced) {
        note(s, T.label + ": block layer not traced: " + bl.reason);
      }
      // the access pattern the device saw (stats' block.pattern): sequential share per
      // step and direction, with streams, read-after-write recency, flushes and FUA
      if (bl && bl.traced && bl.pattern && bl.pattern.length) {
        any = true;
        var id4 = "pattern-" + T.run;
        var pcats = bl.pattern.map(function (p) { return stepName(p.step, T); });
        var pds = ["read", "write"].map(function (dir, i) {
          return { label: dir, backgroundColor: DIR_COLORS[dir],
            data: bl.pattern.map(function (p) { return p.sequential[dir].seq_share; }),
            fsp: { run: T.run, dir: dir } };
        });
        chart(s, id4, T.label + ": sequential share of the block requests (0..1), per step",
          { type: "bar", data: { labels: pcats, datasets: pds },
            options: { scales: { y: { min: 0, max: 1 } } } });
        var rows = [];
        bl.pattern.forEach(function (p) {
          ["read", "write"].forEach(function (dir) {
            var q = p.sequential[dir];
            if (!q.ios) return;
            var rc = p.recency;
            rows.push([stepName(p.step, T), dir, q.ios, q.seq_share, q.streams].concat(dir === "read" ?
              [rc.lt_1ms, rc.lt_10ms, rc.lt_100ms, rc.lt_1s, rc.ge_1s, rc.never] :
              [null, null, null, null, null, null]).concat([p.flushes, p.fua_writes]));
          });
        });
        numbers(s, id4 + "-table", ["step", "dir", "requests", "sequential share", "streams",
          "reads of data written < 1 ms", "< 10 ms", "< 100 ms", "< 1 s", ">= 1 s", "never written",
          "flushes", "FUA writes"], rows);
      }
      var em = T.stats.emulation;
      if (em) {
        any = true;
        var kinds = ["data", "journal", "metadata", "checkpoint"];
        var id3 = "wa-" + T.run;
        var eds = kinds.map(function (k, i) {
          return { label: k, data: [em.write_amplification[k]], backgroundColor: color(i), stack: "wa",
            fsp: { run: T.run, key: "write_amplification." + k } };
        });
        var V = findTarget(VS, T.label);
        var labels = [T.label];
        if (V && V.stats.emulation) {
          labels.push(vsName(V));
          eds.forEach(function (d, i) { d.data.push(V.stats.emulation.write_amplification[kinds[i]]); });
        }
        chart(s, id3, T.label + ": write amplification by kind (device bytes written / user bytes written)",
          { type: "bar", data: { labels: labels, datasets: eds }, options: { indexAxis: "y",
            scales: { x: { stacked: true, title: { display: true, text: "x user bytes" } }, y: { stacked: true } } } });
        var dv = em.device || {};
        numbers(s, id3, ["measure", "value"], kinds.map(function (k) {
          return ["write amplification " + k, em.write_amplification[k]]; }).concat([
          ["write amplification total", em.write_amplification.total],
          ["user bytes written", em.user_write_bytes], ["flushes", em.flushes], ["fsyncs", em.fsyncs],
          ["flushes per fsync", em.flushes_per_fsync], ["FUA writes", em.fua_writes === undefined ? null : em.fua_writes],
          ["device IOs", dv.ios], ["sequential share", dv.seq_share], ["streams", dv.streams],
          ["files", em.files.length],
          ["extents", em.files.reduce(function (a, f) { return a + f.extents; }, 0)]]), true);
        if (em.files.length) numbers(s, "files-" + T.run, ["path", "size", "allocated", "extents"],
          em.files.map(function (f) { return [f.path, f.size, f.allocated, f.extents]; }));
      }
    });
    if (!any) note(s, "Nothing from the device side in this run: no block-layer trace, no emulation.");
  }

  // ---- --vs: the ratios ---------------------------------------------------------
  function ratios() {
    if (!VS) return;
    var s = section("Run " + MAIN.run + " / run " + VS.run, "Each number of run " + MAIN.run +
      " divided by the same number of run " + VS.run + " (targets matched by name, steps by number): " +
      "above 1 is more (for MB/s better, for latency worse).");
    var rows = [];
    function r(a, b) { return a === null || b === null || !b ? null : Math.round(a / b * 1000) / 1000; }
    MAIN.targets.forEach(function (T) {
      var V = findTarget(VS, T.label);
      if (!V) { rows.push([T.label, "-", "not in run " + VS.run, null, null, null, null, null]); return; }
      var keys = T.kind === "run" ? T.steps.map(function (st) { return st.step; }) : [0];
      keys.forEach(function (st) {
        rows.push([T.label, T.kind === "run" ? stepName(st, T) : st, T.kind === "run" ? "MB/s" : "-", r(totalMbs(T, st), totalMbs(V, st)),
          r(quant(T, st, "read", "p50_us"), quant(V, st, "read", "p50_us")),
          r(quant(T, st, "read", "p99_us"), quant(V, st, "read", "p99_us")),
          r(quant(T, st, "write", "p50_us"), quant(V, st, "write", "p50_us")),
          r(quant(T, st, "write", "p99_us"), quant(V, st, "write", "p99_us"))]);
      });
      if (T.stats.emulation && V.stats.emulation)
        rows.push([T.label, "-", "write amplification", r(T.stats.emulation.write_amplification.total,
          V.stats.emulation.write_amplification.total), null, null, null, null]);
    });
    numbers(s, "ratios", ["target", "step", "what", "MB/s or value", "read p50", "read p99",
      "write p50", "write p99"], rows, true);
  }

  function facts() {
    var s = section("The run", "Where and when it ran, and how.");
    D.runs.forEach(function (R) {
      var f = R.facts, a = f.attributes || {};
      var patterns = {};
      R.targets.forEach(function (T) {
        T.steps.forEach(function (st) { if (st.pattern) patterns[st.pattern] = 1; });
      });
      R.steps.forEach(function (st) { if (st.pattern) patterns[st.pattern] = 1; });
      var rows = [
        ["run", R.run + " (" + R.role + ")"], ["kind", f.kind], ["host", f.host],
        ["kernel", f.kernel], ["fsprism version", f.version], ["started", f.started_at],
        ["ended", f.ended_at], ["command line", f.options], ["profile", a.profile || null],
        ["data pattern", Object.keys(patterns).join(", ") || null],
        ["device", a.device || f.backing_device], ["file system", a.fs || f.backing_fstype],
        ["record mode", f.record_mode]
      ];
      add(s, "h3", { text: "run " + R.run });
      numbers(s, "facts-" + R.run, ["fact", "value"], rows, true);
      var trows = R.targets.map(function (T) {
        var g = T.facts;
        return [T.label, T.run, T.kind, g.backing_path, g.backing_device, g.backing_fstype,
          g.record_mode, g.started_at, g.ended_at];
      });
      numbers(s, "targets-" + R.run, ["target", "run", "kind", "path", "device", "fs",
        "record", "started", "ended"], trows, true);
    });
  }

  var t0 = performance.now();
  header();
  answer();
  partDiff();
  if (!DX) curveTotal(null);
  curves();
  percentiles();
  cdfs();
  layers();
  timelines();
  device();
  diagnosisDetails();
  ratios();
  facts();
  if (DX) plotted["owners-" + MAIN.run] = { type: "owners", compare_run: MAIN.run, answer: !!ANS,
    rows: shownOwners };
  // where each chart's box is on the page: [top, height, left, width]
  // (docs/report.md's screenshots are cut there, the test finds the first screen's)
  Object.keys(plotted).forEach(function (id) {
    var c = document.getElementById(id);
    if (!c) return;
    var box = c.parentNode.getBoundingClientRect();
    plotted[id].box = [Math.round(box.top + window.scrollY), Math.round(box.height),
      Math.round(box.left + window.scrollX), Math.round(box.width)];
  });
  var hl = document.getElementById("fsp-headline");
  if (hl && plotted["answer-" + MAIN.run]) {
    var hb = hl.getBoundingClientRect();
    plotted["answer-" + MAIN.run].box = [Math.round(hb.top + window.scrollY), Math.round(hb.height)];
  }
  // Charts are drawn as they come near the screen: drawing all of them at once
  // took most of the page's opening time.
  var lazy = handles.filter(function (h) { return !h.chart; });
  if (window.IntersectionObserver) {
    var io = new IntersectionObserver(function (es) {
      es.forEach(function (e) {
        if (!e.isIntersecting) return;
        io.unobserve(e.target);
        lazy.forEach(function (h) { if (h.canvas.parentNode === e.target) draw(h); });
      });
    }, { rootMargin: "800px 0px" });
    lazy.forEach(function (h) { io.observe(h.canvas.parentNode); });
  } else {
    lazy.forEach(draw);
  }
  var out = add(document.body, "pre", { id: "fsp-plotted", hidden: "" });
  out.textContent = JSON.stringify(plotted);
  document.body.setAttribute("data-charts", String(nchart));
  // for the test and docs/report.md: the page's size and the script's time
  document.body.setAttribute("data-elements", String(document.getElementsByTagName("*").length));
  document.body.setAttribute("data-script-ms", String(Math.round(performance.now() - t0)));
  document.body.setAttribute("data-ready-ms", String(Math.round(performance.now())));
  document.body.setAttribute("data-height", String(document.documentElement.scrollHeight));
})();
