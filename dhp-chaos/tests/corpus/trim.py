"""Cut a failing dhp-chaos round down to a corpus entry for `model`.

    python3 trim.py ROUND_DIR OUT_DIR NAME

Keeps what the `model` verdict rests on, for the handoff of the round's
first `model` violation: the audit up to that violation (that handoff's
rows and the leadership row), the harness's own records (spawns, faults,
exits) up to then, the workload service's record of the chunks those
checkpoints carry, the handoff's envelope, and round.json. Writes
OUT_DIR/NAME/{round.json, harness.jsonl, history.jsonl, workload.jsonl,
store/export.json, expect.json}; expect.json holds the verdict to
re-judge (rule and audit seq of the first violation).
"""
import json
import os
import re
import sqlite3
import sys


def scrub(v):
    """This machine's paths (binaries, the run directory) as their file names."""
    if isinstance(v, dict):
        return {k: scrub(x) for k, x in v.items()}
    if isinstance(v, list):
        return [scrub(x) for x in v]
    if isinstance(v, str) and v.startswith("/"):
        return os.path.basename(v)
    if isinstance(v, str):
        return re.sub(r"/[^\s'\"]*/", "", v)
    return v


def main():
    src, out, name = sys.argv[1:4]
    report = json.load(open(os.path.join(src, "round-report.json")))
    model = next(v for v in report["invariants"] if v["name"] == "model")
    first = model["violations"][0]
    rule = re.match(r"\[([^\]]*\])[^\]]*\]", first).group(1)
    seq = int(re.search(r"audit seq (\d+)", first).group(1))
    db = sqlite3.connect(os.path.join(src, "store", "dhp.sqlite3"))
    rows = db.execute("SELECT seq, tbl, op, hid, old_json, new_json, at FROM dhpchaos_audit "
                      "WHERE seq <= ? ORDER BY seq", (seq,)).fetchall()
    hid = next(r[3] for r in rows if r[0] == seq)
    if hid is None:  # a leadership step: the handoff changed last before it, if any
        hid = next((r[3] for r in reversed(rows) if r[3] is not None), None)
    keep = [r for r in rows if (hid is not None and r[3] == hid) or r[1] == "leadership"]
    parse = lambda t: None if t is None else json.loads(t)
    audit = [{"seq": r[0], "table": r[1], "op": r[2], "hid": r[3], "old": parse(r[4]),
              "new": parse(r[5]), "at": r[6]} for r in keep]
    t_last = keep[-1][6]
    env = db.execute("SELECT envelope_json, updated_at FROM handoffs WHERE hid = ?", (hid,)).fetchall()
    d = os.path.join(out, name)
    os.makedirs(os.path.join(d, "store"), exist_ok=True)
    export = {"handoffs": [{"hid": hid, "envelope_json": e[0], "updated_at": e[1]} for e in env],
              "checkpoints": [], "ownership": [], "audit": audit}
    json.dump(export, open(os.path.join(d, "store", "export.json"), "w"), separators=(",", ":"))
    meta = json.load(open(os.path.join(src, "round.json")))
    meta["hids"] = [hid] if hid else []
    meta = scrub(meta)
    meta.pop("final", None)
    json.dump(meta, open(os.path.join(d, "round.json"), "w"), indent=1)
    # the harness's own records (harness.jsonl since the judged can no longer
    # write them); the processes' history.jsonl is detail and left empty
    open(os.path.join(d, "history.jsonl"), "w").close()
    with open(os.path.join(d, "harness.jsonl"), "w") as h:
        for line in open(os.path.join(src, "harness.jsonl")):
            v = json.loads(line)
            if v.get("process") != "chaos" or v["op"] not in ("spawn", "fault", "exit", "round"):
                continue
            if v["t"] > t_last + 2.0 or v.get("hid") not in (None, hid):
                continue
            h.write(json.dumps(v, separators=(",", ":")) + "\n")
    stamps = set()
    for e in audit:
        if e["table"] == "checkpoints" and e["op"] == "INSERT":
            st = json.loads(e["new"]["state_json"])
            stamps.add(st.get("stamp"))
    with open(os.path.join(d, "workload.jsonl"), "w") as w:
        for line in open(os.path.join(src, "workload.jsonl")):
            v = json.loads(line)
            if v.get("stamp") in stamps:
                w.write(json.dumps(v, separators=(",", ":")) + "\n")
    json.dump({"model": "violated", "rule": rule, "seq": seq, "from": name}, open(os.path.join(d, "expect.json"), "w"), indent=1)


if __name__ == "__main__":
    main()
