import { execFile } from "node:child_process";
import { mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join, resolve } from "node:path";
import { promisify } from "node:util";
import { afterAll, describe, expect, it } from "vitest";
import { startTestGateway, type TestGateway } from "../helpers/gateway.ts";
import { hasCommand } from "../helpers/host.ts";

// docs/principals.md's shell blocks, run as written against a real gateway: the
// keys are made with the CLI, alice creates and shares a session, carol reads her inbox, the
// admin reads the audit log. Lines that start a gateway (`pi-gateway --…`) are the test's job,
// and the JWT block needs an identity provider (test/e2e/jwt.test.ts covers it).
const repo = resolve(import.meta.dirname, "../..");
const run = promisify(execFile);

function blocks(): string[] {
	const section = readFileSync(join(repo, "docs/principals.md"), "utf8");
	return [...section.matchAll(/```sh\n([\s\S]*?)```/g)]
		.map((m) => m[1] as string)
		.filter((block) => !block.includes("ACCESS_TOKEN"))
		.map((block) =>
			block
				.split("\n")
				.filter((line) => !/^pi-gateway --/.test(line))
				.join("\n"),
		);
}

let gw: TestGateway | undefined;
const dir = mkdtempSync(join(tmpdir(), "pi-gateway-readme-principals-"));
afterAll(async () => {
	await gw?.stop();
	rmSync(dir, { recursive: true, force: true });
});

describe.skipIf(!hasCommand("curl") || !hasCommand("jq"))("docs/principals.md: Principals and scopes", () => {
	it("the shell blocks work as written", async () => {
		const [keys, share, audit, ...rest] = blocks();
		expect(rest).toEqual([]);
		const bin = join(dir, "bin");
		mkdirSync(bin);
		writeFileSync(join(bin, "pi-gateway"), `#!/bin/sh\nexec "${process.execPath}" "${repo}/src/main.ts" "$@"\n`, {
			mode: 0o755,
		});
		const env = { ...process.env, PATH: `${bin}:${process.env.PATH}`, HOME: dir };
		// One answer per line (curl prints none after a body of its own).
		writeFileSync(join(dir, ".curlrc"), 'write-out = "\\n"\n');
		const sh = (script: string, extra: Record<string, string> = {}) =>
			run("sh", ["-ec", script], { cwd: dir, env: { ...env, ...extra } });
		await sh(keys as string);
		expect(JSON.parse(readFileSync(join(dir, "keys.json"), "utf8")).keys).toHaveLength(2);

		gw = await startTestGateway({ keysFile: join(dir, "keys.json") });
		const shared = await sh(`${share}\necho "ID=$ID"`, { GW: gw.url });
		const [put, inbox] = shared.stdout.trim().split("\n");
		const id = /ID=(\S+)/.exec(shared.stdout)?.[1];
		expect(JSON.parse(put as string)).toEqual({
			sessionId: id,
			owner: "alice",
			grants: [{ principal: "carol", can: ["answer"] }],
		});
		expect(JSON.parse(inbox as string)).toMatchObject({ approvals: [] });

		mkdirSync(join(dir, ".pi-gateway"));
		writeFileSync(join(dir, ".pi-gateway", "token"), gw.config.token as string);
		const log = JSON.parse((await sh(audit as string, { GW: gw.url })).stdout);
		expect(log.entries.map((e: { action: string }) => e.action)).toEqual(["sessions.putAccess", "sessions.create"]);
	});
});
