import { execFile } from "node:child_process";
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join, resolve } from "node:path";
import { promisify } from "node:util";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { sleep, startTestGateway, type TestGateway } from "../helpers/gateway.ts";
import { gatewayEntry } from "../helpers/gateway-entry.ts";
import { type Frame, readFrames } from "../helpers/sse.ts";

// Issue 29, "what users were told": taking a share back or revoking a key ends the streams it
// opened at once. Before, the stream went on and carried the next run to whoever lost the right.
// Real pi with the demo model; the default layout; keys made with the CLI.
const repo = resolve(import.meta.dirname, "../..");
const run = promisify(execFile);

let gw: TestGateway;
let keysDir: string;
let keysFile: string;
const key: Record<string, string> = {};
const as = (who: string) => ({ authorization: `Bearer ${key[who]}` });
const cli = (...args: string[]) =>
	run(process.execPath, [gatewayEntry, "keys", ...args, "--keys-file", keysFile], { cwd: repo });

beforeAll(async () => {
	keysDir = mkdtempSync(join(tmpdir(), "pi-gateway-revoke-keys-"));
	keysFile = join(keysDir, "keys.json");
	for (const who of ["alice", "bob", "carol"]) {
		const scopes = "sessions:read,sessions:write,approvals:read,approvals:answer";
		key[who] = (await cli("create", "--principal", who, "--scopes", scopes)).stdout.trim();
	}
	gw = await startTestGateway({ workspaceRoot: undefined, keysFile });
});
afterAll(async () => {
	await gw?.stop();
	rmSync(keysDir, { recursive: true, force: true });
});

/** A stream read in the background: its frames so far, and whether the server ended it. */
function open(path: string, headers: Record<string, string> = {}) {
	const abort = new AbortController();
	const frames: Frame[] = [];
	let ended = false;
	const reading = (async () => {
		const res = await gw.fetch(path, { headers, signal: abort.signal });
		expect(res.status).toBe(200);
		try {
			for await (const frame of readFrames(res)) frames.push(frame);
			ended = true;
		} catch {
			// aborted by the test
		}
	})();
	return {
		frames,
		get ended() {
			return ended;
		},
		types: () => frames.map((f) => f.event),
		/** Waits up to `ms` for the server to end the stream; aborts it otherwise. */
		async close(ms: number) {
			await Promise.race([reading, sleep(ms)]);
			abort.abort();
			await reading;
		},
	};
}

const prompt = (id: string, headers: Record<string, string> = {}) =>
	gw.api(`/v1/sessions/${id}/prompt?wait=true`, { method: "POST", json: { message: "hello" }, headers });

describe("revoking ends the streams it covered, at once", () => {
	it("a share taken back (PUT …/access) ends bob's stream of that session; alice's goes on", async () => {
		const created = await gw.api("/v1/sessions", { method: "POST", json: {}, headers: as("alice") });
		const id = created.body.id as string;
		const share = (grants: unknown[]) =>
			gw.api(`/v1/sessions/${id}/access`, { method: "PUT", json: { grants }, headers: as("alice") });
		expect((await share([{ principal: "bob", can: ["read"] }])).status).toBe(200);
		const bob = open(`/v1/sessions/${id}/events`, as("bob"));
		const alice = open(`/v1/sessions/${id}/events`, as("alice"));
		await sleep(300);
		expect(bob.types()).toEqual(["stream_open"]);
		expect((await share([])).status).toBe(200);
		// The next run is alice's alone.
		expect((await prompt(id, as("alice"))).status).toBe(200);
		await bob.close(2000);
		await alice.close(1000);
		expect(bob.ended).toBe(true);
		expect(bob.types()).toEqual(["stream_open", "revoked"]);
		expect(bob.frames.at(-1)?.json).toMatchObject({ type: "revoked", reason: "access_revoked" });
		expect(alice.types()).toContain("agent_settled");
		// A reconnect is refused.
		expect((await gw.fetch(`/v1/sessions/${id}/events`, { headers: as("bob") })).status).toBe(404);
	});

	it("a revoked key ends the streams opened with it and with its tickets, and its tickets stop working", async () => {
		const created = await gw.api("/v1/sessions", { method: "POST", json: {}, headers: as("carol") });
		const id = created.body.id as string;
		const ticket = await gw.api(`/v1/sessions/${id}/events/ticket`, { method: "POST", headers: as("carol") });
		expect(ticket.status).toBe(201);
		const byKey = open(`/v1/sessions/${id}/events`, as("carol"));
		const byTicket = open(ticket.body.eventsUrl, { authorization: "" });
		const hub = open("/v1/events", as("carol"));
		await sleep(300);
		await cli("revoke", "carol");
		// The keys file is polled every 500 ms.
		await sleep(1500);
		// The admin runs carol's session: none of it reaches carol.
		expect((await prompt(id)).status).toBe(200);
		await Promise.all([byKey.close(2000), byTicket.close(2000), hub.close(2000)]);
		for (const stream of [byKey, byTicket, hub]) {
			expect(stream.ended).toBe(true);
			expect(stream.types()).toEqual(["stream_open", "revoked"]);
		}
		expect((await gw.fetch(ticket.body.eventsUrl, { headers: { authorization: "" } })).status).toBe(401);
		expect((await gw.fetch(`/v1/sessions/${id}/events`, { headers: as("carol") })).status).toBe(401);
	});
});
