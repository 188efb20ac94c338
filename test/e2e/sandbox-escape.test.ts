import { mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { createKey } from "../../src/http/auth/keys.ts";
import { runEscapeBattery, startDecoy } from "../helpers/escape-battery.ts";
import { specCheckedApi, type TestGatewayOptions } from "../helpers/gateway.ts";
import {
	cannotRunAsNobody,
	type GatewayAsNobody,
	keyHashes,
	startGatewayAsNobody,
} from "../helpers/gateway-as-user.ts";
import {
	type BatteryLayout,
	batteryLayouts,
	expectRefusedLayout,
	type LayoutGateway,
	startInLayout,
} from "../helpers/layouts.ts";

// Issue 20's first reproducer, replayed: as root, bwrap kept every capability and a tool process
// could `unshare -m` + `umount -l` the hides, read the token, the keys file and gateway.db, see the
// host's processes after `umount -l /proc`, and answer its own pending approval. CI runs as root,
// so the root run never skips. The battery runs in README's layout first (issue 29: attacks that
// worked there passed a suite run with an explicit --workspace-root), then in the variants.
// The operator's files lie outside /tmp (which the sandbox hides whole), as in /etc: each must be
// hidden on its own.
const secretsDir = mkdtempSync("/var/tmp/pi-gateway-escape-secrets-");
const tokenFile = join(secretsDir, "token");
const keysFile = join(secretsDir, "keys.json");
const webhooksFile = join(secretsDir, "webhooks.json");
const webhookSecret = `whsec_${Buffer.alloc(32, 9).toString("base64")}`;
let alice: string;
let decoy: ReturnType<typeof startDecoy>;
beforeAll(() => {
	writeFileSync(tokenFile, `tok_${"q7".repeat(20)}\n`, { mode: 0o600 });
	const hook = { id: "ops", url: "https://hooks.example.com/pi", events: ["session.crashed"], secret: webhookSecret };
	writeFileSync(webhooksFile, JSON.stringify([hook]), { mode: 0o600 });
	createKey(keysFile, "mallory", ["sessions:read"]);
	const scopes = ["sessions:read", "sessions:write", "approvals:read", "approvals:answer"] as const;
	alice = createKey(keysFile, "alice", [...scopes]).secret;
	decoy = startDecoy();
});
afterAll(() => {
	decoy?.child.kill("SIGKILL");
	rmSync(secretsDir, { recursive: true, force: true });
});

/**
 * Per layout, what the gateway is given besides it, and the secrets that adds. README's layout
 * and cluster mode: keys added, nothing else (the sandbox `auto`, the token generated in the data
 * dir). The shared root keeps the variant this test had before (`--sandbox on`, the token in a
 * file outside the data dir) and adds the operator's other secret-bearing file, --webhooks-file.
 */
const variant = (
	layout: BatteryLayout,
): { options: TestGatewayOptions; files: string[]; secrets: Record<string, string> } =>
	layout === "shared-root"
		? {
				options: { sandbox: "on" as const, tokenFile, keysFile, webhooksFile },
				files: [webhooksFile],
				secrets: { "webhook signing secret": webhookSecret },
			}
		: { options: { keysFile }, files: [], secrets: {} };

/** Whose session the agent runs in: the admin's (the token) or a key's principal's. */
const callers = [["the admin token"], ["alice's key"]] as const;
const user = process.getuid?.() === 0 ? "root" : "this user";

describe.each(batteryLayouts)("the sandbox against a tool process that tries to get out (%s layout)", (layout) => {
	let gw: LayoutGateway;
	beforeAll(async () => {
		gw = await startInLayout(layout, variant(layout).options);
	});
	afterAll(() => gw?.stop());

	it.each(callers)(
		`holds with the gateway run as ${user}, a session of %s: no escape, no token, the approval pending`,
		{
			timeout: 240_000,
		},
		async (who) => {
			expect(gw.sandbox.enabled).toBe(true);
			const admin = who === "the admin token";
			const keys = JSON.parse(readFileSync(keysFile, "utf8")) as { keys: { hash: string; id: string }[] };
			const token = gw.config.tokenFile as string;
			const withAlice = (init: RequestInit["headers"]) => {
				const headers = new Headers(init);
				headers.set("authorization", `Bearer ${alice}`);
				return headers;
			};
			const report = await runEscapeBattery(
				{
					api: admin ? gw.api : specCheckedApi(gw.url, withAlice),
					url: gw.url,
					node: process.execPath,
					gatewayPid: process.pid,
					workspace: gw.workspace,
					// The admin's whole area in a shared root is the root: its agent works in a folder made there.
					cwd: admin && layout === "shared-root" ? "agent" : undefined,
					paths: [
						gw.config.dataDir,
						join(gw.config.dataDir, "gateway.db"),
						token,
						keysFile,
						gw.workspace,
						...gw.layoutSecretFiles,
						...variant(layout).files,
					],
					secrets: {
						token: gw.config.token as string,
						"alice's key": alice,
						...Object.fromEntries(keys.keys.map((k) => [`key hash ${k.id}`, k.hash])),
						...gw.layoutSecrets,
						...variant(layout).secrets,
						...decoy.secrets,
					},
				},
				decoy.child.pid as number,
			);
			// Every hide was tried: the data dir, the workspace root, /tmp, /proc. The token and keys files
			// lie outside what the view shows (sandbox-view.ts), so nothing covers them: they are not there
			// (every attack tried to read them; the leak check above found nothing).
			expect(report.hides).toEqual(expect.arrayContaining([gw.config.dataDir, "/proc", "/tmp"]));
			// (README's root lies in the data dir, hidden with it.)
			if (layout === "shared-root") expect(report.hides).toContain(gw.workspace);
		},
	);
});

describe("a workspace root that contains the data dir", () => {
	it("is refused at start, naming --data-dir: no battery can run there", async () => {
		await expectRefusedLayout({ keysFile });
	});
});

// The same battery with the gateway as an ordinary user (as a newcomer runs `npm start`): bwrap then
// makes the user namespace itself, and the same flags hold. Skipped, with the reason in its name,
// where this process cannot switch users (it is not root) or nobody cannot read the checkout.
const whyNot = cannotRunAsNobody();
describe.skipIf(whyNot).each(["default", "shared-root"] as const)(
	`the sandbox, gateway run as nobody (%s layout)${whyNot ? ` (skipped: ${whyNot})` : ""}`,
	(layout) => {
		let nobody: GatewayAsNobody;
		beforeAll(async () => {
			nobody = await startGatewayAsNobody(layout);
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
					cwd: layout === "shared-root" ? "agent" : undefined,
					paths: [dataDir, join(dataDir, "gateway.db"), tokenFile, keysFile, nobody.workspace],
					secrets: { token: nobody.token, ...keyHashes(keysFile), ...decoy.secrets },
				},
				decoy.child.pid as number,
			);
		});
	},
);
