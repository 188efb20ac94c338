import { mkdtempSync, readdirSync, readFileSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { createKey } from "../../src/http/auth/keys.ts";
import { type GatewayProcess, killAll, launchGateway } from "../helpers/gateway-process.ts";
import { bareMachinePath, hasCommand } from "../helpers/host.ts";

// Issue 44's protocol surfaces on a machine without bubblewrap (README's `npm start`, a PATH with
// no bwrap, as fail-closed.test.ts): each is a client of the REST API, so each is refused as a
// create is (503 sandbox_unavailable) and no pi starts, whichever route bob takes.
const dir = mkdtempSync(join(tmpdir(), "pi-gateway-protocols-bare-"));
const started: GatewayProcess[] = [];
let gw: GatewayProcess;
let bob: string;
afterAll(async () => {
	killAll(started);
	await Promise.all(started.map((g) => g.exited));
	rmSync(dir, { recursive: true, force: true });
});

/** The pids the gateway has started that are still its children. */
function children(pid: number): number[] {
	return readdirSync(`/proc/${pid}/task`).flatMap((task) =>
		readFileSync(`/proc/${pid}/task/${task}/children`, "utf8").trim().split(/\s+/).filter(Boolean).map(Number),
	);
}

describe.runIf(hasCommand("bwrap"))("OpenAI's routes on a machine without bubblewrap", () => {
	beforeAll(async () => {
		const keysFile = join(dir, "keys.json");
		bob = createKey(keysFile, "bob", ["sessions:read", "sessions:write"]).secret;
		const env = { PATH: bareMachinePath(join(dir, "bin"), ["bwrap"]) };
		gw = await launchGateway({
			root: join(dir, "home"),
			port: 0,
			readme: true,
			env,
			extra: [`--keys-file=${keysFile}`],
		});
		started.push(gw);
	});

	it("refuses every run 503 sandbox_unavailable, and starts no pi", async () => {
		const send = (path: string, json: unknown) =>
			gw.fetch(path, {
				method: "POST",
				headers: { authorization: `Bearer ${bob}`, "content-type": "application/json" },
				body: JSON.stringify(json),
			});
		const model = "pi-gateway-demo/demo";
		const chat = await send("/v1/chat/completions", { model, messages: [{ role: "user", content: "echo: x" }] });
		expect(chat.status).toBe(503);
		expect(((await chat.json()) as { error: unknown }).error).toMatchObject({ code: "sandbox_unavailable" });
		for (const extra of [{}, { background: true }]) {
			const response = await send("/v1/responses", { model, input: "echo: x", ...extra });
			expect(response.status).toBe(503);
			expect(((await response.json()) as { error: unknown }).error).toMatchObject({ code: "sandbox_unavailable" });
		}
		const models = await gw.fetch("/v1/models", { headers: { authorization: `Bearer ${bob}` } });
		// The model list is read by starting a session: refused the same way, with the fix.
		expect(models.status).toBe(503);
		expect(((await models.json()) as { error: unknown }).error).toMatchObject({ code: "sandbox_unavailable" });
		expect(children(gw.child.pid as number)).toEqual([]);
	});
});
