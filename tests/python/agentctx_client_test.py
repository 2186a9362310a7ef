"""The Python package examples/clients/python against the agent server binary (standard library only).

    python3 agentctx_client_test.py SERVER_BIN OPENAPI_JSON
"""

import asyncio
import json
import os
import re
import subprocess
import sys
import tempfile
import threading
import unittest

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "..", "examples", "clients", "python"))

from agentctx_client import ROUTES, AgentctxClient, AgentctxError, AgentctxSession  # noqa: E402

SERVER_BIN, OPENAPI = sys.argv[1], sys.argv[2]
TOKEN = "py-t0ken"


def snake(name: str) -> str:
    return re.sub(r"([A-Z])", lambda m: "_" + m.group(1).lower(), name)


class PythonClientTest(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        cls.dir = tempfile.TemporaryDirectory()
        settings = os.path.join(cls.dir.name, "settings.json")
        with open(settings, "w") as f:
            json.dump({"compaction": {"reserveTokens": 196000, "keepRecentTokens": 300}}, f)
        cls.server = subprocess.Popen(
            [SERVER_BIN, "--port", "0", "--data-dir", os.path.join(cls.dir.name, "data"), "--settings", settings],
            env={**os.environ, "AGENTCTX_SERVER_TOKEN": TOKEN}, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
        for line in cls.server.stdout:
            m = re.search(r"listening on http://[^:]+:(\d+) with data", line)
            if m:
                cls.url = f"http://127.0.0.1:{m.group(1)}"
                break
        else:
            raise RuntimeError("the server exited before it listened")
        # Keep reading its log so that a full pipe never blocks it.
        threading.Thread(target=lambda: [None for _ in cls.server.stdout], daemon=True).start()
        cls.client = AgentctxClient(cls.url, token=TOKEN)

    @classmethod
    def tearDownClass(cls):
        cls.server.terminate()
        cls.server.wait()
        cls.dir.cleanup()

    def test_every_route_of_the_document_has_a_method(self):
        with open(OPENAPI) as f:
            doc = json.load(f)
        documented = {(op["operationId"], m.upper(), p) for p, item in doc["paths"].items()
                      for m, op in item.items() if isinstance(op, dict) and "operationId" in op}
        self.assertEqual(documented, set(ROUTES))
        for op, _, _ in ROUTES:
            self.assertTrue(callable(getattr(AgentctxClient, snake(op), None)), op)

    def test_errors_keep_code_and_field(self):
        sid = self.client.create_session()["id"]
        with self.assertRaises(AgentctxError) as caught:
            self.client.append_wire_messages(sid, "openai", {"messages": [{"role": "tool", "tool_call_id": "x", "content": "y"}]})
        self.assertEqual(caught.exception.status, 400)
        self.assertEqual(caught.exception.code, "unpaired_tool_call")
        self.assertTrue(caught.exception.field.startswith("messages[0]"), caught.exception.field)

    def test_the_session_stores_branches_and_compacts(self):
        session = AgentctxSession(self.client, cwd="/work")
        run = asyncio.run
        turn = [
            {"type": "message", "role": "user", "content": "Read the Makefile."},
            {"type": "function_call", "call_id": "call_1", "name": "read_file", "arguments": "{\"path\":\"Makefile\"}"},
            {"type": "function_call_output", "call_id": "call_1", "output": "CC=cc\n" + "# rule\n" * 400},
            {"type": "message", "role": "assistant", "content": [{"type": "output_text", "text": "It uses cc."}]},
        ]
        run(session.add_items(turn, usage={"input_tokens": 900, "output_tokens": 20}))
        items = run(session.get_items())
        self.assertEqual([i.get("type", "message") for i in items], ["message", "function_call", "function_call_output", "message"])
        self.assertEqual(items[2]["output"], turn[2]["output"])
        self.assertEqual(run(session.get_items(limit=1))[0]["role"], "assistant")
        self.assertFalse(run(session.turn_end({"input_tokens": 900, "output_tokens": 20}))["compacted"])
        leaf = self.client.get_context(session.session_id)["leafId"]
        popped = run(session.pop_item())
        self.assertEqual(popped["role"], "assistant")
        self.assertEqual(len(run(session.get_items())), 3)
        self.assertEqual(self.client.get_entry(session.session_id, leaf)["id"], leaf)  # the log keeps it
        run(session.add_items([{"type": "message", "role": "assistant", "content": [{"type": "output_text", "text": "Done."}]}]))
        run(session.add_items([{"type": "message", "role": "user", "content": "Again. " * 200}]))
        run(session.add_items([{"type": "message", "role": "assistant", "content": [{"type": "output_text", "text": "Again done."}]}]))
        compacted = run(session.compact("Keep the file names."))
        self.assertLess(compacted["tokensAfter"], compacted["tokensBefore"])
        self.assertEqual(self.client.get_context(session.session_id)["messages"][0]["role"], "compactionSummary")
        outcome = run(session.overflow(400, "This model's maximum context length is 4000 tokens. However, your messages resulted in 4400 tokens."))
        self.assertTrue(outcome["overflow"])
        old = session.session_id
        run(session.clear_session())
        self.assertEqual(run(session.get_items()), [])
        self.assertEqual(self.client.get_entry(old, leaf)["id"], leaf)


if __name__ == "__main__":
    unittest.main(argv=[sys.argv[0], "-v"])
