"""A shipping client that dies mid-line.

usage: partial_client.py HOST PORT TOKEN ENVELOPE_JSON_FILE LOCAL_LOG K

Speaks the wire protocol by hand (as dhp.net does): hello, envelope, K
checkpoints (seq 0..K-1), each also appended to LOCAL_LOG in the log
format first. Then it writes the first half of checkpoint K to the local
log AND to the socket, prints {"ok": true, "ready": true, ...} and sleeps
until it is SIGKILLed: the truncated line is what a crash mid-write
leaves behind on both sides.
"""
import hashlib
import json
import socket
import sys
import time

host, port, token, env_file, local, k = sys.argv[1:7]
port, k = int(port), int(k)
with open(env_file) as f:
    env = json.load(f)
hid = env["handoff_id"]


def line(obj):
    return json.dumps(obj, sort_keys=True) + "\n"


def cp(seq):
    state = {"next_n": 100 + seq, "count": seq, "total": seq * 7}
    blob = json.dumps(state, sort_keys=True)
    return {"type": "checkpoint", "seq": seq, "state": state,
            "state_hash": hashlib.sha256(blob.encode()).hexdigest(),
            "at": "2026-01-01T00:00:00+00:00"}


s = socket.create_connection((host, port), timeout=10)
f = s.makefile("rwb")


def rpc(obj):
    f.write(line(obj).encode())
    f.flush()
    return json.loads(f.readline())


r = rpc({"type": "hello", "handoff_id": hid, "token": token})
assert r["ok"], r
with open(local, "a") as lf:
    e = dict(env)
    e["execution"] = dict(e["execution"], checkpoints=[])
    lf.write(line({"type": "envelope", "envelope": e}))
assert rpc({"type": "envelope", "envelope": env})["ok"]
for seq in range(k):
    frame = cp(seq)
    with open(local, "a") as lf:
        lf.write(line(frame))
    r = rpc(frame)
    assert r == {"ok": True, "seq": seq}, r
torn = line(cp(k))[: len(line(cp(k))) // 2]
with open(local, "a") as lf:
    lf.write(torn)
f.write(torn.encode())
f.flush()
print(json.dumps({"ok": True, "ready": True, "hid": hid, "shipped": k}), flush=True)
time.sleep(600)
