#!/usr/bin/env python3
"""The reference half of benches/compare.sh: the same operations as the
`dhp-bench run` binary, measured on dhp-protocol 1.3.0, written as JSON.

  ref_bench.py run --dir D [--quick] --out F    (needs `dhp-bench fixtures --dir D`)
  ref_bench.py rss --dir D --out F              peak RSS of the reference's worker
                                                (dhp.work_driver4) on a census handoff

Run it with the venv interpreter (scripts/setup.sh). Keys, units and
fixture shapes match benches/src/suite.rs and benches/src/fixture.rs; the
ingest log and the scan store are the very files the Rust side uses.
"""
from __future__ import annotations

import argparse
import json
import os
import resource
import shutil
import sqlite3
import statistics
import subprocess
import sys
import tempfile
import threading
import time

import dhp
from dhp import envelope as E
from dhp import transport as T
from dhp.config import DHPConfig
from dhp.runner3 import Runner3
from dhp.store import Store
from dhp.supervisor3 import Supervisor3

assert dhp.__version__ == "1.3.0", dhp.__version__

KIND = "bench.task"
# Same as bench_config(): defaults, with a lease no measurement outlives.
CFG = DHPConfig(lease_interval_s=1200.0)
SDK_BUDGET = {"max_steps": 10000, "max_spend_usd": 500.0, "max_wallclock_s": 5400.0, "max_attempts": 5}
SCHEMA = {"type": "object", "properties": {"ok": {"type": "boolean"}}, "required": ["ok"]}

FULL = dict(rounds=3, build_iters=3000, hash_1k_iters=3000, hash_100k_iters=30, dispatch_iters=300,
            claim_iters=300, ckpt_depths=[100, 1000, 2000, 10000], ckpt_iters=50, ckpt_budget_s=120.0,
            recover_races=20, racers=8, ingest_reps=2, scan_reps=3, ship_iters=1000)
QUICK = dict(rounds=1, build_iters=20, hash_1k_iters=20, hash_100k_iters=2, dispatch_iters=5,
             claim_iters=5, ckpt_depths=[100, 1000], ckpt_iters=5, ckpt_budget_s=10.0,
             recover_races=2, racers=8, ingest_reps=1, scan_reps=1, ship_iters=10)


def log(msg: str) -> None:
    print(f"reference {msg}", file=sys.stderr, flush=True)


def inputs(i: int) -> dict:
    return {"i": i, "payload": "x" * 64}


def sdk_envelope(i: int) -> dict:
    """What dhp.dispatch builds (inputs wrapped as {"inline": ...})."""
    return E.build(task_kind=KIND, inputs={"inline": inputs(i)}, output_schema=SCHEMA,
                   budget=dict(SDK_BUDGET), max_stall_retries=2, created_by="dhp-api")


def state_of_size(nbytes: int) -> dict:
    """fixture::state_of_size: the identical object."""
    n = max(nbytes // 70, 1)
    return {"n": n, "items": [{"id": j, "name": f"item-{j}", "score": j * 0.5, "tags": ["alpha", "beta"]}
                              for j in range(n)]}


def small_state(i: int) -> dict:
    return {"next_n": i * 100, "count": i, "total": i * 7}


def rate(rounds: int, iters: int, f) -> float:
    """Median over rounds of iters/elapsed; f gets the global call index."""
    rates, k = [], 0
    for _ in range(max(rounds, 1)):
        t = time.perf_counter()
        for _ in range(max(iters, 1)):
            f(k)
            k += 1
        rates.append(max(iters, 1) / (time.perf_counter() - t))
    return statistics.median(rates)


def op(r: float, unit: str, detail: str) -> dict:
    return {"rate": r, "unit": unit, "detail": detail}


def fresh_root(work: str, tag: str) -> str:
    return tempfile.mkdtemp(prefix=f"ref-{tag}-", dir=work)


def bulk_create(store: Store, first: int, n: int) -> list:
    hids = []
    for i in range(first, first + n):
        env = sdk_envelope(i)
        store.create_handoff(env["handoff_id"], env)
        hids.append(env["handoff_id"])
    return hids


def prefill(db: str, hid: str, n: int) -> None:
    """Raw bulk insert of checkpoints 0..n-1 in one transaction."""
    cx = sqlite3.connect(db, timeout=30.0)
    at = E.utcnow()
    rows = []
    for seq in range(n):
        blob = json.dumps(small_state(seq), sort_keys=True)
        rows.append((hid, seq, blob, E.sha256_hex(blob.encode()), at))
    with cx:
        cx.executemany("INSERT INTO checkpoints (hid, seq, state_json, state_hash, at) VALUES (?,?,?,?,?)", rows)
    cx.execute("PRAGMA wal_checkpoint(TRUNCATE)")
    cx.close()


def recover_race(work: str, racers: int, races: int) -> float:
    root = fresh_root(work, "recover")
    owner = Runner3(root, runner_id="w0", cfg=CFG)
    sup = Supervisor3(root, supervisor_id="sup", cfg=CFG)
    runners = [Runner3(root, runner_id=f"r{k}", store=Store(root, cfg=CFG), cfg=CFG) for k in range(racers)]
    start, end = threading.Barrier(racers + 1), threading.Barrier(racers + 1)
    slot = {"hid": None}
    wins = []
    lock = threading.Lock()

    def racer(r):
        while True:
            start.wait()
            hid = slot["hid"]
            if hid is None:
                return
            try:
                r.recover(hid)
                with lock:
                    wins.append(r.runner_id)
            except Exception:  # noqa: BLE001 - losers raise OwnershipLost/StateError
                pass
            end.wait()

    threads = [threading.Thread(target=racer, args=(r,), daemon=True) for r in runners]
    for t in threads:
        t.start()
    total = 0.0
    for i in range(races):
        env = sdk_envelope(i)
        hid = owner.dispatch(env)
        owner.claim(hid)
        act = sup.orphan(hid)
        assert act["action"] == "orphaned", act
        slot["hid"] = hid
        wins.clear()
        t = time.perf_counter()
        start.wait()
        end.wait()
        total += time.perf_counter() - t
        assert len(wins) == 1, f"exactly one of {racers} recoverers must win, {len(wins)} did"
    slot["hid"] = None
    start.wait()
    for t in threads:
        t.join()
    return races / total


def ship_tcp(work: str, rounds: int, iters: int) -> dict:
    import socket
    from dhp.net import NetShipper
    d = fresh_root(work, "tcp")
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    server = subprocess.Popen([sys.executable, "-c",
                               "import sys; from dhp.net import TransportServer; "
                               "TransportServer(sys.argv[1], host='127.0.0.1', port=int(sys.argv[2]), token='')"
                               ".serve_forever()", os.path.join(d, "server-logs"), str(port)])
    try:
        deadline = time.time() + 10
        while True:
            try:
                socket.create_connection(("127.0.0.1", port), timeout=1).close()
                break
            except OSError:
                if time.time() > deadline:
                    raise
                time.sleep(0.05)
        sh = NetShipper("127.0.0.1", port, token="", local_logpath=os.path.join(d, "buffer.log"))
        env = sdk_envelope(1)
        hid = env["handoff_id"]
        sh.ship_envelope(hid, env)
        r = rate(rounds, iters, lambda i: sh.ship_checkpoint(hid, i, small_state(i)))
        sh.close()
        lines = sum(1 for _ in open(os.path.join(d, "server-logs", hid + ".log")))
        assert lines == 1 + rounds * iters, lines
    finally:
        server.terminate()
        server.wait()
    return op(r, "lines/s", "NetShipper.ship_checkpoint (returns on the server's reply) to TransportServer "
                            "in another process; local buffer log")


def run(a) -> dict:
    s = QUICK if a.quick else FULL
    fx = json.load(open(os.path.join(a.dir, "fixtures.json")))
    work = fx["work"]
    ops, notes = {}, []
    t0 = time.perf_counter()

    def step(name, v):
        ops[name] = v
        r = v.get("rate")
        log(f"[{time.perf_counter() - t0:6.1f}s] {name}: " + (f"{r:.1f} {v['unit']}" if r else v.get("skipped", "")))

    R = s["rounds"]
    step("envelope_build", op(rate(R, s["build_iters"], lambda i: sdk_envelope(i)), "ops/s",
                              "envelope.build (SDK arguments) incl. input_hash, trace_id, handoff_id"))
    for name, nbytes, iters in (("canonical_hash_1k", 1000, s["hash_1k_iters"]),
                                ("canonical_hash_100k", 100000, s["hash_100k_iters"])):
        st = state_of_size(nbytes)
        n = len(E.canonical(st))
        step(name, op(rate(R, iters, lambda i: E.sha256_hex(E.canonical(st))), "ops/s",
                      f"sha256_hex(canonical(state)), {n} bytes"))

    # dispatch: the SDK call
    root = fresh_root(work, "dispatch")
    store = Store(root, cfg=CFG)
    step("dispatch", op(rate(R, s["dispatch_iters"],
                             lambda i: dhp.dispatch(store, KIND, inputs(i), SCHEMA, created_by="dhp-api", cfg=CFG)),
                        "ops/s", "dhp.dispatch: build + verify + insert"))
    store.close()

    # claim
    root = fresh_root(work, "claim")
    r0 = Runner3(root, runner_id="w1", cfg=CFG)
    hids = bulk_create(r0.store, 0, R * s["claim_iters"])
    step("claim", op(rate(R, s["claim_iters"], lambda i: r0.claim(hids[i])), "ops/s", "Runner3.claim"))
    r0.store.close()

    # checkpoint at depth: one store per depth, its WAL warmed on a second
    # handoff (as the Rust side does); rounds interleaved across depths with
    # a rotating order, median per depth.
    beds = []
    for d in s["ckpt_depths"]:
        root = fresh_root(work, f"ckpt{d}")
        r = Runner3(root, runner_id="w1", cfg=CFG)
        hid = r.dispatch(sdk_envelope(d))
        ctx = r.claim(hid)
        prefill(os.path.join(root, "dhp.sqlite3"), hid, d)
        other = r.claim(r.dispatch(sdk_envelope(10**9 + d)))
        for k in range(min(s["ckpt_iters"] * 6, 300)):
            other.checkpoint(small_state(k))
        bed = {"d": d, "root": root, "r": r, "ctx": ctx, "next": d, "rates": []}

        def one(_, bed=bed):
            bed["ctx"].checkpoint(small_state(bed["next"]))
            bed["next"] += 1

        bed["one"] = one
        # Skip a depth whose full measurement would exceed the time budget
        # (the reference is O(n) per checkpoint).
        t = time.perf_counter()
        one(0)
        per = time.perf_counter() - t
        bed["skip"] = per * R * s["ckpt_iters"] > s["ckpt_budget_s"]
        beds.append(bed)
    for rnd in range(R):
        for k in range(len(beds)):
            bed = beds[(rnd + k) % len(beds)]
            if not bed["skip"]:
                bed["rates"].append(rate(1, s["ckpt_iters"], bed["one"]))
    for bed in beds:
        d = bed["d"]
        if bed["skip"]:
            step(f"checkpoint_{d}", {"rate": None, "unit": "ckpt/s",
                                     "skipped": f"would take > {s['ckpt_budget_s']:.0f} s (O(n) per checkpoint)"})
        else:
            step(f"checkpoint_{d}", op(statistics.median(bed["rates"]), "ckpt/s",
                                       f"TaskContext.checkpoint after {d} earlier checkpoints "
                                       f"(median of {R} rounds of {s['ckpt_iters']})"))
        bed["r"].store.close()
    if not a.quick:
        ops["checkpoint_100000"] = {"rate": None, "unit": "ckpt/s",
                                    "skipped": "capped at 10k: O(n) per checkpoint"}
        notes.append("Reference checkpoints are measured at 100, 1k, 2k and 10k earlier checkpoints only "
                     "(each of its checkpoints re-reads all earlier rows); 100k is not run.")

    # recover race
    step("recover_race", op(recover_race(work, s["racers"], s["recover_races"]), "races/s",
                            f"{s['racers']} racer threads, own Store each; exactly one wins"))

    # ingest: the same log file the Rust side ingests
    lines = fx["ingest_lines"]
    times = []
    for _ in range(s["ingest_reps"]):
        root = fresh_root(work, "ingest")
        runner = Runner3(root, runner_id="ingest", cfg=CFG)
        t = time.perf_counter()
        rep = dhp.transport_ingest(runner, fx["log"], CFG)
        times.append(time.perf_counter() - t)
        assert rep["checkpoints_ingested"] == lines, rep
        runner.store.close()
    step("ingest", op(lines / statistics.median(times), "lines/s",
                      f"transport_ingest of the same {lines}-line log into a fresh store"))

    # TCP ship: the reference's NetShipper (synchronous: one frame, one reply)
    # to its TransportServer in a separate process, with a local buffer log.
    step("ship_tcp_sync", ship_tcp(work, s["rounds"], s["ship_iters"]))
    ops["ship_tcp_async"] = {"rate": None, "unit": "lines/s",
                             "skipped": "the reference has no asynchronous shipper"}

    # supervisor scan over the copy of the Rust side's scan store
    sup = Supervisor3(fx["scan_ref"], supervisor_id="bench-sup", cfg=CFG)
    acts = sup.scan()
    assert acts == [], acts
    n = fx["scan_handoffs"]
    r = rate(1, s["scan_reps"], lambda i: sup.scan())
    step("scan", op(r, "scans/s", f"Supervisor3.scan over {n} running handoffs ({r * n:.0f} handoffs/s)"))

    load = os.getloadavg()[0]
    # Scratch stores are removed only now (as on the Rust side): deleting
    # files mid-run makes the file system discard blocks under later fsyncs.
    for name in os.listdir(work):
        if name.startswith("ref-"):
            shutil.rmtree(os.path.join(work, name), ignore_errors=True)
    return {"impl": "dhp-protocol 1.3.0", "quick": a.quick, "ops": ops, "notes": notes,
            "loadavg_end": load, "python": sys.version.split()[0],
            "sqlite": sqlite3.sqlite_version}


def rss(a) -> dict:
    """Peak RSS of the reference's own worker driver on a census handoff
    (the same census `dhp-bench rss` gives `dhp work`)."""
    lo, hi, chunk = 0, 200_000, 2_000
    work = os.path.join(a.dir, "work")
    os.makedirs(work, exist_ok=True)
    root = fresh_root(work, "rss")
    store = Store(root)
    chunks = -(-(hi - lo) // chunk)
    env = E.build(task_kind="prime.census", inputs={"inline": {"lo": lo, "hi": hi, "chunk": chunk}},
                  output_schema={"type": "object", "required": ["prime_count"]},
                  budget={"max_steps": chunks + 100, "max_spend_usd": 500.0, "max_wallclock_s": 5400.0,
                          "max_attempts": 25}, created_by="dhp-bench")
    hid = Runner3(root, runner_id="dispatcher", store=store).dispatch(env)
    store.close()
    t = time.perf_counter()
    out = subprocess.run([sys.executable, "-m", "dhp.work_driver4", "--root", root, "--runner", "w-rss",
                          "--chunk", str(chunk), "claim", hid], capture_output=True, text=True)
    el = time.perf_counter() - t
    kib = resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss
    shutil.rmtree(root, ignore_errors=True)
    if out.returncode != 0:
        raise SystemExit(f"reference worker failed: {out.stdout} {out.stderr}")
    return {"max_rss_kib": kib, "census": f"{lo},{hi},{chunk}",
            "detail": {"checkpoints": chunks, "elapsed_s": el, "worker": "python -m dhp.work_driver4",
                       "result": out.stdout.strip().splitlines()[-1] if out.stdout.strip() else None}}


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("cmd", choices=["run", "rss"])
    ap.add_argument("--dir", required=True)
    ap.add_argument("--out", required=True)
    ap.add_argument("--quick", action="store_true")
    a = ap.parse_args()
    res = run(a) if a.cmd == "run" else rss(a)
    with open(a.out, "w") as f:
        json.dump(res, f, indent=2)
        f.write("\n")


if __name__ == "__main__":
    main()
