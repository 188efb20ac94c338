import { existsSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join, relative } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { createKey } from "../../src/http/auth/keys.ts";
import { specCheckedApi } from "../helpers/gateway.ts";
import { batteryLayouts, expectRefusedLayout, type LayoutGateway, startInLayout } from "../helpers/layouts.ts";
import { attacks, plantAttacks } from "../helpers/workspace-attacks.ts";

// The table of attacks of test/unit/workspace-paths.test.ts, through every workspace route, and
// the scopes and ownership of the rest of the session. Real pi; the session's folder holds the traps,
// its sibling the secret. README's layout first (alice's folder is <root>/@alice/<id>, the sibling
// in her own area), then a shared --workspace-root (her session works in <root>/@alice itself, the
// sibling in the root) and cluster mode.
let keysDir: string;
const secrets: Record<string, string> = {};
beforeAll(() => {
	keysDir = mkdtempSync(join(tmpdir(), "pi-gw-ws-keys-"));
	const keysFile = join(keysDir, "keys.json");
	secrets.alice = createKey(keysFile, "alice", ["sessions:read", "sessions:write"]).secret;
	secrets.bob = createKey(keysFile, "bob", ["sessions:read", "sessions:write"]).secret;
	secrets.reader = createKey(keysFile, "reader", ["sessions:read"]).secret;
});
afterAll(() => rmSync(keysDir, { recursive: true, force: true }));

describe.each(batteryLayouts)("%s layout", (layout) => {
	let gw: LayoutGateway;
	let id: string;
	let cwd: string;
	const as = (name: string) =>
		specCheckedApi(gw.url, (init) => {
			const headers = new Headers(init);
			headers.set("authorization", `Bearer ${secrets[name]}`);
			return headers;
		});

	beforeAll(async () => {
		gw = await startInLayout(layout, { keysFile: join(keysDir, "keys.json") });
		const created = await as("alice")("/v1/sessions", { method: "POST", json: {} });
		expect(created.status).toBe(201);
		id = created.body.id;
		cwd = created.body.cwd;
		plantAttacks(cwd);
	});
	afterAll(() => gw?.stop());

	const url = (rest: string, path: string) => `/v1/sessions/${id}${rest}?path=${encodeURIComponent(path)}`;
	const expect403 = (res: { status: number; body: { code: string }; res: Response }) => {
		expect(res.status).toBe(403);
		expect(res.res.headers.get("content-type")).toContain("application/problem+json");
		expect(res.body.code).toBe("path_outside_root");
	};
	// Deleting a symlink removes the link itself, wherever it points: only paths that lead out are refused.
	const linkItself = new Set(["link-out-file", "link-abs", "link-dangling"]);

	describe("workspace refusals: every attack through every route is 403 problem+json", () => {
		it.each(attacks)("%s: read", async (_name, path) => {
			expect403(await as("alice")(url("/files/content", path)));
		});

		it.each(attacks)("%s: list", async (_name, path) => {
			const res = await as("alice")(url("/files", path));
			// A file outside is refused like a folder outside (never "not a folder": that would tell it exists).
			expect403(res);
		});

		it.each(attacks)("%s: upload, and nothing is written outside", async (_name, path) => {
			const res = await as("alice")(url("/files/content", path), {
				method: "PUT",
				body: "pwned",
				headers: { "content-type": "text/plain" },
			});
			expect403(res);
			expect(readFileSync(join(cwd, "..", "outside", "secret"), "utf8")).toBe("secret");
			expect(existsSync(join(cwd, "..", "outside", "new.txt"))).toBe(false);
		});

		it.each(attacks.filter(([, path]) => !linkItself.has(path)))("%s: delete", async (_name, path) => {
			expect403(await as("alice")(url("/files/content", path), { method: "DELETE" }));
			expect(existsSync(join(cwd, "..", "outside", "secret"))).toBe(true);
		});

		it("a symlink inside the folder is followed for reading", async () => {
			const res = await gw.fetch(url("/files/content", "link-in/file.txt"), {
				headers: { authorization: `Bearer ${secrets.alice}` },
			});
			expect(res.status).toBe(200);
			expect(await res.text()).toBe("inside");
		});
	});

	describe("workspace scopes and ownership", () => {
		it("the owner reads and writes", async () => {
			expect((await as("alice")(url("/files", ""))).status).toBe(200);
			const put = await as("alice")(url("/files/content", "mine.txt"), { method: "PUT", body: "x" });
			expect(put.status).toBe(201);
		});

		it("a credential with sessions:read only may not write (403 insufficient_scope)", async () => {
			for (const method of ["PUT", "DELETE"]) {
				const res = await as("reader")(url("/files/content", "mine.txt"), {
					method,
					body: method === "PUT" ? "x" : undefined,
				});
				expect(res.status).toBe(403);
				expect(res.body.code).toBe("insufficient_scope");
			}
		});

		it("another principal's session is not there (404), for every workspace operation", async () => {
			const reads = ["/files", "/files/content", "/files/search", "/changes", "/archive"];
			for (const rest of reads) {
				for (const who of ["bob", "reader"]) {
					const res = await as(who)(`/v1/sessions/${id}${rest}?path=mine.txt&q=x`);
					expect(res.status, `${who} GET ${rest}`).toBe(404);
					expect(res.body.code).toBe("session_not_found");
				}
			}
			const put = await as("bob")(url("/files/content", "mine.txt"), { method: "PUT", body: "y" });
			expect(put.status).toBe(404);
			expect(readFileSync(join(cwd, "mine.txt"), "utf8")).toBe("x");
		});
	});

	describe("export-html's outputPath, the one path pi writes itself", () => {
		it("into another principal's folder is 403 (by path or relative) and writes nothing; a relative path lands in the session's folder", async () => {
			const bobs = await as("bob")("/v1/sessions", { method: "POST", json: {} });
			expect(bobs.status).toBe(201);
			const victim = join(bobs.body.cwd, "notes.txt");
			writeFileSync(victim, "bob's notes\n");
			const said = await as("alice")(`/v1/sessions/${id}/prompt?wait=true`, {
				method: "POST",
				json: { message: "echo: something to export" },
			});
			expect(said.status).toBe(200);
			for (const outputPath of [victim, relative(cwd, victim)]) {
				const res = await as("alice")(`/v1/sessions/${id}/export-html`, { method: "POST", json: { outputPath } });
				expect(res.status, `${outputPath}: ${JSON.stringify(res.body)}`).toBe(403);
				expect(res.body.code).toBe("path_outside_root");
			}
			expect(readFileSync(victim, "utf8")).toBe("bob's notes\n");
			const own = await as("alice")(`/v1/sessions/${id}/export-html`, {
				method: "POST",
				json: { outputPath: "export.html" },
			});
			expect(own.status).toBe(200);
			expect(own.body.path).toBe(join(cwd, "export.html"));
			expect(readFileSync(join(cwd, "export.html"), "utf8")).toContain("<html");
			await as("bob")(`/v1/sessions/${bobs.body.id}`, { method: "DELETE" });
		});
	});
});

describe("a workspace root that contains the data dir", () => {
	it("is refused at start, naming --data-dir: no session, so no route to attack", async () => {
		await expectRefusedLayout({ keysFile: join(keysDir, "keys.json") });
	});
});
