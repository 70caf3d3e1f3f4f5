"""Measure the reference: NetShipper -> a TransportServer at HOST:PORT.

usage: ref_ship_bench.py HOST PORT N LOCAL_LOG [--token T]

Builds a fresh census-like envelope, ships it and N checkpoints with the
reference's NetShipper (local buffer log LOCAL_LOG), and prints one JSON
object: {"ok": true, "hid", "n", "elapsed_s", "per_s"}.
"""
import argparse
import json
import time

from dhp import envelope as E
from dhp.net import NetShipper

ap = argparse.ArgumentParser()
ap.add_argument("host")
ap.add_argument("port", type=int)
ap.add_argument("n", type=int)
ap.add_argument("local")
ap.add_argument("--token", default=None)
a = ap.parse_args()

env = E.build("prime.census", {"inline": {"lo": 7, "hi": 7 + a.n, "chunk": 1,
                                          "nonce": time.time_ns()}},
              {"type": "object"})
hid = env["handoff_id"]
sh = NetShipper(a.host, a.port, token=a.token, local_logpath=a.local)
sh.ship_envelope(hid, env)
t0 = time.perf_counter()
for i in range(a.n):
    sh.ship_checkpoint(hid, i, {"n": i, "count": 3 * i, "total": i * i})
elapsed = time.perf_counter() - t0
sh.close()
print(json.dumps({"ok": True, "hid": hid, "n": a.n, "elapsed_s": elapsed,
                  "per_s": a.n / elapsed if elapsed > 0 else None}))
