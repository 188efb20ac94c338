"""AsyncPiGateway against a live gateway (real pi, the demo model): wait mode, streaming with the
helpers, approvals, a cut stream resumed by the same POST with Last-Event-ID (pi sees one prompt),
the bash stream, errors, and a run stream that ends early raising."""

import asyncio
import os
import unittest
from typing import Any, List

from test_live import CuttableProxy, deltas
from test_typed import CUT_SHORT, scripted

from pi_gateway import AsyncPiGateway, GatewayError, StreamInterrupted
from pi_gateway.events import AgentSettled, StreamOpen

URL = os.environ["PI_GATEWAY_URL"]
TOKEN = os.environ.get("PI_GATEWAY_TOKEN")
WORKSPACE = os.environ.get("PI_GATEWAY_WORKSPACE")


class AsyncLive(unittest.IsolatedAsyncioTestCase):
    async def asyncSetUp(self) -> None:
        self.gw = AsyncPiGateway(URL, TOKEN, retry_delay=0.05)
        self.created: List[str] = []

    async def asyncTearDown(self) -> None:
        for sid in self.created:
            try:
                await self.gw.delete_session(sid)
            except GatewayError:
                pass

    async def session(self, **body: Any) -> str:
        sid = (await self.gw.create_session(body))["id"]
        self.created.append(sid)
        return sid

    async def test_wait_mode_and_request(self) -> None:
        sid = await self.session()
        result = await self.gw.prompt_and_wait(sid, "echo: waited", timeout=30)
        self.assertEqual(result.get("text"), "waited")
        state = await self.gw.request("GET", "/v1/sessions/{id}/state", path_params={"id": sid})
        self.assertFalse(state["isStreaming"])
        page = await self.gw.request("GET", "/v1/sessions", params={"limit": 1})
        self.assertEqual(len(page["sessions"]), 1)
        listed = [x["id"] async for x in self.gw.all_sessions(limit=1)]
        self.assertIn(sid, listed)
        self.assertEqual(len(listed), len(set(listed)))
        with self.assertRaises(GatewayError) as missing:
            await self.gw.get_session("ses_doesnotexist00")
        self.assertEqual((missing.exception.status, missing.exception.code), (404, "session_not_found"))

    async def test_a_cancelled_wait_cancels_the_run(self) -> None:
        sid = await self.session()
        waiting = asyncio.ensure_future(self.gw.prompt_and_wait(sid, "slow: 600", timeout=120))
        loop = asyncio.get_running_loop()
        deadline = loop.time() + 15
        while (await self.gw.get_session(sid))["currentRunId"] is None:
            self.assertLess(loop.time(), deadline)
            await asyncio.sleep(0.05)
        waiting.cancel()
        with self.assertRaises(asyncio.CancelledError):
            await waiting
        while (await self.gw.get_session(sid))["currentRunId"] is not None:
            self.assertLess(loop.time(), deadline + 15, "the run did not end")
            await asyncio.sleep(0.05)
        messages = (await self.gw.request("GET", "/v1/sessions/{id}/messages", path_params={"id": sid}))["messages"]
        self.assertEqual([m for m in messages if m["role"] == "assistant"][-1].get("stopReason"), "aborted")

    async def test_snake_case_fields_and_structured_output(self) -> None:
        sid = await self.session()
        schema = {"type": "object", "properties": {"answer": {"type": "number"}}, "required": ["answer"]}
        result = await self.gw.prompt_and_wait(sid, 'echo: {"answer": 42}', timeout=30, output_schema=schema)
        self.assertEqual(result.get("output"), {"answer": 42})

    async def test_stream_text_and_final_text(self) -> None:
        sid = await self.session()
        stream = self.gw.prompt_stream(sid, "count: 7")
        text = "".join([delta async for delta in stream.text_stream])
        self.assertEqual(text, "1 2 3 4 5 6 7")
        self.assertEqual(await stream.final_text(), "1 2 3 4 5 6 7")
        seen = stream.events_seen
        self.assertIsInstance(seen[0], StreamOpen)
        self.assertIsInstance(seen[-1], AgentSettled)

    async def test_approvals_while_streaming(self) -> None:
        sid = await self.session(extensions=["permission-gate"])
        if WORKSPACE:
            os.makedirs(os.path.join(WORKSPACE, sid, "scratch"), exist_ok=True)
        answering = asyncio.create_task(self.gw.approvals.answer_next(
            lambda a: {"value": "Allow", "by": "aio-test"}, session_id=sid, poll_seconds=5, timeout=30))
        stream = self.gw.prompt_stream(sid, "bash: rm -rf ./scratch && echo removed")
        self.assertEqual(await stream.final_text(), "The command finished. Output:\nremoved")
        answered = await asyncio.wait_for(answering, 30)
        self.assertEqual(answered["status"], "answered")
        self.assertEqual(stream.approvals_requested()[0]["id"], answered["id"])
        self.assertEqual([c.tool_name for c in stream.tool_calls()], ["bash"])

    async def test_cut_stream_resumes_by_post_once(self) -> None:
        proxy = CuttableProxy(int(URL.rsplit(":", 1)[1]))
        try:
            via = AsyncPiGateway(f"http://127.0.0.1:{proxy.port}", TOKEN, retry_delay=0.05)
            sid = await self.session()
            stream = via.prompt_stream(sid, "slow: 12")
            events: List[Any] = []
            cut = False
            async for event in stream:
                events.append(event)
                if not cut and len(deltas(events).split(" ")) >= 3:
                    cut = True
                    proxy.cut()
            self.assertEqual(stream.reconnects, 1)
            self.assertTrue(any(r.startswith(b"POST /v1/sessions/") and b"last-event-id: " in r.lower()
                                for r in proxy.requests))
            self.assertEqual(deltas(events), "1 2 3 4 5 6 7 8 9 10 11 12")
            ids = [e.id for e in events if e.id is not None]
            self.assertEqual(ids, sorted(set(ids)))
            self.assertEqual([e.type for e in events if e.type == "agent_settled"], ["agent_settled"])
            messages = (await self.gw.request("GET", "/v1/sessions/{id}/messages", path_params={"id": sid}))["messages"]
            self.assertEqual([m["role"] for m in messages if m["role"] != "system"], ["user", "assistant"])
        finally:
            proxy.close()

    async def test_events_replay_after_a_position(self) -> None:
        sid = await self.session()
        result = await self.gw.prompt_and_wait(sid, "echo: logged", timeout=30)
        stream = self.gw.events(sid, after=result["firstEventId"] - 1)
        seen: List[str] = []
        async for event in stream:
            seen.append(event.type)
            if event.type == "agent_settled":
                break
        await stream.aclose()
        self.assertEqual(seen[0], "stream_open")
        self.assertIn("message_end", seen)

    async def test_bash_stream(self) -> None:
        sid = await self.session()
        events = [e async for e in self.gw.bash_stream(sid, "echo one; echo two")]
        self.assertEqual(events[0].type, "stream_open")
        self.assertEqual(events[-1].type, "response")
        self.assertEqual(events[-1]["data"]["output"], "one\ntwo\n")
        self.assertTrue(all(e.type == "bash_execution_update" for e in events[1:-1]))


class AsyncInterrupted(unittest.IsolatedAsyncioTestCase):
    async def test_a_run_stream_that_ends_early_raises(self) -> None:
        heads: List[Any] = []
        server = scripted(CUT_SHORT, heads)
        try:
            gw = AsyncPiGateway(f"http://127.0.0.1:{server.server_address[1]}", retry_delay=0.01)
            seen: List[str] = []
            with self.assertRaises(StreamInterrupted) as raised:
                async for event in gw.prompt_stream("ses_x", "hi"):
                    seen.append(event.type)
            self.assertEqual(seen, ["stream_open", "response", "agent_start"])
            self.assertEqual(raised.exception.last_event_id, "2")
        finally:
            await asyncio.to_thread(server.shutdown)
            server.server_close()


if __name__ == "__main__":
    unittest.main()
