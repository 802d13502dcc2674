#!/usr/bin/env python3
# answer_check.py TEXT JSON - do the text and the JSON of one diagnosis name
# the same owners? TEXT: `fsprism diagnose DB --wide` (the answer, then every
# verdict, lines whole); JSON: `fsprism diagnose DB --format json`. Checks
# every headline line, every bathtub line, the owner of each step's largest
# drop, and the owner of every verdict line against the JSON's "answer" and
# "verdicts". Prints "ok N" (N things compared) or the first difference.
import json
import re
import sys

text = open(sys.argv[1]).read().splitlines()
d = json.load(open(sys.argv[2]))
a = d["answer"]
n = 0
errors = []

# the answer block: from "the answer (" to "diagnosis of compare run"
try:
    start = next(i for i, l in enumerate(text) if l.startswith("the answer ("))
except StopIteration:
    print("no answer block in the text")
    sys.exit(0)
end = next((i for i, l in enumerate(text) if l.startswith("diagnosis of compare run")), len(text))
block = text[start:end]

for h in a["headlines"]:
    n += 1
    if "- " + h["text"] not in block:
        errors.append("headline not printed: %r" % h["text"])
    if h["owner"] is not None and h["worst"] is not None:
        step = [s for s in a["steps"] if s["step"] == h["worst"]["step"] and s["b"] == h["b"]]
        n += 1
        if not step or step[0]["owner"] != h["owner"]:
            errors.append("headline %s -> %s owner %s is not its worst step's" %
                          (h["a"], h["b"], h["owner"]))

names = {"raw": "raw", "fs": d.get("fs_name") or None}
for s in a["shapes"]:
    if not s["bathtub"]:
        continue
    n += 1
    name = s["text"].split(":")[0]
    lines = [l for l in block if l.startswith("- bathtub: %s," % name)]
    if not lines or not lines[0].endswith("owner " + s["owner"]):
        errors.append("bathtub of %s: text %r, JSON owner %s" % (name, lines, s["owner"]))

# the step rows: "  NAME  MB/s ...   TARGET +-N%: OWNER TEXT"
by_step = {}
for s in a["steps"]:
    by_step.setdefault(s["name"], []).append(s)
for l in block:
    m = re.match(r"^  (\S+) +[0-9.* -]+?   (\S+) ([+-]\d+)%: (.*)$", l)
    if not m or m.group(1) not in by_step:
        continue
    n += 1
    bname, owner = m.group(2), m.group(4)
    cands = [s for s in by_step[m.group(1)] if s["owner_text"] == owner]
    if not cands:
        errors.append("step %s: text owner %r, JSON %r" %
                      (m.group(1), owner, [s["owner_text"] for s in by_step[m.group(1)]]))

# the verdict lines: "step N  LABEL  (...)" then "    A -> B   OWNER   ..."
verdicts = {(v["step"], v["a"], v["b"]): v for v in d["verdicts"]}
labels = {}
step = None
for l in text[end:]:
    m = re.match(r"^step (\d+)  ", l)
    if m:
        step = int(m.group(1))
        continue
    m = re.match(r"^    (\S+) -> (\S+) +(\S+) ", l)
    if m and step is not None:
        n += 1
        owner = m.group(3)
        vs = [v for (st, _, _), v in verdicts.items() if st == step and v["owner"] == owner]
        if not vs:
            errors.append("step %d %s -> %s: text owner %s not in the JSON" %
                          (step, m.group(1), m.group(2), owner))
# the JSON's own views agree: every verdict's owner is its answer step's
for s in a["steps"]:
    v = verdicts.get((s["step"], s["a"], s["b"]))
    n += 1
    if not v or v["owner"] != s["owner"] or v["owner_text"] != s["owner_text"]:
        errors.append("step %d %s -> %s: verdict %s, answer %s" %
                      (s["step"], s["a"], s["b"], v and v["owner_text"], s["owner_text"]))
print("ok %d" % n if not errors and n else "differ: %s" % (errors[:2] if errors else "nothing compared"))
