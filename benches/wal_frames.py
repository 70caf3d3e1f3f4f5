#!/usr/bin/env python3
"""What dhp-rs's extra SQLite indexes cost each write, in WAL frames.

  wal_frames.py --dhp PATH/TO/dhp [--n N]

A WAL commit writes every page it changed as one frame (page size + 24
bytes) and then fsyncs, so frames per commit are the bytes an operation
makes the disk take. The same writer — the reference's Runner3, so that
only the schema differs — claims N handoffs and writes N checkpoints on
two stores: one the reference created (its tables and indexes only), one
`dhp dispatch` created (the same tables plus dhp-rs's indexes,
docs/scale.md). A read transaction held open on the side keeps SQLite
from checkpointing the WAL, so its growth counts every frame written.

Run it with the venv interpreter (scripts/setup.sh). Prints one JSON
object. Not part of compare.sh: it counts bytes, it does not time.
"""
from __future__ import annotations

import argparse
import json
import os
import sqlite3
import subprocess
import tempfile

from dhp import envelope as E
from dhp.runner3 import Runner3


def frames(root: str, dhp: str | None, n: int) -> dict:
    os.makedirs(root, exist_ok=True)
    if dhp:
        # dhp-rs creates the store, hence its extra indexes.
        subprocess.run([dhp, "dispatch", root, "--census", "0,100,10"], check=True, capture_output=True)
    r = Runner3(root, runner_id="w1")
    hids = [r.dispatch(E.build("bench.frames", {"i": i}, {})) for i in range(n)]
    cp_hid = r.dispatch(E.build("bench.frames", {"i": "checkpoints"}, {}))
    db = os.path.join(root, "dhp.sqlite3")
    hold = sqlite3.connect(db, isolation_level=None)
    hold.execute("BEGIN")
    hold.execute("SELECT count(*) FROM handoffs").fetchone()
    page = hold.execute("PRAGMA page_size").fetchone()[0]
    wal = db + "-wal"

    def size() -> int:
        return os.path.getsize(wal) if os.path.exists(wal) else 0

    a = size()
    for h in hids:
        r.claim(h)
    b = size()
    ctx = r.claim(cp_hid)
    c = size()
    for i in range(n):
        ctx.checkpoint({"i": i})
    d = size()
    indexes = [x[0] for x in hold.execute("SELECT name FROM sqlite_master WHERE type='index' ORDER BY name")]
    hold.execute("ROLLBACK")
    frame = page + 24
    return {"claim": round((b - a) / frame / n, 2), "checkpoint": round((d - c) / frame / n, 2),
            "indexes": len(indexes)}


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--dhp", required=True, help="the dhp binary (creates the indexed store)")
    ap.add_argument("--n", type=int, default=100, help="claims and checkpoints per store")
    a = ap.parse_args()
    with tempfile.TemporaryDirectory() as d:
        out = {"reference_store": frames(os.path.join(d, "ref"), None, a.n),
               "dhp_rs_store": frames(os.path.join(d, "ours"), a.dhp, a.n), "n": a.n}
    print(json.dumps(out))


if __name__ == "__main__":
    main()
