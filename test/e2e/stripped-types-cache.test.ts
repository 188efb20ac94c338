import { mkdtempSync, readdirSync, readFileSync, rmSync, statSync } from "node:fs";
import { stripTypeScriptTypes } from "node:module";
import { tmpdir } from "node:os";
import { join, resolve } from "node:path";
import { afterAll, expect, it } from "vitest";
import { type GatewayProcess, killAll, launchGateway } from "../helpers/gateway-process.ts";

// `npm start` runs src/ as TypeScript: the JavaScript Node strips from it is kept in the data dir's
// compile cache (src/app/stripped-types-cache.ts) and read back on the next start, not stripped again.
const repo = resolve(import.meta.dirname, "../..");
const token = "stripped-types-token-0123456789";
const root = mkdtempSync(join(tmpdir(), "pi-gateway-stripped-"));
const started: GatewayProcess[] = [];
afterAll(() => {
	killAll(started);
	rmSync(root, { recursive: true, force: true });
});

async function startAndStop(): Promise<void> {
	// The suite's shared compile cache (NODE_COMPILE_CACHE, a folder every test process writes) is
	// set: the stripped JavaScript, read back as code, still goes to the data dir only.
	const gateway = await launchGateway({ root, port: 0, token, sources: true });
	started.push(gateway);
	expect((await gateway.fetch("/healthz")).status).toBe(200);
	gateway.child.kill("SIGTERM");
	expect((await gateway.exited).code).toBe(0);
}

it("the first start writes each source file's JavaScript once; the next start reads it and writes nothing", async () => {
	await startAndStop();
	// Not into the folder NODE_COMPILE_CACHE names (shared, so anyone who can write it could plant code).
	const shared = process.env.NODE_COMPILE_CACHE;
	if (shared)
		expect(readdirSync(shared, { recursive: true }).filter((name) => /stripped/.test(String(name)))).toEqual([]);
	const stripped = join(root, "data", "compile-cache", "gateway", "stripped");
	expect(statSync(stripped).mode & 0o777).toBe(0o700);
	const files = () =>
		readdirSync(stripped)
			.map((name) => ({ name, mtime: statSync(join(stripped, name)).mtimeMs }))
			.sort((a, b) => a.name.localeCompare(b.name));
	const first = files();
	// The server's modules, loaded after the cache is on (main.ts's own imports come before it).
	expect(first.length).toBeGreaterThan(100);
	// What is kept is what Node would run: the server's entry, stripped as Node strips it.
	const server = stripTypeScriptTypes(readFileSync(join(repo, "src/app/server.ts"), "utf8"), { mode: "strip" });
	const body = (name: string) => {
		const text = readFileSync(join(stripped, name), "utf8");
		return text.slice(text.indexOf("\n") + 1);
	};
	expect(first.some(({ name }) => body(name) === server)).toBe(true);
	expect(first.every(({ name }) => name.endsWith(".js"))).toBe(true);

	await startAndStop();
	expect(files()).toEqual(first);
});
