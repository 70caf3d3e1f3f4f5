#!/usr/bin/env python3
"""refctl — a one-shot CLI over the Python reference (dhp-protocol 1.3.0).

Used by the Rust interop tests: every call is a separate process that
prints exactly ONE JSON object on stdout (net-serve prints it once it is
listening, then serves until SIGTERM/SIGINT).

  success          {"ok": true, ...}                        exit 0
  reference error  {"ok": false, "error_kind": "<exception class>",
                    "error": "<message>"}                   exit 1
  usage error      {"ok": false, "error_kind": "UsageError", ...}  exit 2
  census --stop-after K: prints {"ok": true, "died": true, ...} and
                   leaves with os._exit(3) (simulated worker death)

JSON-valued options (--inputs, --schema, --budget, --state, --result,
--capabilities, --json) take JSON text, or "@PATH" to read it from a file
("@-" = stdin). Lease/size knobs come from the DHP_* environment variables,
exactly as the reference's DHPConfig reads them. Reference log output goes
to stderr only.

Run `refctl.py -h` for the subcommand list; the README next to this file
documents the output shape of each.
"""
from __future__ import annotations

import argparse
import json
import os
import signal
import socket
import sys
import threading
import time
import traceback

import dhp
from dhp import envelope as E
from dhp import transport as T
from dhp.net import NetShipper, TransportServer
from dhp.prime_chunk import chunk as prime_chunk
from dhp.runner3 import Runner3, TaskContext
from dhp.store import Store
from dhp.supervisor3 import Supervisor3


# --------------------------------------------------------------------------
# plumbing
# --------------------------------------------------------------------------
class UsageError(Exception):
    pass


class _Parser(argparse.ArgumentParser):
    def error(self, message):  # never print argparse's text usage on stdout
        raise UsageError(message)


def emit(obj: dict) -> None:
    sys.stdout.write(json.dumps(obj) + "\n")
    sys.stdout.flush()


def ok(**kw) -> dict:
    return {"ok": True, **kw}


def jarg(text: str):
    """Parse a JSON option value; "@path" reads the file, "@-" stdin."""
    if text.startswith("@"):
        path = text[1:]
        if path == "-":
            text = sys.stdin.read()
        else:
            with open(path, "r", encoding="utf-8") as f:
                text = f.read()
    return json.loads(text)


def runner(root: str, rid: str | None = None) -> Runner3:
    return Runner3(root, runner_id=rid)


def ctx_of(a) -> TaskContext:
    return TaskContext(Runner3(a.root, runner_id=a.runner), a.hid, a.fence)


class _fixed_now:
    """Pin envelope.utcnow() (created_at / derived trace_id) if asked."""

    def __init__(self, value: str | None):
        self.value = value
        self.orig = None

    def __enter__(self):
        if self.value is not None:
            self.orig = E.utcnow
            E.utcnow = lambda: self.value
        return self

    def __exit__(self, *exc):
        if self.orig is not None:
            E.utcnow = self.orig


def _build_kwargs(a) -> dict:
    kw = dict(task_kind=a.kind, inputs=jarg(a.inputs),
              output_schema=jarg(a.schema))
    if a.budget is not None:
        kw["budget"] = jarg(a.budget)
    if a.capabilities is not None:
        kw["capabilities"] = jarg(a.capabilities)
    if a.max_stall_retries is not None:
        kw["max_stall_retries"] = a.max_stall_retries
    if a.created_by is not None:
        kw["created_by"] = a.created_by
    return kw


def _build_env(a) -> dict:
    """envelope.build (or the SDK-style build with --sdk)."""
    kw = _build_kwargs(a)
    if a.sdk:
        # exactly what dhp.dispatch builds
        dhp._validate.check_inputs(kw["inputs"])
        kw["inputs"] = {"inline": kw["inputs"]}
        kw["budget"] = {**dhp._DEFAULT_BUDGET, **(kw.get("budget") or {})}
        kw.setdefault("max_stall_retries", dhp._DEFAULT_MAX_STALL_RETRIES)
        kw.setdefault("capabilities", None)
        kw.setdefault("created_by", "dhp-api")
    for k in ("trace_id", "idempotency_key", "parent_handoff_id",
              "deadline"):
        v = getattr(a, k, None)
        if v is not None:
            kw[k] = v
    if getattr(a, "acceptance", None) is not None:
        kw["acceptance"] = jarg(a.acceptance)
    with _fixed_now(a.created_at):
        return E.build(**kw)


# --------------------------------------------------------------------------
# subcommands
# --------------------------------------------------------------------------
def cmd_dispatch(a):
    if a.sdk and not any(getattr(a, k, None) is not None for k in
                         ("trace_id", "idempotency_key", "parent_handoff_id",
                          "deadline", "acceptance")):
        # the real SDK entry point
        kw = _build_kwargs(a)
        with _fixed_now(a.created_at):
            hid = dhp.dispatch(Store(a.root), **kw)
        return ok(hid=hid)
    env = _build_env(a)
    return ok(hid=runner(a.root).dispatch(env))


def cmd_dispatch_env(a):
    env = jarg("@" + a.file)
    return ok(hid=runner(a.root).dispatch(env))


def cmd_build_env(a):
    return ok(envelope=_build_env(a))


def cmd_claim(a):
    return ok(fence=runner(a.root, a.runner).claim(a.hid).fence)


def cmd_recover(a):
    return ok(fence=runner(a.root, a.runner).recover(a.hid).fence)


def cmd_checkpoint(a):
    return ok(seq=ctx_of(a).checkpoint(jarg(a.state)))


def cmd_heartbeat(a):
    out = ctx_of(a).heartbeat()
    return {**out, "ok": True}


def cmd_note_step(a):
    ctx_of(a).note_step(a.n)
    return ok()


def cmd_note_spend(a):
    ctx_of(a).note_spend(a.usd)
    return ok()


def cmd_complete(a):
    ctx_of(a).complete(jarg(a.result))
    return ok()


def cmd_release(a):
    ctx_of(a).release(a.reason)
    return ok()


def cmd_ack(a):
    runner(a.root).ack(a.hid)
    return ok()


def cmd_last(a):
    return ok(state=runner(a.root).last_checkpoint(a.hid))


def cmd_status(a):
    st = dhp.status(Store(a.root), a.hid)
    return {"ok": True, **st}


def cmd_envelope(a):
    return ok(envelope=runner(a.root)._load(a.hid))


def cmd_checkpoints(a):
    r = runner(a.root)
    cps = r.store.get_checkpoints(a.hid)
    rows = [{"seq": s, "state_json": sj, "state_hash": h, "at": at}
            for (s, sj, h, at) in r.store.cx.execute(
                "SELECT seq, state_json, state_hash, at FROM checkpoints"
                " WHERE hid=? ORDER BY seq", (a.hid,))]
    return ok(checkpoints=cps, rows=rows)


def cmd_ownership(a):
    return ok(ownership=Store(a.root).get_ownership(a.hid))


def cmd_leadership(a):
    return ok(leadership=Store(a.root).get_leadership())


def cmd_scan(a):
    sup = Supervisor3(a.root, supervisor_id=a.sup)
    sup.ensure_leadership()
    actions = sup.scan()
    return ok(actions=actions, is_leader=sup.is_leader,
              scan_errors=sup.metrics.errors)


def cmd_expire(a):
    # exactly what the reference conformance suite does to simulate death
    s = Store(a.root)
    dhp.validate.check_hid(a.hid)
    cur = s.cx.execute("UPDATE ownership SET lease_expires_at=? WHERE hid=?",
                       (time.time() - 1, a.hid))
    return ok(updated=cur.rowcount)


def cmd_ship_envelope(a):
    T.ship_envelope(a.log, runner(a.root)._load(a.hid))
    return ok()


def cmd_ship_checkpoint(a):
    T.ship_checkpoint(a.log, a.seq, jarg(a.state))
    return ok()


def cmd_ingest(a):
    out = T.ingest_log(runner(a.root), a.log)
    return {"ok": True, **out}


def cmd_suspend(a):
    blob = runner(a.root).suspend(a.hid)
    with open(a.out, "wb") as f:
        f.write(blob)
    return ok(hid=a.hid, bytes=len(blob))


def cmd_resume(a):
    with open(a.file, "rb") as f:
        blob = f.read()
    return ok(hid=runner(a.root).resume(blob))


def cmd_census(a):
    """dhp/work_driver4.py's loop, verbatim in behaviour."""
    r = Runner3(a.root, runner_id=a.runner)
    ctx = r.claim(a.hid) if a.mode == "claim" else r.recover(a.hid)
    if a.ship:
        T.ship_envelope(a.ship, r._load(a.hid))
    env = r._load(a.hid)
    lo = env["task"]["inputs"]["inline"]["lo"]
    hi = env["task"]["inputs"]["inline"]["hi"]

    st = r.last_checkpoint(a.hid)
    if st is None:
        nxt, count, total, done = lo, 0, 0, 0
    else:
        nxt, count, total = st["next_n"], st["count"], st["total"]
        done = 0
    cps = 0
    seq = None
    t0 = time.time()
    while nxt < hi:
        chi = min(nxt + a.chunk, hi)
        c = prime_chunk(nxt, chi)
        count += c["count"]
        total += c["sum"]
        nxt = chi
        done += 1
        state = {"next_n": nxt, "count": count, "total": total}
        seq = ctx.checkpoint(state)
        if a.ship:
            T.ship_checkpoint(a.ship, seq, state)
        ctx.note_step()
        ctx.heartbeat()
        cps += 1
        if a.pace:
            time.sleep(a.pace)
        if a.stop_after and cps >= a.stop_after:
            emit(ok(died=True, hid=a.hid, fence=ctx.fence, checkpoints=cps,
                    last_seq=seq, next_n=nxt))
            os._exit(3)
    result = {"lo": lo, "hi": hi, "prime_count": count, "prime_sum": total,
              "chunks_done": done}
    ctx.complete(result)
    return ok(completed=True, hid=a.hid, fence=ctx.fence, result=result,
              checkpoints=cps, last_seq=seq,
              elapsed_s=round(time.time() - t0, 3))


def cmd_net_serve(a):
    srv = TransportServer(a.logdir, host=a.host, port=a.port, token=a.token)
    stop = threading.Event()       # set by SIGTERM/SIGINT or server death
    stopping = threading.Event()   # we asked the server to stop
    failure: list = []

    def _serve():
        try:
            srv.serve_forever()
        except BaseException as e:  # bind failure, or accept() dying
            if not stopping.is_set():  # stop() closing the socket under
                failure.append(e)      # accept() is the normal way out
        finally:
            stop.set()

    def _on_signal(signum, frame):
        stop.set()

    signal.signal(signal.SIGTERM, _on_signal)
    signal.signal(signal.SIGINT, _on_signal)
    th = threading.Thread(target=_serve, daemon=True, name="dhp-serve")
    th.start()
    deadline = time.time() + 10.0
    port = None
    while time.time() < deadline and not stop.is_set():
        s = srv._sock
        try:
            if s is not None and s.getsockopt(socket.SOL_SOCKET,
                                              socket.SO_ACCEPTCONN):
                port = s.getsockname()[1]
                break
        except OSError:
            pass
        time.sleep(0.01)
    if port is None:
        stopping.set()
        srv.stop()
        th.join(timeout=3.0)
        if failure:
            raise failure[0]
        raise TimeoutError("transport server did not start listening")
    emit(ok(port=port, host=a.host, logdir=os.path.abspath(a.logdir)))
    while not stop.wait(0.2):
        pass
    stopping.set()
    srv.stop()
    th.join(timeout=3.0)
    if failure:
        # the one JSON object is already out; report on stderr + exit 1
        print(f"refctl net-serve: server died: {type(failure[0]).__name__}:"
              f" {failure[0]}", file=sys.stderr)
        sys.exit(1)
    return None


def cmd_net_ship(a):
    r = runner(a.root)
    env = r._load(a.hid)
    cps = r.store.get_checkpoints(a.hid)
    sh = NetShipper(a.host, a.port, token=a.token, local_logpath=a.local)
    try:
        sh.ship_envelope(a.hid, env)
        for cp in cps:
            sh.ship_checkpoint(a.hid, cp["seq"], cp["state"])
    finally:
        sh.close()
    return ok(shipped=len(cps), seqs=[cp["seq"] for cp in cps])


def cmd_canonical(a):
    v = jarg(a.json)
    cb = E.canonical(v)
    out = ok(canonical_hex=cb.hex(), sha256_canonical=E.sha256_hex(cb))
    if isinstance(v, dict):
        sj = json.dumps(v, sort_keys=True)
        out.update(state_json=sj, state_hash=E.sha256_hex(sj.encode()))
    return out


# --------------------------------------------------------------------------
# argument parsing
# --------------------------------------------------------------------------
def build_parser() -> argparse.ArgumentParser:
    ap = _Parser(prog="refctl.py",
                 description="one-shot JSON CLI over dhp-protocol "
                             f"{dhp.__version__} (the reference)")
    sub = ap.add_subparsers(dest="cmd", required=True, parser_class=_Parser)

    def add(name, fn, help_):
        p = sub.add_parser(name, help=help_)
        p.set_defaults(fn=fn)
        return p

    def build_opts(p):
        p.add_argument("--kind", required=True)
        p.add_argument("--inputs", required=True, help="JSON object")
        p.add_argument("--schema", required=True, help="output schema JSON")
        p.add_argument("--budget", help="JSON object")
        p.add_argument("--sdk", action="store_true",
                       help="dhp.dispatch style: inputs wrapped as"
                            " {'inline': ...}, SDK budget defaults merged")
        p.add_argument("--capabilities", help="JSON object")
        p.add_argument("--max-stall-retries", type=int)
        p.add_argument("--created-by")
        p.add_argument("--created-at",
                       help="pin envelope.utcnow() (created_at and the"
                            " derived trace_id)")
        p.add_argument("--trace-id")
        p.add_argument("--idempotency-key")
        p.add_argument("--parent-handoff-id")
        p.add_argument("--deadline")
        p.add_argument("--acceptance", help="JSON list")

    def owner_opts(p):
        p.add_argument("root")
        p.add_argument("hid")
        p.add_argument("--runner", required=True)
        p.add_argument("--fence", type=int, required=True)

    p = add("dispatch", cmd_dispatch, "build + dispatch -> {hid}")
    p.add_argument("root")
    build_opts(p)

    p = add("dispatch-env", cmd_dispatch_env,
            "dispatch an envelope JSON file -> {hid}")
    p.add_argument("root")
    p.add_argument("file")

    p = add("build-env", cmd_build_env, "build only -> {envelope}")
    build_opts(p)

    for name, fn in (("claim", cmd_claim), ("recover", cmd_recover)):
        p = add(name, fn, f"{name} -> {{fence}}")
        p.add_argument("root")
        p.add_argument("hid")
        p.add_argument("--runner", required=True)

    p = add("checkpoint", cmd_checkpoint, "-> {seq}")
    owner_opts(p)
    p.add_argument("--state", required=True, help="JSON object")

    p = add("heartbeat", cmd_heartbeat, "-> {expires_in_s}")
    owner_opts(p)

    p = add("note-step", cmd_note_step, "-> {}")
    owner_opts(p)
    p.add_argument("--n", type=int, default=1)

    p = add("note-spend", cmd_note_spend, "-> {}")
    owner_opts(p)
    p.add_argument("--usd", type=float, required=True)

    p = add("complete", cmd_complete, "-> {}")
    owner_opts(p)
    p.add_argument("--result", required=True, help="JSON")

    p = add("release", cmd_release, "-> {}")
    owner_opts(p)
    p.add_argument("--reason", default="")

    for name, fn, h in (
            ("ack", cmd_ack, "-> {}"),
            ("last", cmd_last, "-> {state}"),
            ("status", cmd_status, "-> dhp.status() fields"),
            ("envelope", cmd_envelope, "-> {envelope} (Runner3._load)"),
            ("checkpoints", cmd_checkpoints, "-> {checkpoints, rows}"),
            ("ownership", cmd_ownership, "-> {ownership}"),
            ("expire", cmd_expire,
             "set lease_expires_at to now-1 -> {updated}")):
        p = add(name, fn, h)
        p.add_argument("root")
        p.add_argument("hid")

    p = add("leadership", cmd_leadership, "-> {leadership}")
    p.add_argument("root")

    p = add("scan", cmd_scan, "one supervisor scan -> {actions, is_leader}")
    p.add_argument("root")
    p.add_argument("--sup", required=True, help="supervisor id")

    p = add("ship-envelope", cmd_ship_envelope, "-> {}")
    p.add_argument("log")
    p.add_argument("root")
    p.add_argument("hid")

    p = add("ship-checkpoint", cmd_ship_checkpoint, "-> {}")
    p.add_argument("log")
    p.add_argument("seq", type=int)
    p.add_argument("--state", required=True, help="JSON object")

    p = add("ingest", cmd_ingest,
            "-> {handoff_id, checkpoints_ingested, lines_skipped}")
    p.add_argument("root")
    p.add_argument("log")

    p = add("suspend", cmd_suspend, "-> {hid, bytes}")
    p.add_argument("root")
    p.add_argument("hid")
    p.add_argument("--out", required=True)

    p = add("resume", cmd_resume, "-> {hid}")
    p.add_argument("root")
    p.add_argument("file")

    p = add("census", cmd_census, "prime-census worker (work_driver4)")
    p.add_argument("root")
    p.add_argument("hid")
    p.add_argument("--runner", required=True)
    p.add_argument("--mode", choices=["claim", "recover"], required=True)
    p.add_argument("--ship", help="transport log path")
    p.add_argument("--chunk", type=int, default=50)
    p.add_argument("--pace", type=float, default=0.0)
    p.add_argument("--stop-after", type=int, default=0,
                   help="os._exit(3) after K checkpoints of this process")

    p = add("net-serve", cmd_net_serve,
            "TransportServer; prints {port} once listening")
    p.add_argument("logdir")
    p.add_argument("--port", type=int, default=0,
                   help="0 = let the OS choose (the chosen port is printed)")
    p.add_argument("--host", default="127.0.0.1")
    p.add_argument("--token", default=None,
                   help="default: $DHP_TRANSPORT_TOKEN")

    p = add("net-ship", cmd_net_ship,
            "ship envelope + all checkpoints with NetShipper -> {shipped}")
    p.add_argument("host")
    p.add_argument("port", type=int)
    p.add_argument("root")
    p.add_argument("hid")
    p.add_argument("--local", help="local log path (NetShipper buffer)")
    p.add_argument("--token", default=None,
                   help="default: $DHP_TRANSPORT_TOKEN")

    p = add("canonical", cmd_canonical,
            "-> {canonical_hex, sha256_canonical[, state_json, state_hash]}")
    p.add_argument("json", help="JSON text or @file")

    return ap


def main(argv=None) -> int:
    try:
        a = build_parser().parse_args(argv)
    except UsageError as e:
        emit({"ok": False, "error_kind": "UsageError", "error": str(e)})
        return 2
    except SystemExit as e:  # -h / --help
        return int(e.code or 0)
    try:
        out = a.fn(a)
    except Exception as e:  # noqa: BLE001 — every failure becomes JSON
        if os.environ.get("REFCTL_TRACEBACK"):
            traceback.print_exc()
        emit({"ok": False, "error_kind": type(e).__name__, "error": str(e)})
        return 1
    if out is not None:
        emit(out)
    return 0


if __name__ == "__main__":
    sys.exit(main())
