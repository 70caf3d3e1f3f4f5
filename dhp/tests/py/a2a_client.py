"""The official a2a-sdk (1.3.0) client against a `dhp a2a` server.

Used by dhp/tests/it/a2a/*.rs and the demo's --a2a mode. Every command
prints JSON lines on stdout (protobuf JSON of the SDK's own objects, as
the SDK parsed them) and exits 0; an SDK error prints one line
{"error": <exception class>, "message": ...} and exits 1.

  a2a_client.py URL card
  a2a_client.py URL send TASK_JSON [--stream] [--immediate]
  a2a_client.py URL get TASK_ID
  a2a_client.py URL cancel TASK_ID
  a2a_client.py URL list
  a2a_client.py URL watch TASK_ID [--interval S] [--timeout S]
        poll GetTask; print one line per change of state, stop at a
        terminal state (exit 2 on timeout)
  a2a_client.py URL subscribe TASK_ID
Options: --token T (bearer), --context C (message contextId).
"""
import argparse
import asyncio
import json
import sys
import time
import uuid

import httpx
from a2a.client import ClientConfig, create_client
from a2a.types import a2a_pb2 as pb
from google.protobuf import json_format, struct_pb2

TERMINAL = {"TASK_STATE_COMPLETED", "TASK_STATE_FAILED", "TASK_STATE_CANCELED",
            "TASK_STATE_REJECTED"}


def emit(obj):
    print(json.dumps(obj, sort_keys=True), flush=True)


def as_dict(msg):
    return json_format.MessageToDict(msg)


async def client_for(a, streaming):
    headers = {"Authorization": f"Bearer {a.token}"} if a.token else {}
    http = httpx.AsyncClient(headers=headers, timeout=60.0)
    cfg = ClientConfig(streaming=streaming, polling=a.immediate, httpx_client=http)
    return await create_client(a.url, client_config=cfg), http


def message(a, task_json):
    value = struct_pb2.Value()
    json_format.Parse(task_json, value)
    msg = pb.Message(message_id=str(uuid.uuid4()), role=pb.Role.ROLE_USER,
                     parts=[pb.Part(data=value)])
    if a.context:
        msg.context_id = a.context
    if a.task_id:
        msg.task_id = a.task_id
    return pb.SendMessageRequest(message=msg)


async def run(a):
    if a.cmd == "card":
        headers = {"Authorization": f"Bearer {a.token}"} if a.token else {}
        async with httpx.AsyncClient(headers=headers) as http:
            from a2a.client import A2ACardResolver
            card = await A2ACardResolver(http, a.url).get_agent_card()
            emit(as_dict(card))
        return 0
    client, http = await client_for(a, streaming=a.stream or a.cmd == "subscribe")
    try:
        if a.cmd == "send":
            async for ev in client.send_message(message(a, a.arg)):
                emit(as_dict(ev))
        elif a.cmd == "get":
            emit(as_dict(await client.get_task(pb.GetTaskRequest(id=a.arg))))
        elif a.cmd == "cancel":
            emit(as_dict(await client.cancel_task(pb.CancelTaskRequest(id=a.arg))))
        elif a.cmd == "list":
            emit(as_dict(await client.list_tasks(pb.ListTasksRequest())))
        elif a.cmd == "subscribe":
            async for ev in client.subscribe(pb.SubscribeToTaskRequest(id=a.arg)):
                emit(as_dict(ev))
        elif a.cmd == "watch":
            last, end = None, time.monotonic() + a.timeout
            while True:
                task = await client.get_task(pb.GetTaskRequest(id=a.arg))
                state = pb.TaskState.Name(task.status.state)
                if state != last:
                    emit({"state": state, "task": as_dict(task)})
                    last = state
                if state in TERMINAL:
                    return 0
                if time.monotonic() > end:
                    emit({"timeout": True, "state": state})
                    return 2
                await asyncio.sleep(a.interval)
        return 0
    finally:
        await client.close()
        await http.aclose()


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("url")
    ap.add_argument("cmd", choices=["card", "send", "get", "cancel", "list", "watch", "subscribe"])
    ap.add_argument("arg", nargs="?", default="")
    ap.add_argument("--token", default="")
    ap.add_argument("--context", default="")
    ap.add_argument("--task-id", default="")
    ap.add_argument("--stream", action="store_true")
    ap.add_argument("--immediate", action="store_true")
    ap.add_argument("--interval", type=float, default=0.1)
    ap.add_argument("--timeout", type=float, default=120.0)
    a = ap.parse_args()
    try:
        sys.exit(asyncio.run(run(a)))
    except Exception as e:  # the SDK's typed errors, reported for the test
        emit({"error": type(e).__name__, "message": str(e)})
        sys.exit(1)


if __name__ == "__main__":
    main()
