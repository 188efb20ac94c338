import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { createKey } from "../../src/http/auth/keys.ts";
import { startTestGateway, type TestGateway, until } from "../helpers/gateway.ts";
import { collect } from "../helpers/sse.ts";

// Two principals on one gateway, real pi: each sees, streams, prompts and answers only its own
// sessions (404 for the other's, as for an id that never existed) unless the owner shares one;
// an approver it is shared with answers but cannot prompt. resolvedBy is who is authenticated.
let gw: TestGateway;
let dir: string;
const key = { alice: "", bob: "", carol: "" };
let bobs: string;
beforeAll(async () => {
	dir = mkdtempSync(join(tmpdir(), "pi-gateway-owners-"));
	const keysFile = join(dir, "keys.json");
	const full = ["sessions:read", "sessions:write", "approvals:read", "approvals:answer"] as const;
	key.alice = createKey(keysFile, "alice", [...full]).secret;
	key.bob = createKey(keysFile, "bob", [...full]).secret;
	key.carol = createKey(keysFile, "carol", ["approvals:read", "approvals:answer", "sessions:write"]).secret;
	gw = await startTestGateway({ keysFile });
	const created = await gw.api("/v1/sessions", {
		method: "POST",
		headers: as("bob"),
		json: { extensions: ["permission-gate"] },
	});
	expect(created.status).toBe(201);
	bobs = created.body.id;
});
afterAll(async () => {
	await gw?.stop();
	rmSync(dir, { recursive: true, force: true });
});

function as(who: keyof typeof key) {
	return { authorization: `Bearer ${key[who]}` };
}

const pendingOf = async (who: keyof typeof key) =>
	until(async () => (await gw.api("/v1/approvals?status=pending", { headers: as(who) })).body.approvals[0]);

describe("ownership", () => {
	it("alice cannot see, stream, prompt or delete bob's session: 404, as for an unknown id", async () => {
		const list = await gw.api("/v1/sessions", { headers: as("alice") });
		expect(list.body.sessions.map((s: { id: string }) => s.id)).not.toContain(bobs);
		expect(
			(await gw.api("/v1/sessions", { headers: as("bob") })).body.sessions.map((s: { id: string }) => s.id),
		).toContain(bobs);
		for (const [method, path, json] of [
			["GET", `/v1/sessions/${bobs}`, undefined],
			["GET", `/v1/sessions/${bobs}/events?after=0`, undefined],
			["GET", `/v1/sessions/${bobs}/messages`, undefined],
			["POST", `/v1/sessions/${bobs}/prompt`, { message: "not yours" }],
			["POST", `/v1/sessions/${bobs}/events/ticket`, undefined],
			["POST", `/v1/sessions/${bobs}/fork-session`, {}],
			["PUT", `/v1/sessions/${bobs}/access`, { grants: [{ principal: "alice", can: ["write"] }] }],
			["DELETE", `/v1/sessions/${bobs}`, undefined],
		] as const) {
			const res = await gw.api(path, { method, headers: as("alice"), ...(json ? { json } : {}) });
			expect(res.status, `${method} ${path}`).toBe(404);
			expect(res.body.code).toBe("session_not_found");
		}
		// The admin token sees everyone's.
		expect((await gw.api(`/v1/sessions/${bobs}`)).status).toBe(200);
	});

	it("the all-sessions stream and a ticket carry only the principal's own sessions", async () => {
		const alices = (await gw.api("/v1/sessions", { method: "POST", headers: as("alice"), json: {} })).body.id;
		const ticket = (await gw.api("/v1/events/ticket", { method: "POST", headers: as("alice") })).body;
		const frames = await collect(await fetch(`${gw.url}${ticket.eventsUrl}`), (f) => f.event === "stream_open");
		const ids = frames[0]?.json.sessions.map((s: { id: string }) => s.id);
		expect(ids).toContain(alices);
		expect(ids).not.toContain(bobs);
		// A session ticket of alice's own opens her stream; it opens no other.
		const own = (await gw.api(`/v1/sessions/${alices}/events/ticket`, { method: "POST", headers: as("alice") })).body;
		const forged = await fetch(`${gw.url}/v1/sessions/${bobs}/events?ticket=${own.ticket}`);
		expect(forged.status).toBe(401);
		await forged.body?.cancel();
	});

	it("alice cannot use or end bob's MCP session (Mcp-Session-Id): 404, whatever she sends", async () => {
		const mcp = (who: keyof typeof key, body?: unknown, session?: string) =>
			gw.api("/mcp", {
				method: body === undefined ? "DELETE" : "POST",
				headers: {
					...as(who),
					accept: "application/json, text/event-stream",
					...(session ? { "mcp-session-id": session } : {}),
				},
				...(body === undefined ? {} : { json: body }),
			});
		const clientInfo = { name: "ownership", version: "1" };
		const init = await mcp("bob", {
			jsonrpc: "2.0",
			id: 1,
			method: "initialize",
			params: { protocolVersion: "2025-11-25", capabilities: {}, clientInfo },
		});
		expect(init.status).toBe(200);
		const bobsMcp = init.res.headers.get("mcp-session-id") as string;
		expect(bobsMcp).toMatch(/^mcp_/);
		const prompt = { name: "prompt", arguments: { sessionId: bobs, message: "not yours" } };
		for (const body of [
			{ jsonrpc: "2.0", id: 2, method: "tools/list" },
			{ jsonrpc: "2.0", id: 3, method: "tools/call", params: prompt },
			{ jsonrpc: "2.0", id: 4, method: "resources/read", params: { uri: `pi-gateway://sessions/${bobs}` } },
			{ not: "even JSON-RPC" },
			undefined,
		]) {
			const res = await mcp("alice", body, bobsMcp);
			expect(res.status, JSON.stringify(body)).toBe(404);
			expect(res.body.code).toBe("mcp_session_not_found");
			expect(res.body.detail).toBe(
				`No MCP session ${bobsMcp}: it ended or expired (or was never opened with this credential); open another with initialize`,
			);
		}
		// Bob's MCP session goes on.
		expect((await mcp("bob", { jsonrpc: "2.0", id: 5, method: "tools/list" }, bobsMcp)).status).toBe(200);
	});

	it("an approver the session is shared with answers, but cannot prompt; resolvedBy is the principal", async () => {
		// Before it is shared, carol's inbox is empty and the session is not there for her.
		const folder = await gw.folder(bobs);
		mkdirSync(join(folder, "scratch"), { recursive: true });
		writeFileSync(join(folder, "scratch", "f"), "x");
		const run = gw.api(`/v1/sessions/${bobs}/prompt?wait=true`, {
			method: "POST",
			headers: as("bob"),
			json: { message: "bash: rm -rf ./scratch" },
		});
		const pending = await pendingOf("bob");
		expect((await gw.api("/v1/approvals?status=pending", { headers: as("carol") })).body.approvals).toEqual([]);
		expect((await gw.api("/v1/approvals?status=pending", { headers: as("alice") })).body.approvals).toEqual([]);
		const early = await gw.api(`/v1/sessions/${bobs}/approvals/${pending.id}`, {
			method: "POST",
			headers: as("carol"),
			json: { value: "Block" },
		});
		expect(early.status).toBe(404);

		const shared = await gw.api(`/v1/sessions/${bobs}/access`, {
			method: "PUT",
			headers: as("bob"),
			json: { grants: [{ principal: "carol", can: ["answer"] }] },
		});
		expect(shared.status).toBe(200);
		expect(shared.body).toEqual({ sessionId: bobs, owner: "bob", grants: [{ principal: "carol", can: ["answer"] }] });

		expect((await pendingOf("carol")).id).toBe(pending.id);
		// Answering is all carol may do: her key has sessions:write, the share does not.
		const prompt = await gw.api(`/v1/sessions/${bobs}/prompt`, {
			method: "POST",
			headers: as("carol"),
			json: { message: "not an approver's job" },
		});
		expect(prompt.status).toBe(404);
		// Nor fork it into a session of her own: a fork reads the session, and her share does not.
		const fork = await gw.api(`/v1/sessions/${bobs}/fork-session`, { method: "POST", headers: as("carol"), json: {} });
		expect([fork.status, fork.body.code]).toEqual([404, "session_not_found"]);
		// Her key cannot read sessions at all: the scope answers first, and says nothing about the id.
		expect((await gw.api(`/v1/sessions/${bobs}/messages`, { headers: as("carol") })).status).toBe(403);
		const answered = await gw.api(`/v1/sessions/${bobs}/approvals/${pending.id}`, {
			method: "POST",
			headers: as("carol"),
			json: { value: "Block", by: "carol on call" },
		});
		expect(answered.status).toBe(200);
		expect(answered.body).toMatchObject({ status: "answered", resolvedBy: "carol", note: "carol on call" });
		expect((await run).status).toBe(200);
	});
});
