#!/usr/bin/env python3
"""dhp-conform adapter for the Python reference implementation
(dhp-protocol 1.3.0). The protocol is documented in dhp-conform/ADAPTERS.md
and its messages in spec/adapter/ (JSON Schemas).

One JSON request per line on stdin, one JSON reply per line on stdout, in
order; logs go to stderr; exit at EOF or after "shutdown". Run it with the
interpreter that has the reference installed:

    .venv/bin/python adapters/reference/python_ref.py     # (bash scripts/setup.sh)
    cargo run -p dhp-conform -- --impl reference

Every operation is a direct call into the reference's public or
conformance-suite API (Runner3, TaskContext, Supervisor3, Store, transport,
envelope); the time controls are the raw SQL its own conform.py uses.
"""
from __future__ import annotations

import hashlib
import json
import os
import sqlite3
import sys
import time
import traceback

import dhp
from dhp import envelope as E
from dhp import errors as DHE
from dhp import log as dhp_log
from dhp import transport as T
from dhp.runner3 import Runner3, TaskContext
from dhp.store import Store
from dhp.supervisor3 import Supervisor3

FEATURES = ["standard-store", "env-config", "stall-detection", "effects",
            "capabilities", "canonical", "approvals"]


class AdapterError(Exception):
    """An error reply with an adapter-level kind."""

    def __init__(self, kind: str, message: str):
        super().__init__(message)
        self.kind = kind


def bad(msg: str) -> AdapterError:
    return AdapterError("BadRequest", msg)


class Adapter:
    def __init__(self) -> None:
        self.stores: dict[str, Store] = {}
        self.sups: dict[tuple[str, str], Supervisor3] = {}

    # ---- plumbing -------------------------------------------------------
    @staticmethod
    def arg(a: dict, key: str, kind=str):
        if key not in a:
            raise bad(f"args.{key} is missing")
        v = a[key]
        if kind is not None and not isinstance(v, kind) or (kind is int and isinstance(v, bool)):
            raise bad(f"args.{key} has the wrong type")
        return v

    def store(self, root: str) -> Store:
        st = self.stores.get(root)
        if st is None:
            st = Store(root)
            self.stores[root] = st
        return st

    def runner(self, a: dict, worker: str = "dhp-adapter") -> Runner3:
        root = self.arg(a, "root")
        return Runner3(root, runner_id=worker, store=self.store(root))

    def worker(self, a: dict) -> Runner3:
        return self.runner(a, self.arg(a, "worker"))

    def token(self, a: dict):
        r = self.worker(a)
        return r, self.arg(a, "hid"), self.arg(a, "fence", int)

    def ctx(self, a: dict) -> TaskContext:
        r, hid, fence = self.token(a)
        return TaskContext(r, hid, fence)

    def supervisor(self, a: dict) -> Supervisor3:
        root, sid = self.arg(a, "root"), self.arg(a, "supervisor")
        key = (root, sid)
        sup = self.sups.get(key)
        if sup is None:
            sup = Supervisor3(root, supervisor_id=sid)
            self.sups[key] = sup
        return sup

    def sql(self, root: str, query: str, params: tuple) -> int:
        st = self.store(root)
        with st._lock:
            return st.cx.execute(query, params).rowcount

    # ---- operations -----------------------------------------------------
    def op_hello(self, a):
        return {"implementation": "dhp-protocol (Python reference)",
                "version": dhp.__version__, "protocol_version": "1.3",
                "adapter_protocol": 1, "features": FEATURES,
                "pid": os.getpid()}

    def op_shutdown(self, a):
        return {}

    def op_open(self, a):
        root = self.arg(a, "root")
        old = self.stores.pop(root, None)
        if old is not None:
            old.close()
        for key in [k for k in self.sups if k[0] == root]:
            self.sups.pop(key).store.close()
        st = self.store(root)
        return {"store_file": st.path}

    def op_build_envelope(self, a):
        env = E.build(task_kind=self.arg(a, "kind"),
                      inputs=self.arg(a, "inputs", None),
                      output_schema=self.arg(a, "output_schema", None),
                      budget=a.get("budget"),
                      capabilities=a.get("capabilities"),
                      max_stall_retries=a.get("max_stall_retries", 2),
                      idempotency_key=a.get("idempotency_key"),
                      created_by=a.get("created_by", "dhp/0.1"))
        return {"envelope": env}

    def op_dispatch(self, a):
        return {"hid": self.runner(a).dispatch(self.arg(a, "envelope", None))}

    def op_claim(self, a):
        return {"fence": self.worker(a).claim(self.arg(a, "hid")).fence}

    def op_recover(self, a):
        return {"fence": self.worker(a).recover(self.arg(a, "hid")).fence}

    def op_checkpoint(self, a):
        r, hid, fence = self.token(a)
        return {"seq": r.checkpoint(hid, self.arg(a, "state", None), fence)}

    def op_heartbeat(self, a):
        r, hid, fence = self.token(a)
        return {"expires_in_s": r.heartbeat(hid, fence)["expires_in_s"]}

    def op_note_step(self, a):
        self.ctx(a).note_step(self.arg(a, "n", int))
        return {}

    def op_note_spend(self, a):
        self.ctx(a).note_spend(self.arg(a, "usd", (int, float)))
        return {}

    def op_complete(self, a):
        r, hid, fence = self.token(a)
        r.complete(hid, self.arg(a, "result", None), fence)
        return {}

    def op_release(self, a):
        r, hid, fence = self.token(a)
        r.release(hid, fence, self.arg(a, "reason"))
        return {}

    def op_ack(self, a):
        self.runner(a).ack(self.arg(a, "hid"))
        return {}

    def op_last_checkpoint(self, a):
        return {"state": self.runner(a).last_checkpoint(self.arg(a, "hid"))}

    def op_status(self, a):
        r = self.runner(a)
        hid = self.arg(a, "hid")
        env = r._load(hid)
        ex = env["execution"]
        own = r.store.get_ownership(hid)
        out = {
            "handoff_id": hid,
            "status": ex["status"],
            "attempt": ex.get("attempt", 0),
            "checkpoints": len(ex["checkpoints"]),
            "owner": own["holder"] if own else None,
            "fence": own["fence"] if own else None,
            "steps": ex.get("steps", 0),
            "spend_usd": ex.get("spend_usd", 0.0),
            "result": env["delivery"].get("result"),
            "acked": bool(env["delivery"].get("outbox", {}).get("ack", False)),
            "error": ex.get("error"),
            "orphan_reason": ex.get("orphan_reason"),
        }
        if isinstance(ex.get("stall_count"), int):
            out["stall_count"] = ex["stall_count"]
        return out

    def op_load_envelope(self, a):
        return {"envelope": self.runner(a)._load(self.arg(a, "hid"))}

    def op_ownership(self, a):
        own = self.store(self.arg(a, "root")).get_ownership(self.arg(a, "hid"))
        if own is None:
            return {"ownership": None}
        return {"ownership": {"holder": own["holder"], "fence": own["fence"],
                              "lease_expires_at": own["lease_expires_at"]}}

    def op_leadership(self, a):
        return {"leadership": self.store(self.arg(a, "root")).get_leadership()}

    def op_ensure_leadership(self, a):
        return {"leader": bool(self.supervisor(a).ensure_leadership())}

    def op_scan(self, a):
        return {"actions": self.supervisor(a).scan()}

    def op_expire_lease(self, a):
        # What the reference's conform.py does to simulate a dead worker.
        hid = self.arg(a, "hid")
        n = self.sql(self.arg(a, "root"),
                     "UPDATE ownership SET lease_expires_at=? WHERE hid=?",
                     (time.time() - 1, hid))
        return {"updated": n > 0}

    def op_expire_leadership(self, a):
        n = self.sql(self.arg(a, "root"),
                     "UPDATE leadership SET expires_at=? WHERE id=1",
                     (time.time() - 1,))
        return {"updated": n > 0}

    def op_ship_envelope(self, a):
        env = self.runner(a)._load(self.arg(a, "hid"))
        T.ship_envelope(self.arg(a, "log"), env)
        return {}

    def op_ship_checkpoint(self, a):
        T.ship_checkpoint(self.arg(a, "log"), self.arg(a, "seq", int),
                          self.arg(a, "state", None))
        return {}

    def op_ingest(self, a):
        out = T.ingest_log(self.runner(a), self.arg(a, "log"))
        return {"handoff_id": out["handoff_id"],
                "checkpoints_ingested": out["checkpoints_ingested"],
                "lines_skipped": out["lines_skipped"]}

    def op_suspend(self, a):
        blob = self.runner(a).suspend(self.arg(a, "hid"))
        with open(self.arg(a, "path"), "wb") as f:
            f.write(blob)
        return {"bytes": len(blob)}

    def op_resume(self, a):
        with open(self.arg(a, "path"), "rb") as f:
            blob = f.read()
        return {"hid": self.runner(a).resume(blob)}

    def op_record_effect(self, a):
        return {"recorded": bool(self.ctx(a).record_effect(
            self.arg(a, "step_id"), self.arg(a, "result", None)))}

    def op_effect_done(self, a):
        res = self.ctx(a).effect_done(self.arg(a, "step_id"))
        return {"done": res is not None, "result": res}

    def op_note_activity(self, a):
        return {"repeat_count": self.ctx(a).note_activity(self.arg(a, "digest"))}

    def op_require_capability(self, a):
        self.ctx(a).require_capability(self.arg(a, "domain"), self.arg(a, "resource"))
        return {}

    def op_request_approval(self, a):
        self.ctx(a).request_approval(self.arg(a, "action_class"), self.arg(a, "details", dict),
                                     float(self.arg(a, "timeout_s", (int, float))))
        return {}

    def op_approvals(self, a):
        rows = self.store(self.arg(a, "root")).approvals_for(self.arg(a, "hid"))
        return {"approvals": [{"approval_id": r["approval_id"], "action_class": r["action_class"],
                               "status": r["status"]} for r in rows]}

    def op_decide_approval(self, a):
        st = self.store(self.arg(a, "root"))
        approved = self.arg(a, "approved", bool)
        aid = self.arg(a, "approval_id")
        return {"decided": bool(dhp.approve(st, aid) if approved else dhp.deny(st, aid))}

    def op_await_approval(self, a):
        self.ctx(a).await_approval(self.arg(a, "approval_id"), poll_s=0.05)
        return {}

    def op_canonical(self, a):
        value = json.loads(self.arg(a, "text"))
        blob = E.canonical(value)
        out = {"canonical_hex": blob.hex(), "sha256": E.sha256_hex(blob),
               "state_json": None, "state_hash": None}
        if isinstance(value, dict):
            text = json.dumps(value, sort_keys=True)
            out["state_json"] = text
            out["state_hash"] = E.sha256_hex(text.encode())
        return out

    def op_handoff_id(self, a):
        env = json.loads(self.arg(a, "text"))
        return {"handoff_id": E.handoff_id(env),
                "input_hash": E.sha256_hex(E.canonical(env["task"].get("inputs", {})))}


def reply_for(adapter: Adapter, req) -> dict:
    rid = req.get("id", 0) if isinstance(req, dict) else 0
    try:
        if not isinstance(req, dict) or not isinstance(req.get("args"), dict):
            raise bad("a request is an object with id, op and args")
        fn = getattr(adapter, "op_" + str(req.get("op")), None)
        if fn is None:
            raise AdapterError("Unsupported", f"unknown op {req.get('op')!r}")
        at = req.get("at")
        if isinstance(at, (int, float)):
            delay = at - time.time()
            if delay > 0:
                time.sleep(delay)
        return {"id": rid, "ok": True, "result": fn(req["args"])}
    except AdapterError as e:
        kind, msg = e.kind, str(e)
    except DHE.DHPError as e:
        kind, msg = type(e).__name__, str(e)
    except sqlite3.Error as e:
        kind, msg = "StoreError", str(e)
    except Exception as e:  # anything else is a bug somewhere: say so
        traceback.print_exc(file=sys.stderr)
        kind, msg = "Internal", f"{type(e).__name__}: {e}"
    return {"id": rid, "ok": False, "error": {"kind": kind, "message": msg}}


def main() -> None:
    dhp_log.configure(os.environ.get("DHP_LOG_LEVEL", "WARNING"))
    adapter = Adapter()
    while True:
        line = sys.stdin.readline()
        if not line:
            break
        if not line.strip():
            continue
        try:
            req = json.loads(line)
        except ValueError as e:
            req = None
            out = {"id": 0, "ok": False,
                   "error": {"kind": "BadRequest", "message": f"not JSON: {e}"}}
        else:
            out = reply_for(adapter, req)
        sys.stdout.write(json.dumps(out) + "\n")
        sys.stdout.flush()
        if isinstance(req, dict) and req.get("op") == "shutdown":
            break


if __name__ == "__main__":
    main()
