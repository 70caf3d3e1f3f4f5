"""Vectors of what crosses a boundary, from the Python reference (dhp 1.3.0):
transport logs with the reference's ingest verdict, suspend bundles with
its resume verdict, and TCP sessions with the reference server's replies.
Used by gen_vectors.py (see spec/vectors/README.md for the format).

Deterministic: gen_vectors.py patches dhp.envelope.utcnow; this module
also fixes dhp.runner3's clock while it builds a bundle.
"""
from __future__ import annotations

import hashlib
import json
import os
import shutil
import socket
import tempfile

import dhp.runner3 as R3
from dhp import envelope as E
from dhp import net, transport

SCHEMA_X = {"type": "object", "properties": {"x": {"type": "integer"}}, "required": ["x"]}
CLAIMED_AT = 1767323045.5


def sha(b: bytes) -> str:
    return hashlib.sha256(b).hexdigest()


def _envelope(n: int) -> dict:
    return E.build(task_kind="t", inputs={"inline": {"n": n}}, output_schema=SCHEMA_X)


def _sorted(obj) -> str:
    return json.dumps(obj, sort_keys=True)


def _verdict(fn):
    """{"ok": true, "result": …} or {"ok": false, "error": class name}."""
    try:
        return {"ok": True, "result": fn()}
    except Exception as e:  # noqa: BLE001 -- the verdict is the class
        return {"ok": False, "error": type(e).__name__}


# --------------------------------------------------------------------------
# transport logs
# --------------------------------------------------------------------------
def _shipped_lines(env: dict, states: list) -> list:
    """The reference's own header and checkpoint lines for env."""
    d = tempfile.mkdtemp(prefix="dhp-vectors-log-")
    try:
        log = os.path.join(d, env["handoff_id"] + ".log")
        transport.ship_envelope(log, env)
        for seq, st in enumerate(states):
            transport.ship_checkpoint(log, seq, st)
        with open(log, encoding="utf-8") as f:
            return f.read().splitlines()
    finally:
        shutil.rmtree(d, ignore_errors=True)


def _ingest(text: str) -> dict:
    d = tempfile.mkdtemp(prefix="dhp-vectors-ingest-")
    try:
        log = os.path.join(d, "in.log")
        with open(log, "w", encoding="utf-8", newline="") as f:
            f.write(text)
        runner = R3.Runner3(os.path.join(d, "root"), runner_id="vectors")
        return _verdict(lambda: transport.ingest_log(runner, log))
    finally:
        shutil.rmtree(d, ignore_errors=True)


def _edit(line: str, f) -> str:
    obj = json.loads(line)
    f(obj)
    return _sorted(obj)


def build_logs() -> list:
    env = _envelope(1)
    h, c0, c1 = _shipped_lines(env, [{"s": 0}, {"page": "Zürich", "f": 1.5e-7}])
    other = _shipped_lines(_envelope(2), [])[0]

    def cp(seq, state, **extra):
        rec = {"type": "checkpoint", "seq": seq, "state": state,
               "state_hash": sha(_sorted(state).encode()), "at": "2026-01-02T03:04:05.123456+00:00"}
        rec.update(extra)
        return _sorted(rec)

    def tampered_inputs(o):
        o["envelope"]["task"]["inputs"] = {"inline": {"n": 99}}

    def forged_state(o):
        o["state"] = {"s": 1}

    cases = [
        ("header_and_two_checkpoints", [h, c0, c1], "\n"),
        ("header_only", [h], "\n"),
        ("blank_lines_ignored", ["", h, "   ", c0, ""], "\n"),
        ("truncated_last_line", [h, c0, c1[:-12]], ""),
        ("garbage_line_skipped", [h, "not json at all", c0], "\n"),
        ("non_object_line_skipped", [h, "[1, 2]", c0], "\n"),
        ("line_without_type_skipped", [h, _sorted({"seq": 0}), c0], "\n"),
        ("unknown_type_skipped", [h, _sorted({"type": "note", "text": "hi"}), c0], "\n"),
        ("checkpoint_before_header_skipped", [c0, h, c1], "\n"),
        ("list_state_skipped", [h, cp(0, [1, 2]), c1], "\n"),
        ("negative_seq_skipped", [h, cp(-1, {"s": 0}), c1], "\n"),
        ("string_seq_skipped", [h, cp("1", {"s": 0}), c1], "\n"),
        ("duplicate_seq_counted_once_stored", [h, c0, c0, c1], "\n"),
        ("forged_state_hash", [h, _edit(c0, forged_state), c1], "\n"),
        ("tampered_envelope", [_edit(h, tampered_inputs), c0], "\n"),
        ("no_header", [c0, c1], "\n"),
        ("second_header_of_another_handoff", [h, c0, other, c1], "\n"),
    ]
    out = []
    for name, lines, end in cases:
        text = "\n".join(lines) + end
        out.append({"name": name, "log_text": text, "ingest": _ingest(text)})
    return out


# --------------------------------------------------------------------------
# suspend bundles
# --------------------------------------------------------------------------
def _resume(data: bytes) -> dict:
    d = tempfile.mkdtemp(prefix="dhp-vectors-resume-")
    try:
        runner = R3.Runner3(os.path.join(d, "root"), runner_id="vectors")

        def go():
            hid = runner.resume(data)
            ex = runner._load(hid)["execution"]
            return {"hid": hid, "status": ex["status"], "attempt": ex["attempt"],
                    "checkpoints": [c["seq"] for c in ex["checkpoints"]]}
        return _verdict(go)
    finally:
        shutil.rmtree(d, ignore_errors=True)


def _suspended_bundle() -> bytes:
    saved = R3._now
    R3._now = lambda: CLAIMED_AT
    d = tempfile.mkdtemp(prefix="dhp-vectors-bundle-")
    try:
        runner = R3.Runner3(os.path.join(d, "root"), runner_id="w1")
        hid = runner.dispatch(_envelope(3))
        ctx = runner.claim(hid)
        ctx.checkpoint({"s": 0})
        ctx.checkpoint({"page": "Zürich", "f": 1.5e-7})
        ctx.note_step(2)
        return runner.suspend(hid)
    finally:
        R3._now = saved
        shutil.rmtree(d, ignore_errors=True)


def build_bundles() -> list:
    good = _suspended_bundle()
    obj = json.loads(good.decode("utf-8"))

    def variant(f) -> bytes:
        o = json.loads(good.decode("utf-8"))
        f(o)
        return E.canonical(o)

    def inputs(o):
        o["envelope"]["task"]["inputs"] = {"inline": {"n": 99}}

    def forged(o):
        o["checkpoints"][0]["state_hash"] = sha(b"{}")

    def hashed(o):
        for c in o["checkpoints"]:
            c["state_hash"] = sha(_sorted(c["state"]).encode())

    cases = [
        ("suspended_two_checkpoints", good),
        ("version_0.3", variant(lambda o: o.update(dhp_bundle="0.3"))),
        ("checkpoints_with_state_hash", variant(hashed)),
        ("unknown_version", variant(lambda o: o.update(dhp_bundle="2.0"))),
        ("tampered_inputs", variant(inputs)),
        ("forged_checkpoint_hash", variant(forged)),
        ("not_json", b"{\"dhp_bundle\": \"1.0\", "),
    ]
    assert obj["dhp_bundle"] == "1.0"
    out = []
    for name, data in cases:
        out.append({"name": name, "bundle_hex": data.hex(), "sha256": sha(data), "resume": _resume(data)})
    return out


# --------------------------------------------------------------------------
# TCP sessions
# --------------------------------------------------------------------------
def _frame(obj) -> str:
    class Buf:
        data = b""

        def write(self, b):
            self.data += b

        def flush(self):
            pass
    buf = Buf()
    net._send_line(buf, obj)
    return buf.data.decode("utf-8")


def _session(port: int, frames: list) -> list:
    out = []
    with socket.create_connection(("127.0.0.1", port), timeout=10) as s:
        f = s.makefile("rwb")
        for fr in frames:
            f.write(fr.encode("utf-8"))
            f.flush()
            reply = f.readline().decode("utf-8")
            out.append({"send": fr, "reply": reply})
            if not reply:
                break
    return out


def build_tcp() -> list:
    env = _envelope(4)
    hid = env["handoff_id"]
    st = {"s": 0}
    ckpt = {"type": "checkpoint", "seq": 0, "state": st, "state_hash": sha(_sorted(st).encode()),
            "at": "2026-01-02T03:04:05.123456+00:00"}
    header = dict(env)
    header["execution"] = dict(env["execution"], checkpoints=[])
    bad_env = json.loads(json.dumps(header))
    bad_env["task"]["inputs"] = {"inline": {"n": 99}}
    d = tempfile.mkdtemp(prefix="dhp-vectors-tcp-")
    server = net.TransportServer(d, host="127.0.0.1", port=0, token="s3cret")
    server.start_background()
    try:
        import time
        deadline = time.time() + 10
        port = 0
        while not port and time.time() < deadline:
            try:
                port = server._sock.getsockname()[1] if server._sock else 0
            except OSError:
                port = 0
            time.sleep(0.02)
        assert port, "the reference's TransportServer did not listen"
        time.sleep(0.1)  # bind, then listen: give it the moment
        hello = {"type": "hello", "handoff_id": hid, "token": "s3cret"}
        sessions = [
            ("ship_envelope_and_checkpoint", [hello, {"type": "envelope", "envelope": header}, ckpt,
                                              {"type": "bye"}]),
            ("hello_again_acks_seq_0", [hello, {"type": "bye"}]),
            ("tampered_envelope", [hello, {"type": "envelope", "envelope": bad_env}, {"type": "bye"}]),
            ("hash_mismatch", [hello, dict(ckpt, state={"s": 1}), {"type": "bye"}]),
            ("bad_checkpoint_frame", [hello, dict(ckpt, seq="0"), {"type": "bye"}]),
            ("unknown_type", [hello, {"type": "note"}, {"type": "bye"}]),
            ("want_hello", [{"type": "bye"}]),
            ("bad_token", [dict(hello, token="wrong")]),
        ]
        out = []
        for name, frames in sessions:
            out.append({"name": name, "server_token": "s3cret",
                        "exchange": _session(port, [_frame(fr) for fr in frames])})
        return out
    finally:
        server.stop()
        shutil.rmtree(d, ignore_errors=True)
