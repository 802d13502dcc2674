// report.js - the page script of an fsprism report: arranges the embedded
// data object (#fsp-data) into Chart.js charts, each with its numbers in a
// table and a CSV download. Chart.js does the drawing; nothing here draws.
// Everything a chart plots is also put into #fsp-plotted (JSON), so that a
// test can read back exactly what was drawn. The percentiles, means and
// MB/s are those of `fsprism stats --format json` (each target's "stats").
(function () {
  "use strict";
  var D = JSON.parse(document.getElementById("fsp-data").textContent);
  var main = document.getElementById("fsp-report");
  var plotted = {};
  var nchart = 0;
  var COLORS = ["#1f77b4", "#d62728", "#2ca02c", "#ff7f0e", "#9467bd", "#8c564b",
    "#e377c2", "#7f7f7f", "#bcbd22", "#17becf"];
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

  // A table of the numbers with a CSV download of the same rows.
  function numbers(parent, id, columns, rows, open) {
    var d = add(parent, "details", open ? { open: "" } : {});
    add(d, "summary", { text: "numbers (" + rows.length + " rows)" });
    var csv = [columns.map(csvCell).join(",")].concat(rows.map(function (r) {
      return r.map(csvCell).join(",");
    })).join("\n") + "\n";
    add(d, "a", { href: "data:text/csv;charset=utf-8," + encodeURIComponent(csv),
      download: id + ".csv", text: "download as CSV" });
    var t = add(d, "table", { "data-chart": id });
    var hr = add(t, "tr");
    columns.forEach(function (c, i) { add(hr, "th", { "class": i ? "" : "l", text: c }); });
    rows.forEach(function (r) {
      var tr = add(t, "tr");
      r.forEach(function (v, i) {
        add(tr, "td", { "class": i && (typeof v === "number" || v === null) ? "" : "l", text: fmt(v) });
      });
    });
    return t;
  }

  // One chart; what it plots is recorded under its id.
  function chart(parent, id, title, config, tall) {
    if (title) add(parent, "h3", { text: title });
    var box = add(parent, "div", { "class": tall ? "chart tall" : "chart" });
    if (typeof tall === "number") box.style.height = tall + "px";
    var canvas = add(box, "canvas", { id: id });
    config.options = config.options || {};
    config.options.plugins = config.options.plugins || {};
    var c = new Chart(canvas.getContext("2d"), config);
    record(id, c);
    nchart++;
    return c;
  }
  function record(id, c) {
    plotted[id] = {
      type: c.config.type,
      labels: c.data.labels || null,
      datasets: c.data.datasets.map(function (d) {
        return { label: d.label, fsp: d.fsp || null, data: d.data };
      })
    };
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
  function line(label, data, i, dashed, fsp) {
    return { label: label, data: data, borderColor: color(i), backgroundColor: color(i),
      borderDash: dashed ? [6, 4] : [], pointRadius: 3, borderWidth: 2, fill: false,
      fsp: fsp || null };
  }

  // The parameter the steps vary: the reviewers' x axis.
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

  // ---- header and facts -----------------------------------------------------
  function header() {
    var t = "fsprism report: run " + MAIN.run + " (" + MAIN.kind + ")";
    if (VS) t += " vs run " + VS.run;
    add(main, "h1", { text: t });
    note(main, "database " + D.database + "; written by fsprism " + D.generator.version +
      ". Every chart's numbers are in the table under it (and as CSV). Latencies in microseconds, " +
      "throughput in MB/s (10^6 bytes per second of the step), as fsprism stats prints them.");
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

  // ---- the analyses: diagnosis (top) and layer split -----------------------
  // Their members ("diagnosis", "layers") come from the analyses into each run's
  // object; docs/report.md gives their shape. Shown when present.
  // A table whose rows a test reads back exactly (the numbers() table shows them rounded).
  function recordTable(id, columns, rows) {
    plotted[id] = { type: "table", columns: columns, rows: rows };
  }

  // ---- the diagnosis (fsprism diagnose --format json of a compare) -----------
  function diagnosis() {
    D.runs.forEach(function (R) {
      var g = R.diagnosis;
      if (!g) return;
      var s = section("Diagnosis of compare run " + R.run, "As fsprism diagnose prints it " +
        "(docs/diagnose.md): per step, each pair of neighbouring targets, whether they differ beyond " +
        "the rounds' spread, and which one part owns the difference.");
      s.className += " diag";
      if (g.available === false) { note(s, "No diagnosis: " + g.reason + "."); return; }
      var V = g.verdicts || [], owners = {}, order = [];
      V.forEach(function (v) {
        if (!(v.owner in owners)) { owners[v.owner] = 0; order.push(v.owner); }
        owners[v.owner]++;
      });
      add(s, "p", { text: (g.rounds === 1 ? "1 round: the round-to-round spread is unknown, so a " +
        "difference cannot be told from noise (compare --rounds 3 can). " : g.rounds + " rounds: each " +
        "difference is judged against the spread of the rounds. ") + "Owners: " + (order.length ?
        order.map(function (o) { return o + " " + owners[o]; }).join(", ") : "none") + " (pairs of steps)." });
      (g.shapes || []).forEach(function (h) {
        add(s, "p", { "class": "note", text: h.target + ": " + (h.bathtub ? "bathtub: " + h.mixes +
          " mixes from " + h.first_pct + "% to " + h.last_pct + "% reads below 75% of the pure steps (" +
          fmt(h.pure_mbps) + " MB/s), lowest " + fmt(h.low_mbps) + " MB/s at " + h.low_pct + "% reads (" +
          fmt(h.depth) + "x); owner " + h.owner : "no bathtub") });
      });
      if (!V.length) { note(s, "No pair of targets to judge in this compare."); return; }
      // each finding with its evidence
      V.forEach(function (v, i) {
        var f = add(s, "div", { "class": "finding" });
        add(f, "h3", { text: "step " + v.step + " " + v.label + ": " + v.a + " -> " + v.b + ": " + v.owner });
        (v.evidence || []).forEach(function (e) { if (e) add(f, "p", { "class": "note", text: e }); });
        var keys = [];
        [v.a_numbers, v.b_numbers].forEach(function (n) {
          Object.keys(n || {}).forEach(function (k) { if (keys.indexOf(k) < 0) keys.push(k); });
        });
        numbers(f, "diagnosis-" + R.run + "-" + i, ["evidence per user IO", v.a, v.b],
          keys.map(function (k) {
            var av = v.a_numbers ? v.a_numbers[k] : null, bv = v.b_numbers ? v.b_numbers[k] : null;
            return [k, av === undefined ? null : av, bv === undefined ? null : bv];
          }));
      });
      // one row per verdict, and a picture: the latency difference and the owner's claim
      var cols = ["step", "label", "a", "b", "owner", "MB/s a", "MB/s b", "MB/s change", "judgement",
        "p50 a", "p50 b", "p99 a", "p99 b", "latency +us per IO", "owner's claim us"];
      var rows = V.map(function (v) {
        var p50 = v.p50_us || {}, p99 = v.p99_us || {};
        return [v.step, v.label, v.a, v.b, v.owner, v.mbps.a, v.mbps.b, v.mbps.rel, v.mbps.judgement,
          p50.a === undefined ? null : p50.a, p50.b === undefined ? null : p50.b,
          p99.a === undefined ? null : p99.a, p99.b === undefined ? null : p99.b, v.delta_us, v.claim_us];
      });
      var id = "diagnosis-" + R.run;
      var cats = V.map(function (v) { return v.step + " " + v.a + "->" + v.b + " (" + v.owner + ")"; });
      var idx = V.map(function (v, k) { return k; });
      chart(s, id, "Latency difference per user IO (b - a) and the part the owner claims (us)",
        { type: "bar", data: { labels: cats, datasets: [
          { label: "latency difference", data: V.map(function (v) { return v.delta_us; }),
            backgroundColor: color(0), fsp: { compare_run: R.run, key: "delta_us", verdict: idx } },
          { label: "owner's claim", data: V.map(function (v) { return v.claim_us; }),
            backgroundColor: color(3), fsp: { compare_run: R.run, key: "claim_us", verdict: idx } }] },
          options: { indexAxis: "y", scales: { x: { title: { display: true, text: "us per IO" } },
            y: { ticks: { autoSkip: false } } } } },
        Math.max(340, 90 + 26 * V.length));
      numbers(s, id, cols, rows, true);
      recordTable(id + "-table", cols, rows);
      plotted[id + "-table"].compare_run = R.run;
    });
  }

  // ---- the layer split per IO (each engine target's stats "layers") ---------
  // one colour per part whatever the target, so that "device" is the same green everywhere
  var PART_COLORS = { submit: "#1f77b4", fs_submit: "#1f77b4", fuse_queue: "#17becf",
    daemon_recv: "#9467bd", layer: "#e377c2", emu: "#bcbd22", backing: "#8c564b",
    block_queue: "#d62728", device: "#2ca02c", fuse_reply: "#ffbb78", complete: "#ff7f0e",
    fs_complete: "#ff7f0e", residual: "#bbbbbb" };
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
        var stepLabel = function (st) {
          for (var k = 0; k < U.steps.length; k++)
            if (U.steps[k].step === st.step) return (U.steps[k].label || "step " + st.step) + " " + st.op;
          return "step " + st.step + " " + st.op;
        };
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

  // ---- the reviewers' curves ------------------------------------------------
  function curves() {
    var E = engineTargets(MAIN);
    if (!E.length) return;
    var steps = E[0].steps, ax = axis(steps);
    var labels = steps.map(ax.label);
    var s = section("Throughput against " + ax.name,
      "One line per target (MB/s of each step, reads plus writes); a collapse shows as a dip. " +
      (VS ? "Dashed: run " + VS.run + "." : ""));
    var ds = [], rows = [];
    E.forEach(function (T, i) {
      ds.push(line(T.label, steps.map(function (st) { return totalMbs(T, st.step); }), i, false,
        { run: T.run, step: steps.map(function (st) { return st.step; }), value: "read+write mb_per_s" }));
      var V = findTarget(VS, T.label);
      if (V) ds.push(line(vsName(V), steps.map(function (st) { return totalMbs(V, st.step); }), i, true,
        { run: V.run, step: steps.map(function (st) { return st.step; }), value: "read+write mb_per_s" }));
    });
    chart(s, "curve-total", "MB/s, reads + writes", { type: "line", data: { labels: labels, datasets: ds },
      options: { scales: { x: { title: { display: true, text: ax.name } },
        y: { beginAtZero: true, title: { display: true, text: "MB/s" } } } } });
    steps.forEach(function (st, k) {
      rows.push([labels[k]].concat(ds.map(function (d) { return d.data[k]; })));
    });
    numbers(s, "curve-total", [ax.name].concat(ds.map(function (d) { return d.label; })), rows);

    // reads and writes apart
    var dr = [];
    E.forEach(function (T, i) {
      ["read", "write"].forEach(function (op) {
        var data = steps.map(function (st) { return mbs(T, st.step, op); });
        if (data.every(function (v) { return v === null; })) return;
        var d = line(T.label + " " + op, data, i, op === "write",
          { run: T.run, step: steps.map(function (st) { return st.step; }), op: op, value: "mb_per_s" });
        d.pointStyle = op === "write" ? "triangle" : "circle";
        dr.push(d);
      });
    });
    chart(s, "curve-rw", "MB/s, reads (solid) and writes (dashed) apart", { type: "line",
      data: { labels: labels, datasets: dr },
      options: { scales: { x: { title: { display: true, text: ax.name } },
        y: { beginAtZero: true, title: { display: true, text: "MB/s" } } } } });
    numbers(s, "curve-rw", [ax.name].concat(dr.map(function (d) { return d.label; })),
      steps.map(function (st, k) { return [labels[k]].concat(dr.map(function (d) { return d.data[k]; })); }));

    // a fill: MB/s per GB written
    var fills = E.filter(function (T) { return T.segments.length; });
    if (fills.length) {
      var fs = section("Throughput per GB of the fill", "Each segment's MB/s against where it starts (GB " +
        "into the target): the drop when a cache fills or the drive starts to clean.");
      var fds = fills.map(function (T, i) {
        var d = line(T.label, T.segments.map(function (g) { return { x: g[2], y: g[3] }; }), i, false,
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
    var ti = 0;
    MAIN.targets.forEach(function (T) {
      var isRun = T.kind === "run" && T.steps.length;
      var keys = isRun ? T.steps.map(function (st) { return st.step; }) : null;
      var ops = isRun ? ["read", "write"] : (T.stats.ops || []).filter(function (r) {
        return r.count > 0 && r.op.indexOf("dev_") !== 0;
      }).map(function (r) { return r.op; });
      var groups = isRun ? ops.map(function (op) { return { op: op, steps: keys }; }) :
        [{ op: null, steps: [0] }];
      groups.forEach(function (g) {
        var cats = isRun ? T.steps.map(function (st) { return st.label || "step " + st.step; }) : ops;
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
        chart(box, id, T.label + (g.op ? " " + g.op + "s" : ": operations"), { type: "bar",
          data: { labels: cats, datasets: ds },
          options: { scales: { y: { type: "logarithmic", title: { display: true, text: "us" } } } } });
        numbers(box, id, [isRun ? "step" : "op"].concat(ds.map(function (d) { return d.label; })),
          cats.map(function (c, k) { return [c].concat(ds.map(function (d) { return d.data[k]; })); }));
        ti++;
      });
    });
  }

  // CDF per target overlaid, for one step at a time (a selector).
  function cdfs() {
    var E = engineTargets(MAIN), M = mountTargets(MAIN);
    if (!E.length && !M.length) return;
    var s = section("Latency CDF", "Share of IOs at or below a latency (log x): the tail is the " +
      "right end. One line per target" + (VS ? "; dashed: run " + VS.run : "") + ".");
    function cdfOf(T, step, op) {
      for (var i = 0; i < T.cdf.length; i++)
        if (T.cdf[i].step === step && T.cdf[i].op === op) return T.cdf[i];
      return null;
    }
    function xy(c) { return c ? c.points.map(function (p) { return { x: p[0], y: p[1] }; }) : []; }
    var opts = { showLine: true, scales: { x: { type: "logarithmic", title: { display: true, text: "latency (us)" } },
      y: { min: 0, max: 1, title: { display: true, text: "fraction of IOs" } } } };
    if (E.length) {
      var steps = E[0].steps;
      ["read", "write"].forEach(function (op) {
        var id = "cdf-" + op;
        var build = function (step) {
          var ds = [];
          E.forEach(function (T, i) {
            var c = cdfOf(T, step, op);
            if (c) ds.push(line(T.label, xy(c), i, false, { run: T.run, step: step, op: op }));
            var V = findTarget(VS, T.label), cv = V && cdfOf(V, step, op);
            if (cv) ds.push(line(vsName(V), xy(cv), i, true, { run: V.run, step: step, op: op }));
          });
          ds.forEach(function (d) { d.pointRadius = 0; });
          return ds;
        };
        var have = steps.filter(function (st) { return build(st.step).length; });
        if (!have.length) return;
        add(s, "h3", { text: op + "s" });
        var sel = add(s, "select", { id: id + "-step" });
        have.forEach(function (st) { add(sel, "option", { value: st.step, text: "step " + st.step + ": " + (st.label || "") }); });
        var c = chart(s, id, null, { type: "scatter", data: { datasets: build(have[0].step) }, options: opts });
        var tbl = add(s, "div");
        var fill = function () {
          tbl.textContent = "";
          var rows = [];
          c.data.datasets.forEach(function (d) { d.data.forEach(function (p) { rows.push([d.label, p.x, p.y]); }); });
          numbers(tbl, id, ["target", "latency us", "fraction"], rows);
        };
        fill();
        sel.addEventListener("change", function () {
          c.data.datasets = build(Number(sel.value));
          c.update();
          record(id, c);
          fill();
        });
      });
    }
    M.forEach(function (T, i) {
      var ds = T.cdf.filter(function (c) { return c.step === 0; }).map(function (c, k) {
        var d = line(c.op, xy(c), k, false, { run: T.run, step: 0, op: c.op });
        d.pointRadius = 0;
        return d;
      });
      if (!ds.length) return;
      var id = "cdf-mount-" + T.run;
      chart(s, id, T.label + " (the mount's requests, per operation)", { type: "scatter",
        data: { datasets: ds }, options: opts });
      var rows = [];
      ds.forEach(function (d) { d.data.forEach(function (p) { rows.push([d.label, p.x, p.y]); }); });
      numbers(s, id, ["op", "latency us", "fraction"], rows);
    });
  }

  // ---- over time ----------------------------------------------------------------
  function timelines() {
    var E = engineTargets(MAIN).filter(function (T) { return T.timeline.length; });
    var H = MAIN.targets;
    var s = section("Over time", "Throughput in the engine's timeline buckets, seconds since the " +
      "target's run began; then a latency heat map from the recorded operations.");
    if (!E.length) note(s, "No timeline rows: the runs recorded none.");
    E.forEach(function (T) {
      var r = [], w = [], rows = [];
      T.timeline.forEach(function (st, k) {
        if (k) { r.push({ x: st.rows[0][0], y: null }); w.push({ x: st.rows[0][0], y: null }); }
        st.rows.forEach(function (p) {
          r.push({ x: p[0], y: p[1] });
          w.push({ x: p[0], y: p[2] });
          rows.push([st.step, p[0], p[1], p[2]]);
        });
      });
      var id = "timeline-" + T.run;
      var dr = line("read MB/s", r, 0, false, { run: T.run }), dw = line("write MB/s", w, 1, false, { run: T.run });
      dr.pointRadius = dw.pointRadius = 0;
      chart(s, id, T.label + ": throughput (" + Math.round(T.timeline[0].bucket_s * 1000) + " ms buckets)",
        { type: "scatter", data: { datasets: [dr, dw] }, options: { showLine: true,
          scales: { x: { title: { display: true, text: "s" } }, y: { beginAtZero: true,
            title: { display: true, text: "MB/s" } } } } });
      numbers(s, id, ["step", "s", "read MB/s", "write MB/s"], rows);
    });
    H.forEach(function (T) {
      var h = T.heatmap;
      if (!h.available) {
        note(s, T.label + ": no latency heat map: the run stored no operation rows (record mode " +
          (T.facts.record_mode || "?") + "); record them with --record=full (or --record=sample:N).");
        return;
      }
      var max = 1;
      h.cells.forEach(function (c) { if (c[2] > max) max = c[2]; });
      var pts = h.cells.map(function (c) { return { x: c[0], y: c[1], count: c[2] }; });
      var shade = function (n) {
        var t = Math.log(1 + n) / Math.log(1 + max);
        var r = Math.round(255 * Math.min(1, 2 * t)), g = Math.round(255 * Math.max(0, 1 - 1.2 * t));
        return "rgb(" + r + "," + g + "," + Math.round(80 * (1 - t)) + ")";
      };
      var id = "heatmap-" + T.run;
      chart(s, id, T.label + ": latency against time (" + h.ops + " operations; colour: count per cell, " +
        "green few, red " + max + ")", { type: "scatter", data: { datasets: [{ label: "operations",
          data: pts, pointStyle: "rect", pointRadius: 4, fsp: { run: T.run, cell_s: h.col_s },
          backgroundColor: pts.map(function (p) { return shade(p.count); }),
          borderWidth: 0 }] },
        options: { plugins: { legend: { display: false }, tooltip: { callbacks: { label: function (c) {
          return c.raw.x + " s, " + fmt(c.raw.y) + " us: " + c.raw.count; } } } },
          scales: { x: { title: { display: true, text: "s (" + h.col_s + " s columns)" } },
            y: { type: "logarithmic", title: { display: true, text: "latency us (10 rows per decade)" } } } } }, true);
      numbers(s, id, ["s", "latency from us", "count"], h.cells);
    });
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
        stepsSeen.forEach(function (st) { add(sel, "option", { value: st, text: "step " + st }); });
        var build = function (step) {
          var by = {};
          b.rows.forEach(function (r) {
            if (r[0] !== step) return;
            (by[r[1]] = by[r[1]] || []).push({ x: r[2], y: r[3] });
          });
          return Object.keys(by).map(function (op, i) {
            return { label: op, data: by[op], backgroundColor: color(i), pointRadius: 1.5,
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
          c.data.datasets = build(Number(sel.value));
          c.update();
          record(id, c);
          fill(Number(sel.value));
        });
      }
      var bl = T.stats.block;
      if (bl && bl.traced && bl.steps.length) {
        any = true;
        var id2 = "blocktimes-" + T.run;
        var cats = bl.steps.map(function (r) { return "step " + r.step + " " + r.op; });
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
        var pcats = bl.pattern.map(function (p) { return "step " + p.step; });
        var pds = ["read", "write"].map(function (dir, i) {
          return { label: dir, backgroundColor: color(i),
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
            rows.push([p.step, dir, q.ios, q.seq_share, q.streams].concat(dir === "read" ?
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
        rows.push([T.label, st, T.kind === "run" ? "MB/s" : "-", r(totalMbs(T, st), totalMbs(V, st)),
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

  header();
  diagnosis();
  curves();
  percentiles();
  cdfs();
  layers();
  timelines();
  device();
  ratios();
  facts();
  // where each chart's box is on the page (docs/report.md's screenshots are cut there)
  Object.keys(plotted).forEach(function (id) {
    if (plotted[id].type === "table") return;
    var box = document.getElementById(id).parentNode.getBoundingClientRect();
    plotted[id].box = [Math.round(box.top + window.scrollY), Math.round(box.height)];
  });
  var out = add(document.body, "pre", { id: "fsp-plotted", hidden: "" });
  out.textContent = JSON.stringify(plotted);
  document.body.setAttribute("data-charts", String(nchart));
})();
