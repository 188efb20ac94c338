import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { createKey } from "../../src/http/auth/keys.ts";
import { startTestGateway, type TestGateway } from "../helpers/gateway.ts";

// Issue 20's HEAD reproducers, replayed against real pi: Hono runs the GET handler for HEAD, so
// HEAD must pass GET's scope and ownership checks and must not keep a stream's slot.
let gw: TestGateway;
let dir: string;
const key = { bob: "", watcher: "" };
beforeAll(async () => {
	dir = mkdtempSync(join(tmpdir(), "pi-gateway-head-"));
	const keysFile = join(dir, "keys.json");
	key.bob = createKey(keysFile, "bob", ["sessions:read", "sessions:write"]).secret;
	key.watcher = createKey(keysFile, "alice", ["approvals:read"]).secret;
	// One pi process at most: a second session hibernates the first, so waking it would show.
	gw = await startTestGateway({ keysFile, maxLiveSessions: 1 });
});
afterAll(async () => {
	await gw?.stop();
	rmSync(dir, { recursive: true, force: true });
});
const as = (who: keyof typeof key) => ({ authorization: `Bearer ${key[who]}` });

describe("HEAD passes GET's checks (issue 20)", () => {
	it("an approvals:read key gets 403/404 on another principal's session, as on GET, and does not wake it", async () => {
		const create = () => gw.api("/v1/sessions", { method: "POST", headers: as("bob"), json: {} });
		const asleep = (await create()).body.id as string;
		await create(); // hibernates the first (one pi process at most)
		expect((await gw.api(`/v1/sessions/${asleep}`)).body).toMatchObject({ status: "stopped", pid: null });
		// Its session operations need sessions:read (403); its approvals operations, a share (404).
		const cases = [
			[`/v1/sessions/${asleep}`, 403],
			[`/v1/sessions/${asleep}/state`, 403],
			[`/v1/sessions/${asleep}/messages`, 403],
			[`/v1/sessions/${asleep}/approvals`, 404],
			[`/v1/sessions/${asleep}/ui`, 404],
		] as const;
		for (const [path, status] of cases) {
			const res = await gw.fetch(path, { method: "HEAD", headers: as("watcher") });
			expect(res.status, path).toBe(status);
		}
		// No pi was spawned for it.
		expect((await gw.api(`/v1/sessions/${asleep}`)).body).toMatchObject({ status: "stopped", pid: null });
	});

	it("an approvals:read key gets 403 on HEAD /metrics, as on GET", async () => {
		for (const method of ["GET", "HEAD"]) {
			const res = await gw.fetch("/metrics", { method, headers: as("watcher") });
			expect(res.status, method).toBe(403);
			await res.body?.cancel();
		}
	});

	it("66 HEADs on /v1/events hold no subscriber slot: the admin's stream still opens", async () => {
		const max = gw.config.maxEventStreams;
		for (let i = 0; i < max + 2; i++) {
			const res = await gw.fetch("/v1/events", { method: "HEAD", headers: as("bob") });
			expect(res.status).toBe(200);
			expect(res.headers.get("content-type")).toBe("text/event-stream");
			expect(await res.text()).toBe("");
		}
		const admin = await gw.fetch("/v1/events");
		expect(admin.status).toBe(200);
		await admin.body?.cancel();
	});
});
