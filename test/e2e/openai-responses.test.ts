import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import OpenAI from "openai";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { createKey } from "../../src/http/auth/keys.ts";
import { noPool, startTestGateway, type TestGateway, until } from "../helpers/gateway.ts";

// Issue 44 item 1, what openai.test.ts leaves: background responses (GET polls them, cancel stops
// their run, DELETE forgets them), `conversation` naming a session of the gateway's own API, and
// two principals who cannot read, cancel, delete or continue each other's. The official `openai`
// client, unchanged, against a real gateway (real pi, the demo model, README's layout).
let gw: TestGateway;
let dir: string;
const keys: Record<string, string> = {};
const demo = "pi-gateway-demo/demo";
const full = ["sessions:read", "sessions:write", "approvals:read", "approvals:answer"] as const;

beforeAll(async () => {
	dir = mkdtempSync(join(tmpdir(), "pi-gateway-responses-"));
	const keysFile = join(dir, "keys.json");
	keys.alice = createKey(keysFile, "alice", [...full]).secret;
	keys.bob = createKey(keysFile, "bob", [...full]).secret;
	// A short wait limit: a run past it is aborted (504), whether it was followed in-process or not.
	gw = await startTestGateway({ ...noPool, keysFile, waitTimeoutMs: 8000 });
});
afterAll(async () => {
	await gw?.stop();
	rmSync(dir, { recursive: true, force: true });
});

const client = (apiKey: string | undefined) =>
	new OpenAI({ baseURL: `${gw.url}/v1`, apiKey: apiKey as string, maxRetries: 0 });
const as = (secret: string | undefined) => ({ authorization: `Bearer ${secret}` });
const sessionOf = (responseId: string) => responseId.slice("resp_".length, responseId.lastIndexOf("."));
const refusal = (work: Promise<unknown>) =>
	work.then(
		() => undefined,
		(error: unknown) => error,
	);
/** The session's run has stopped: pi is idle again. */
const idle = (sessionId: string) =>
	until(async () => {
		const { body } = await gw.api(`/v1/sessions/${sessionId}`, { headers: as(keys.alice) });
		return body.status === "idle";
	});

describe("background responses", () => {
	it("answers at once, then GET reads the run as it ends", async () => {
		const alice = client(keys.alice);
		const started = await alice.responses.create({ model: demo, input: "count: 3", background: true });
		expect(started).toMatchObject({ status: "in_progress", background: true, store: true });
		let seen = started;
		await until(async () => {
			seen = await alice.responses.retrieve(started.id);
			return seen.status !== "in_progress";
		});
		expect(seen).toMatchObject({ status: "completed", output_text: "1 2 3", background: true });
		expect(seen.usage?.output_tokens).toBeGreaterThan(0);
	});

	it("cancel stops the run and keeps what it said; the session stays and runs again", async () => {
		const alice = client(keys.alice);
		const started = await alice.responses.create({ model: demo, input: "slow: 300", background: true });
		await until(async () => (await alice.responses.retrieve(started.id)).status === "in_progress");
		const bob = await refusal(client(keys.bob).responses.cancel(started.id));
		expect(bob).toBeInstanceOf(OpenAI.NotFoundError);
		const cancelled = await alice.responses.cancel(started.id);
		expect(cancelled).toMatchObject({ id: started.id, status: "cancelled" });
		expect((await alice.responses.retrieve(started.id)).status).toBe("cancelled");
		await idle(sessionOf(started.id));
		// Cancelling again answers the response as it ended.
		expect((await alice.responses.cancel(started.id)).status).toBe("cancelled");
		const next = await alice.responses.create({ model: demo, input: "echo: after", previous_response_id: started.id });
		expect(next.output_text).toBe("after");
	});

	it("only a background response can be cancelled, and it is neither streamed nor unstored", async () => {
		const alice = client(keys.alice);
		const plain = await alice.responses.create({ model: demo, input: "echo: plain" });
		expect(await refusal(alice.responses.cancel(plain.id))).toMatchObject({ status: 400, code: "not_background" });
		const streamed = await refusal(
			alice.responses.create({ model: demo, input: "echo: x", background: true, stream: true }),
		);
		expect(streamed).toMatchObject({ status: 400, param: "stream" });
		const unstored = await refusal(
			alice.responses.create({ model: demo, input: "echo: x", background: true, store: false }),
		);
		expect(unstored).toMatchObject({ status: 400, param: "store" });
	});

	it("DELETE forgets a response (cancelling its run) and leaves its session", async () => {
		const alice = client(keys.alice);
		const started = await alice.responses.create({ model: demo, input: "slow: 300", background: true });
		expect(await refusal(client(keys.bob).responses.delete(started.id))).toBeInstanceOf(OpenAI.NotFoundError);
		expect(await alice.responses.delete(started.id)).toEqual({ id: started.id, object: "response", deleted: true });
		expect(await refusal(alice.responses.retrieve(started.id))).toBeInstanceOf(OpenAI.NotFoundError);
		expect(await refusal(alice.responses.delete(started.id))).toBeInstanceOf(OpenAI.NotFoundError);
		await idle(sessionOf(started.id));
		expect((await gw.api(`/v1/sessions/${sessionOf(started.id)}`, { headers: as(keys.alice) })).status).toBe(200);
	});
});

describe("conversation: a session of the gateway's own API", () => {
	it("goes on in the session it names, for its owner only", async () => {
		const created = await gw.api("/v1/sessions", { method: "POST", headers: as(keys.alice), json: {} });
		expect(created.status).toBe(201);
		const id = created.body.id as string;
		const alice = client(keys.alice);
		const first = await alice.responses.create({ model: demo, input: "echo: one", conversation: id });
		expect(first).toMatchObject({ output_text: "one", conversation: { id } });
		expect(sessionOf(first.id)).toBe(id);
		const second = await alice.responses.create({ model: demo, input: "echo: two", conversation: { id } });
		expect(second.output_text).toBe("two");
		const { body } = await gw.api(`/v1/sessions/${id}/messages`, { headers: as(keys.alice) });
		expect(body.messages.filter((m: { role: string }) => m.role === "user")).toHaveLength(2);

		const bob = await refusal(client(keys.bob).responses.create({ model: demo, input: "echo: his", conversation: id }));
		expect(bob).toMatchObject({ status: 404, code: "conversation_not_found", param: "conversation" });
		const both = await refusal(
			alice.responses.create({ model: demo, input: "echo: x", conversation: id, previous_response_id: first.id }),
		);
		expect(both).toMatchObject({ status: 400, param: "conversation" });
		const after = await gw.api(`/v1/sessions/${id}/messages`, { headers: as(keys.alice) });
		expect(after.body.messages.filter((m: { role: string }) => m.role === "user")).toHaveLength(2);
	});
});

describe("the wait limit", () => {
	it("aborts a run that outlasts it, for a response and for a chat completion", async () => {
		const alice = client(keys.alice);
		const response = await refusal(alice.responses.create({ model: demo, input: "slow: 300" }));
		expect(response).toMatchObject({ status: 504, code: "run_timeout" });
		const completion = await refusal(
			alice.chat.completions.create({ model: demo, messages: [{ role: "user", content: "slow: 300" }], store: true }),
		);
		expect(completion).toMatchObject({ status: 504, code: "run_timeout" });
		const { body } = await gw.api("/v1/sessions?limit=100", { headers: as(keys.alice) });
		// Both runs were aborted: every session of alice's is idle again, none still runs "slow: 300".
		const mine = body.sessions as { id: string }[];
		expect(mine.length).toBeGreaterThanOrEqual(2);
		for (const session of mine) await idle(session.id);
	}, 60_000);
});
