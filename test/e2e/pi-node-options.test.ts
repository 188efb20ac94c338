import { spawn } from "node:child_process";
import { once } from "node:events";
import { copyFileSync, mkdirSync, mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join, resolve } from "node:path";
import { afterAll, describe, expect, it } from "vitest";
import { defaultPiNodeOptions } from "../../src/config/child-env.ts";
import { type ConfigInput, parseConfig } from "../../src/config/config.ts";
import { fixtures, startTestGateway, type TestGateway, until } from "../helpers/gateway.ts";
import { gatewayEntry } from "../helpers/gateway-entry.ts";

// Node's flags for pi children (--pi-node-options), read from inside pi: an extension in pi's agent
// dir (auto-loaded by every pi, warm pool included) reports process.execArgv. pi renames its
// process, so /proc/<pid>/cmdline would only say "pi".
const gateways: TestGateway[] = [];
const agentDirs: string[] = [];
afterAll(async () => {
	await Promise.all(gateways.map((gw) => gw.stop()));
	for (const dir of agentDirs) rmSync(dir, { recursive: true, force: true });
});

/** A gateway whose pi children all load the probe, from their first start (the warm pool's too). */
async function gateway(overrides: Partial<ConfigInput> = {}): Promise<TestGateway> {
	const piAgentDir = mkdtempSync(join(tmpdir(), "pi-node-options-agent-"));
	agentDirs.push(piAgentDir);
	mkdirSync(join(piAgentDir, "extensions"));
	copyFileSync(join(fixtures, "extensions/exec-argv.ts"), join(piAgentDir, "extensions/exec-argv.ts"));
	const gw = await startTestGateway({ ...overrides, piAgentDir });
	gateways.push(gw);
	return gw;
}

async function nodeFlagsOf(gw: TestGateway, id: string): Promise<{ execArgv: string[]; nodeOptions: string | null }> {
	const prompt = await gw.api(`/v1/sessions/${id}/prompt`, { method: "POST", json: { message: "/exec-argv" } });
	expect(prompt.status).toBe(202);
	const line = await until(async () => {
		const ui = (await gw.api(`/v1/sessions/${id}/ui`)).body;
		return ui.notifications.find((n: { message: string }) => n.message.startsWith("exec-argv "))?.message as
			| string
			| undefined;
	}, 10_000);
	return operatorFlags(line);
}

/** pi's report, less the gateway's own flag for a sandboxed pi (the relay's forwarder, loaded first). */
function operatorFlags(line: string): { execArgv: string[]; nodeOptions: string | null } {
	const flags = JSON.parse(line.slice("exec-argv ".length)) as { execArgv: string[]; nodeOptions: string | null };
	const forwarder = flags.execArgv.filter((flag) => /^--import=file:.*relay-forwarder\.mjs/.test(flag));
	expect(forwarder.length).toBeLessThanOrEqual(1);
	return { ...flags, execArgv: flags.execArgv.filter((flag) => !forwarder.includes(flag)) };
}

/** Starts the CLI (`node src/main.ts`) and asks one of its pi children for its flags. */
async function cli(args: string[], env: NodeJS.ProcessEnv) {
	const root = mkdtempSync(join(tmpdir(), "pi-node-options-cli-"));
	agentDirs.push(root);
	const agent = join(root, "agent");
	mkdirSync(join(agent, "extensions"), { recursive: true });
	copyFileSync(join(fixtures, "extensions/exec-argv.ts"), join(agent, "extensions/exec-argv.ts"));
	const token = "node-options-token-0123456789";
	const child = spawn(
		process.execPath,
		[gatewayEntry, "--port", "0", "--data-dir", join(root, "data"), "--pi-agent-dir", agent, ...args],
		{
			cwd: resolve(import.meta.dirname, "../.."),
			env: { ...process.env, PI_GATEWAY_TOKEN: token, ...env },
			stdio: ["ignore", "pipe", "ignore"],
		},
	);
	try {
		let out = "";
		child.stdout?.on("data", (chunk) => {
			out += chunk;
		});
		const url = await until(() => /"url":"(http:[^"]+)"/.exec(out)?.[1], 20_000);
		const headers = { authorization: `Bearer ${token}`, "content-type": "application/json" };
		const created = (await (await fetch(`${url}/v1/sessions`, { method: "POST", headers, body: "{}" })).json()) as {
			id: string;
		};
		await fetch(`${url}/v1/sessions/${created.id}/prompt`, {
			method: "POST",
			headers,
			body: JSON.stringify({ message: "/exec-argv" }),
		});
		const line = await until(async () => {
			const ui = (await (await fetch(`${url}/v1/sessions/${created.id}/ui`, { headers })).json()) as {
				notifications: { message: string }[];
			};
			return ui.notifications.find((n: { message: string }) => n.message.startsWith("exec-argv "))?.message as
				| string
				| undefined;
		}, 10_000);
		return operatorFlags(line);
	} finally {
		child.kill("SIGTERM");
		if (child.exitCode === null) await once(child, "exit");
	}
}

/** What a shell the agent's tools run sees of NODE_OPTIONS. */
async function toolNodeOptions(gw: TestGateway, id: string): Promise<string> {
	const res = await gw.api(`/v1/sessions/${id}/bash`, {
		method: "POST",
		json: { command: 'echo "[$NODE_OPTIONS]"' },
	});
	return res.body.output;
}

describe("--pi-node-options", () => {
	it("by default gives pi the memory-saving flags, on its command line: not to the agent's tools", async () => {
		const gw = await gateway();
		const id = await gw.session();
		expect(await nodeFlagsOf(gw, id)).toEqual({ execArgv: defaultPiNodeOptions.split(" "), nodeOptions: null });
		// Not in the environment: the node processes the agent's tools start keep Node's defaults.
		expect(await toolNodeOptions(gw, id)).toBe("[]\n");
	});

	it('"" means Node\'s defaults: no flag at all', async () => {
		const gw = await gateway({ piNodeOptions: "" });
		expect(await nodeFlagsOf(gw, await gw.session())).toEqual({ execArgv: [], nodeOptions: null });
	});

	it("reaches a sandboxed pi and the warm pool's processes", async () => {
		const gw = await gateway({
			sandbox: "on",
			warmPool: 1,
			piNodeOptions: "--max-old-space-size=300  --max-semi-space-size=3",
		});
		await until(() => gw.registry.pool?.readyCount === 1, 20_000);
		const pooled = new Set(gw.registry.pool?.readyPids ?? []);
		const created = await gw.api("/v1/sessions", { method: "POST", json: {} });
		expect(pooled.has(created.body.pid)).toBe(true);
		expect(await nodeFlagsOf(gw, created.body.id)).toEqual({
			execArgv: ["--max-old-space-size=300", "--max-semi-space-size=3"],
			nodeOptions: null,
		});
		expect(await toolNodeOptions(gw, created.body.id)).toBe("[]\n");
	});

	it("on the command line and in the environment, an empty value is Node's defaults too", async () => {
		const empty = await cli([], { PI_GATEWAY_PI_NODE_OPTIONS: "" });
		expect(empty).toEqual({ execArgv: [], nodeOptions: null });
		const given = await cli(["--pi-node-options=--max-semi-space-size=3"], {});
		expect(given).toEqual({ execArgv: ["--max-semi-space-size=3"], nodeOptions: null });
	});

	it("takes flags only: no script, no inspector", () => {
		for (const bad of ["/tmp/evil.js", "--require=/tmp/x.js x", "-e", "--inspect=0", "--inspect-brk"])
			expect(() => parseConfig({ piNodeOptions: bad }), bad).toThrow();
		expect(parseConfig({}).piNodeOptions).toBe(defaultPiNodeOptions);
		expect(parseConfig({ piNodeOptions: "" }).piNodeOptions).toBe("");
	});
});
