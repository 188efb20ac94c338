import { mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { createKey } from "../../src/http/auth/keys.ts";
import { runEscapeBattery, startDecoy } from "../helpers/escape-battery.ts";
import { startTestGateway, type TestGateway } from "../helpers/gateway.ts";
import {
	cannotRunAsNobody,
	type GatewayAsNobody,
	keyHashes,
	startGatewayAsNobody,
} from "../helpers/gateway-as-user.ts";

// Issue 20's first reproducer, replayed: as root, bwrap kept every capability and a tool process
// could `unshare -m` + `umount -l` the hides, read the token, the keys file and gateway.db, see the
// host's processes after `umount -l /proc`, and answer its own pending approval. CI runs as root,
// so the root run never skips.
const secretsDir = mkdtempSync(join(tmpdir(), "pi-gateway-escape-secrets-"));
const tokenFile = join(secretsDir, "token");
const keysFile = join(secretsDir, "keys.json");
let decoy: ReturnType<typeof startDecoy>;
let gw: TestGateway;
beforeAll(async () => {
	writeFileSync(tokenFile, `tok_${"q7".repeat(20)}\n`, { mode: 0o600 });
	createKey(keysFile, "mallory", ["sessions:read"]);
	decoy = startDecoy();
	gw = await startTestGateway({ sandbox: "on", tokenFile, keysFile });
});
afterAll(async () => {
	decoy?.child.kill("SIGKILL");
	await gw?.stop();
	rmSync(secretsDir, { recursive: true, force: true });
});

describe("the sandbox against a tool process that tries to get out", () => {
	it(`holds with the gateway run as ${process.getuid?.() === 0 ? "root" : "this user"}: no escape, no token, the approval pending`, {
		timeout: 240_000,
	}, async () => {
		expect(gw.sandbox.enabled).toBe(true);
		const keys = JSON.parse(readFileSync(keysFile, "utf8")) as { keys: { hash: string; id: string }[] };
		const report = await runEscapeBattery(
			{
				api: gw.api,
				url: gw.url,
				node: process.execPath,
				gatewayPid: process.pid,
				workspace: gw.workspace,
				paths: [gw.config.dataDir, join(gw.config.dataDir, "gateway.db"), tokenFile, keysFile, gw.workspace],
				secrets: {
					token: gw.config.token as string,
					...Object.fromEntries(keys.keys.map((k) => [`key hash ${k.id}`, k.hash])),
					...decoy.secrets,
				},
			},
			decoy.child.pid as number,
		);
		// Every hide was tried: the data dir, the workspace root, /tmp, the token and keys files, /proc.
		expect(report.hides).toEqual(expect.arrayContaining([gw.config.dataDir, tokenFile, keysFile, "/proc", "/tmp"]));
	});
});

// The same battery with the gateway as an ordinary user: bwrap then makes the user namespace
// itself, and the same flags hold. Skipped, with the reason in its name, where this process
// cannot switch users (it is not root) or nobody cannot read the checkout.
const whyNot = cannotRunAsNobody();
describe.skipIf(whyNot)(`the sandbox, gateway run as nobody${whyNot ? ` (skipped: ${whyNot})` : ""}`, () => {
	let nobody: GatewayAsNobody;
	beforeAll(async () => {
		nobody = await startGatewayAsNobody();
	});
	afterAll(() => nobody?.stop());

	it("holds too: no escape, no token, the approval pending", { timeout: 240_000 }, async () => {
		const { dataDir, tokenFile, keysFile } = nobody;
		await runEscapeBattery(
			{
				api: nobody.api,
				url: nobody.url,
				node: nobody.node,
				owner: 65534,
				gatewayPid: nobody.pid,
				workspace: nobody.workspace,
				paths: [dataDir, join(dataDir, "gateway.db"), tokenFile, keysFile, nobody.workspace],
				secrets: { token: nobody.token, ...keyHashes(keysFile), ...decoy.secrets },
			},
			decoy.child.pid as number,
		);
	});
});
