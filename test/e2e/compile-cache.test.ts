import { existsSync, mkdtempSync, readdirSync, rmSync, statSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { createKey } from "../../src/http/auth/keys.ts";
import { startTestGateway, type TestGateway, until } from "../helpers/gateway.ts";

// README's layout (no flags but a keys file for a second principal): sandboxed pi keeps Node's
// compile cache per area under the data dir, where its sandbox's empty /tmp would lose it.
let gw: TestGateway;
let keys: string;
let alice: string;
const asAlice = () => ({ authorization: `Bearer ${alice}` });
const cacheEntries = (area: string) => {
	const dir = join(gw.config.dataDir, "compile-cache", area);
	return existsSync(dir) ? readdirSync(dir).flatMap((version) => readdirSync(join(dir, version))).length : 0;
};
/** What a bash tool call prints, as the demo model reports it on the last line. */
const bash = async (id: string, command: string, headers: Record<string, string> = {}) => {
	const run = await gw.api(`/v1/sessions/${id}/prompt?wait=true`, {
		method: "POST",
		json: { message: `bash: ${command}` },
		headers,
	});
	expect(run.status).toBe(200);
	return (run.body.text as string).trim().split("\n").at(-1) as string;
};

beforeAll(async () => {
	keys = mkdtempSync(join(tmpdir(), "pi-gateway-cc-keys-"));
	alice = createKey(join(keys, "keys.json"), "alice", ["sessions:read", "sessions:write"]).secret;
	gw = await startTestGateway({ keysFile: join(keys, "keys.json") });
});
afterAll(async () => {
	await gw?.stop();
	rmSync(keys, { recursive: true, force: true });
});

describe("pi's compile cache in the sandbox", () => {
	it("is the area's own folder, kept when pi exits, and another area's is out of sight", async () => {
		if (gw.config.sandbox !== "on") return expect.fail("README's layout sandboxes pi on this machine (bwrap is there)");
		const adminCache = join(gw.config.dataDir, "compile-cache", "admin");
		const aliceCache = join(gw.config.dataDir, "compile-cache", "@alice");
		const mine = await gw.session();
		expect(await bash(mine, "echo $NODE_COMPILE_CACHE")).toBe(adminCache);
		await gw.api(`/v1/sessions/${mine}`, { method: "DELETE" });
		// Node writes the cache as pi exits: the next pi of the area starts from it.
		await until(() => cacheEntries("admin") > 0, 20_000);

		const created = await gw.api("/v1/sessions", { method: "POST", json: {}, headers: asAlice() });
		expect(created.status).toBe(201);
		const hers = created.body.id as string;
		expect(await bash(hers, "echo $NODE_COMPILE_CACHE", asAlice())).toBe(aliceCache);
		// The operator's cache (and the rest of the data dir) is not in alice's sandbox: she cannot
		// plant bytecode that the operator's next pi would run.
		expect(await bash(hers, `test -e ${adminCache} && echo seen || echo hidden`, asAlice())).toBe("hidden");
		expect(await bash(hers, `touch ${adminCache}/planted 2>&1 && echo wrote || echo refused`, asAlice())).toBe(
			"refused",
		);
		expect(existsSync(join(adminCache, "planted"))).toBe(false);
		// Her own area's cache is hers to write (pi writes it as it exits).
		expect(await bash(hers, `touch ${aliceCache}/mine && echo wrote`, asAlice())).toBe("wrote");
		expect(existsSync(join(aliceCache, "mine"))).toBe(true);
	});

	// pi's extension loader (jiti) keeps the JavaScript it made of an extension in the temp folder,
	// which the sandbox empties at each start: the area's copy is shown there (sandbox.ts jitiCacheIn).
	it("keeps pi's transformed extensions per area at /tmp/jiti, written once and read by the next pi", async () => {
		if (gw.config.sandbox !== "on") return expect.fail("README's layout sandboxes pi on this machine (bwrap is there)");
		const adminJiti = join(gw.config.dataDir, "compile-cache", "jiti", "admin");
		const aliceJiti = join(gw.config.dataDir, "compile-cache", "jiti", "@alice");
		const demoModel = (dir: string) => readdirSync(dir).find((name) => name.startsWith("extensions-demo-model."));
		const first = await gw.session();
		expect(await bash(first, "ls /tmp/jiti | grep -c '^extensions-demo-model\\.'")).toBe("1");
		const file = join(adminJiti, demoModel(adminJiti) as string);
		const written = statSync(file).mtimeMs;
		// The next pi of the area finds it: jiti writes a file only when it transformed the extension.
		const next = await gw.api("/v1/sessions", { method: "POST", json: { persist: false } });
		expect(next.status).toBe(201);
		expect(await bash(next.body.id as string, "ls /tmp/jiti | grep -c '^extensions-demo-model\\.'")).toBe("1");
		expect(statSync(file).mtimeMs).toBe(written);

		// alice's /tmp/jiti is her area's: what she writes there never reaches the operator's pi.
		const created = await gw.api("/v1/sessions", { method: "POST", json: {}, headers: asAlice() });
		const hers = created.body.id as string;
		expect(await bash(hers, "touch /tmp/jiti/planted && echo wrote", asAlice())).toBe("wrote");
		expect(existsSync(join(aliceJiti, "planted"))).toBe(true);
		expect(existsSync(join(adminJiti, "planted"))).toBe(false);
		expect(demoModel(aliceJiti)).toBeDefined();
	});
});
