#!/usr/bin/env python3
"""A small agent loop against the agentctx agent server, Python standard library only.

The agent keeps its conversation in OpenAI Chat Completions format; the server stores it,
compacts it, and hands the context back in the same format. The model here is scripted (no
network beyond the server): two parallel tool calls, a context overflow that the server
recovers from, and a turn whose usage crosses the compaction threshold.

    python3 agent_loop.py --url http://127.0.0.1:8080 [--token TOKEN]

The token may also come from AGENTCTX_SERVER_TOKEN. The last line printed is a JSON report.
"""
import argparse
import json
import os
import sys
import urllib.error
import urllib.request


class Server:
    """The agent server's HTTP API: JSON in, JSON out, errors raised with their code."""

    def __init__(self, url, token):
        self.url = url.rstrip("/")
        self.token = token

    def call(self, method, path, body=None):
        data = None if body is None else json.dumps(body).encode()
        req = urllib.request.Request(self.url + path, data=data, method=method)
        req.add_header("Content-Type", "application/json")
        if self.token:
            req.add_header("Authorization", "Bearer " + self.token)
        try:
            with urllib.request.urlopen(req, timeout=60) as res:
                return json.loads(res.read())
        except urllib.error.HTTPError as e:
            raise RuntimeError(f"{method} {path}: {e.code} {e.read().decode()}") from None


def tool_call(call_id, name, args):
    return {"id": call_id, "type": "function", "function": {"name": name, "arguments": json.dumps(args)}}


def reply(content=None, calls=None, prompt_tokens=0, completion_tokens=40):
    """One Chat Completions response: its message, finish_reason and usage."""
    message = {"role": "assistant", "content": content}
    if calls:
        message["tool_calls"] = calls
    return {"message": message, "finish_reason": "tool_calls" if calls else "stop",
            "usage": {"prompt_tokens": prompt_tokens, "completion_tokens": completion_tokens,
                      "total_tokens": prompt_tokens + completion_tokens}}


OVERFLOW = {"error": {"status": 400, "body": json.dumps({"error": {
    "message": "This model's maximum context length is 4000 tokens. However, your messages resulted in 4400 tokens.",
    "type": "invalid_request_error", "code": "context_length_exceeded"}})}}

# What the scripted model answers, call after call; `expect` is the role the request must end with.
SCRIPT = [
    ("user", reply(calls=[tool_call("call_1", "read_file", {"path": "Makefile"}),
                          tool_call("call_2", "run", {"command": "make"})], prompt_tokens=1200)),
    ("tool", reply("The link line lacks -lm; added it to LDLIBS.", prompt_tokens=1800)),
    ("user", reply(calls=[tool_call("call_3", "run", {"command": "make test"})], prompt_tokens=2600)),
    ("tool", OVERFLOW),
    ("tool", reply("All 12 tests pass.", prompt_tokens=900)),
    ("user", reply(calls=[tool_call("call_4", "read_file", {"path": "CHANGES"})], prompt_tokens=3100)),
    ("tool", reply("Fixed the link line (-lm); the build and all 12 tests pass.", prompt_tokens=4200)),
]

TASKS = ["The build fails; find out why and fix it.", "Run the tests.", "Summarize what you did."]


def run_tool(name, args):
    if name == "read_file" and args["path"] == "CHANGES":
        return "".join(f"- change {i}: kept the build green\n" for i in range(80))
    if name == "read_file":
        return "CC=cc\nCFLAGS=-O2 -Wall\n" + "# generated rules\n" * 120 + "app: main.o util.o\n\t$(CC) -o $@ $^\n"
    if args.get("command") == "make":
        return "cc -o app main.o util.o\n" + "util.o: undefined reference to `sqrt'\n" * 60 + "make: *** [app] Error 1"
    if name == "run":
        return "error: tool failed: make test needs the build first"
    return "error: unknown tool " + name


class ScriptedModel:
    def __init__(self):
        self.step = 0

    def complete(self, messages):
        expect, answer = SCRIPT[self.step]
        self.step += 1
        if messages[-1]["role"] != expect:
            raise RuntimeError(f"step {self.step}: the context ends with {messages[-1]['role']}, not {expect}")
        return answer


def run_task(server, sid, model, task, stats):
    stats["entries"] += len(server.call("POST", f"/v1/sessions/{sid}/messages?format=openai",
                                        {"messages": [{"role": "user", "content": task}]})["ids"])
    retried = False
    while True:
        context = server.call("GET", f"/v1/sessions/{sid}/context?wire=openai")["wire"]
        answer = model.complete(context)
        if "error" in answer:
            # The provider refused the request: the server decides whether it was an overflow.
            outcome = server.call("POST", f"/v1/sessions/{sid}/overflow", answer["error"])
            if not outcome["retry"] or retried:
                raise RuntimeError("the model call failed and is not retried: " + json.dumps(outcome))
            retried = True
            stats["overflowRetries"] += 1
            stats["compactions"] += outcome["compacted"]
            continue
        batch = [answer["message"]]
        for call in answer["message"].get("tool_calls", []):
            fn = call["function"]
            batch.append({"role": "tool", "tool_call_id": call["id"],
                          "content": run_tool(fn["name"], json.loads(fn["arguments"]))})
        ids = server.call("POST", f"/v1/sessions/{sid}/messages?format=openai",
                          {"messages": batch, "usage": answer["usage"], "stop_reason": answer["finish_reason"]})["ids"]
        stats["entries"] += len(ids)
        if len(batch) == 1:
            break
    turn = server.call("POST", f"/v1/sessions/{sid}/turn-end", {"format": "openai", "usage": answer["usage"]})
    stats["compactions"] += turn["compacted"]
    print(f"turn done: tokens={turn['tokens']} threshold={turn['threshold']} compacted={turn['compacted']}",
          turn.get("message", ""))


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--url", required=True)
    parser.add_argument("--token", default=os.environ.get("AGENTCTX_SERVER_TOKEN", ""))
    args = parser.parse_args()
    server = Server(args.url, args.token)
    sid = server.call("POST", "/v1/sessions", {"cwd": os.getcwd()})["id"]
    model = ScriptedModel()
    stats = {"session": sid, "entries": 0, "compactions": 0, "overflowRetries": 0}
    for task in TASKS:
        run_task(server, sid, model, task, stats)
    context = server.call("GET", f"/v1/sessions/{sid}/context?wire=openai")
    stats["contextMessages"] = len(context["wire"])
    stats["startsWithSummary"] = context["messages"][0]["role"] == "compactionSummary"
    stats["lastMessage"] = context["wire"][-1]
    print(json.dumps(stats))
    return 0


if __name__ == "__main__":
    sys.exit(main())
