import { mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { afterAll, describe, expect, it } from "vitest";
import { type GatewayProcess, killAll, launchGateway } from "../helpers/gateway-process.ts";
import { hasCommand } from "../helpers/host.ts";

// Every file the gateway reads a secret from is out of the agent's sight, the config file too: an
// operator's /etc-style config (here under /var/tmp, outside the data dir and /tmp, which are
// hidden anyway) may hold `token:`, and an agent that reads it can answer its own approvals.
// README's start plus --config; the agent is pi's bash tool driven by the demo model.
const dir = mkdtempSync("/var/tmp/pi-gateway-secrets-");
const started: GatewayProcess[] = [];
afterAll(async () => {
	killAll(started);
	await Promise.all(started.map((gw) => gw.exited));
	rmSync(dir, { recursive: true, force: true });
});

describe.runIf(hasCommand("bwrap"))("secrets at rest", () => {
	it("a config file holding the token is empty in the agent's view", async () => {
		const token = "config-file-token-0123456789abcdef";
		const config = join(dir, "config.yaml");
		writeFileSync(config, `token: ${token}\n`, { mode: 0o600 });
		const gw = await launchGateway({
			root: join(dir, "home"),
			port: 0,
			readme: true,
			extra: ["--config", config],
			clientToken: token,
		});
		started.push(gw);
		expect(gw.logs.find((entry) => entry.msg === "pi-gateway listening")?.tokenFile).toBeUndefined();
		const created = await gw.api("/v1/sessions", { method: "POST", json: {} });
		expect(created.status).toBe(201);
		const run = await gw.api(`/v1/sessions/${created.body.id}/prompt?wait=true`, {
			method: "POST",
			json: { message: `bash: wc -c < ${config}; cat ${config}; echo END` },
		});
		expect(run.status).toBe(200);
		// Not in the view at all (sandbox-view.ts: /var/tmp is not shown); where the view shows its folder,
		// covered by /dev/null on a nodev mount: nothing to read, or not even that.
		expect(run.body.text).toMatch(/config\.yaml: (Permission denied|No such file or directory)$|^0$/m);
		expect(run.body.text).toMatch(/^END$/m);
		expect(run.body.text).not.toContain(token);
		gw.child.kill("SIGTERM");
		await gw.exited;
	});
});
