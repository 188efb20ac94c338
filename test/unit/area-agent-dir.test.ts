import {
	existsSync,
	mkdirSync,
	mkdtempSync,
	readdirSync,
	readFileSync,
	rmSync,
	symlinkSync,
	writeFileSync,
} from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, describe, expect, it } from "vitest";
import { parseConfig } from "../../src/config/config.ts";
import { agentDirShown, areaAgentDir } from "../../src/sessions/process/areas.ts";

// An attacker's review of issue 42: each area's agent folder was a copy of the operator's whole one,
// so mcp.json (an MCP server's bearer token, GITHUB_TOKEN in its env), mcp-auth.json and the like
// reached every principal's agent. It gets what pi needs to run, and an old copy loses the rest.
const root = mkdtempSync(join(tmpdir(), "pi-gateway-area-agent-"));
afterAll(() => rmSync(root, { recursive: true, force: true }));

const ws = join(root, "ws");
const data = join(root, "data");
const operator = join(root, "operator-agent");
mkdirSync(join(ws, "@alice"), { recursive: true });
for (const dir of ["extensions", "skills", "sessions", "tmp"]) mkdirSync(join(operator, dir), { recursive: true });
writeFileSync(join(operator, "extensions", "hello.ts"), "export default () => {};\n");
writeFileSync(join(operator, "AGENTS.md"), "instructions\n");
writeFileSync(
	join(operator, "settings.json"),
	`\uFEFF${JSON.stringify({ theme: "dark", httpProxy: "http://u:pw@p:1" })}`,
);
for (const name of ["mcp.json", "mcp-auth.json", "oauth.json", "models.json", "auth.json", "pi-debug.log"])
	writeFileSync(join(operator, name), `secret of ${name}`);
const config = parseConfig({ workspaceRoot: ws, dataDir: data });

describe("an area's agent folder", () => {
	it("holds only what pi needs of the operator's: no mcp.json, no logins, settings without the proxy", () => {
		const dir = areaAgentDir(config, join(ws, "@alice", "s1"), operator);
		expect(readdirSync(dir).sort()).toEqual([
			".pi-gateway-allowlist",
			"AGENTS.md",
			"extensions",
			"settings.json",
			"skills",
		]);
		expect(readFileSync(join(dir, "extensions", "hello.ts"), "utf8")).toContain("export default");
		expect(JSON.parse(readFileSync(join(dir, "settings.json"), "utf8"))).toEqual({ theme: "dark" });
		for (const name of readdirSync(dir))
			expect(name === ".pi-gateway-allowlist" || agentDirShown.includes(name)).toBe(true);
	});

	it("made by an older gateway (the whole copy), loses the operator's files off the list once, links unlinked not followed", () => {
		const old = join(data, "agents", "admin");
		mkdirSync(join(old, "extensions"), { recursive: true });
		const outside = join(root, "outside.txt");
		writeFileSync(outside, "keep me");
		for (const name of ["mcp.json", "mcp-auth.json", "settings.json", "models.json", "auth.json"])
			writeFileSync(join(old, name), `old ${name}`);
		symlinkSync(outside, join(old, "planted-link"));
		mkdirSync(join(old, "sessions"));
		expect(areaAgentDir(config, ws, operator)).toBe(old);
		expect(readdirSync(old).sort()).toEqual([
			".pi-gateway-allowlist",
			"auth.json",
			"extensions",
			"models.json",
			"sessions",
			"settings.json",
		]);
		expect(readFileSync(outside, "utf8")).toBe("keep me");
		// Once: what the area's agents write there later is theirs.
		writeFileSync(join(old, "mcp.json"), "the agent's own");
		areaAgentDir(config, ws, operator);
		expect(existsSync(join(old, "mcp.json"))).toBe(true);
	});
});
