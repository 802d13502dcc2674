#!/usr/bin/env python3
# report_check.py - reads back an fsprism report rendered by headless
# Chromium (tests/it_report.sh): the page (console messages, the screenshot's
# pixels, nothing fetched) and the numbers every chart plotted, against
# `fsprism stats --format json` of the same runs. Prints "PASS what" or
# "FAIL what: why" lines, which the shell test counts.
#
#   report_check.py page HTML DOM CONSOLE_LOG PNG CHARTJS MIN_CHARTS
#   report_check.py numbers DOM STATS_DIR REQUIRED_PREFIX...
# (STATS_DIR: stats-RUN.json of every run, diagnose-RUN.json of every compare)
import html
import json
import math
import re
import struct
import sys
import zlib


def say(ok, what, why=""):
    print(("PASS " if ok else "FAIL ") + what + ("" if ok else ": " + why))


def png_share_not_background(path):
    """Share of pixels that differ from the top-left pixel (the page's background)."""
    d = open(path, "rb").read()
    if d[:8] != b"\x89PNG\r\n\x1a\n":
        return None
    i, idat, w, h, ct = 8, b"", 0, 0, 0
    while i < len(d):
        n, = struct.unpack(">I", d[i:i + 4])
        t, c = d[i + 4:i + 8], d[i + 8:i + 8 + n]
        i += 12 + n
        if t == b"IHDR":
            w, h, _, ct = struct.unpack(">IIBB", c[:10])
        elif t == b"IDAT":
            idat += c
    bpp = {2: 3, 6: 4}[ct]
    raw, stride = zlib.decompress(idat), w * bpp
    prev, p, rows = bytearray(stride), 0, []
    for _ in range(h):
        f, line = raw[p], bytearray(raw[p + 1:p + 1 + stride])
        p += 1 + stride
        if f == 2:
            line = bytearray((x + y) & 255 for x, y in zip(line, prev))
        elif f:
            for x in range(stride):
                a = line[x - bpp] if x >= bpp else 0
                b = prev[x]
                cc = prev[x - bpp] if x >= bpp else 0
                if f == 1:
                    line[x] = (line[x] + a) & 255
                elif f == 3:
                    line[x] = (line[x] + (a + b) // 2) & 255
                else:
                    pa, pb, pc = abs(b - cc), abs(a - cc), abs(a + b - 2 * cc)
                    line[x] = (line[x] + (a if pa <= pb and pa <= pc else b if pb <= pc else cc)) & 255
        rows.append(bytes(line))
        prev = line
    bg = rows[0][:3]
    other = sum(1 for r in rows for x in range(0, stride, bpp) if r[x:x + 3] != bg)
    return other / float(w * h)


def plotted(dom):
    m = re.search(r'<pre id="fsp-plotted"[^>]*>(.*?)</pre>', dom, re.S)
    return json.loads(html.unescape(m.group(1))) if m else None


def page(html_path, dom_path, log_path, png_path, chartjs_path, min_charts):
    page_text = open(html_path, encoding="utf-8").read()
    dom = open(dom_path, encoding="utf-8", errors="replace").read()
    log = open(log_path, encoding="utf-8", errors="replace").read()
    console = [l for l in log.splitlines() if ":CONSOLE" in l]
    say(not console, "no console messages", " | ".join(console[:3]))
    m = re.search(r'data-charts="(\d+)"', dom)
    n = int(m.group(1)) if m else 0
    say(n >= int(min_charts), "the page drew %d charts (at least %s)" % (n, min_charts),
        "the page's script did not finish" if not m else "too few")
    share = png_share_not_background(png_path)
    say(share is not None and share > 0.02, "the screenshot is not blank (%.1f%% of pixels drawn)" %
        (100 * (share or 0)), "blank or unreadable")
    # offline: Chart.js is the installed file as it is, nothing else names a URL
    lib = open(chartjs_path, encoding="utf-8").read()
    m = re.search(r'<script id="fsp-chartjs">\n(.*?)\n</script>', page_text, re.S)
    say(bool(m) and m.group(1) == lib, "Chart.js embedded as installed (%s)" % chartjs_path,
        "not found in the page or not the same bytes")
    rest = page_text[:m.start()] + page_text[m.end():] if m else page_text
    urls = re.findall(r"https?://[^\s\"'<>)]*", rest)
    say(not urls, "the page references no http(s) URL", ", ".join(urls[:3]))
    say(not re.search(r"<(script|link|img|iframe)[^>]+(src|href)=", rest, re.I),
        "no element loads anything", "an element with src/href")
    say(plotted(dom) is not None, "the plotted numbers are in the page", "no #fsp-plotted")


def close(a, b, tol):
    if a is None or b is None:
        return a is None and b is None
    return abs(a - b) <= tol


def numbers(dom_path, stats_dir, required):
    charts = plotted(open(dom_path, encoding="utf-8", errors="replace").read()) or {}
    loaded = {}

    def load(what, run):
        if (what, run) not in loaded:
            loaded[what, run] = json.load(open("%s/%s-%d.json" % (stats_dir, what, run)))
        return loaded[what, run]

    def st(run):
        return load("stats", run)

    def dx(run):
        return load("diagnose", run)

    def row_of(rows, step, op):
        return next((r for r in rows if r["step"] == step and r["op"] == op), None)

    def op_row(run, step, op):
        return row_of(st(run)["ops"], step, op)

    def mbs(run, step, op):
        r = op_row(run, step, op)
        return r["mb_per_s"] if r else None

    def quant(run, step, op, key):
        r = op_row(run, step, op)
        return r["layers"]["total"][key] if r else None

    def layer_row(run, step, op):
        return row_of(st(run)["layers"]["steps"], step, op)

    def layer_part(run, step, op, part):
        r = layer_row(run, step, op)
        return None if r is None else r["total"] if part == "total" else r["parts"].get(part)

    for prefix in required:
        say(any(c.startswith(prefix) for c in charts), "a chart %s* is in the page" % prefix,
            "missing; charts: " + ", ".join(sorted(charts)))
    for cid, c in sorted(charts.items()):
        bad, checked = [], 0
        if c["type"] == "table":
            # the diagnosis' verdicts and the tail attribution, row by row
            for k, row in enumerate(c["rows"]):
                if cid.startswith("diagnosis-"):
                    v = dx(c["compare_run"])["verdicts"][k]
                    p50, p99 = v.get("p50_us", {}), v.get("p99_us", {})
                    want = [v["step"], v["label"], v["a"], v["b"], v["owner"], v["mbps"]["a"],
                            v["mbps"]["b"], v["mbps"]["rel"], v["mbps"]["judgement"], p50.get("a"),
                            p50.get("b"), p99.get("a"), p99.get("b"), v["delta_us"], v["claim_us"]]
                elif cid.startswith("layers-attr-"):
                    x = layer_part(c["run"], row[0], row[1], row[2]) or {}
                    want = row[:3] + [x.get("tail_mean_us"), x.get("mid_mean_us")] + row[5:]
                else:
                    continue
                checked += 1
                if row != want:
                    bad.append("row %d: shown %s, want %s" % (k, row, want))
            if cid.startswith("diagnosis-") and checked != len(dx(c["compare_run"])["verdicts"]):
                bad.append("%d verdicts shown of %d" % (checked, len(dx(c["compare_run"])["verdicts"])))
            say(checked and not bad, "%s: %d rows equal fsprism %s --format json" % (
                cid, checked, "diagnose" if cid.startswith("diagnosis-") else "stats"),
                "; ".join(bad[:3]) or "no rows")
            continue
        if cid.startswith("diagnosis-"):
            for d in c["datasets"]:
                f = d["fsp"]
                for k, v in enumerate(d["data"]):
                    checked += 1
                    want = dx(f["compare_run"])["verdicts"][f["verdict"][k]][f["key"]]
                    if v != want:
                        bad.append("%s [%d]: plotted %s, diagnose %s" % (d["label"], k, v, want))
            say(checked and not bad, "%s: %d plotted numbers equal fsprism diagnose --format json" %
                (cid, checked), "; ".join(bad[:3]) or "nothing plotted")
            continue
        for d in c["datasets"]:
            f = d.get("fsp") or {}
            run = f.get("run")
            if run is None:
                continue
            for k, v in enumerate(d["data"]):
                want, tol = "skip", 0.0
                if cid == "curve-total":
                    r, w = mbs(run, f["step"][k], "read"), mbs(run, f["step"][k], "write")
                    want = None if r is None and w is None else (r or 0) + (w or 0)
                    tol = 0.0011
                elif cid == "curve-rw":
                    want = mbs(run, f["step"][k], f["op"])
                elif cid.startswith("lat-"):
                    if f["op"]:
                        want = quant(run, f["steps"][k], f["op"], f["key"])
                    else:
                        want = quant(run, 0, c["labels"][k], f["key"])
                elif cid.startswith("wa-") and k == 0:
                    want = st(run)["emulation"]["write_amplification"][f["key"].split(".")[1]]
                elif cid.startswith("pattern-"):
                    want = st(run)["block"]["pattern"][k]["sequential"][f["dir"]]["seq_share"]
                elif cid.startswith("blocktimes-"):
                    part = st(run)["block"]["steps"][k][f["part"]]
                    want = part[f["key"]] if part else None
                elif cid.startswith("layers-"):
                    x = layer_part(run, f["steps"][k], f["ops"][k], f["part"])
                    want = x[f["key"]] if x else None
                elif cid.startswith("cdf-") and k == 0:
                    # the CDF crosses one half in the bucket of stats' p50: at its upper
                    # end, within one bucket (1/128) of the p50 stats gives
                    pts = d["data"]
                    x50 = next(p["x"] for p in pts if p["y"] >= 0.5)
                    p50 = quant(run, f["step"], f["op"], "p50_us")
                    v, want, tol = x50, p50, max(0.008 * p50, 0.0011)
                    if abs(pts[-1]["y"] - 1) > 1e-9:
                        bad.append("%s: the CDF ends at %s, not 1" % (d["label"], pts[-1]["y"]))
                if want == "skip":
                    continue
                checked += 1
                if not close(v, want, tol):
                    bad.append("%s [%d]: plotted %s, stats %s" % (d["label"], k, v, want))
        if checked:
            say(not bad, "%s: %d plotted numbers equal fsprism stats --format json" % (cid, checked),
                "; ".join(bad[:3]))


if __name__ == "__main__":
    if sys.argv[1] == "page":
        page(*sys.argv[2:8])
    else:
        numbers(sys.argv[2], sys.argv[3], sys.argv[4:])
