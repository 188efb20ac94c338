import { mkdtempSync, readFileSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { Client } from "@modelcontextprotocol/sdk/client/index.js";
import { StreamableHTTPClientTransport } from "@modelcontextprotocol/sdk/client/streamableHttp.js";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { createKey } from "../../src/http/auth/keys.ts";
import { type DocBlock, docBlocks, repo } from "../helpers/doc-blocks.ts";
import { fixtures, startTestGateway, type TestGateway } from "../helpers/gateway.ts";

// Issue 44 item 3: docs/mcp.md's configurations for Claude Code, Codex and Cursor are read from the
// page, each as its client reads it (its file format, its variable syntax), and the request each
// would send is made against a real /mcp: the page cannot name a path or an Authorization form the
// route does not take. The clients themselves are not installed here; the page says which versions
// were run against a gateway and what they printed.
let gw: TestGateway;
let dir: string;
let key: string;

beforeAll(async () => {
	dir = mkdtempSync(join(tmpdir(), "pi-gateway-mcp-clients-"));
	const keysFile = join(dir, "keys.json");
	key = createKey(keysFile, "alice", ["sessions:read", "sessions:write", "approvals:read", "approvals:answer"]).secret;
	// initialize and tools/list start no pi: a stub is enough.
	gw = await startTestGateway({ keysFile, piCommand: [process.execPath, join(fixtures, "stub-pi.mjs"), "ok"] });
});
afterAll(async () => {
	await gw?.stop();
	rmSync(dir, { recursive: true, force: true });
});

const page = "docs/mcp.md";
/** The variable every configuration reads the key from (not PI_GATEWAY_TOKEN: the gateway itself reads that one). */
const variable = "PI_GATEWAY_KEY";

/** The `### ` heading a block sits under. */
function headingOf(block: DocBlock): string {
	const lines = readFileSync(join(repo, page), "utf8").split("\n").slice(0, block.line);
	return (lines.findLast((l) => /^#{2,3} /.test(l)) ?? "").replace(/^#+ /, "");
}

/** The subset of TOML a client configuration uses: tables, and keys with string, integer or boolean values. */
function parseToml(text: string): Record<string, Record<string, unknown>> {
	const tables: Record<string, Record<string, unknown>> = {};
	let table: Record<string, unknown> | undefined;
	for (const raw of text.split("\n")) {
		const line = raw.trim();
		if (line === "" || line.startsWith("#")) continue;
		const header = /^\[([\w.-]+)\]$/.exec(line);
		if (header) {
			table = tables[header[1] as string] = {};
			continue;
		}
		const pair = /^([\w-]+)\s*=\s*("(?:[^"\\]|\\.)*"|-?\d+|true|false)$/.exec(line);
		if (!pair || !table) throw new Error(`not in the TOML subset this test reads: ${raw}`);
		table[pair[1] as string] = JSON.parse(pair[2] as string);
	}
	return tables;
}

/** What one client would send: the URL and the Authorization header, with its variable syntax expanded. */
interface Wire {
	client: string;
	url: string;
	authorization: string;
}

/** Where the key goes once the gateway made it (the blocks are read before it starts). */
const secret = "@key@";
/** Claude Code's `.mcp.json` expands `${VAR}` (and `${VAR:-default}`); Cursor's `${env:VAR}`. */
const expand = {
	claude: (value: string) => value.replace(/\$\{(\w+)(?::-[^}]*)?\}/g, (_, name) => (name === variable ? secret : "")),
	cursor: (value: string) => value.replace(/\$\{env:(\w+)\}/g, (_, name) => (name === variable ? secret : "")),
};

function configurations(): Wire[] {
	const wires: Wire[] = [];
	for (const block of docBlocks(page)) {
		const heading = headingOf(block);
		if (block.info === "json" && block.code.includes('"mcpServers"')) {
			const servers = (JSON.parse(block.code) as { mcpServers: Record<string, Record<string, any>> }).mcpServers;
			const server = servers["pi-gateway"] as Record<string, any>;
			const authorization = server.headers?.Authorization as string;
			if (heading.startsWith("Claude Code")) {
				expect(server.type, `${page}:${block.line}`).toBe("http");
				expect(authorization).toBe(`Bearer \${${variable}}`);
				wires.push({ client: "claude (.mcp.json)", url: server.url, authorization: expand.claude(authorization) });
			} else if (heading.startsWith("Cursor")) {
				expect(authorization).toBe(`Bearer \${env:${variable}}`);
				wires.push({ client: "cursor", url: server.url, authorization: expand.cursor(authorization) });
			} else throw new Error(`${page}:${block.line}: an mcpServers block under "${heading}"`);
		}
		if (block.info === "toml") {
			expect(heading, `${page}:${block.line}`).toMatch(/^Codex/);
			const server = parseToml(block.code)["mcp_servers.pi-gateway"] as Record<string, unknown>;
			// Codex sends the variable's value as `Authorization: Bearer <value>`.
			expect(server.bearer_token_env_var).toBe(variable);
			wires.push({ client: "codex", url: server.url as string, authorization: `Bearer ${secret}` });
		}
		if (block.info === "sh" && /^claude mcp add /m.test(block.code)) {
			const line = block.code.split("\n").find((l) => l.startsWith("claude mcp add ")) as string;
			expect(line).toContain("--transport http pi-gateway ");
			const url = /\s(https?:\/\/\S+)/.exec(line)?.[1] as string;
			const header = /--header "Authorization: ([^"]*)"/.exec(line)?.[1] as string;
			expect(header).toBe(`Bearer $${variable}`);
			wires.push({ client: "claude mcp add", url, authorization: header.replace(`$${variable}`, secret) });
		}
	}
	return wires;
}

describe("docs/mcp.md's client configurations", () => {
	const wires = configurations();

	it("there is one for Claude Code (both forms), Codex and Cursor", () => {
		expect(wires.map((w) => w.client).sort()).toEqual(["claude (.mcp.json)", "claude mcp add", "codex", "cursor"]);
	});

	it.each(wires.map((w) => [w.client, w] as const))(
		"%s: names npm start's /mcp, and its header is accepted",
		async (_, wire) => {
			const url = new URL(wire.url);
			expect(`${url.origin}${url.pathname}`).toBe("http://127.0.0.1:8787/mcp");
			// The same path and header against this gateway, through the official SDK's transport.
			const client = new Client({ name: wire.client, version: "1.0.0" });
			await client.connect(
				new StreamableHTTPClientTransport(new URL(url.pathname, gw.url), {
					requestInit: { headers: { Authorization: wire.authorization.replace(secret, key) } },
				}),
			);
			expect((await client.listTools()).tools.map((t) => t.name)).toContain("start_session");
			await client.close();
		},
	);
});

// What Claude Code 2.1.328 and Codex 0.169.0 were seen to request, and the answer each needs.
describe("what real clients send to /mcp", () => {
	const post = (body: unknown, headers: Record<string, string> = {}) =>
		fetch(`${gw.url}/mcp`, {
			method: "POST",
			headers: { "content-type": "application/json", accept: "application/json, text/event-stream", ...headers },
			body: JSON.stringify(body),
		});

	it("without a header they look for OAuth: every discovery path and /register is a 404 that names the bearer header", async () => {
		// The requests Claude Code and Codex made after a 401, with no credential (they send none).
		const discovery = [
			"/.well-known/oauth-protected-resource/mcp",
			"/.well-known/oauth-protected-resource",
			"/mcp/.well-known/oauth-protected-resource",
			"/.well-known/oauth-authorization-server",
			"/.well-known/oauth-authorization-server/mcp",
			"/.well-known/openid-configuration",
			"/.well-known/openid-configuration/mcp",
			"/mcp/.well-known/openid-configuration",
		];
		const answers = [
			...discovery.map((path) => fetch(`${gw.url}${path}`, { headers: { accept: "application/json" } })),
			fetch(`${gw.url}/register`, {
				method: "POST",
				headers: { "content-type": "application/json" },
				body: JSON.stringify({
					client_name: "Claude Code (pi-gateway)",
					redirect_uris: ["http://localhost:3118/callback"],
				}),
			}),
		];
		for (const res of await Promise.all(answers)) {
			expect(res.status, res.url).toBe(404);
			expect(res.headers.get("content-type")).toBe("application/problem+json");
			const problem = (await res.json()) as { code: string; detail: string };
			expect(problem.code).toBe("oauth_not_supported");
			// Claude Code prints this detail, and redacts the server's URL path from it: none is in it.
			expect(problem.detail).toContain("Authorization: Bearer <the gateway's token or an API key>");
			expect(problem.detail).not.toContain("/mcp");
		}
		// /mcp itself still wants the credential, and nothing else became open.
		expect((await post({ jsonrpc: "2.0", id: 1, method: "tools/list" })).status).toBe(401);
		expect((await fetch(`${gw.url}/.well-known/other`)).status).toBe(401);
		expect((await fetch(`${gw.url}/register`)).status).toBe(404);
	});

	it("a server/discover probe (2026-07-28) is refused without opening a session, and initialize follows", async () => {
		const auth = { authorization: `Bearer ${key}` };
		// As Claude Code 2.1.328 sends it.
		const probe = await post(
			{
				jsonrpc: "2.0",
				id: "server-discover-probe-1",
				method: "server/discover",
				params: { _meta: { "io.modelcontextprotocol/protocolVersion": "2026-07-28" } },
			},
			{ ...auth, "mcp-method": "server/discover", "mcp-protocol-version": "2026-07-28" },
		);
		expect(probe.status).toBe(400);
		expect(probe.headers.get("mcp-session-id")).toBeNull();
		expect(((await probe.json()) as { code: string }).code).toBe("mcp_session_required");
		const client = new Client({ name: "claude-code", version: "2.1.328" });
		const transport = new StreamableHTTPClientTransport(new URL("/mcp", gw.url), { requestInit: { headers: auth } });
		await client.connect(transport);
		expect(transport.protocolVersion).toBe("2025-11-25");
		// Its GET for a standalone stream is a 405, which the SDK (and Claude Code, Codex) take as none.
		const stream = await fetch(`${gw.url}/mcp`, {
			headers: { ...auth, accept: "text/event-stream", "mcp-session-id": transport.sessionId as string },
		});
		expect(stream.status).toBe(405);
		expect((await client.listTools()).tools).toHaveLength(7);
		// Codex ends its session with DELETE: 200, and the id is gone.
		const id = transport.sessionId as string;
		await transport.terminateSession();
		const after = await post({ jsonrpc: "2.0", id: 2, method: "tools/list" }, { ...auth, "mcp-session-id": id });
		expect(after.status).toBe(404);
		await client.close();
	});
});
