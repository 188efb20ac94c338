import { existsSync, linkSync, mkdirSync, readFileSync, symlinkSync, writeFileSync } from "node:fs";
import { dirname, join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { noPool, startTestGateway, type TestGateway, until } from "../helpers/gateway.ts";

// Issue 10, holes found from outside (items 6, 7, 8, 9, 12's depth bound, 14, 15, 16), against real pi.
const token = "holes-token-0123456789";
let gw: TestGateway;
let id: string;
let outside: string;

beforeAll(async () => {
	gw = await startTestGateway({ ...noPool, token, maxQueued: 4, maxEventStreams: 3 });
	outside = join(gw.root, "outside");
	mkdirSync(outside);
	id = await gw.session({ name: "holes" });
});
afterAll(() => gw?.stop());

const auth = () => ({ authorization: `Bearer ${token}` });

describe("item 6: config objects are looked up by own key only", () => {
	it.each(["__proto__", "constructor", "toString", "valueOf", "hasOwnProperty"])(
		"extension %s is not on the allow-list (400, no pi started)",
		async (name) => {
			const before = gw.registry.size;
			const { status, body } = await gw.api("/v1/sessions", { method: "POST", json: { extensions: [name] } });
			expect(status).toBe(400);
			expect(body.code).toBe("extension_not_allowed");
			expect(gw.registry.size).toBe(before);
		},
	);

	it("a raw command named like an Object.prototype member is an unknown command, not a 500", async () => {
		for (const type of ["constructor", "valueof", "tostring"]) {
			const { status, body } = await gw.api(`/v1/sessions/${id}/rpc`, { method: "POST", json: { type } });
			expect(status, `${type}: ${JSON.stringify(body)}`).not.toBe(500);
		}
	});
});

describe("item 16: one name schema everywhere", () => {
	it.each(["bell\u0007", "new\nline", "tab\there", "\u009bcsi", ""])(
		"PUT …/name refuses %j like create does",
		async (name) => {
			const created = await gw.api("/v1/sessions", { method: "POST", json: { name } });
			expect(created.status).toBe(400);
			const renamed = await gw.api(`/v1/sessions/${id}/name`, { method: "PUT", json: { name } });
			expect(renamed.status).toBe(400);
			expect(renamed.body.code).toBe("invalid_input");
			const raw = await gw.api(`/v1/sessions/${id}/rpc`, { method: "POST", json: { type: "set_session_name", name } });
			expect(raw.status).toBe(400);
		},
	);
});

describe("item 15: bodies must be JSON (CSRF through no-cors requests)", () => {
	// What a cross-site page can send without a preflight: no Authorization header, and a body
	// that is absent, text/plain or a form. A token-less gateway (--no-auth) has only the content
	// type to tell such a request from a client's, so there every body operation needs it.
	it("without a token, POST /v1/sessions without a JSON content type, even with no body, is 415 and starts nothing", async () => {
		const open = await startTestGateway({ ...noPool, token: undefined, auth: false });
		try {
			if (open.config.token) return expect.fail("this gateway should run without a token");
			const before = open.registry.size;
			for (const init of [
				{ method: "POST" },
				{ method: "POST", body: "" },
				{ method: "POST", body: "{}", headers: { "content-type": "text/plain" } },
				{ method: "POST", body: "name=x", headers: { "content-type": "application/x-www-form-urlencoded" } },
			]) {
				const res = await fetch(`${open.url}/v1/sessions`, init);
				expect(res.status, JSON.stringify(init)).toBe(415);
				expect(res.headers.get("content-type")).toBe("application/problem+json");
				expect(((await res.json()) as { code: string }).code).toBe("unsupported_media_type");
			}
			expect(open.registry.size).toBe(before);
		} finally {
			await open.stop();
		}
	});

	it("with a token, a body of another type is 415, and so is a required body left out", async () => {
		const before = gw.registry.size;
		for (const init of [
			{ method: "POST", body: "{}", headers: { "content-type": "text/plain" } },
			{ method: "POST", body: "name=x", headers: { "content-type": "application/x-www-form-urlencoded" } },
		]) {
			const res = await fetch(`${gw.url}/v1/sessions`, { ...init, headers: { ...auth(), ...init.headers } });
			expect(res.status, JSON.stringify(init)).toBe(415);
		}
		expect(gw.registry.size).toBe(before);
		for (const [method, path] of [
			["PUT", "/name"],
			["POST", "/bash"],
			["POST", "/prompt"],
		]) {
			const res = await fetch(`${gw.url}/v1/sessions/${id}${path}`, { method, headers: auth() });
			expect(res.status, path).toBe(415);
		}
	});

	it("with a token, an optional body may be left out (as the spec says); GET, DELETE and body-less POSTs are unaffected", async () => {
		for (const headers of [auth(), { ...auth(), "content-type": "application/json" }]) {
			const res = await fetch(`${gw.url}/v1/sessions`, { method: "POST", headers });
			expect(res.status).toBe(201);
			const created = (await res.json()) as { id: string };
			expect((await fetch(`${gw.url}/v1/sessions/${created.id}`, { headers: auth() })).status).toBe(200);
			const renewed = await fetch(`${gw.url}/v1/sessions/${created.id}/new`, { method: "POST", headers: auth() });
			expect(renewed.status).toBe(200);
			const aborted = await fetch(`${gw.url}/v1/sessions/${created.id}/abort`, { method: "POST", headers: auth() });
			expect(aborted.status).toBe(204);
			const deleted = await fetch(`${gw.url}/v1/sessions/${created.id}`, { method: "DELETE", headers: auth() });
			expect(deleted.status).toBe(204);
		}
	});
});

describe("item 12: deep JSON is refused at the edge", () => {
	it("10,000 levels of nesting on /rpc and /v1/sessions is 400, never 500, and nothing reaches pi", async () => {
		const deep = `${"[".repeat(10_000)}${"]".repeat(10_000)}`;
		for (const [path, body] of [
			[`/v1/sessions/${id}/rpc`, `{"type":"newer_command","x":${deep}}`],
			["/v1/sessions", `{"name":"x","tools":${deep}}`],
			[`/v1/sessions/${id}/prompt`, `{"message":"hi","images":${deep.replace(/\[/g, '[{"a":').replace(/\]/g, "}]")}}`],
		]) {
			const res = await fetch(gw.url + path, {
				method: "POST",
				headers: { ...auth(), "content-type": "application/json" },
				body,
			});
			expect(res.status, path).toBe(400);
			expect(((await res.json()) as { code: string }).code).toBe("json_too_deep");
		}
		// Strings full of brackets are not nesting.
		const text = "[".repeat(20_000);
		const ok = await gw.api(`/v1/sessions/${id}/bash`, { method: "POST", json: { command: `echo ${text.length}` } });
		expect(ok.status).toBe(200);
		const echo = await gw.api(`/v1/sessions/${id}/rpc`, {
			method: "POST",
			json: { type: "set_session_name", name: `a${"{".repeat(150)}` },
		});
		expect(echo.status).toBe(200);
	});
});

describe("wide JSON is refused at the edge (an attacker's review)", () => {
	it("500,000 members below the size limit is 400 json_too_large on every JSON route, before any parse", async () => {
		const wide = `{${Array.from({ length: 500_000 }, (_, i) => `"k${i}":0`).join(",")}}`;
		for (const [method, path, body] of [
			["POST", `/v1/sessions/${id}/prompt`, `{"message":"echo: hi","outputSchema":${wide}}`],
			["POST", `/v1/sessions/${id}/prompt`, `{"message":"echo: hi","junk":${wide}}`],
			["POST", "/v1/sessions", wide],
			["PUT", `/v1/sessions/${id}/name`, wide],
			["POST", `/v1/sessions/${id}/rpc`, `[${wide.slice(1, -1).replace(/"k\d+":/g, "")}]`],
		]) {
			const res = await fetch(gw.url + path, {
				method,
				headers: { ...auth(), "content-type": "application/json" },
				body,
			});
			expect(res.status, path).toBe(400);
			expect(((await res.json()) as { code: string }).code).toBe("json_too_large");
		}
		// Commas in strings are text: a long prompt is one value.
		const long = await gw.api(`/v1/sessions/${id}/bash`, {
			method: "POST",
			json: { command: `echo ${",".repeat(30_000).length}` },
		});
		expect(long.status).toBe(200);
		expect(long.body.output).toBe("30000\n");
	});

	it("a workspace upload sent with a JSON content type is stored as bytes, not read as JSON (was a 500)", async () => {
		const res = await fetch(`${gw.url}/v1/sessions/${id}/files/content?path=uploaded.json`, {
			method: "PUT",
			headers: { ...auth(), "content-type": "application/json" },
			body: '{"content":"x"}',
		});
		expect(res.status).toBeLessThan(300);
		const back = await fetch(`${gw.url}/v1/sessions/${id}/files/content?path=uploaded.json`, { headers: auth() });
		expect(await back.text()).toBe('{"content":"x"}');
	});
});

describe("item 7: export_html never writes through a symlink", () => {
	it("an outputPath naming a symlink to a file outside the root is 403 and nothing is written there", async () => {
		await gw.api(`/v1/sessions/${id}/prompt?wait=true`, {
			method: "POST",
			json: { message: "echo: something to export" },
		});
		// The session's own folder (README's layout: <root>/<id>), where a relative outputPath lands.
		const folder = await gw.folder(id);
		const target = join(outside, "stolen.html");
		symlinkSync(target, join(folder, "dangling.html"));
		writeFileSync(join(outside, "existing.html"), "keep");
		symlinkSync(join(outside, "existing.html"), join(folder, "existing.html"));
		linkSync(join(outside, "existing.html"), join(folder, "hardlink.html"));
		for (const outputPath of ["dangling.html", "existing.html", join(folder, "existing.html"), "hardlink.html"]) {
			const { status, body } = await gw.api(`/v1/sessions/${id}/export-html`, {
				method: "POST",
				json: { outputPath },
			});
			expect(status, `${outputPath}: ${JSON.stringify(body)}`).toBe(403);
		}
		expect(existsSync(target)).toBe(false);
		expect(readFileSync(join(outside, "existing.html"), "utf8")).toBe("keep");
		// A plain new file, and a symlink that stays inside, still work.
		symlinkSync(join(folder, "real.html"), join(folder, "inside-link.html"));
		for (const outputPath of ["plain.html", "inside-link.html"]) {
			const { status } = await gw.api(`/v1/sessions/${id}/export-html`, { method: "POST", json: { outputPath } });
			expect(status, outputPath).toBe(200);
		}
		expect(existsSync(join(folder, "real.html"))).toBe(true);
	});
});

describe("item 8: switch_session stays inside the roots", () => {
	it("a session file whose header names a cwd outside the roots is 403; a good switch moves pi, the session keeps its folder", async () => {
		const header = (cwd: string, sid: string) =>
			`${JSON.stringify({ type: "session", version: 3, id: sid, timestamp: new Date().toISOString(), cwd })}\n`;
		const s = await gw.session({ name: "switcher" });
		// Only files of the session's own folder may be switched to (session-files.test.ts): these are.
		const own = dirname((await gw.api(`/v1/sessions/${s}`)).body.piSessionFile);
		const evil = join(own, "evil.jsonl");
		writeFileSync(evil, header(outside, "0b9e4f5a-1111-4c3e-9a7e-000000000001"));
		const refused = await gw.api(`/v1/sessions/${s}/switch`, { method: "POST", json: { sessionPath: evil } });
		expect(refused.status).toBe(403);
		expect(refused.body.code).toBe("path_outside_root");
		const raw = await gw.api(`/v1/sessions/${s}/rpc`, {
			method: "POST",
			json: { type: "switch_session", sessionPath: evil },
		});
		expect(raw.status).toBe(403);
		const pwd = await gw.api(`/v1/sessions/${s}/bash`, { method: "POST", json: { command: "pwd" } });
		// README's layout: a session without cwd works in <root>/<id>.
		const folder = join(gw.workspace, s);
		expect(pwd.body.output.trim()).toBe(folder);

		// A folder the session can reach: inside its own (the sandbox shows it nothing else).
		const sub = join(folder, "sub");
		mkdirSync(sub);
		const good = join(own, "good.jsonl");
		writeFileSync(good, header(sub, "0b9e4f5a-2222-4c3e-9a7e-000000000002"));
		const switched = await gw.api(`/v1/sessions/${s}/switch`, { method: "POST", json: { sessionPath: good } });
		expect(switched.status, JSON.stringify(switched.body)).toBe(200);
		const moved = await gw.api(`/v1/sessions/${s}/bash`, { method: "POST", json: { command: "pwd" } });
		expect(moved.body.output.trim()).toBe(sub);
		const view = await until(async () => {
			const v = (await gw.api(`/v1/sessions/${s}`)).body;
			return v.piSessionFile === good && v;
		});
		// The session's folder (the files API's, the sandbox's) is the one checked at create: a
		// header does not move it (093c396: the agent writes its session files).
		expect(view.cwd).toBe(folder);
	});
});

describe("item 9: one writer per pi session file", () => {
	it("resuming a live session's pi session id is 409 naming the session that holds it", async () => {
		const holder = await gw.session({ name: "holder" });
		const piId = (await gw.api(`/v1/sessions/${holder}`)).body.piSessionId as string;
		await gw.api(`/v1/sessions/${holder}/prompt?wait=true`, { method: "POST", json: { message: "echo: mine" } });
		const before = gw.registry.size;
		for (const resume of [piId, piId.slice(0, 8)]) {
			const { status, body } = await gw.api("/v1/sessions", { method: "POST", json: { resume } });
			expect(status).toBe(409);
			expect(body.code).toBe("session_file_in_use");
			// pi's ids start with a timestamp, so a short prefix may match an older session first.
			if (resume === piId) expect(body.detail).toContain(holder);
		}
		expect(gw.registry.size).toBe(before);
		// Stopped but registered: still its file (POST …/resume is the way back).
		gw.registry.get(holder).stop("idle");
		await until(async () => (await gw.api(`/v1/sessions/${holder}`)).body.status === "stopped");
		expect((await gw.api("/v1/sessions", { method: "POST", json: { resume: piId } })).status).toBe(409);
		expect((await gw.api(`/v1/sessions/${holder}/resume`, { method: "POST" })).status).toBe(200);
	});
});

describe("item 14: bounds", () => {
	it("pi's own steer/follow-up queue counts against --max-queued (429)", async () => {
		const s = await gw.session({ name: "steerer" });
		const started = await gw.api(`/v1/sessions/${s}/prompt`, { method: "POST", json: { message: "slow: 100" } });
		expect(started.status).toBe(202);
		const statuses: number[] = [];
		for (let i = 0; i < 12; i++) {
			const path = i % 2 ? "follow-up" : "steer";
			statuses.push((await gw.api(`/v1/sessions/${s}/${path}`, { method: "POST", json: { message: `m${i}` } })).status);
		}
		const state = (await gw.api(`/v1/sessions/${s}/state`)).body;
		expect(state.pendingMessageCount).toBeLessThanOrEqual(4);
		expect(statuses.filter((x) => x === 429).length).toBeGreaterThan(0);
		await gw.api(`/v1/sessions/${s}/abort`, { method: "POST" });
	});

	it("GET /v1/events accepts at most --max-event-streams subscribers (429), and frees a slot when one leaves", async () => {
		const streams = [];
		for (let i = 0; i < 3; i++) {
			const ac = new AbortController();
			const res = await fetch(`${gw.url}/v1/events`, { headers: auth(), signal: ac.signal });
			expect(res.status).toBe(200);
			streams.push(ac);
		}
		const over = await gw.api("/v1/events");
		expect(over.status).toBe(429);
		expect(over.body.code).toBe("too_many_subscribers");
		streams.pop()?.abort();
		await until(async () => {
			const ac = new AbortController();
			const res = await fetch(`${gw.url}/v1/events`, { headers: auth(), signal: ac.signal });
			if (res.status === 200) streams.push(ac);
			else await res.text();
			return res.status === 200;
		});
		for (const ac of streams) ac.abort();
	});
});

describe("item 8: resume by id stays inside the roots too", () => {
	it("a session file in pi's folder whose header names a cwd outside is 403 on create with resume", async () => {
		const sid = "0b9e4f5a-3333-4c3e-9a7e-000000000003";
		const header = { type: "session", version: 3, id: sid, timestamp: new Date().toISOString(), cwd: outside };
		writeFileSync(
			join(gw.config.dataDir, "pi-sessions", `2026-01-01T00-00-00-000Z_${sid}.jsonl`),
			`${JSON.stringify(header)}\n`,
		);
		const before = gw.registry.size;
		const { status, body } = await gw.api("/v1/sessions", { method: "POST", json: { resume: sid } });
		expect(status, JSON.stringify(body)).toBe(403);
		expect(gw.registry.size).toBe(before);
	});
});
