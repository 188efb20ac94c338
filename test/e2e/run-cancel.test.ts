import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { createKey } from "../../src/http/auth/keys.ts";
import { eventJson } from "../../src/sessions/events/event-log.ts";
import { noPool, startTestGateway, type TestGateway, until } from "../helpers/gateway.ts";

// POST /v1/sessions/{id}/runs/{runId}/cancel with real pi and the demo model: a run in progress is
// aborted, a command still in the session's queue never reaches pi, a settled run is 409, and
// another principal's run is not found. Two API keys from one keys file.
let dir: string;
let gw: TestGateway;
let alice: string;
let bob: string;

beforeAll(async () => {
	dir = mkdtempSync(join(tmpdir(), "pi-gateway-run-cancel-"));
	const keysFile = join(dir, "keys.json");
	alice = createKey(keysFile, "alice", ["sessions:read", "sessions:write"]).secret;
	bob = createKey(keysFile, "bob", ["sessions:read", "sessions:write"]).secret;
	gw = await startTestGateway({ ...noPool, keysFile });
});
afterAll(async () => {
	await gw?.stop();
	rmSync(dir, { recursive: true, force: true });
});

const as = (key: string) => ({ authorization: `Bearer ${key}` });
const call = (key: string, path: string, json?: unknown) =>
	gw.api(path, { method: "POST", headers: as(key), ...(json === undefined ? {} : { json }) });
const view = async (id: string) => (await gw.api(`/v1/sessions/${id}`, { headers: as(alice) })).body;
const newSession = async () => {
	const { status, body } = await gw.api("/v1/sessions", { method: "POST", headers: as(alice), json: {} });
	expect(status).toBe(201);
	return body.id as string;
};
/** The run in progress, once pi started it. */
const running = (id: string) => until(async () => (await view(id)).currentRunId as string | null);

describe("POST /v1/sessions/{id}/runs/{runId}/cancel", () => {
	it("aborts the run in progress; the session then takes the next prompt", async () => {
		const id = await newSession();
		const waited = call(alice, `/v1/sessions/${id}/prompt?wait=120`, { message: "slow: 600" });
		const runId = await running(id);
		const cancel = await call(alice, `/v1/sessions/${id}/runs/${runId}/cancel`);
		expect(cancel.status).toBe(200);
		expect(cancel.body).toEqual({ runId, state: "aborted" });
		const run = await waited;
		expect(run.status).toBe(200);
		expect(run.body).toMatchObject({ runId, aborted: true, stopReason: "aborted" });
		const next = await call(alice, `/v1/sessions/${id}/prompt?wait=60`, { message: "echo: next" });
		expect(next.status).toBe(200);
		expect(next.body).toMatchObject({ aborted: false, text: "next" });
		expect(next.body.runId).not.toBe(runId);
	});

	it("takes a follow-up that waits in the queue out before pi gets it", async () => {
		const id = await newSession();
		// pi answers bash only once it has run: the follow-up behind it waits in the gateway's queue.
		const bash = call(alice, `/v1/sessions/${id}/bash`, { command: "sleep 60" });
		await until(async () => (await view(id)).queuedCommands === 1);
		const followUp = await call(alice, `/v1/sessions/${id}/follow-up?wait=1`, { message: "never for pi" });
		expect(followUp.status).toBe(202);
		expect(followUp.body.disposition).toBe("pending");
		const runId = followUp.body.runId as string;
		expect((await view(id)).queuedCommands).toBe(2);

		const cancel = await call(alice, `/v1/sessions/${id}/runs/${runId}/cancel`);
		expect(cancel.status).toBe(200);
		expect(cancel.body).toEqual({ runId, state: "cancelled" });
		expect((await view(id)).queuedCommands).toBe(1);
		expect((await call(alice, `/v1/sessions/${id}/bash/abort`)).status).toBe(204);
		await bash;

		// pi never answered it, and the conversation never had it.
		const next = await call(alice, `/v1/sessions/${id}/prompt?wait=60`, { message: "echo: after" });
		expect(next.status).toBe(200);
		expect(next.body.text).toBe("after");
		const messages = await gw.api(`/v1/sessions/${id}/messages`, { headers: as(alice) });
		expect(JSON.stringify(messages.body)).not.toContain("never for pi");
		const log = gw.registry.get(id).events.since(0).events;
		const answered = log.filter((e) => e.type === "response").map((e) => eventJson<{ id?: string }>(e).id);
		expect(answered).not.toContain(runId);
		// Cancelled once, it is not queued any more.
		const again = await call(alice, `/v1/sessions/${id}/runs/${runId}/cancel`);
		expect([again.status, again.body.code]).toEqual([409, "run_not_active"]);
	});

	it("is 409 run_not_active for a run that settled, 404 run_not_found for an id that is no run", async () => {
		const id = await newSession();
		const run = await call(alice, `/v1/sessions/${id}/prompt?wait=60`, { message: "echo: done" });
		expect(run.status).toBe(200);
		const settled = await call(alice, `/v1/sessions/${id}/runs/${run.body.runId}/cancel`);
		expect(settled.status).toBe(409);
		expect(settled.res.headers.get("content-type")).toContain("application/problem+json");
		expect(settled.body.code).toBe("run_not_active");
		const unknown = await call(alice, `/v1/sessions/${id}/runs/gw_zzzz/cancel`);
		expect([unknown.status, unknown.body.code]).toEqual([404, "run_not_found"]);
	});

	it("is 404 for another principal, whose cancel leaves the run going", async () => {
		const id = await newSession();
		const waited = call(alice, `/v1/sessions/${id}/prompt?wait=120`, { message: "slow: 600" });
		const runId = await running(id);
		const bobs = await call(bob, `/v1/sessions/${id}/runs/${runId}/cancel`);
		expect([bobs.status, bobs.body.code]).toEqual([404, "session_not_found"]);
		expect((await view(id)).currentRunId).toBe(runId);
		const own = await call(alice, `/v1/sessions/${id}/runs/${runId}/cancel`);
		expect(own.body).toEqual({ runId, state: "aborted" });
		expect((await waited).body.aborted).toBe(true);
	});
});
