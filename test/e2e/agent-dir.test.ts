import { existsSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { startTestGateway, type TestGateway } from "../helpers/gateway.ts";

// An attacker's review, README's layout: an admin's sessions (every session of `npm start`'s
// token) were given the operator's own pi agent folder, writable, and an extension the agent
// planted there ran unsandboxed the next time the operator ran pi on the host. They get a copy now.
let gw: TestGateway;
let operatorDir: string;
beforeAll(async () => {
	// The operator's folder as it is before the gateway starts (the warm pool copies it at once);
	// outside /tmp, which the sandbox replaces, as ~/.pi/agent is.
	operatorDir = mkdtempSync("/var/tmp/pi-gateway-operator-agent-");
	writeFileSync(join(operatorDir, "settings.json"), JSON.stringify({ marker: "operator-settings-41d7" }));
	gw = await startTestGateway({ piAgentDir: operatorDir });
});
afterAll(async () => {
	await gw?.stop();
	rmSync(operatorDir, { recursive: true, force: true });
});

const sh = async (id: string, command: string) =>
	(await gw.api(`/v1/sessions/${id}/bash`, { method: "POST", json: { command } })).body as {
		output: string;
		exitCode: number;
	};

describe("an admin's session and the operator's pi agent folder", () => {
	it("works in a copy under the data dir: what its agent plants there never reaches the operator's", async () => {
		const id = await gw.session();
		const plant = [
			'echo "dir=$PI_CODING_AGENT_DIR"',
			'cat "$PI_CODING_AGENT_DIR/settings.json"; echo',
			'mkdir -p "$PI_CODING_AGENT_DIR/extensions" && echo "export default () => {}" > "$PI_CODING_AGENT_DIR/extensions/planted.ts" && echo planted-copy',
			// The operator's folder by its own path: out of sight or read-only, never written.
			`mkdir -p ${operatorDir}/extensions 2>/dev/null && echo x > ${operatorDir}/extensions/direct.ts && echo planted-direct`,
		].join("; ");
		const { output } = await sh(id, plant);
		const copy = join(gw.config.dataDir, "agents", "admin");
		expect(output).toContain(`dir=${copy}\n`);
		// The copy holds the operator's settings (its logins too), and the agent's write landed in it.
		expect(output).toContain("operator-settings-41d7");
		expect(output).toContain("planted-copy");
		expect(readFileSync(join(copy, "extensions", "planted.ts"), "utf8")).toContain("export default");
		expect(output).not.toContain("planted-direct");
		expect(existsSync(join(operatorDir, "extensions"))).toBe(false);
		expect(readFileSync(join(operatorDir, "settings.json"), "utf8")).toContain("operator-settings-41d7");
	});
});

describe("an operator's agent dir that holds the data dir", () => {
	it("starts sessions, and the agent's copy leaves the gateway's data dir out", async () => {
		// Found by a review: the copy went into itself (500 on every create) and would have carried
		// the token and gateway.db into the agent's copy.
		const agent = mkdtempSync("/var/tmp/pi-gateway-agent-holds-data-");
		writeFileSync(join(agent, "settings.json"), "{}");
		const inner = await startTestGateway({ piAgentDir: agent, dataDir: join(agent, "gateway-data") });
		try {
			const created = await inner.api("/v1/sessions", { method: "POST", json: {} });
			expect(created.status).toBe(201);
			const copy = join(inner.config.dataDir, "agents", "admin");
			expect(existsSync(join(copy, "settings.json"))).toBe(true);
			expect(existsSync(join(copy, "gateway-data"))).toBe(false);
		} finally {
			await inner.stop();
			rmSync(agent, { recursive: true, force: true });
		}
	});
});
