import { execFile } from "node:child_process";
import { chmodSync, existsSync, mkdirSync, readFileSync, rmSync, statSync, symlinkSync, writeFileSync } from "node:fs";
import { join, resolve } from "node:path";
import { promisify } from "node:util";
import { afterAll, describe, expect, it } from "vitest";
import { noPool, startTestGateway, type TestGateway } from "../helpers/gateway.ts";
import { gatewayEntry } from "../helpers/gateway-entry.ts";

// docs/deployment.md's backup and restore, in README's layout (the workspaces inside the data dir) and
// with --workspace-root elsewhere: back up a stopped gateway with the CLI, wipe everything, restore,
// start again on the restored folders: the conversation, its pi session file and its folder's
// files are back, and the session goes on.
const run = promisify(execFile);
const main = gatewayEntry;
const cli = (...args: string[]) => run(process.execPath, [main, ...args], { timeout: 120_000 });
const refused = (...args: string[]) =>
	cli(...args).then(
		() => ({ code: 0, stderr: "" }),
		(e) => e,
	);

const started: TestGateway[] = [];
afterAll(async () => {
	for (const gw of started) await gw.stop().catch(() => {});
});

async function conversation(gw: TestGateway, id: string) {
	const { body } = await gw.api(`/v1/sessions/${id}/messages`);
	return body.messages.map((m: { role: string; content: unknown }) => ({ role: m.role, content: m.content }));
}

describe.each([
	{ layout: "default" as const, outside: false },
	{ layout: "shared-root" as const, outside: true },
])("backup and restore ($layout layout)", ({ layout, outside }) => {
	it("brings back the conversation, its files and the session's ability to go on", async () => {
		const first = await startTestGateway({ ...noPool, layout });
		started.push(first);
		const dataDir = first.config.dataDir;
		const root = first.config.workspaceRoot;
		const id = await first.session({ name: "kept" });
		const done = await first.api(`/v1/sessions/${id}/prompt?wait=60`, {
			method: "POST",
			json: { message: "bash: echo 'remember me' > notes.txt && echo written" },
		});
		expect(done.status).toBe(200);
		const folder = await first.folder(id);
		const before = await conversation(first, id);
		expect(before.length).toBeGreaterThan(2);

		const archive = join(first.root, "backup.tar");
		// README's layout names its data dir in a config file, as the gateway would read it; the
		// other names both folders by flag.
		const config = join(first.root, "config.yaml");
		writeFileSync(config, `data-dir: ${dataDir}\n`);
		const where = outside ? ["--data-dir", dataDir, "--workspace-root", root] : ["--config", config];
		// While it runs: refused, saying what to do.
		const busy = await refused("backup", archive, ...where);
		expect(busy.code).toBe(2);
		expect(busy.stderr).toMatch(/a gateway is running on .*; stop it first/);
		expect(existsSync(archive)).toBe(false);

		await first.close();
		// An existing file of that name (made readable by all) is replaced by one only its owner reads:
		// the archive holds the token, keys.json and gateway.db.
		writeFileSync(archive, "old");
		chmodSync(archive, 0o644);
		// One line on stderr, what it did: no ExperimentalWarning from node:sqlite (issue 47 item 6).
		const backedUp = await cli("backup", archive, ...where);
		expect(backedUp.stderr).toMatch(/^pi-gateway: backed up [^\n]*; restore with: pi-gateway restore [^\n]*\n$/);
		expect(statSync(archive).mode & 0o777).toBe(0o600);
		// Never through a link at FILE: the archive would land where it points.
		const target = join(first.root, "elsewhere.tar");
		symlinkSync(target, join(first.root, "link.tar"));
		expect((await refused("backup", join(first.root, "link.tar"), ...where)).code).toBe(2);
		expect(existsSync(target)).toBe(false);
		rmSync(dataDir, { recursive: true, force: true });
		if (outside) rmSync(root, { recursive: true, force: true });
		expect(existsSync(join(folder, "notes.txt"))).toBe(false);

		const restored = await cli("restore", archive, ...where);
		expect(restored.stderr).toMatch(/^pi-gateway: restored [^\n]*\n$/);
		expect(readFileSync(join(folder, "notes.txt"), "utf8")).toBe("remember me\n");
		// pi's compile cache (made by the sandboxed pi that just stopped) is a cache: not in the archive.
		if (first.config.sandbox === "on") expect(existsSync(join(dataDir, "compile-cache"))).toBe(false);
		// Into a data dir that holds something: refused, nothing mixed.
		const again = await refused("restore", archive, ...where);
		expect(again.code).toBe(2);
		expect(again.stderr).toMatch(/is not empty; restore into an empty or missing data dir/);

		const second = await startTestGateway({
			...noPool,
			layout,
			dataDir,
			piAgentDir: first.config.piAgentDir,
			...(outside ? { workspaceRoot: root } : {}),
		});
		started.push(second);
		const { body: view } = await second.api(`/v1/sessions/${id}`);
		expect(view).toMatchObject({ id, name: "kept", cwd: folder });
		expect(await conversation(second, id)).toEqual(before);
		const file = await second.fetch(`/v1/sessions/${id}/files/content?path=notes.txt`);
		expect(await file.text()).toBe("remember me\n");
		const more = await second.api(`/v1/sessions/${id}/prompt?wait=60`, {
			method: "POST",
			json: { message: "echo: still here" },
		});
		expect(more.status).toBe(200);
		expect(more.body.text).toBe("still here");
		expect((await conversation(second, id)).length).toBeGreaterThan(before.length);
	});
});

describe("backup and restore: mistakes say what to do", () => {
	it("names the missing archive, a folder that is no data dir, and a missing file", async () => {
		const missing = await refused("backup");
		expect(missing.stderr).toMatch(/the archive FILE is missing/);
		const dir = join(resolve(import.meta.dirname, "../../test-artifacts"), `not-a-data-dir-${process.pid}`);
		mkdirSync(dir, { recursive: true });
		writeFileSync(join(dir, "x"), "");
		const notData = await refused("backup", join(dir, "b.tar"), "--data-dir", dir);
		expect(notData.stderr).toMatch(/holds no gateway.db: not a pi-gateway data dir/);
		const noFile = await refused("restore", join(dir, "nope.tar"), "--data-dir", join(dir, "d"));
		expect(noFile.stderr).toMatch(/no archive at/);
		rmSync(dir, { recursive: true, force: true });
	});
});
