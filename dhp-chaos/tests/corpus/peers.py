"""Write the three peer-bug entries of this corpus (README.md) as DHP audits.

    python3 peers.py        (in this directory; needs the complete-twice entry)

Each starts from the legal prefix of a real round (the complete-twice
entry: one handoff, claimed, checkpointed, completed by w0001-h0), cut
where the bug strikes, and appends the rows the bug would commit:

- river-1302: a rescuer that read the handoff as stuck before its
  completion committed orphans it afterwards, over the completion
  (River #1302).
- oban-rescue: a rescue by time alone: the handoff is orphaned while its
  holder is alive and its lease live, and another worker recovers it, so
  the job runs twice (Oban, hexpm#1825).
- langgraph-8764: an accepted (claimed) run is dropped from the store
  before its first durable checkpoint, after its worker died (LangGraph
  #8764).
"""
import copy
import json
import os

BASE = "complete-twice"
ORPHANED = "__orphaned__"


def load(name):
    d = os.path.join(os.path.dirname(os.path.abspath(__file__)), name)
    export = json.load(open(os.path.join(d, "store", "export.json")))
    hist = [json.loads(l) for l in open(os.path.join(d, "harness.jsonl"))]
    work = [json.loads(l) for l in open(os.path.join(d, "workload.jsonl"))]
    meta = json.load(open(os.path.join(d, "round.json")))
    return export, hist, work, meta


def current(audit, table, hid):
    row = None
    for e in audit:
        if e["table"] == table and e["hid"] == hid:
            row = e["new"]
    return copy.deepcopy(row)


def change(audit, table, op, hid, old, new, at):
    audit.append({"seq": audit[-1]["seq"] + 1, "table": table, "op": op, "hid": hid,
                  "old": copy.deepcopy(old), "new": copy.deepcopy(new), "at": at})


def orphan_rows(own, env, at, fence):
    o = dict(own, holder=ORPHANED, fence=fence, lease_expires_at=0, updated_at=at)
    h = copy.deepcopy(env)
    h["status"] = h["execution"]["status"] = "orphaned"
    h["execution"].update(orphaned_at=at, orphan_reason="lease-expired")
    h["updated_at"] = at
    return o, h


def write(name, export, hist, work, meta, expect):
    d = os.path.join(os.path.dirname(os.path.abspath(__file__)), name)
    os.makedirs(os.path.join(d, "store"), exist_ok=True)
    stamps = {json.loads(e["new"]["state_json"]).get("stamp") for e in export["audit"]
              if e["table"] == "checkpoints" and e["op"] == "INSERT"}
    json.dump(export, open(os.path.join(d, "store", "export.json"), "w"), separators=(",", ":"))
    json.dump(meta, open(os.path.join(d, "round.json"), "w"), indent=1)
    open(os.path.join(d, "history.jsonl"), "w").close()
    with open(os.path.join(d, "harness.jsonl"), "w") as f:
        for v in sorted(hist, key=lambda v: v["t"]):
            f.write(json.dumps(v, separators=(",", ":")) + "\n")
    with open(os.path.join(d, "workload.jsonl"), "w") as f:
        for v in work:
            if v.get("stamp") in stamps:
                f.write(json.dumps(v, separators=(",", ":")) + "\n")
    json.dump(dict(expect, model="violated", synthetic=True), open(os.path.join(d, "expect.json"), "w"), indent=1)


def cut(export, hist, upto):
    """The prefix of the audit up to seq `upto`, and the harness lines up to its time."""
    ex = copy.deepcopy(export)
    ex["audit"] = [e for e in ex["audit"] if e["seq"] <= upto]
    t = ex["audit"][-1]["at"]
    return ex, [v for v in hist if v["t"] <= t + 0.001 and v["op"] != "exit"], t


def first(audit, pred):
    return next(e for e in audit if pred(e))


def river(export, hist, work, meta, hid):
    done = first(export["audit"], lambda e: e["table"] == "ownership" and e["op"] == "DELETE")
    ex, h, t = cut(export, hist, done["seq"])
    env = current(ex["audit"], "handoffs", hid)
    # the rescuer's stale read saw the row before the completion: holder w0001-h0, fence 0
    own = copy.deepcopy(done["old"])
    o, hrow = orphan_rows(own, env, t + 0.004, own["fence"] + 1)
    change(ex["audit"], "ownership", "INSERT", hid, None, o, t + 0.004)
    change(ex["audit"], "handoffs", "UPDATE", hid, env, hrow, t + 0.004)
    return ex, h, work, meta


def oban(export, hist, work, meta, hid):
    renew = first(export["audit"], lambda e: e["table"] == "ownership" and e["op"] == "UPDATE")
    ex, h, t = cut(export, hist, renew["seq"])
    own, env = current(ex["audit"], "ownership", hid), current(ex["audit"], "handoffs", hid)
    at = t + 0.003  # the lease runs to own["lease_expires_at"], the holder is alive
    o, hrow = orphan_rows(own, env, at, own["fence"] + 1)
    change(ex["audit"], "ownership", "UPDATE", hid, own, o, at)
    change(ex["audit"], "handoffs", "UPDATE", hid, env, hrow, at)
    w2, at2 = "w0002-h0", at + 0.02
    h.append({"t": at2 - 0.01, "pid": 1, "process": "chaos", "op": "spawn", "type": "event", "name": w2,
              "spawned_pid": 2, "role": "worker", "impl": "builtin", "hid": hid})
    o2 = dict(o, holder=w2, fence=o["fence"] + 1, lease_expires_at=at2 + 0.6, updated_at=at2)
    h2 = copy.deepcopy(hrow)
    h2["status"] = h2["execution"]["status"] = "running"
    h2["execution"].update(attempt=hrow["execution"]["attempt"] + 1, runner_id=w2, fence=o2["fence"], claimed_at=at2)
    h2["updated_at"] = at2
    change(ex["audit"], "ownership", "UPDATE", hid, o, o2, at2)
    change(ex["audit"], "handoffs", "UPDATE", hid, hrow, h2, at2)
    return ex, h, work, meta


def langgraph(export, hist, work, meta, hid):
    claim = first(export["audit"], lambda e: e["table"] == "handoffs" and e["op"] == "UPDATE")
    ex, h, t = cut(export, hist, claim["seq"])
    own, env = current(ex["audit"], "ownership", hid), current(ex["audit"], "handoffs", hid)
    w = own["holder"]
    h.append({"t": t + 0.005, "pid": 1, "process": "chaos", "op": "fault", "type": "event", "fault_id": 1,
              "kind": "kill-worker", "signal": "KILL", "victim": w, "role": "worker", "hid": hid,
              "lease_fence": own["fence"]})
    h.append({"t": t + 0.006, "pid": 1, "process": "chaos", "op": "exit", "type": "event", "name": w,
              "role": "worker", "hid": hid, "code": None, "signal": 9})
    at = t + 0.05
    change(ex["audit"], "ownership", "DELETE", hid, own, None, at)
    change(ex["audit"], "handoffs", "DELETE", hid, env, None, at)
    return ex, h, work, meta


EXPECT = {
    "river-1302": ("§4 completed is terminal [idempotent-complete]", river),
    "oban-rescue": ("§7.2 an orphan needs an expired lease or a dead holder [no-lost-results]", oban),
    "langgraph-8764": ("§4 a handoff row is never deleted", langgraph),
}


def main():
    export, hist, work, meta = load(BASE)
    hid = meta["hids"][0]
    for name, (rule, make) in EXPECT.items():
        ex, h, w, m = make(export, hist, work, meta, hid)
        seq = ex["audit"][-1]["seq"] if name != "oban-rescue" else ex["audit"][-3]["seq"]
        write(name, ex, h, w, m, {"rule": rule, "seq": seq, "from": f"{BASE} (synthetic: {name})"})


if __name__ == "__main__":
    main()
