import { mkdirSync, mkdtempSync, realpathSync, rmSync, symlinkSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, describe, expect, it } from "vitest";
import { parseConfig } from "../../src/config/config.ts";
import { areaName } from "../../src/sessions/process/areas.ts";
import { headerCwd, wakeArea } from "../../src/sessions/registry/pooled-wake.ts";
import type { Session } from "../../src/sessions/session/session.ts";

// Which hibernated sessions a warm pool's pi may wake (pooled-wake.ts): only where that pi is what a
// cold start of the session would be. The end-to-end behaviour is test/e2e/pooled-wake.test.ts.
const root = realpathSync(mkdtempSync(join(tmpdir(), "pi-gateway-pooled-wake-")));
afterAll(() => rmSync(root, { recursive: true, force: true }));
const ws = join(root, "ws");
mkdirSync(ws);
const shared = parseConfig({ workspaceRoot: ws, dataDir: join(root, "data") });
const own = parseConfig({ dataDir: join(root, "data-own") });
const at = (cwd: string) => ({ cwd }) as Session;
const plain = { persist: true, provider: "p", model: "m", name: "n", thinkingLevel: "high" } as const;

describe("wakeArea", () => {
	it("is the area a session works in, where it works in the area's folder itself", () => {
		expect(shared.defaultCwd).toBe("root");
		expect(wakeArea(shared, at(ws), plain, undefined)).toMatchObject({ path: ws, admin: true });
		expect(wakeArea(shared, at(ws), plain, "admin-key")).toMatchObject({ path: ws, admin: true });
		const alice = join(ws, areaName("alice"));
		expect(wakeArea(shared, at(alice), plain, "alice")).toMatchObject({
			path: alice,
			admin: false,
			principal: "alice",
		});
	});

	it("is none for a folder of its own, another principal's area, or options a pooled pi lacks", () => {
		// --default-cwd own (README's start): a pooled pi's sandbox shows a new folder, never the session's.
		expect(wakeArea(own, at(own.workspaceRoot), plain, undefined)).toBeUndefined();
		expect(wakeArea(shared, at(join(ws, "sub")), plain, undefined)).toBeUndefined();
		// An admin's session in alice's area: alice's pool would relay with alice's own keys.
		expect(wakeArea(shared, at(join(ws, areaName("alice"))), plain, "admin-key")).toBeUndefined();
		for (const extra of [
			{ extensions: ["gate"] },
			{ tools: ["read"] },
			{ systemPrompt: "x" },
			{ cwd: "." },
			{ clientTools: [] },
			{ budget: { maxTokens: 10 } },
			{ sandboxReadable: ["/x"] },
		])
			expect(
				wakeArea(shared, at(ws), { ...plain, ...extra } as never, undefined),
				JSON.stringify(extra),
			).toBeUndefined();
		expect(wakeArea(shared, at(ws), { persist: false }, undefined)).toBeUndefined();
	});
});

describe("headerCwd", () => {
	it("reads the cwd of a pi session file's header line, and nothing through a link or past 16 KB", () => {
		const file = join(root, "s.jsonl");
		writeFileSync(file, `${JSON.stringify({ type: "session", id: "x", cwd: ws })}\n{"type":"message"}\n`);
		expect(headerCwd(file)).toBe(ws);
		const link = join(root, "link.jsonl");
		symlinkSync(file, link);
		expect(headerCwd(link)).toBeUndefined();
		const long = join(root, "long.jsonl");
		writeFileSync(long, `${JSON.stringify({ type: "session", cwd: ws, pad: "x".repeat(20_000) })}\n`);
		expect(headerCwd(long)).toBeUndefined();
		const other = join(root, "other.jsonl");
		writeFileSync(other, `${JSON.stringify({ type: "message", cwd: ws })}\n`);
		expect(headerCwd(other)).toBeUndefined();
		expect(headerCwd(join(root, "missing.jsonl"))).toBeUndefined();
	});
});
