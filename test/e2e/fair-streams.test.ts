import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { createKey } from "../../src/http/auth/keys.ts";
import { noPool, startTestGateway, type TestGateway } from "../helpers/gateway.ts";

// An attacker's review: bob opened --max-event-streams all-sessions streams and alice's and the
// admin's GET /v1/events got 429. Each principal now holds a quarter of that cap, and a principal a
// session is shared with a quarter of its --max-subscribers; the owner and admins are held to the
// caps alone. Two keys at once, README's layout, real pi.
let dir: string;
let gw: TestGateway;
let alice: string;
let bob: string;
const open: AbortController[] = [];
beforeAll(async () => {
	dir = mkdtempSync(join(tmpdir(), "pi-gateway-fair-streams-"));
	const keysFile = join(dir, "keys.json");
	alice = createKey(keysFile, "alice", ["sessions:read", "sessions:write"]).secret;
	bob = createKey(keysFile, "bob", ["sessions:read", "sessions:write"]).secret;
	gw = await startTestGateway({ ...noPool, keysFile, maxEventStreams: 8, maxSubscribers: 8 });
});
afterAll(async () => {
	for (const stream of open) stream.abort();
	await gw?.stop();
	rmSync(dir, { recursive: true, force: true });
});

/** Opens a stream as `secret`; its status (the stream stays open until the test ends). */
async function stream(path: string, secret: string): Promise<number> {
	const abort = new AbortController();
	open.push(abort);
	const res = await gw.fetch(path, {
		headers: { authorization: `Bearer ${secret}`, accept: "text/event-stream" },
		signal: abort.signal,
	});
	if (res.status !== 200) await res.body?.cancel();
	return res.status;
}

describe("stream caps are shared fairly", () => {
	it("bob holds a quarter of the all-sessions streams; alice and the admin still open theirs", async () => {
		expect(await stream("/v1/events", bob)).toBe(200);
		expect(await stream("/v1/events", bob)).toBe(200);
		expect(await stream("/v1/events", bob)).toBe(429);
		expect(await stream("/v1/events", alice)).toBe(200);
		expect(await stream("/v1/events", gw.config.token as string)).toBe(200);
	});

	it("a principal a session is shared with holds a quarter of its subscribers; its owner is not held to it", async () => {
		const created = await gw.api("/v1/sessions", {
			method: "POST",
			json: {},
			headers: { authorization: `Bearer ${alice}` },
		});
		const id = created.body.id as string;
		const shared = await gw.api(`/v1/sessions/${id}/access`, {
			method: "PUT",
			json: { grants: [{ principal: "bob", can: ["read"] }] },
			headers: { authorization: `Bearer ${alice}` },
		});
		expect(shared.status).toBe(200);
		expect(await stream(`/v1/sessions/${id}/events`, bob)).toBe(200);
		expect(await stream(`/v1/sessions/${id}/events`, bob)).toBe(200);
		const third = await gw.api(`/v1/sessions/${id}/events`, {
			headers: { authorization: `Bearer ${bob}`, accept: "text/event-stream" },
		});
		expect(third.status).toBe(429);
		expect(third.body).toMatchObject({
			code: "too_many_subscribers",
			detail: expect.stringMatching(/^bob already has 2 streams/),
		});
		for (let i = 0; i < 3; i++) expect(await stream(`/v1/sessions/${id}/events`, alice)).toBe(200);
	});
});
