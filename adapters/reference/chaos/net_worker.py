"""net_worker.py — the reference's census worker, shipping over TCP.

The net-chaos scenario of dhp-chaos runs this as the reference's worker.
dhp-protocol 1.3.0 ships no TCP-shipping worker script (its README's
`demo/net_chaos.py` is not in the package), so this is the loop of the
reference's own work_driver4.py — Runner3 claim/recover, one census chunk
per checkpoint, note_step and heartbeat after each — with the file
transport replaced by the reference's `dhp.net.NetShipper`, used as its
docstring says ("drop-in for file-based ship_* in workers"): the envelope
is shipped once after the claim/recover, then every checkpoint right after
it is committed, synchronously (ship_checkpoint returns once the server
acknowledged it). NetShipper also appends every line to a local buffer log
(`--ship-buffer DIR/`, the file `DIR/<hid>.log`).

Nothing of the reference is changed or wrapped here (the history shim,
chaos_shim.py, runs this script the way it runs work_driver4.py).

    python net_worker.py --root R --runner ID --chunk N --pace S
        --ship-to HOST:PORT --ship-buffer DIR (claim|recover) HID

The transport token is read by NetShipper from DHP_TRANSPORT_TOKEN.
"""
import argparse
import json
import os
import time

from dhp.net import NetShipper
from dhp.prime_chunk import chunk
from dhp.runner3 import Runner3


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--root", required=True)
    ap.add_argument("--runner", required=True)
    ap.add_argument("--chunk", type=int, default=50)
    ap.add_argument("--pace", type=float, default=0.0)
    ap.add_argument("--ship-to", required=True, help="HOST:PORT of a transport server")
    ap.add_argument("--ship-buffer", required=True, help="directory of the local buffer logs")
    ap.add_argument("mode", choices=["claim", "recover"])
    ap.add_argument("hid")
    a = ap.parse_args()
    host, port = a.ship_to.rsplit(":", 1)

    r = Runner3(a.root, runner_id=a.runner)
    ctx = r.claim(a.hid) if a.mode == "claim" else r.recover(a.hid)
    shipper = NetShipper(host, int(port),
                         local_logpath=os.path.join(a.ship_buffer, a.hid + ".log"))
    shipper.ship_envelope(a.hid, r._load(a.hid))
    env = r._load(a.hid)
    lo = env["task"]["inputs"]["inline"]["lo"]
    hi = env["task"]["inputs"]["inline"]["hi"]

    st = r.last_checkpoint(a.hid)
    if st is None:
        nxt, count, total = lo, 0, 0
    else:
        nxt, count, total = st["next_n"], st["count"], st["total"]
    done = 0
    t0 = time.time()
    while nxt < hi:
        chi = min(nxt + a.chunk, hi)
        c = chunk(nxt, chi)
        count += c["count"]
        total += c["sum"]
        nxt = chi
        done += 1
        state = {"next_n": nxt, "count": count, "total": total}
        seq = ctx.checkpoint(state)
        shipper.ship_checkpoint(a.hid, seq, state)
        ctx.note_step()
        ctx.heartbeat()
        if a.pace:
            time.sleep(a.pace)
    shipper.close()
    ctx.complete({"lo": lo, "hi": hi, "prime_count": count,
                  "prime_sum": total, "chunks_done": done})
    print(json.dumps({"completed": True, "hid": a.hid[:12],
                      "prime_count": count, "prime_sum": total,
                      "chunks_done": done,
                      "elapsed_s": round(time.time() - t0, 1)}))


if __name__ == "__main__":
    main()
