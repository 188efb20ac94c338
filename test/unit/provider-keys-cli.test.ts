import { execFileSync } from "node:child_process";
import { mkdtempSync, readFileSync, rmSync, statSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, afterEach, beforeEach, describe, expect, it, vi } from "vitest";
import { keysCommand } from "../../src/cli/keys.ts";
import { ownKeysOf } from "../../src/config/own-keys.ts";
import { readKeysFile } from "../../src/http/auth/keys.ts";
import { gatewayEntry } from "../helpers/gateway-entry.ts";

// Issue 42 item 5: `pi-gateway keys` records where a principal's own provider key is (never the
// key), says what is wrong with a source as it sets or lists it, and refuses a key pasted in
// place of a source without repeating it.
const dir = mkdtempSync(join(tmpdir(), "pi-gateway-provider-keys-cli-"));
const file = join(dir, "keys.json");
const secretFile = join(dir, "alice-anthropic");
const pasted = "sk-PASTED-SECRET-canary-81723";
afterAll(() => rmSync(dir, { recursive: true, force: true }));

let out: string[];
beforeEach(() => {
	out = [];
	const keep = (...args: unknown[]) => void out.push(args.join(" "));
	vi.spyOn(console, "log").mockImplementation(keep);
	vi.spyOn(console, "error").mockImplementation(keep);
});
afterEach(() => vi.restoreAllMocks());

const run = (...argv: string[]) => keysCommand([...argv, "--keys-file", file], { HOME: dir });

describe("pi-gateway keys and principals' own provider keys", () => {
	it("records where each key is, keeps the API keys, and lists what is wrong", () => {
		run(
			"create",
			"--principal",
			"alice",
			"--scopes",
			"sessions:read",
			"--provider-key",
			"openai=env:PGW_TEST_UNSET_KEY",
		);
		writeFileSync(secretFile, "sk-in-a-file\n", { mode: 0o600 });
		run("provider-key", "alice", `anthropic=file:${secretFile}`, "groq=file:/nonexistent/pgw-key");
		run("create", "--principal", "bob", "--scopes", "sessions:read");
		expect(readKeysFile(file).map((k) => k.principal)).toEqual(["alice", "bob"]);
		expect([...ownKeysOf(file, "alice")]).toEqual([
			["openai", "env:PGW_TEST_UNSET_KEY"],
			["anthropic", `file:${secretFile}`],
			["groq", "file:/nonexistent/pgw-key"],
		]);
		expect(ownKeysOf(file, "bob").size).toBe(0);
		expect(statSync(file).mode & 0o077).toBe(0);
		expect(readFileSync(file, "utf8")).not.toContain("sk-in-a-file");

		out = [];
		run("list");
		const listed = out.join("\n");
		expect(listed).toContain(
			"alice  openai  env:PGW_TEST_UNSET_KEY  PROBLEM: the variable PGW_TEST_UNSET_KEY is not set",
		);
		expect(listed).toContain(`alice  anthropic  file:${secretFile}  ok`);
		expect(listed).toContain(
			"alice  groq  file:/nonexistent/pgw-key  PROBLEM: the file /nonexistent/pgw-key cannot be read (ENOENT)",
		);
		expect(listed).not.toContain("sk-in-a-file");

		out = [];
		run("list", "--json");
		const rows = JSON.parse(out.join("\n")) as { principal: string; providerKeys: unknown[] }[];
		expect(rows.map((k) => [k.principal, k.providerKeys])).toEqual([
			[
				"alice",
				[
					{
						provider: "openai",
						source: "env:PGW_TEST_UNSET_KEY",
						problem: "the variable PGW_TEST_UNSET_KEY is not set in the gateway's environment",
					},
					{ provider: "anthropic", source: `file:${secretFile}`, problem: null },
					{
						provider: "groq",
						source: "file:/nonexistent/pgw-key",
						problem: "the file /nonexistent/pgw-key cannot be read (ENOENT)",
					},
				],
			],
			["bob", []],
		]);
		expect(out.join("\n")).not.toContain("sk-in-a-file");

		run("provider-key", "alice", "groq=");
		expect([...ownKeysOf(file, "alice").keys()]).toEqual(["openai", "anthropic"]);
	});

	it("leaves the key out of --print-config", () => {
		const printed = execFileSync(process.execPath, [gatewayEntry, "--print-config", "--keys-file", file], {
			cwd: join(import.meta.dirname, "../.."),
			env: { ...process.env, PGW_TEST_UNSET_KEY: pasted, HOME: dir },
			encoding: "utf8",
		});
		expect(printed).toContain(file);
		expect(printed).not.toContain(pasted);
	});

	it("refuses a key given in place of its source, without repeating it", () => {
		const before = readFileSync(file, "utf8");
		for (const argv of [
			["provider-key", "alice", `openai=${pasted}`],
			["create", "--principal", "carol", "--scopes", "sessions:read", "--provider-key", `openai=${pasted}`],
			["provider-key", "alice", "openai=file:relative/path"],
		]) {
			let message = "";
			try {
				run(...argv);
			} catch (error) {
				message = (error as Error).message;
			}
			expect(message).toContain("env:NAME");
			expect(message).not.toContain(pasted);
		}
		expect(out.join("\n")).not.toContain(pasted);
		// Nothing was written: carol got no API key either.
		expect(readFileSync(file, "utf8")).toBe(before);
	});
});
