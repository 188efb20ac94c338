import { chmodSync, existsSync, mkdtempSync, readFileSync, rmSync, statSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterEach, describe, expect, it } from "vitest";
import { keepToken, resolveToken, tokenNotice } from "../../src/app/token.ts";
import { parseConfig } from "../../src/config/config.ts";

const dirs: string[] = [];
const fresh = () => {
	const dir = mkdtempSync(join(tmpdir(), "pi-gateway-token-"));
	dirs.push(dir);
	return dir;
};
afterEach(() => {
	for (const dir of dirs.splice(0)) rmSync(dir, { recursive: true, force: true });
});

describe("resolveToken", () => {
	it("generates a token in <data-dir>/token, mode 0600, written once the start is kept, and reuses it on the next", () => {
		const dataDir = join(fresh(), "data");
		const first = parseConfig({ dataDir });
		const source = resolveToken(first, undefined);
		expect(source).toEqual({ kind: "generated", path: join(dataDir, "token"), reused: false, unwritten: first.token });
		expect(first.token).toMatch(/^[\w-]{43}$/);
		// A start refused after this point leaves no file behind.
		expect(existsSync(join(dataDir, "token"))).toBe(false);
		keepToken(source);
		expect(statSync(join(dataDir, "token")).mode & 0o777).toBe(0o600);
		expect(readFileSync(join(dataDir, "token"), "utf8").trim()).toBe(first.token);
		const second = parseConfig({ dataDir });
		expect(resolveToken(second, undefined)).toMatchObject({ kind: "generated", reused: true });
		expect(second.token).toBe(first.token);
	});

	it("tightens a token file others could read", () => {
		const dataDir = fresh();
		writeFileSync(join(dataDir, "token"), "a-token-of-sixteen-or-more\n");
		chmodSync(join(dataDir, "token"), 0o644);
		const config = parseConfig({ dataDir });
		resolveToken(config, undefined);
		expect(config.token).toBe("a-token-of-sixteen-or-more");
		expect(statSync(join(dataDir, "token")).mode & 0o777).toBe(0o600);
	});

	it("takes --token-file, refuses a short or missing one, and refuses two sources", () => {
		const dir = fresh();
		const file = join(dir, "tok");
		writeFileSync(file, "from-a-file-0123456789\n");
		const config = parseConfig({ dataDir: dir, tokenFile: file });
		expect(resolveToken(config, undefined)).toEqual({ kind: "file", path: file });
		expect(config.token).toBe("from-a-file-0123456789");
		writeFileSync(file, "short");
		expect(() => resolveToken(parseConfig({ dataDir: dir, tokenFile: file }), undefined)).toThrow(/shorter than 16/);
		expect(() => resolveToken(parseConfig({ dataDir: dir, tokenFile: join(dir, "nope") }), undefined)).toThrow(
			/Cannot read the token file/,
		);
		expect(() =>
			resolveToken(parseConfig({ dataDir: dir, tokenFile: file, token: "x".repeat(20) }), undefined),
		).toThrow(/one way/);
	});

	it("says loudly that a token on argv is readable from /proc, and what --no-auth means", () => {
		const config = parseConfig({ dataDir: fresh(), token: "argv-token-0123456789" });
		const source = resolveToken(config, "argv");
		expect(tokenNotice(source)).toMatch(/WARNING.*\/proc\/<pid>\/cmdline/);
		const none = resolveToken(parseConfig({ dataDir: fresh(), auth: false }), undefined);
		expect(none).toEqual({ kind: "none" });
		expect(tokenNotice(none)).toMatch(/WARNING: --no-auth/);
		expect(tokenNotice({ kind: "generated", path: "/d/token", reused: false })).toContain(
			'curl -H "Authorization: Bearer $(cat /d/token)"',
		);
	});
});
