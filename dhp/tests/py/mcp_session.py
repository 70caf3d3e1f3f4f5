"""Drive an MCP server (the reference's `dhp-mcp` or our `dhp mcp`) with the
official Python client (mcp 2.x) and print what it answered as one JSON
object on stdout. Used by dhp/tests/it/mcp/*.rs.

  mcp_session.py session  -- CMD... [-- DECIDER_CMD...]
        scripted session, normalized replies; approval decisions go
        through a second session on DECIDER_CMD (default: CMD again)
  mcp_session.py badargs  -- CMD...        every tool with bad arguments
  mcp_session.py handover A_PIDFILE B_PIDFILE -- A_CMD... -- B_CMD...
        dispatch via A, claim+checkpoint via B, SIGKILL B's server,
        wait for a supervisor (run by the caller) to orphan, recover and
        complete via A.
"""
from __future__ import annotations

import asyncio
import json
import os
import signal
import sys
import time

from mcp import ClientSession, StdioServerParameters
from mcp.client.stdio import stdio_client

SCHEMA = {"type": "object", "required": ["y"],
          "properties": {"y": {"type": "integer"}}}


def params(cmd):
    # The servers inherit our environment (DHP_* knobs included).
    return StdioServerParameters(command=cmd[0], args=cmd[1:],
                                 env=dict(os.environ))


class Caller:
    def __init__(self, session, log=None):
        self.s = session
        self.log = [] if log is None else log

    async def call(self, label, tool, args):
        res = await self.s.call_tool(tool, args)
        text = res.content[0].text if res.content else None
        try:
            reply = json.loads(text)
        except (TypeError, ValueError):
            reply = text
        self.log.append({"label": label, "tool": tool, "is_error": bool(res.is_error),
                         "structured": res.structured_content, "reply": reply})
        return reply


def norm(v, ids):
    """Replace run-specific values (ids, timestamps, messages) by placeholders."""
    if isinstance(v, dict):
        out = {}
        for k, x in v.items():
            if k == "error" and isinstance(x, str):
                out[k] = "<msg>"
            elif k in ("created_at", "decided_at") and isinstance(x, float):
                out[k] = "<t>"
            else:
                out[k] = norm(x, ids)
        return out
    if isinstance(v, list):
        return [norm(x, ids) for x in v]
    if isinstance(v, str) and v in ids:
        return ids[v]
    return v


async def session(cmd, decider_cmd):
    async with stdio_client(params(cmd)) as (r, w), stdio_client(params(decider_cmd)) as (dr, dw):
        async with ClientSession(r, w) as s, ClientSession(dr, dw) as ds:
            init = await s.initialize()
            await ds.initialize()
            tools = (await s.list_tools()).tools
            c = Caller(s)
            # The approver: a session the agent does not hold.
            dc = Caller(ds, c.log)
            d = await c.call("dispatch", "dhp_dispatch",
                             {"task_kind": "demo.k", "inputs": {"x": 1}, "output_schema": SCHEMA})
            hid = d["handoff_id"]
            H = {"handoff_id": hid}
            W1 = {**H, "worker_id": "w1"}
            W2 = {**H, "worker_id": "w2"}
            await c.call("status pending", "dhp_status", H)
            await c.call("last none", "dhp_last_checkpoint", H)
            await c.call("recover pending", "dhp_recover", W1)
            await c.call("claim", "dhp_claim", W1)
            await c.call("claim again", "dhp_claim", W2)
            await c.call("checkpoint 0", "dhp_checkpoint", {**W1, "state": {"n": 1}})
            await c.call("checkpoint 1", "dhp_checkpoint", {**W1, "state": {"n": 2, "s": "é"}})
            await c.call("checkpoint non-holder", "dhp_checkpoint", {**W2, "state": {"n": 9}})
            await c.call("heartbeat", "dhp_heartbeat", W1)
            await c.call("heartbeat non-holder", "dhp_heartbeat", W2)
            await c.call("effect", "dhp_record_effect", {**W1, "step_id": "s1", "result": {"a": 1}})
            await c.call("effect again", "dhp_record_effect", {**W1, "step_id": "s1", "result": {"a": 2}})
            await c.call("effect non-holder", "dhp_record_effect", {**W2, "step_id": "s2", "result": {"a": 1}})
            await c.call("effect done", "dhp_effect_done", {**H, "step_id": "s1"})
            await c.call("effect not done", "dhp_effect_done", {**H, "step_id": "nope"})
            await c.call("spend", "dhp_note_spend", {**W1, "usd": 1.5})
            await c.call("spend negative", "dhp_note_spend", {**W1, "usd": -5})
            await c.call("activity", "dhp_note_activity", {**W1, "digest": "d1"})
            await c.call("activity repeat", "dhp_note_activity", {**W1, "digest": "d1"})
            ap = await c.call("approval financial", "dhp_request_approval",
                              {**W1, "action_class": "financial", "details": {"usd": 3}})
            await c.call("approval bogus class", "dhp_request_approval",
                         {**W1, "action_class": "bogus", "details": {}})
            aid = ap["approval_id"]
            A = {"approval_id": aid}
            await c.call("approval pending", "dhp_approval_status", A)
            await dc.call("approve", "dhp_approve", A)
            await dc.call("approve again", "dhp_approve", A)
            await dc.call("deny decided", "dhp_deny", A)
            await c.call("approval approved", "dhp_approval_status", A)
            await c.call("approval unknown", "dhp_approval_status", {"approval_id": "apr-000000000000"})
            await c.call("capability dhp", "dhp_require_capability",
                         {**W1, "domain": "dhp", "resource": "checkpoint"})
            await c.call("capability denied", "dhp_require_capability",
                         {**W1, "domain": "network", "resource": "evil.example"})
            await c.call("status running", "dhp_status", H)
            await c.call("last", "dhp_last_checkpoint", H)
            await c.call("complete bad result", "dhp_complete", {**W1, "result": {"y": "not an int"}})
            await c.call("status failed", "dhp_status", H)
            d2 = await c.call("dispatch 2", "dhp_dispatch",
                              {"task_kind": "demo.k", "inputs": {"x": 2}, "output_schema": SCHEMA})
            hid2 = d2["handoff_id"]
            await c.call("claim 2", "dhp_claim", {"handoff_id": hid2, "worker_id": "w1"})
            await c.call("complete", "dhp_complete", {"handoff_id": hid2, "worker_id": "w1", "result": {"y": 7}})
            await c.call("complete again", "dhp_complete", {"handoff_id": hid2, "worker_id": "w1", "result": {"y": 7}})
            await c.call("status completed", "dhp_status", {"handoff_id": hid2})
            await c.call("recover terminal", "dhp_recover", {"handoff_id": hid2, "worker_id": "w1"})
            await c.call("health", "dhp_health", {})
            await c.call("status unknown", "dhp_status", {"handoff_id": "0" * 64})
            await c.call("status malformed", "dhp_status", {"handoff_id": "xyz"})
            await c.call("dispatch empty kind", "dhp_dispatch",
                         {"task_kind": "", "inputs": {}, "output_schema": {}})
            await c.call("bad worker id", "dhp_checkpoint", {**H, "worker_id": "bad id!", "state": {}})
            # The agent tries to approve its own request over its own session.
            d3 = await c.call("dispatch 3", "dhp_dispatch",
                              {"task_kind": "demo.pay", "inputs": {"x": 3}, "output_schema": SCHEMA})
            hid3 = d3["handoff_id"]
            W3 = {"handoff_id": hid3, "worker_id": "w1"}
            await c.call("claim 3", "dhp_claim", W3)
            ap3 = await c.call("approval 3", "dhp_request_approval",
                               {**W3, "action_class": "financial", "details": {"usd": 1000000}})
            aid3 = ap3["approval_id"]
            await c.call("self approve", "dhp_approve", {"approval_id": aid3})
            await c.call("approval 3 after self approve", "dhp_approval_status", {"approval_id": aid3})
            await c.call("unknown tool", "dhp_nope", {})
            ids = {hid: "<hid>", hid2: "<hid2>", hid3: "<hid3>", aid: "<aid>", aid3: "<aid3>"}
            for e in c.log:
                e["reply"] = norm(e["reply"], ids)
                e["structured"] = e["structured"] is not None
            return {
                "protocol_version": init.protocol_version,
                "server_name": init.server_info.name,
                "tools": [{"name": t.name, "description": t.description,
                           "input_schema": t.input_schema,
                           "output_schema": t.output_schema} for t in tools],
                "steps": c.log,
            }


def bad_values(ty):
    # A value of every wrong JSON type, plus a missing argument (None).
    base = {"string": [5, None, {"a": 1}, ["x"], True],
            "object": ["{}", None, [1], 3, False],
            "number": ["1.5", None, {}, [1], "abc"]}
    return base[ty]


async def badargs(cmd):
    async with stdio_client(params(cmd)) as (r, w):
        async with ClientSession(r, w) as s:
            await s.initialize()
            tools = (await s.list_tools()).tools
            c = Caller(s)
            d = await c.call("dispatch", "dhp_dispatch",
                             {"task_kind": "k", "inputs": {}, "output_schema": {}})
            hid = d["handoff_id"]
            await c.call("claim", "dhp_claim", {"handoff_id": hid, "worker_id": "w1"})
            good = {"handoff_id": hid, "worker_id": "w1", "task_kind": "k", "inputs": {},
                    "output_schema": {}, "state": {"n": 1}, "result": {"y": 1},
                    "step_id": "s", "usd": 0.5, "digest": "d", "action_class": "read",
                    "details": {}, "approval_id": "apr-000000000000",
                    "domain": "dhp", "resource": "r"}
            c.log.clear()
            for t in tools:
                props = t.input_schema.get("properties", {})
                for p, spec in props.items():
                    for bad in bad_values(spec["type"]):
                        args = {k: good[k] for k in props}
                        if bad is None:
                            del args[p]
                        else:
                            args[p] = bad
                        await c.call(f"{t.name}.{p}={json.dumps(bad)}", t.name, args)
            # Values of the right type that the protocol refuses.
            for label, tool, args in [
                ("hid uppercase", "dhp_status", {"handoff_id": "A" * 64}),
                ("hid short", "dhp_status", {"handoff_id": "a" * 63}),
                ("worker too long", "dhp_heartbeat", {"handoff_id": hid, "worker_id": "w" * 129}),
                ("worker empty", "dhp_heartbeat", {"handoff_id": hid, "worker_id": ""}),
                ("kind too long", "dhp_dispatch", {"task_kind": "k" * 129, "inputs": {}, "output_schema": {}}),
                ("schema invalid", "dhp_dispatch", {"task_kind": "k", "inputs": {}, "output_schema": {"type": 5}}),
                ("usd negative", "dhp_note_spend", {"handoff_id": hid, "worker_id": "w1", "usd": -1}),
                ("class bogus", "dhp_request_approval", {"handoff_id": hid, "worker_id": "w1",
                                                         "action_class": "nuke", "details": {}}),
                ("state oversize", "dhp_checkpoint", {"handoff_id": hid, "worker_id": "w1",
                                                      "state": {"x": "a" * 5000}}),
                ("result oversize", "dhp_complete", {"handoff_id": hid, "worker_id": "w1",
                                                     "result": {"x": "a" * 5000}}),
                ("inputs oversize", "dhp_dispatch", {"task_kind": "k", "inputs": {"x": "a" * 20000},
                                                     "output_schema": {}}),
                ("effect_done unknown hid", "dhp_effect_done", {"handoff_id": "0" * 64, "step_id": "s"}),
                ("step oversize", "dhp_record_effect", {"handoff_id": hid, "worker_id": "w1",
                                                        "step_id": "s" * 5000, "result": {}}),
            ]:
                await c.call(label, tool, args)
            status = await s.call_tool("dhp_status", {"handoff_id": hid})
            health = await s.call_tool("dhp_health", {})
            return {"hid": hid, "steps": c.log, "final_status": json.loads(status.content[0].text),
                    "handoffs": json.loads(health.content[0].text)["handoffs"]}


async def handover(a_pidfile, b_pidfile, a_cmd, b_cmd):
    out = {}
    async with stdio_client(params(a_cmd)) as (ra, wa):
        async with ClientSession(ra, wa) as sa:
            await sa.initialize()
            a = Caller(sa)
            d = await a.call("dispatch via A", "dhp_dispatch",
                             {"task_kind": "demo.k", "inputs": {"x": 1}, "output_schema": SCHEMA})
            hid = d["handoff_id"]
            out["hid"] = hid
            try:
                async with stdio_client(params(b_cmd)) as (rb, wb):
                    async with ClientSession(rb, wb) as sb:
                        await sb.initialize()
                        b = Caller(sb)
                        await b.call("claim via B", "dhp_claim", {"handoff_id": hid, "worker_id": "wb"})
                        for n in range(3):
                            await b.call(f"checkpoint {n} via B", "dhp_checkpoint",
                                         {"handoff_id": hid, "worker_id": "wb", "state": {"n": n}})
                        await a.call("status via A while B holds", "dhp_status", {"handoff_id": hid})
                        out["b_steps"] = b.log
                        # The worker's server dies mid-task: no release, no goodbye.
                        with open(b_pidfile) as f:
                            os.kill(int(f.read().strip()), signal.SIGKILL)
                        await asyncio.sleep(0.2)
            except BaseException as e:  # noqa: BLE001 - the killed session may end any way
                out["b_end"] = type(e).__name__
            # Wait for the supervisor to orphan it.
            deadline = time.time() + 30
            while True:
                st = await a.call("status via A after kill", "dhp_status", {"handoff_id": hid})
                if st.get("status") == "orphaned" or time.time() > deadline:
                    break
                await asyncio.sleep(0.2)
            await a.call("recover via A", "dhp_recover", {"handoff_id": hid, "worker_id": "wa"})
            await a.call("checkpoint via A", "dhp_checkpoint",
                         {"handoff_id": hid, "worker_id": "wa", "state": {"n": 3}})
            await a.call("complete via A", "dhp_complete",
                         {"handoff_id": hid, "worker_id": "wa", "result": {"y": 3}})
            await a.call("status via A", "dhp_status", {"handoff_id": hid})
            # Only the last status poll is kept: the number of polls is timing.
            polls = [e for e in a.log if e["label"] == "status via A after kill"]
            out["a_steps"] = [e for e in a.log if e["label"] != "status via A after kill"] + polls[-1:]
    return out


def split_cmds(argv):
    cmds, cur = [], None
    for x in argv:
        if x == "--":
            cur = []
            cmds.append(cur)
        elif cur is not None:
            cur.append(x)
    return cmds


def main():
    mode = sys.argv[1]
    cmds = split_cmds(sys.argv[2:])
    if mode == "session":
        res = asyncio.run(session(cmds[0], cmds[1] if len(cmds) > 1 else cmds[0]))
    elif mode == "badargs":
        res = asyncio.run(badargs(cmds[0]))
    elif mode == "handover":
        res = asyncio.run(handover(sys.argv[2], sys.argv[3], cmds[0], cmds[1]))
    else:
        raise SystemExit(f"unknown mode {mode}")
    json.dump(res, sys.stdout)


if __name__ == "__main__":
    main()
