"""Client tools from the Python client, against a live gateway with real pi and the demo model.

Not named test_*: test/e2e/client-tools.test.ts runs it on its own (the client's main unittest
program counts its own tests), with PI_GATEWAY_URL and PI_GATEWAY_TOKEN set:
    python3 -m unittest discover -s clients/python/tests -p live_tool_calls.py
"""

import asyncio
import os
import unittest
from typing import Any, Dict, List

from pi_gateway import AsyncPiGateway, GatewayError, PiGateway

URL = os.environ["PI_GATEWAY_URL"]
TOKEN = os.environ.get("PI_GATEWAY_TOKEN")

LOOKUP_PRICE = {
    "name": "lookup_price",
    "description": "The price of a product in EUR, by its SKU",
    "parameters": {"type": "object", "properties": {"sku": {"type": "string"}}, "required": ["sku"]},
}


class ToolCallsTest(unittest.TestCase):
    def setUp(self) -> None:
        self.gw = PiGateway(URL, TOKEN)
        self.session = self.gw.create_session({"clientTools": [LOOKUP_PRICE]})

    def tearDown(self) -> None:
        self.gw.delete_session(self.session["id"])

    def test_run_answers_calls_with_handlers(self) -> None:
        seen: List[Dict[str, Any]] = []

        def lookup_price(args: Dict[str, Any], call: Any) -> str:
            seen.append(dict(call))
            return "price of " + args["sku"] + ": 19.90"

        sid = self.session["id"]
        result = self.gw.tool_calls.run(sid, 'tool: lookup_price {"sku":"A-1"}', {"lookup_price": lookup_price})
        self.assertEqual(result.get("text"), "price of A-1: 19.90")
        self.assertEqual([(c["name"], c["arguments"], c["status"]) for c in seen],
                         [("lookup_price", {"sku": "A-1"}, "pending")])
        calls = self.gw.tool_calls.list(sid, status="answered")
        self.assertEqual([c["result"] for c in calls], [{"output": "price of A-1: 19.90", "isError": False}])

        def broken(args: Dict[str, Any], call: Any) -> str:
            raise RuntimeError("the price list is down")

        failed = self.gw.tool_calls.run(sid, 'tool: lookup_price {"sku":"B"}', {"lookup_price": broken})
        self.assertEqual(failed.get("text"), "Error: the price list is down")
        unhandled = self.gw.tool_calls.run(sid, 'tool: lookup_price {"sku":"C"}', {})
        self.assertEqual(unhandled.get("text"), "Error: This program has no handler for the tool lookup_price")

    def test_answering_twice_is_409_and_a_bad_shape_422(self) -> None:
        sid = self.session["id"]
        self.gw.prompt(sid, 'tool: lookup_price {"sku":"D"}')
        pending = self.gw.tool_calls.inbox(status="pending", wait=10)
        call = next(c for c in pending if c["sessionId"] == sid)
        with self.assertRaises(GatewayError) as bad:
            self.gw.tool_calls.answer(call, {"output": 5})
        self.assertEqual(bad.exception.status, 422)
        answered = self.gw.tool_calls.answer(call, {"output": "7.00"})
        self.assertEqual(answered["status"], "answered")
        with self.assertRaises(GatewayError) as twice:
            self.gw.tool_calls.answer(call, {"output": "8.00"})
        self.assertEqual(twice.exception.status, 409)
        self.assertEqual(self.gw.tool_calls.get(sid, call["id"])["result"], {"output": "7.00", "isError": False})


class AsyncToolCallsTest(unittest.IsolatedAsyncioTestCase):
    """The same helper on AsyncPiGateway, with a coroutine handler and a plain one."""

    async def test_run_answers_calls_with_async_handlers(self) -> None:
        gw = AsyncPiGateway(URL, TOKEN)
        sid = (await gw.create_session({"clientTools": [LOOKUP_PRICE]}))["id"]
        try:
            async def lookup_price(args: Dict[str, Any], call: Any) -> str:
                await asyncio.sleep(0)
                return "price of " + args["sku"] + ": 19.90"

            result = await gw.tool_calls.run(sid, 'tool: lookup_price {"sku":"A-1"}', {"lookup_price": lookup_price})
            self.assertEqual(result.get("text"), "price of A-1: 19.90")

            def broken(args: Dict[str, Any], call: Any) -> str:
                raise RuntimeError("the price list is down")

            failed = await gw.tool_calls.run(sid, 'tool: lookup_price {"sku":"B"}', {"lookup_price": broken})
            self.assertEqual(failed.get("text"), "Error: the price list is down")
            calls = await gw.tool_calls.list(sid, status="answered")
            self.assertEqual([c["result"]["isError"] for c in calls], [False, True])
        finally:
            await gw.delete_session(sid)


if __name__ == "__main__":
    unittest.main()
