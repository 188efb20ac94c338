import { mkdirSync, mkdtempSync, readFileSync, realpathSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterEach, beforeEach, describe, expect, it } from "vitest";
import { placeFolder, rehomeSessionFile } from "../../src/cluster/folder-home.ts";
import { parseConfig } from "../../src/config/config.ts";

/** Where a session taken over from another node works here (src/cluster/folder-home.ts). */
let dir: string;
beforeEach(() => {
	dir = realpathSync(mkdtempSync(join(tmpdir(), "pi-gateway-folder-home-")));
});
afterEach(() => rmSync(dir, { recursive: true, force: true }));

const record = (id: string, cwd: string, options: { cwd?: string } = {}) => ({ id, cwd, options });

describe("placeFolder", () => {
	it("the default layout: the old node's folder re-rooted under this node's root, at the same place", () => {
		const config = parseConfig({ dataDir: join(dir, "n2") });
		const root = join(dir, "n2", "workspaces");
		const stored = { rel: "@alice/ses_1" };
		expect(placeFolder(config, record("ses_1", "/elsewhere/n1/workspaces/@alice/ses_1"), stored)).toEqual({
			cwd: join(root, "@alice/ses_1"),
			restore: true,
			own: true,
		});
		// A named cwd is not the session's own: a restore never overwrites what is there.
		expect(
			placeFolder(config, record("ses_2", "/n1/workspaces/@alice/proj", { cwd: "proj" }), { rel: "@alice/proj" }),
		).toMatchObject({ cwd: join(root, "@alice/proj"), restore: true, own: false });
		// Without a stored copy the default layout's path is still recognised.
		expect(placeFolder(config, record("ses_3", "/n1/data/workspaces/ses_3"), undefined)).toMatchObject({
			cwd: join(root, "ses_3"),
			restore: true,
		});
		// Even when the old path exists here (the same data dir path on two machines): the stored copy is the truth.
		const same = join(root, "ses_4");
		mkdirSync(same, { recursive: true });
		expect(placeFolder(config, record("ses_4", same), { rel: "ses_4" })).toMatchObject({ cwd: same, restore: true });
	});

	it("an explicit --workspace-root where the folder is already (a shared disk): used as it is, nothing restored", () => {
		const shared = join(dir, "shared");
		mkdirSync(join(shared, "ses_1"), { recursive: true });
		const config = parseConfig({ dataDir: join(dir, "n2"), workspaceRoot: shared });
		expect(placeFolder(config, record("ses_1", join(shared, "ses_1")), { rel: "ses_1" })).toEqual({
			cwd: join(shared, "ses_1"),
			restore: false,
			own: true,
		});
		// Not there (a root of the same name on another disk): restored.
		expect(placeFolder(config, record("ses_2", join(shared, "ses_2")), { rel: "ses_2" })).toMatchObject({
			restore: true,
		});
	});

	it("a stored path that is not a folder below the root is refused, and the session gets a folder of its own", () => {
		const config = parseConfig({ dataDir: join(dir, "n2") });
		for (const rel of ["../../etc", "/etc", "a/../../b"])
			expect(placeFolder(config, record("ses_1", "/n1/x"), { rel })).toMatchObject({
				cwd: join(dir, "n2", "workspaces", "ses_1"),
				refused: expect.stringContaining("not a folder inside the workspace root"),
			});
		expect(placeFolder(config, record("ses_1", "/somewhere/else"), undefined)).toMatchObject({
			refused: expect.stringContaining("no stored path"),
		});
	});
});

describe("rehomeSessionFile", () => {
	it("makes pi's header name the folder the session works in here, and leaves the conversation as it was", async () => {
		const file = join(dir, "s.jsonl");
		const header = { type: "session", version: 3, id: "x", timestamp: "t", cwd: "/n1/workspaces/ses_1" };
		const rest = '{"type":"message","text":"hi"}\n{"type":"message","text":"there"}\n';
		writeFileSync(file, `${JSON.stringify(header)}\n${rest}`);
		expect(await rehomeSessionFile(file, "/n2/workspaces/ses_1")).toBe(true);
		expect(readFileSync(file, "utf8")).toBe(`${JSON.stringify({ ...header, cwd: "/n2/workspaces/ses_1" })}\n${rest}`);
		expect(await rehomeSessionFile(file, "/n2/workspaces/ses_1")).toBe(false);
		expect(await rehomeSessionFile(join(dir, "none.jsonl"), "/x")).toBe(false);
	});
});
