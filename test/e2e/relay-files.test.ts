import { mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { createKey } from "../../src/http/auth/keys.ts";
import { startTestGateway, type TestGateway } from "../helpers/gateway.ts";
import { hasCommand } from "../helpers/host.ts";

// An attacker's review: at each start the gateway wrote the area's models.json and auth.json (its
// placeholders for the relay) with a plain write, in the folder the agent writes. An agent that
// planted a link there made the gateway overwrite any file as its user (here root): /etc/passwd,
// the token, the operator's own models.json (after which every principal's key went to whatever
// listened on the host's 127.0.0.1:4317). A FIFO planted there would have held the write forever.
let gw: TestGateway;
let dir: string;
let alice: string;
beforeAll(async () => {
	// Outside /tmp and the data dir: a file the agent cannot see, as /etc/passwd is to it.
	dir = mkdtempSync("/var/tmp/pi-gateway-relay-files-");
	writeFileSync(join(dir, "victim.txt"), "ORIGINAL\n");
	const keysFile = join(dir, "keys.json");
	alice = createKey(keysFile, "alice", ["sessions:read", "sessions:write"]).secret;
	// No warm pool: the second create must be a start that writes the files again (a pooled pi,
	// started before the plant, would be handed over as it is).
	gw = await startTestGateway({ keysFile, warmPool: 0 });
});
afterAll(async () => {
	await gw?.stop();
	rmSync(dir, { recursive: true, force: true });
});

const asAlice = () => ({ authorization: `Bearer ${alice}` });

describe.runIf(hasCommand("bwrap"))("the files the gateway writes in an agent's folder", () => {
	it("are never written through a link or into a FIFO the agent planted", { timeout: 90_000 }, async () => {
		const first = await gw.api("/v1/sessions", { method: "POST", json: {}, headers: asAlice() });
		expect(first.status).toBe(201);
		const victim = join(dir, "victim.txt");
		const plant = [
			'cd "$PI_CODING_AGENT_DIR"',
			`rm -f models.json auth.json && ln -s ${victim} models.json && mkfifo auth.json`,
			"ls -l models.json auth.json | cut -c1",
		].join(" && ");
		const planted = await gw.api(`/v1/sessions/${first.body.id}/bash`, {
			method: "POST",
			json: { command: plant },
			headers: asAlice(),
		});
		expect(planted.body.output).toBe("p\nl\n");
		// A new session of hers starts in the same area folder: the gateway writes both files again.
		const second = await gw.api("/v1/sessions", { method: "POST", json: {}, headers: asAlice() });
		expect(second.status).toBe(201);
		expect(readFileSync(victim, "utf8")).toBe("ORIGINAL\n");
		const after = await gw.api(`/v1/sessions/${second.body.id}/bash`, {
			method: "POST",
			json: { command: 'cd "$PI_CODING_AGENT_DIR" && ls -l models.json auth.json | cut -c1 && head -c 1 models.json' },
			headers: asAlice(),
		});
		expect(after.body.output).toBe("-\n-\n{");
	});
});
