import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { createServer, type IncomingHttpHeaders, request, type Server } from "node:http";
import type { AddressInfo } from "node:net";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { placeholderPrefix, type RelayPlan, relayPlan } from "../../src/sessions/relay/credentials.ts";
import { resolveSecret, resolveTemplate } from "../../src/sessions/relay/resolve.ts";
import { closeRelay, openRelay } from "../../src/sessions/relay/server.ts";

// What the sandbox holds instead of the operator's keys, and where the relay puts them back
// (issue 42 item 1): each provider's placeholders become the real values on that provider's route
// only, and only in a header or the query, never in the body pi sends (a prompt may quote one).

const keyA = "sk-real-a-111";
const keyB = "sk-real-b-222";
const headerA = "hdr-real-a-333";
const envKey = "sk-real-env-444";

let root: string;
let upstream: Server;
let upstreamUrl: string;
const seen: { url: string; headers: IncomingHttpHeaders; body: string }[] = [];
let plan: RelayPlan;
let socket: string;
const savedEnv = process.env.OPENAI_API_KEY;

beforeAll(async () => {
	root = mkdtempSync(join(tmpdir(), "relay-credentials-"));
	upstream = createServer((req, res) => {
		const parts: Buffer[] = [];
		req.on("data", (p: Buffer) => parts.push(p));
		req.on("end", () => {
			seen.push({ url: req.url ?? "", headers: req.headers, body: Buffer.concat(parts).toString("utf8") });
			res.writeHead(200, { "content-type": "application/json" });
			res.end(JSON.stringify({ usage: { prompt_tokens: 1, completion_tokens: 1 } }));
		});
	});
	await new Promise<void>((resolve) => upstream.listen(0, "127.0.0.1", resolve));
	upstreamUrl = `http://127.0.0.1:${(upstream.address() as AddressInfo).port}`;
	const agent = join(root, "agent");
	mkdirSync(agent);
	const model = (id: string) => ({ id, api: "openai-completions" });
	writeFileSync(
		join(agent, "models.json"),
		JSON.stringify({
			providers: {
				a: { baseUrl: `${upstreamUrl}/a/v1`, apiKey: keyA, headers: { "x-team": headerA }, models: [model("ma")] },
				b: { baseUrl: `${upstreamUrl}/b/v1`, apiKey: keyB, models: [model("mb")] },
				openai: { baseUrl: `${upstreamUrl}/openai/v1`, models: [model("mo")] },
			},
		}),
	);
	process.env.OPENAI_API_KEY = envKey;
	plan = relayPlan(
		process.env,
		{ OPENAI_API_KEY: envKey, GITHUB_TOKEN: "ghp-x", PATH: "/usr/bin" },
		agent,
		"http://127.0.0.1:4317",
	);
	socket = join(root, "relay.sock");
	openRelay(socket, plan, { refusal: () => undefined, counted: () => {} });
});

afterAll(async () => {
	closeRelay(socket);
	await new Promise((resolve) => upstream.close(resolve));
	if (savedEnv === undefined) delete process.env.OPENAI_API_KEY;
	else process.env.OPENAI_API_KEY = savedEnv;
	rmSync(root, { recursive: true, force: true });
});

/** One call through the relay's socket; resolves with what the upstream received (or the relay's answer). */
function call(path: string, headers: Record<string, string>, body = "{}") {
	return new Promise<{ status: number; text: string }>((resolve, reject) => {
		const req = request({ socketPath: socket, path, method: "POST", headers }, (res) => {
			let text = "";
			res.setEncoding("utf8");
			res.on("data", (c: string) => (text += c));
			res.on("end", () => resolve({ status: res.statusCode ?? 0, text }));
		});
		req.on("error", reject);
		req.end(body);
	});
}

const placeholderOf = (route: string, value: string) =>
	[...(plan.routes.get(route)?.secrets ?? [])].find(
		([, secret]) => resolveTemplate(secret.value, process.env) === value,
	)?.[0] as string;

describe("relayPlan", () => {
	it("gives the sandbox placeholders and relay base URLs, never a real key", () => {
		const text = JSON.stringify([plan.modelsJson, plan.authJson, plan.env]);
		for (const real of [keyA, keyB, headerA, envKey]) expect(text).not.toContain(real);
		const providers = plan.modelsJson.providers as Record<string, any>;
		expect(providers.a.baseUrl).toBe("http://127.0.0.1:4317/a");
		expect(providers.a.apiKey.startsWith(placeholderPrefix)).toBe(true);
		expect(providers.a.headers["x-team"].startsWith(placeholderPrefix)).toBe(true);
		expect(plan.env.OPENAI_API_KEY).toBe(`${placeholderPrefix}env-OPENAI_API_KEY`);
		// A credential no provider reads leaves the sandbox's environment.
		expect("GITHUB_TOKEN" in plan.env && plan.env.GITHUB_TOKEN === undefined).toBe(true);
		expect(plan.routes.get("a")?.upstream).toBe(`${upstreamUrl}/a/v1`);
	});
});

describe("the relay's swap", () => {
	it("puts a provider's keys back in its credential headers, on its own route", async () => {
		const a = placeholderOf("a", keyA);
		const h = placeholderOf("a", headerA);
		const answer = await call(`/a/chat/completions?other=1`, {
			authorization: `Bearer ${a}`,
			"x-team": h,
			"content-type": "application/json",
		});
		expect(answer.status).toBe(200);
		const got = seen.at(-1);
		expect(got?.url).toBe(`/a/v1/chat/completions?other=1`);
		expect(got?.headers.authorization).toBe(`Bearer ${keyA}`);
		expect(got?.headers["x-team"]).toBe(headerA);

		await call("/openai/chat/completions", { authorization: `Bearer ${plan.env.OPENAI_API_KEY}` });
		expect(seen.at(-1)?.headers.authorization).toBe(`Bearer ${envKey}`);
	});

	it("never swaps another provider's placeholder: b's key on a's route is refused, nothing sent", async () => {
		const before = seen.length;
		const b = placeholderOf("b", keyB);
		expect((await call("/a/chat/completions", { authorization: `Bearer ${b}` })).status).toBe(400);
		// And the env key (openai's) on b's route.
		const answer = await call("/b/chat/completions", { authorization: `Bearer ${plan.env.OPENAI_API_KEY}` });
		expect(answer.status).toBe(400);
		expect(answer.text).not.toContain(envKey);
		expect(seen.length).toBe(before);
	});

	it("swaps a placeholder only where the credential goes: elsewhere the call is refused (400), nothing sent", async () => {
		const a = placeholderOf("a", keyA);
		const auth = { authorization: `Bearer ${a}` };
		const before = seen.length;
		const refused = [
			// An upstream that echoes a query value (a 422) or a header (x-request-id) would hand the key back.
			await call(`/a/chat/completions?limit=${a}`, auth),
			await call(`/a/chat/completions?key=${a}`, auth),
			await call(`/a/chat/completions?x=${encodeURIComponent(a).replace(/-/g, "%2D")}`, auth),
			await call("/a/chat/completions", { ...auth, "x-request-id": a }),
			await call("/a/chat/completions", { ...auth, cookie: `s=${a}` }),
			await call("/a/chat/completions", { authorization: `Bearer ${a} ${a}` }),
			await call("/a/chat/completions", { authorization: `Basic ${a}` }),
			await call("/a/chat/completions", { "x-team": `x${a}` }),
			await call(`/a/${a}/chat/completions`, auth),
		];
		for (const answer of refused) {
			expect(answer.status).toBe(400);
			expect(answer.text).not.toContain(keyA);
		}
		expect(seen.length).toBe(before);
		// The whole value of a key header is swapped (x-api-key here), and a cookie never leaves.
		await call("/a/chat/completions", { "x-api-key": a, cookie: "s=1" });
		expect(seen.at(-1)?.headers["x-api-key"]).toBe(keyA);
		expect(seen.at(-1)?.headers.cookie).toBeUndefined();
	});

	it("leaves the body alone: a placeholder in the prompt reaches the provider as written", async () => {
		const a = placeholderOf("a", keyA);
		const body = JSON.stringify({ model: "ma", messages: [{ role: "user", content: `say ${a}` }] });
		await call("/a/chat/completions", { authorization: `Bearer ${a}`, "content-type": "application/json" }, body);
		const got = seen.at(-1);
		expect(got?.body).toBe(body);
		expect(got?.body).not.toContain(keyA);
	});

	it("carries the model API's calls only, under the base URL's path: 403 for the rest, 400 for dot tricks", async () => {
		const a = placeholderOf("a", keyA);
		const before = seen.length;
		const send = (method: string, path: string) =>
			new Promise<number>((resolve, reject) => {
				const req = request({ socketPath: socket, path, method, headers: { authorization: `Bearer ${a}` } }, (res) => {
					res.resume();
					resolve(res.statusCode ?? 0);
				});
				req.on("error", reject);
				req.end();
			});
		expect(await send("DELETE", "/a/files/file-abc")).toBe(403);
		expect(await send("POST", "/a/batches")).toBe(403);
		expect(await send("GET", "/a/chat/completions")).toBe(403);
		expect(await send("POST", "/a/responses")).toBe(403); // a's models speak openai-completions
		expect(await send("GET", "/a/%2e%2e/%2e%2e/admin/anything")).toBe(400);
		expect(await send("GET", "/a/models/..%2F..%2Fadmin")).toBe(400);
		expect(await send("POST", "/a/x/../chat/completions")).toBe(400);
		expect(await send("POST", "/a//chat/completions")).toBe(400);
		expect(seen.length).toBe(before);
		expect(await send("GET", "/a/models")).toBe(200);
		expect(seen.at(-1)?.url).toBe("/a/v1/models");
	});

	it("answers 404 for a route it does not know, and sends nothing on", async () => {
		const before = seen.length;
		const answer = await call("/nope/chat/completions", { authorization: `Bearer ${placeholderOf("a", keyA)}` });
		expect(answer.status).toBe(404);
		expect(seen.length).toBe(before);
	});
});

describe("resolveSecret", () => {
	it("reads templates as pi does: $NAME, ${NAME}, $$ and $!, auth.json's own variables first", async () => {
		const env = { K: "v1", L: "v2" };
		expect(resolveTemplate("$K-${L}", env)).toBe("v1-v2");
		expect(resolveTemplate("a$$b$!c", env)).toBe("a$b!c");
		expect(resolveTemplate("$MISSING", env)).toBeUndefined();
		expect(resolveTemplate("plain-literal", env)).toBe("plain-literal");
		expect(await resolveSecret({ value: "${K}", env: { K: "own" } }, { K: "gateway" })).toBe("own");
		expect(await resolveSecret({ value: "!printf ' from-command \\n'" })).toBe("from-command");
		expect(await resolveSecret({ value: "!exit 3" })).toBeUndefined();
	});
});
