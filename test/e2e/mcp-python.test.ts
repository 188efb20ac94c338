import { execFile } from "node:child_process";
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { promisify } from "node:util";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { createKey } from "../../src/http/auth/keys.ts";
import { noPool, startTestGateway, type TestGateway } from "../helpers/gateway.ts";

// Issue 44 item 3: /mcp driven by the Python `mcp` package, unchanged, from the wheels pip finds on
// these machines (PyPI itself is not reachable: --retries 0 keeps pip from waiting on it), in a venv
// of its own, against a real gateway (README's layout, real pi, the demo model). Its client first
// probes `server/discover` (the 2026-07-28 revision) and falls back to `initialize` on the answer.
let gw: TestGateway;
let dir: string;
const keys = { alice: "", bob: "" };

beforeAll(async () => {
	dir = mkdtempSync(join(tmpdir(), "pi-gateway-mcp-python-"));
	const keysFile = join(dir, "keys.json");
	const full = ["sessions:read", "sessions:write", "approvals:read", "approvals:answer"] as const;
	keys.alice = createKey(keysFile, "alice", [...full]).secret;
	keys.bob = createKey(keysFile, "bob", [...full]).secret;
	gw = await startTestGateway({ ...noPool, keysFile });
});
afterAll(async () => {
	await gw?.stop();
	rmSync(dir, { recursive: true, force: true });
});

const python = `
import asyncio, json, sys
import httpx2
from mcp import Client
from mcp.client.streamable_http import streamable_http_client

base, alice, bob = sys.argv[1:4]
opened = []

async def remember(response):
    if response.headers.get("mcp-session-id"):
        opened.append(response.headers["mcp-session-id"])

async def main():
    out = {}
    http = httpx2.AsyncClient(headers={"Authorization": f"Bearer {alice}"}, timeout=httpx2.Timeout(30, read=300), event_hooks={"response": [remember]})
    async with http, Client(streamable_http_client(base + "/mcp", http_client=http)) as client:
        out["protocol"] = client.protocol_version
        out["server"] = client.server_info.name
        out["tools"] = sorted(t.name for t in (await client.list_tools()).tools)
        started = (await client.call_tool("start_session", {"name": "from python"})).structured_content
        progress = []
        async def on_progress(progress_, total, message):
            progress.append(message)
        run = await client.call_tool("prompt", {"sessionId": started["sessionId"], "message": "echo: from python"}, progress_callback=on_progress)
        out["run"] = {k: run.structured_content[k] for k in ("sessionId", "status", "text")}
        out["progress"] = progress
        read = await client.read_resource(started["uri"])
        out["resource"] = json.loads(read.contents[0].text)
        out["session"] = started["sessionId"]
        # bob, with alice's Mcp-Session-Id
        async with httpx2.AsyncClient() as raw:
            answer = await raw.post(base + "/mcp", json={"jsonrpc": "2.0", "id": 1, "method": "tools/list"}, headers={
                "Authorization": f"Bearer {bob}", "Mcp-Session-Id": opened[-1],
                "Accept": "application/json, text/event-stream", "MCP-Protocol-Version": client.protocol_version})
            out["bob"] = [answer.status_code, answer.json()["code"]]
        out["still"] = len((await client.list_tools()).tools)
    print(json.dumps(out))

asyncio.run(main())
`;

describe("the Python mcp package against /mcp", () => {
	const run = promisify(execFile);
	let venv: string;
	let missing: string | undefined;
	beforeAll(async () => {
		venv = join(dir, "venv");
		await run("python3", ["-m", "venv", venv]);
		const installed = await run(join(venv, "bin/pip"), ["install", "-q", "--retries", "0", "mcp"], {
			timeout: 170_000,
		}).catch((error: { code?: number; stderr?: string }) => error);
		// Only a wheel pip cannot find skips the test; any other failure of pip fails it.
		if ("stderr" in installed && /^ERROR: No matching distribution found for mcp$/m.test(installed.stderr ?? ""))
			missing = "the Python `mcp` package is not among the wheels pip finds here (No matching distribution found)";
		else if ("code" in installed && installed.code !== undefined) throw installed;
	}, 180_000);

	it("lists tools, starts a session, prompts it with progress and reads it as a resource; bob's reuse of its Mcp-Session-Id is 404", async (ctx) => {
		ctx.skip(missing !== undefined, missing);
		const script = join(dir, "client.py");
		writeFileSync(script, python);
		const { stdout } = await run(join(venv, "bin/python"), [script, gw.url, keys.alice, keys.bob], {
			timeout: 60_000,
		});
		const out = JSON.parse(stdout);
		const id = out.session as string;
		expect(out).toEqual({
			protocol: "2025-11-25",
			server: "pi-gateway",
			tools: [
				"answer_approval",
				"get_changes",
				"list_approvals",
				"list_sessions",
				"prompt",
				"start_session",
				"wait_for_run",
			],
			run: { sessionId: id, status: "settled", text: "from python" },
			progress: expect.arrayContaining(["assistant: from python"]),
			resource: expect.objectContaining({ id, name: "from python", status: "idle", lastText: "from python" }),
			session: id,
			bob: [404, "mcp_session_not_found"],
			still: 7,
		});
		// An ordinary session of alice's, made through her key.
		const as = { authorization: `Bearer ${keys.alice}` };
		expect((await gw.api(`/v1/sessions/${id}`, { headers: as })).body).toMatchObject({ name: "from python" });
	}, 60_000);

	it("docs/mcp.md's Python script prints what the page shows", async (ctx) => {
		ctx.skip(missing !== undefined, missing);
		const page = readFileSync(join(import.meta.dirname, "../../docs/mcp.md"), "utf8");
		const script = /```python\n([\s\S]*?)\n```/.exec(page)?.[1] as string;
		const shown = /Its output against `npm start`:\n\n```text\n([\s\S]*?)\n```/.exec(page)?.[1] as string;
		writeFileSync(join(dir, "docs.py"), script);
		const { stdout } = await run(join(venv, "bin/python"), [join(dir, "docs.py")], {
			timeout: 60_000,
			env: { ...process.env, PI_GATEWAY_URL: gw.url, PI_GATEWAY_KEY: keys.alice },
		});
		expect(stdout.trimEnd()).toBe(shown);
	}, 60_000);
});
