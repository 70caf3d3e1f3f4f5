#!/usr/bin/env python3
"""Seed the fuzz corpus (fuzz/corpus/<target>/seed-*) from the interop
vectors and the reference implementation (dhp-protocol 1.3.0).

    .venv/bin/python scripts/pyref/fuzz_seeds.py

Deterministic (fixed times, no randomness): re-running rewrites the same
files. Seeds are small, valid-looking inputs that get the fuzzer past the
first checks of each parser (a hid of 64 hex, a verifying envelope, a
matching state hash); libFuzzer mutates from there.
"""
from __future__ import annotations

import hashlib
import json
import os
import shutil
import tempfile

import dhp
from dhp import envelope as E
from dhp import transport as T
from dhp.runner3 import Runner3

assert dhp.__version__ == "1.3.0", dhp.__version__

REPO = os.path.abspath(os.path.join(os.path.dirname(__file__), "..", ".."))
VEC = os.path.join(REPO, "dhp-core", "tests", "vectors")
OUT = os.path.join(REPO, "fuzz", "corpus")
AT = "2026-11-30T00:00:00.000000+00:00"


def dumps(obj) -> str:
    return json.dumps(obj, sort_keys=True)


def state_hash(state) -> str:
    return hashlib.sha256(json.dumps(state, sort_keys=True).encode()).hexdigest()


def put(target: str, name: str, data) -> None:
    d = os.path.join(OUT, target)
    os.makedirs(d, exist_ok=True)
    if isinstance(data, str):
        data = data.encode("utf-8")
    with open(os.path.join(d, "seed-" + name), "wb") as f:
        f.write(data)


def cp(seq, state, hid=None, prev=None) -> dict:
    rec = {"type": "checkpoint", "seq": seq, "state": state, "state_hash": state_hash(state), "at": AT}
    if hid is not None:
        rec["hid"] = hid
    if prev is not None:
        rec["prev"] = prev
    return rec


def main() -> None:
    envs = json.load(open(os.path.join(VEC, "envelopes.json")))
    canon = json.load(open(os.path.join(VEC, "canonical.json")))
    for t in ("transport_log", "tcp_frames", "bundle", "envelope_dispatch", "env_config", "json_text", "adapter"):
        d = os.path.join(OUT, t)
        if os.path.isdir(d):
            for f in os.listdir(d):
                if f.startswith("seed-"):
                    os.remove(os.path.join(d, f))

    states = [{"n": 0}, {"count": 25, "next_n": 100, "total": 1060}, {"s": "\u00e9\u2028\x7f", "f": 1e16, "big": 2**70}]
    for c in envs[:8]:
        env = json.loads(c["envelope_text"])
        hid = c["handoff_id"]
        name = c["name"]
        put("envelope_dispatch", name, c["envelope_text"])
        header = dumps({"type": "envelope", "envelope": dict(env, execution=dict(env["execution"], checkpoints=[]))})
        # The reference's own log lines (unbound) and ours (bound).
        plain = [header] + [dumps(cp(i, s)) for i, s in enumerate(states)]
        bound, prev = [header], None
        for i, s in enumerate(states):
            bound.append(dumps(cp(i, s, hid, prev)))
            prev = state_hash(s)
        put("transport_log", name + "-ref", "\n".join(plain) + "\n")
        put("transport_log", name + "-bound", "\n".join(bound) + "\n")
        put("transport_log", name + "-torn", "\n".join(bound)[:-20])
        hello = dumps({"type": "hello", "handoff_id": hid, "token": ""})
        frames = [hello, dumps({"type": "envelope", "envelope": env})] + bound[1:] + [dumps({"type": "bye"})]
        put("tcp_frames", name, "\n".join(frames) + "\n")
        put("tcp_frames", name + "-ref", "\n".join([hello, frames[1]] + plain[1:]) + "\n")

    # Bundles made by the reference's suspend.
    tmp = tempfile.mkdtemp()
    try:
        r = Runner3(tmp, runner_id="seed")
        for i, c in enumerate(envs[:4]):
            env = json.loads(c["envelope_text"])
            hid = r.dispatch(env)
            ctx = r.claim(hid)
            for s in states[: i + 1]:
                ctx.checkpoint(s)
            put("bundle", c["name"], r.suspend(hid))
    finally:
        shutil.rmtree(tmp, ignore_errors=True)

    for c in canon:
        put("json_text", c["name"], c["input"])

    put("env_config", "defaults", "")
    put("env_config", "all", "\n".join([
        "DHP_LEASE_INTERVAL_S=2.0", "DHP_LEASE_MAX_MISSED=3", "DHP_SUPERVISOR_SCAN_S=1.0",
        "DHP_LEADER_TTL_S=5.0", "DHP_STALL_TIMEOUT_S=120", "DHP_STALL_MAX_REPEATS=10",
        "DHP_MAX_CHECKPOINT_BYTES=1000000", "DHP_MAX_ENVELOPE_BYTES=10000000",
        "DHP_MAX_RESULT_BYTES=10000000", "DHP_MAX_CHECKPOINTS=1000000",
        "DHP_TRANSPORT_MAX_LINE_BYTES=2000000"]) + "\n")
    put("env_config", "short-leases", "DHP_LEASE_INTERVAL_S=0.05\nDHP_LEASE_MAX_MISSED=2\nDHP_SUPERVISOR_SCAN_S=0.05\nDHP_LEADER_TTL_S=0.5\n")

    reqs = [
        {"id": 1, "op": "hello", "args": {"adapter_protocol": 1}},
        {"id": 7, "op": "checkpoint", "args": {"root": "/tmp/x/store", "worker": "w1", "hid": envs[0]["handoff_id"], "fence": 0, "state": {"s": 1}}},
        {"id": 8, "op": "canonical", "args": {"text": "[1.5e-07, 1e16]"}},
    ]
    reps = [
        {"id": 1, "ok": True, "result": {"implementation": "dhp-rs", "version": "0.1.0", "protocol_version": "1.3", "adapter_protocol": 1, "features": []}},
        {"id": 7, "ok": True, "result": {"seq": 0}},
        {"id": 7, "ok": False, "error": {"kind": "FencingError", "message": "stale ownership"}},
    ]
    put("adapter", "requests", "\n".join(json.dumps(r) for r in reqs) + "\n")
    put("adapter", "replies", "\n".join(json.dumps(r) for r in reps) + "\n")


if __name__ == "__main__":
    main()
