import { mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { createServer, type IncomingHttpHeaders, request, type Server } from "node:http";
import type { AddressInfo } from "node:net";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it, vi } from "vitest";
import { piPackageDir } from "../../src/sessions/process/index.ts";
import { providerFields, type RelayPlan, relayPlan } from "../../src/sessions/relay/credentials.ts";
import { commandRetryMs, resolveSecret, resolveTemplate } from "../../src/sessions/relay/resolve.ts";
import { closeRelay, openRelay } from "../../src/sessions/relay/server.ts";

// An attacker's review of issue 42 (the agent never holds a secret), two principals in README's
// layout: a secret in a models.json field the plan did not know reached every agent as written
// (modelOverrides.<id>.headers); a key's placeholder was swapped in any header the operator listed
// for its route (a tool's `X-Title: <the key's placeholder>` gave OpenRouter's dashboard the real
// key); and a `!command` key that failed ran again at every call an agent made.

let root: string;
let upstream: Server;
let upstreamUrl: string;
let socket: string;
let plan: RelayPlan;
const seen: { url: string; headers: IncomingHttpHeaders }[] = [];
const orKey = "sk-or-real-5150";

beforeAll(async () => {
	root = mkdtempSync(join(tmpdir(), "relay-secret-places-"));
	upstream = createServer((req, res) => {
		req.resume();
		req.on("end", () => {
			seen.push({ url: req.url ?? "", headers: req.headers });
			res.writeHead(200, { "content-type": "application/json" });
			res.end(JSON.stringify({ usage: { prompt_tokens: 1, completion_tokens: 1 } }));
		});
	});
	await new Promise<void>((resolve) => upstream.listen(0, "127.0.0.1", resolve));
	upstreamUrl = `http://127.0.0.1:${(upstream.address() as AddressInfo).port}`;
	const agent = join(root, "agent");
	mkdirSync(agent);
	const providers = {
		or: {
			baseUrl: `${upstreamUrl}/or/v1`,
			api: "openai-completions",
			apiKey: orKey,
			headers: { "X-Title": "pi-gateway-app", "HTTP-Referer": "https://example.org" },
			models: [{ id: "m", api: "openai-completions" }],
		},
	};
	writeFileSync(join(agent, "models.json"), JSON.stringify({ providers }));
	plan = relayPlan({}, {}, agent, "http://127.0.0.1:4317");
	socket = join(root, "relay.sock");
	openRelay(socket, plan, { refusal: () => undefined, counted: () => {} });
});

afterAll(async () => {
	closeRelay(socket);
	await new Promise((resolve) => upstream.close(resolve));
	rmSync(root, { recursive: true, force: true });
});

/** Every path in pi's models.json schema whose value pi resolves like a key ($NAME, !command). */
function resolvedPaths(): string[][] {
	const schemaFile = join(piPackageDir(), "schemas", "models.schema.json");
	const schema = JSON.parse(readFileSync(schemaFile, "utf8"));
	const found: string[][] = [];
	const walk = (node: any, path: string[]) => {
		if (!node || typeof node !== "object") return;
		// A map's description speaks of its values ("Request headers. Values resolve like apiKey.").
		if (typeof node.description === "string" && /resolve like apiKey|"!command"/.test(node.description))
			found.push(node.patternProperties ? [...path, "*"] : path);
		for (const [key, child] of Object.entries(node.properties ?? {})) walk(child, [...path, key]);
		for (const child of Object.values(node.patternProperties ?? {})) walk(child, [...path, "*"]);
		if (node.items) walk(node.items, [...path, "[]"]);
	};
	walk(schema, []);
	return found;
}

describe("the plan's placeholders, against pi's own models.json schema", () => {
	it("replace every value pi resolves like a key, wherever the schema puts one", () => {
		const paths = resolvedPaths();
		// apiKey, and headers of providers, of models and of model overrides (pi 1.6): the walk works.
		expect(paths.length).toBeGreaterThanOrEqual(4);
		const canaries: string[] = [];
		const provider: Record<string, any> = { baseUrl: `${upstreamUrl}/p/v1`, api: "openai-completions" };
		for (const [n, path] of paths.entries()) {
			// providers.*.<rest>: the rest is planted in one provider (an array as one element, `*` as a name).
			expect(path.slice(0, 2)).toEqual(["providers", "*"]);
			const canary = `sk-CANARY-${n}-4411`;
			canaries.push(canary);
			let at = provider;
			const rest = path.slice(2);
			for (const [i, key] of rest.entries()) {
				const last = i === rest.length - 1;
				const name = key === "*" ? (last ? "X-Org-Secret" : "scripted") : key;
				if (last) at[name] = canary;
				else if (rest[i + 1] === "[]") {
					at[name] ??= [{ id: "scripted" }];
					at = at[name][0];
				} else if (key !== "[]") at = at[name] ??= {};
			}
		}
		const agent = join(root, "schema-agent");
		mkdirSync(agent);
		writeFileSync(join(agent, "models.json"), JSON.stringify({ providers: { p: provider } }));
		const planned = relayPlan({}, {}, agent, "http://127.0.0.1:4317");
		const text = JSON.stringify([planned.modelsJson, planned.authJson, planned.env]);
		for (const canary of canaries) expect(text).not.toContain(canary);
		// Each stands behind a placeholder of p's route.
		const values = [...(planned.routes.get("p")?.secrets.values() ?? [])].map((s) => s.value);
		expect(values.sort()).toEqual([...canaries].sort());
	});

	it("pass on only the provider fields pi's schema has (a secret kept under another name stays out)", () => {
		const schema = JSON.parse(readFileSync(join(piPackageDir(), "schemas", "models.schema.json"), "utf8"));
		const fields = Object.keys(schema.properties.providers.patternProperties["^.*$"].properties);
		expect([...providerFields].sort()).toEqual(fields.sort());
		const agent = join(root, "fields-agent");
		mkdirSync(agent);
		const p = { baseUrl: `${upstreamUrl}/p/v1`, apiKey: "k", backupKey: "sk-CANARY-BACKUP-77" };
		writeFileSync(join(agent, "models.json"), JSON.stringify({ note: "sk-CANARY-TOP-78", providers: { p } }));
		const text = JSON.stringify(relayPlan({}, {}, agent, "http://127.0.0.1:4317").modelsJson);
		expect(text).not.toContain("CANARY");
	});
});

function call(headers: Record<string, string>, path = "/or/chat/completions") {
	return new Promise<{ status: number; text: string }>((resolve, reject) => {
		const req = request({ socketPath: socket, path, method: "POST", headers }, (res) => {
			let text = "";
			res.setEncoding("utf8");
			res.on("data", (c: string) => (text += c));
			res.on("end", () => resolve({ status: res.statusCode ?? 0, text }));
		});
		req.on("error", reject);
		req.end("{}");
	});
}

const placeholderOf = (value: string) =>
	[...(plan.routes.get("or")?.secrets ?? [])].find(([, s]) => resolveTemplate(s.value, {}) === value)?.[0] as string;

describe("a placeholder is swapped only in the header it stands in", () => {
	it("refuses the key's placeholder in the operator's non-secret headers (X-Title), and theirs in the key's", async () => {
		const key = placeholderOf(orKey);
		const title = placeholderOf("pi-gateway-app");
		const before = seen.length;
		const misplaced: Record<string, string>[] = [
			{ "x-title": key },
			{ "http-referer": `Bearer ${key}` },
			{ authorization: `Bearer ${title}` },
			{ "x-api-key": title },
			{ "http-referer": title },
		];
		for (const headers of misplaced) {
			const answer = await call(headers);
			expect([answer.status, JSON.parse(answer.text).error?.code ?? answer.text]).toEqual([
				400,
				"relay_placeholder_misplaced",
			]);
		}
		expect(seen.length).toBe(before);
		// Where pi sends them, each is put back.
		await call({
			authorization: `Bearer ${key}`,
			"x-title": title,
			"http-referer": placeholderOf("https://example.org"),
		});
		expect(seen.at(-1)?.headers).toMatchObject({
			authorization: `Bearer ${orKey}`,
			"x-title": "pi-gateway-app",
			"http-referer": "https://example.org",
		});
	});
});

describe("a `!command` key that fails", () => {
	it("is not run again until commandRetryMs has passed, whatever the calls", async () => {
		const count = join(root, "runs");
		const secret = { value: `!echo run >> ${count}; exit 1` };
		vi.useFakeTimers({ toFake: ["setTimeout", "clearTimeout"] });
		try {
			for (let i = 0; i < 3; i++) expect(await resolveSecret(secret)).toBeUndefined();
			expect(readFileSync(count, "utf8")).toBe("run\n");
			vi.advanceTimersByTime(commandRetryMs);
			expect(await resolveSecret(secret)).toBeUndefined();
			expect(readFileSync(count, "utf8")).toBe("run\nrun\n");
		} finally {
			vi.useRealTimers();
		}
	});
});
