"""dhp-chaos history shim for the Python reference (dhp-protocol 1.3.0).

Runs the reference's own script (work_driver4.py or supervisor3_watch.py)
unchanged, after wrapping the reference's Runner3 / Supervisor3 methods so
that every protocol operation is appended to the round's history file in
the same JSON-lines format as `dhp work --history`:

    {"t", "pid", "process", "op", "type": invoke|ok|fail, "hid", "holder",
     "fence", "seq", "next_n", ...}

Only observation is added: the wrapped methods are called exactly as the
driver calls them, with the same arguments, and their results and
exceptions are passed through untouched. One os.write() per line on an
O_APPEND descriptor, so a SIGKILL loses at most the line in flight.

    python chaos_shim.py worker|supervisor HISTORY NAME SCRIPT [ARGS...]

Pause points (workers, optional): DHP_CHAOS_PAUSE_POINTS="NAME=P,..." makes
the process SIGSTOP itself with probability P at NAME — a simulated
preemption at a precise place, between the reference's ownership check and
its write (they are separate statements in the reference's store):

    checkpoint.after_check   in Store.add_checkpoint, before the INSERT
    complete.after_check     in the completing save_envelope, before the UPDATE
    claim.after_ownership    in Runner3.claim, after the ownership INSERT, before the envelope save
    recover.after_ownership  in Runner3.recover, after the ownership CAS, before the envelope save

Draws come from random.Random(DHP_CHAOS_PAUSE_SEED). The harness notices the
stopped process and SIGCONTs it after it was replaced.

DHP_CHAOS_SHIM_MUTANT=no-fence (workers, tests only) plants one bug: the
reference's checkpoint without its ownership/fence check.

Workload service (workers; DHP_WORKLOAD_URL set, CONTRACT.md §2.1): the
reference's census chunk function is replaced by a GET of the chunk from
the harness's workload service, and every checkpoint the driver writes (and
ships) carries the answer's "stamp" — as every worker under dhp-chaos must.
The reference's own code computes nothing else differently.
"""
import json
import os
import random
import runpy
import signal
import sys
import threading
import time
import urllib.error
import urllib.parse
import urllib.request


def main():
    role, hist_path, name, script = sys.argv[1:5]
    rest = sys.argv[5:]
    fd = os.open(hist_path, os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o644)
    pid = os.getpid()

    def rec(op, typ, **fields):
        line = {"t": time.time(), "pid": pid, "process": name, "op": op,
                "type": typ, "impl": "python"}
        line.update(fields)
        os.write(fd, (json.dumps(line) + "\n").encode())

    def fail(op, e, **fields):
        rec(op, "fail", error=str(e), error_kind=type(e).__name__, **fields)

    sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(script))))

    points = {}
    for part in os.environ.get("DHP_CHAOS_PAUSE_POINTS", "").split(","):
        if "=" in part:
            k, v = part.split("=", 1)
            points[k.strip()] = float(v)
    rng = random.Random(int(os.environ.get("DHP_CHAOS_PAUSE_SEED", "0")))
    tls = threading.local()

    def pause_point(point, **fields):
        p = points.get(point, 0.0)
        if p > 0 and rng.random() < p:
            rec("pause-point", "event", name=point, **fields)
            os.kill(pid, signal.SIGSTOP)

    if role == "worker":
        from dhp.runner3 import Runner3
        orig_claim, orig_recover = Runner3.claim, Runner3.recover
        orig_checkpoint, orig_complete = Runner3.checkpoint, Runner3.complete
        if os.environ.get("DHP_CHAOS_SHIM_MUTANT") == "no-fence":
            # A planted bug for dhp-chaos's own tests (tests/it/model_mutants.rs):
            # Runner3.checkpoint with its one line `self._check_owner(hid, fence)` left out.
            def orig_checkpoint(self, hid, state, fence):
                from dhp import validate as V
                V.check_checkpoint_state(state, self.cfg)
                seq = self.store.add_checkpoint(hid, state)
                self.store.note_checkpoint_progress(hid)
                return seq
        # the handoff this process works on, as its claim/recover returned it
        held = {}
        stamps = {}  # next_n -> the stamp of the chunk that ends there
        workload = os.environ.get("DHP_WORKLOAD_URL")
        if workload:
            import dhp.prime_chunk

            def served_chunk(lo, hi):
                q = urllib.parse.urlencode({"hid": held.get("hid", ""), "n": lo, "end": hi,
                                            "holder": held.get("holder", ""), "fence": held.get("fence", -1)})
                # this process's own credential: the service knows who asks by it
                cred = os.environ.get("DHP_WORKLOAD_CREDENTIAL", "")
                req = urllib.request.Request(f"{workload}/chunk?{q}",
                                             headers={"Authorization": f"Bearer {cred}"} if cred else {})
                try:
                    with urllib.request.urlopen(req, timeout=10) as r:
                        ans = json.loads(r.read())
                except urllib.error.HTTPError as e:
                    raise RuntimeError(f"workload service refused [{lo}, {hi}): {e.read()[:300]!r}") from e
                stamps[hi] = ans["stamp"]
                return {"count": ans["count"], "sum": ans["sum"]}

            dhp.prime_chunk.chunk = served_chunk

            from dhp import transport as T
            orig_ship = T.ship_checkpoint

            def ship_checkpoint(path, seq, state, *args, **kwargs):
                return orig_ship(path, seq, stamped(state), *args, **kwargs)

            T.ship_checkpoint = ship_checkpoint

        def stamped(state):
            if isinstance(state, dict) and "stamp" not in state and state.get("next_n") in stamps:
                return dict(state, stamp=stamps[state["next_n"]])
            return state

        def start(op, orig):
            def wrapped(self, hid):
                rec(op, "invoke", hid=hid, holder=self.runner_id)
                try:
                    ctx = orig(self, hid)
                except BaseException as e:
                    fail(op, e, hid=hid, holder=self.runner_id)
                    raise
                rec(op, "ok", hid=hid, holder=self.runner_id, fence=ctx.fence)
                held.update(hid=hid, holder=self.runner_id, fence=ctx.fence)
                return ctx
            return wrapped

        def checkpoint(self, hid, state, fence):
            state = stamped(state)
            f = dict(hid=hid, holder=self.runner_id, fence=fence,
                     next_n=state.get("next_n") if isinstance(state, dict) else None)
            rec("checkpoint", "invoke", **f)
            try:
                seq = orig_checkpoint(self, hid, state, fence)
            except BaseException as e:
                fail("checkpoint", e, **f)
                raise
            rec("checkpoint", "ok", seq=seq, **f)
            return seq

        def complete(self, hid, result, fence):
            f = dict(hid=hid, holder=self.runner_id, fence=fence)
            rec("complete", "invoke", result=result, **f)
            tls.completing = (hid, fence)
            try:
                out = orig_complete(self, hid, result, fence)
            except BaseException as e:
                fail("complete", e, **f)
                raise
            finally:
                tls.completing = None
            rec("complete", "ok", result=result, **f)
            return out

        if points:
            from dhp.store import Store
            orig_add, orig_save = Store.add_checkpoint, Store.save_envelope

            def add_checkpoint(self, hid, state):
                pause_point("checkpoint.after_check", hid=hid,
                            next_n=state.get("next_n") if isinstance(state, dict) else None)
                return orig_add(self, hid, state)

            def save_envelope(self, hid, env):
                c = getattr(tls, "completing", None)
                if c and c[0] == hid and env.get("execution", {}).get("status") == "completed":
                    pause_point("complete.after_check", hid=hid, fence=c[1])
                return orig_save(self, hid, env)

            orig_acquire = Store.acquire_ownership

            def acquire_ownership(self, hid, holder, interval_s, max_missed, expected_fence=None):
                fence = orig_acquire(self, hid, holder, interval_s, max_missed, expected_fence=expected_fence)
                point = "claim.after_ownership" if expected_fence is None else "recover.after_ownership"
                pause_point(point, hid=hid, fence=fence)
                return fence

            Store.add_checkpoint = add_checkpoint
            Store.save_envelope = save_envelope
            Store.acquire_ownership = acquire_ownership

        Runner3.claim = start("claim", orig_claim)
        Runner3.recover = start("recover", orig_recover)
        Runner3.checkpoint = checkpoint
        Runner3.complete = complete
    elif role == "supervisor":
        from dhp.supervisor3 import Supervisor3
        orig_orphan, orig_budget = Supervisor3.orphan, Supervisor3.kill_on_budget

        def orphan(self, hid, reason="lease-expired"):
            before = self.store.get_ownership(hid) or {}
            out = orig_orphan(self, hid, reason)
            if out.get("action") not in (None, "already-orphaned-or-released"):
                after = self.store.get_ownership(hid) or {}
                fields = dict(out)
                fields.update(reason=reason,
                              previous_holder=before.get("holder"),
                              previous_fence=before.get("fence"),
                              fence=after.get("fence"))
                rec("supervise", "ok", **fields)
            return out

        def kill_on_budget(self, hid, reasons):
            out = orig_budget(self, hid, reasons)
            rec("supervise", "ok", **out)
            return out

        Supervisor3.orphan = orphan
        Supervisor3.kill_on_budget = kill_on_budget
    else:
        sys.exit(f"chaos_shim: unknown role {role!r}")

    sys.argv = [script] + rest
    runpy.run_path(script, run_name="__main__")


if __name__ == "__main__":
    main()
