#!/usr/bin/env python3
# report_check.py - reads back an fsprism report rendered by headless
# Chromium (tests/it_report.sh): the page (console messages, the screenshot's
# pixels, nothing fetched) and the numbers every chart plotted, against
# `fsprism stats --format json` of the same runs. Prints "PASS what" or
# "FAIL what: why" lines, which the shell test counts.
#
#   report_check.py page HTML DOM CONSOLE_LOG PNG CHARTJS MIN_CHARTS
#   report_check.py lazy DOM DOM_OPENED ID
#   report_check.py numbers DOM STATS_DIR REQUIRED_PREFIX...
# (STATS_DIR: stats-RUN.json of every run, diagnose-RUN.json of every compare;
# PNG: the whole page, 1400 px wide; DOM_OPENED: the page loaded with #open=ID)
import html
import json
import math
import re
import struct
import sys
import zlib


def say(ok, what, why=""):
    print(("PASS " if ok else "FAIL ") + what + ("" if ok else ": " + why))


# Largest page the test accepts: the demo database's has about 750 elements.
MAX_ELEMENTS = 3000
FIRST_SCREEN = (1400, 900)


def png_chunks(path):
    """(width, height, bytes per pixel, the decompressed filtered rows), or None."""
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
    return w, h, {2: 3, 6: 4}[ct], zlib.decompress(idat)


def png_rows(png, nrows):
    """The first nrows rows of pixels (bytes), unfiltered."""
    w, h, bpp, raw = png
    stride = w * bpp
    prev, p, rows = bytearray(stride), 0, []
    for _ in range(min(h, nrows)):
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
    return rows


def png_share_changing(png):
    """Share of the filtered bytes that are not 0: a page of one colour has
    none (whatever the filter), one with text and charts many. Fast on a
    whole page, where unfiltering every pixel in Python would not be."""
    w, h, bpp, raw = png
    return (len(raw) - raw.count(0)) / float(len(raw))


def share_not_background(rows, bpp, x0, y0, x1, y1):
    """Share of the pixels of a box that differ from its top-left pixel."""
    bg = rows[y0][x0 * bpp:x0 * bpp + 3]
    n = other = 0
    for y in range(y0, min(y1, len(rows))):
        r = rows[y]
        for x in range(x0 * bpp, x1 * bpp, bpp):
            n += 1
            other += r[x:x + 3] != bg
    return other / float(n or 1)


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
    # the screenshot is the whole page, and its first screen has the answer and a drawn chart
    png = png_chunks(png_path)
    m = re.search(r'data-height="(\d+)"', dom)
    height = int(m.group(1)) if m else 0
    say(png is not None and png[0] == FIRST_SCREEN[0] and png[1] >= height > 0,
        "the screenshot is the whole page (%s px high, the page %d)" % (png and png[1], height),
        "not the whole page")
    share = png_share_changing(png) if png else 0
    say(share > 0.01, "the screenshot is not blank (%.1f%% of its bytes change)" % (100 * share),
        "blank or unreadable")
    m = re.search(r'data-elements="(\d+)"', dom)
    n = int(m.group(1)) if m else 10 ** 9
    say(n <= MAX_ELEMENTS, "the page is small: %d elements (at most %d; tables are made when opened)" %
        (n, MAX_ELEMENTS), "too many")
    p = plotted(dom) or {}
    w, hh = FIRST_SCREEN
    heads = [c for k, c in p.items() if k.startswith("answer-")]
    for c in heads:
        b = c.get("box") or [10 ** 9, 0]
        say(c["headlines"] and all(t in dom for t in c["headlines"]) and b[0] + b[1] <= hh,
            "the first screen (%dx%d) has the headline: %s" % (w, hh, c["headlines"][:1]),
            "headline box %s" % b)
    first = sorted((c["box"][0], k) for k, c in p.items()
                   if c.get("box") and len(c["box"]) == 4 and c["type"] != "table"
                   and c["box"][0] + c["box"][1] <= hh)
    drawn = None
    if png and first:
        rows = png_rows(png, hh)
        for _, k in first:
            t, bh, left, bw = p[k]["box"]
            got = share_not_background(rows, png[2], left, t, left + bw, t + bh)
            if got > 0.02:
                drawn = (k, 100 * got)
                break
    say(drawn is not None, "the first screen has a drawn chart (%s: %.1f%% of its box drawn)" % (
        drawn or ("-", 0)), "no chart box in the top %d px has pixels: %s" % (hh, [k for _, k in first]))
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


def lazy(dom_path, opened_path, cid):
    dom = open(dom_path, encoding="utf-8", errors="replace").read()
    opened = open(opened_path, encoding="utf-8", errors="replace").read()
    tag = '<table data-chart="%s"' % cid
    say('data-numbers="%s"' % cid in dom and tag not in dom, "the numbers of %s are not made until opened" % cid,
        "its table is in the page as loaded" if tag in dom else "no numbers of %s" % cid)
    say(tag in opened, "opening the numbers of %s makes its table" % cid, "no table after opening")


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
    def answer(run):
        return dx(run).get("answer")

    def answer_step(run, step, a, b):
        return next((x for x in answer(run)["steps"] if x["step"] == step and x["a"] == a and x["b"] == b), None)

    def shown_owner(run, v):
        """The owner the page must show for a verdict: the answer's when there is one."""
        if not answer(run):
            return v["owner"]
        x = answer_step(run, v["step"], v["a"], v["b"]) or {}
        return x.get("owner_text") or x.get("owner")

    for cid, c in sorted(charts.items()):
        bad, checked = [], 0
        if c["type"] in ("answer", "owners"):
            run = c["compare_run"]
            A = answer(run)
            what = "headlines" if c["type"] == "answer" else "owners"
            if not A:
                say(False, "%s: the page's %s are diagnose's answer" % (cid, what),
                    "fsprism diagnose --format json has no answer")
                continue
            if c["type"] == "answer":
                want = [h["text"] for h in A["headlines"]]
                say(c["answer"] and c["headlines"] == want, "%s: the headlines are diagnose's answer" % cid,
                    "shown %s, answer %s" % (c["headlines"], want))
                continue
            for row in c["rows"]:
                x = answer_step(run, row[0], row[1], row[2])
                checked += 1
                want = x and (x.get("owner_text") or x.get("owner"))
                if row[3] != want:
                    bad.append("step %s %s->%s: shown %s, answer %s" % (row[0], row[1], row[2], row[3], want))
            missing = [x for x in A["steps"] if not any(r[:3] == [x["step"], x["a"], x["b"]] for r in c["rows"])]
            if missing:
                bad.append("%d answer steps not shown" % len(missing))
            say(checked and not bad, "%s: the %d owners shown are diagnose's answer" % (cid, checked),
                "; ".join(bad[:3]) or "none shown")
            continue
        if cid.startswith("partdiff-"):
            for d in c["datasets"]:
                f = d["fsp"]
                for k, v in enumerate(d["data"]):
                    checked += 1
                    if "compare_run" in f:
                        x = answer_step(f["compare_run"], f["steps"][k], f["a"], f["b"]) or {}
                        want = (x.get(f["key"]) or {}).get(f["owner"])
                    else:
                        b = layer_part(f["run_b"], f["steps"][k], f["ops"][k], f["part"])
                        a = layer_part(f["run_a"], f["steps"][k], f["ops"][k], f["part"])
                        want = round(((b or {}).get(f["key"], 0) - (a or {}).get(f["key"], 0)) * 1000) / 1000
                    if not close(v, want, 0.0011 if "compare_run" not in f else 0):
                        bad.append("%s [%d]: plotted %s, want %s" % (d["label"], k, v, want))
            say(checked and not bad, "%s: %d plotted differences equal fsprism %s --format json" % (
                cid, checked, "diagnose" if c["datasets"] and "compare_run" in c["datasets"][0]["fsp"] else "stats"), "; ".join(bad[:3]) or "nothing plotted")
            continue
        if c["type"] == "table":
            # the diagnosis' verdicts and the tail attribution, row by row
            for k, row in enumerate(c["rows"]):
                if cid.startswith("diagnosis-"):
                    v = dx(c["compare_run"])["verdicts"][k]
                    p50, p99 = v.get("p50_us", {}), v.get("p99_us", {})
                    want = [v["step"], v["label"], v["a"], v["b"], shown_owner(c["compare_run"], v), v["mbps"]["a"],
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
            if cid == "curve-total" and f.get("answer"):
                # the medians of the rounds: the answer's, step by step
                steps = dx(f["answer"])["answer"]["steps"]
                for k, v in enumerate(d["data"]):
                    checked += 1
                    want = next((x["a_mbps"] if x["a"] == f["target"] else x["b_mbps"]
                                 for x in steps if x["step"] == f["step"][k] and
                                 f["target"] in (x["a"], x["b"])), None)
                    if want is None or v is None or abs(v - want) > 1e-6:
                        bad.append("%s [%d]: plotted %s, answer %s" % (d["label"], k, v, want))
                continue
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
    elif sys.argv[1] == "lazy":
        lazy(*sys.argv[2:5])
    else:
        numbers(sys.argv[2], sys.argv[3], sys.argv[4:])
