import { copyFileSync, existsSync, mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { createKey } from "../../src/http/auth/keys.ts";
import { fixtures, specCheckedApi, until } from "../helpers/gateway.ts";
import { batteryLayouts, expectRefusedLayout, type LayoutGateway, startInLayout } from "../helpers/layouts.ts";

// The self-approval attack, run as an agent would: real pi, the demo model's bash tool, the shipped
// permission gate. The agent's first command starts a background process that hunts for the
// gateway's token everywhere a tool can look and answers every pending approval it can see; its
// second command is an `rm -rf` the gate holds. The approval must wait for a person.
const attacker = join(fixtures, "attacker.mjs");

interface Report {
	rounds: { round: number; startedAt: number; endedAt: number }[];
	sources: Record<string, number>;
	candidates: string[];
	requests: Record<string, number>;
	answered: { id: string; status: number }[];
	tokenFound: boolean;
	errors: string[];
}

const keys = mkdtempSync(join(tmpdir(), "pi-gateway-trust-keys-"));
const keysFile = join(keys, "keys.json");
const scopes = ["sessions:read", "sessions:write", "approvals:read", "approvals:answer"] as const;
const alice = createKey(keysFile, "alice", [...scopes]).secret;
afterAll(() => rmSync(keys, { recursive: true, force: true }));

const readReport = (path: string): Report | undefined => {
	try {
		return JSON.parse(readFileSync(path, "utf8"));
	} catch {
		return undefined;
	}
};

// README's layout first (keys added, nothing else), then a shared --workspace-root and cluster
// mode; a session of the admin token and one of a key's principal in each.
describe.each(batteryLayouts)("the self-approval attack (%s layout)", (layout) => {
	let gw: LayoutGateway;
	beforeAll(async () => {
		// `on`, not the default `auto`: without bubblewrap this test must fail, not pass on a weaker setup.
		gw = await startInLayout(layout, { sandbox: "on", keysFile });
	});
	afterAll(() => gw?.stop());

	it.each([
		["the admin token", "admin"],
		["alice's key", "alice"],
	])(
		"a session of %s: finds no token and answers nothing; the approval waits for a person, whose answer works",
		{
			timeout: 180_000,
		},
		async (_caller, principal) => {
			const token = gw.config.token as string;
			expect(token.length).toBeGreaterThanOrEqual(16);
			expect(gw.sandbox.enabled).toBe(true);
			const withAlice = (init: RequestInit["headers"]) => {
				const headers = new Headers(init);
				headers.set("authorization", `Bearer ${alice}`);
				return headers;
			};
			const api = principal === "admin" ? gw.api : specCheckedApi(gw.url, withAlice);
			const created = await api("/v1/sessions", {
				method: "POST",
				json: { name: "attacked", extensions: ["permission-gate"] },
			});
			expect(created.status).toBe(201);
			const id = created.body.id as string;
			const base = `/v1/sessions/${id}`;
			// The session's own folder: README's layout gives each session one, a shared root is the
			// admin's (or the principal's area).
			const folder = created.body.cwd as string;
			mkdirSync(join(folder, "victim"));
			const reportPath = join(folder, "attack-report.json");

			// 1. The agent starts its accomplice in the background (it knows every path, worst case).
			// The agent writes its accomplice into its own folder (the sandbox shows it nothing else of
			// the workspace, nor a checkout under /tmp, which is private inside it).
			copyFileSync(attacker, join(folder, "accomplice.mjs"));
			const args = [
				process.execPath,
				"accomplice.mjs",
				gw.url,
				gw.config.dataDir,
				gw.config.tokenFile ?? "none",
				"110",
			];
			const start = await api(`${base}/prompt?wait=true`, {
				method: "POST",
				json: { message: `bash: ${args.join(" ")} > attack.log 2>&1 &` },
			});
			expect(start.status).toBe(200);

			// 2. The agent asks for something the gate holds.
			const run = api(`${base}/prompt?wait=true`, {
				method: "POST",
				json: { message: "bash: rm -rf ./victim && echo removed" },
			});
			const pending = await until(async () => (await api(`${base}/approvals?status=pending`)).body.approvals[0]);
			const openedAt = Date.parse(pending.createdAt);

			// 3. Let the accomplice make a full round of attempts that began while it was pending (a
			// round makes a request per candidate string, which takes a while on a loaded machine).
			const report = await until(() => {
				const r = readReport(reportPath);
				return r?.rounds.some((round) => round.startedAt > openedAt) ? r : undefined;
			}, 100_000).catch((error) => {
				const log = join(folder, "attack.log");
				const rounds = JSON.stringify(readReport(reportPath)?.rounds ?? "no report");
				throw new Error(
					`${error}: dialog opened at ${openedAt}; rounds ${rounds}; attack.log: ${existsSync(log) ? readFileSync(log, "utf8").slice(0, 2000) : "none"}`,
				);
			});
			writeFileSync(join(folder, "attack.stop"), "");
			expect((await api(`${base}/approvals/${pending.id}`)).body.status).toBe("pending");
			expect(existsSync(join(folder, "victim"))).toBe(true);

			// It looked everywhere, found nothing that is the token (nor alice's key, nor a layout's
			// secret), and every request was refused.
			expect(report.sources["proc-environ"]).toBeGreaterThan(0);
			expect(report.sources.env).toBeGreaterThan(0);
			expect(report.tokenFound).toBe(false);
			expect(report.answered).toEqual([]);
			for (const secret of [token, alice, ...Object.values(gw.layoutSecrets)])
				expect(JSON.stringify(report)).not.toContain(secret);
			const statuses = Object.keys(report.requests);
			expect(statuses.length).toBeGreaterThan(0);
			// The gateway's port is out of its reach (issue 42): the sandbox has a loopback of its own,
			// with nothing on that port, so every request is refused at connect, never answered.
			expect(
				statuses.filter((key) => !/ ECONNREFUSED$/.test(key)),
				JSON.stringify(report.requests),
			).toEqual([]);
			expect(report.requests["without-token ECONNREFUSED"]).toBeGreaterThanOrEqual(report.rounds.length);
			// The data directory, the token file and the gateway's /proc entries were out of its sight.
			expect(report.errors.some((e) => e.startsWith("token-file") && /ENOENT|EACCES/.test(e))).toBe(true);
			expect(report.sources.pidsSeen).toBeLessThan(20);

			// 4. A person's answer, through the API, works.
			const answered = await api(`${base}/approvals/${pending.id}`, {
				method: "POST",
				json: { value: "Allow", by: "alice" },
			});
			expect(answered.status).toBe(200);
			expect(answered.body).toMatchObject({ status: "answered", resolvedBy: principal, note: "alice" });
			expect((await run).body.text).toBe("The command finished. Output:\nremoved");
			expect(existsSync(join(folder, "victim"))).toBe(false);
		},
	);
});

describe("a workspace root that contains the data dir", () => {
	it("is refused at start, naming --data-dir: no attack can run there", async () => {
		await expectRefusedLayout({ sandbox: "on", keysFile });
	});
});

describe.each(batteryLayouts)("without the sandbox (%s layout)", (layout) => {
	const saved = { ...process.env };
	let plain: LayoutGateway;
	beforeAll(async () => {
		// The operator's way: the token (and other gateway settings) in the gateway's environment.
		process.env.PI_GATEWAY_TOKEN = "env-token-that-must-not-leak-0123";
		process.env.PI_GATEWAY_WORKSPACE_ROOT = "/must-not-leak";
		process.env.SOME_UNRELATED_SECRET = "unrelated-secret-0123456789";
		plain = await startInLayout(layout, { sandbox: "off", token: process.env.PI_GATEWAY_TOKEN });
	});
	afterAll(async () => {
		process.env = saved;
		await plain?.stop();
	});

	it("pi and its tools still see no gateway variable, in their environment or in any command line", async () => {
		expect(plain.sandbox.enabled).toBe(false);
		const id = await plain.session({});
		const { body } = await plain.api(`/v1/sessions/${id}/bash`, {
			method: "POST",
			json: { command: "env; echo; tr '\\0' ' ' < /proc/$PPID/cmdline; echo; tr '\\0' '\\n' < /proc/$PPID/environ" },
		});
		expect(body.exitCode).toBe(0);
		expect(body.output).toContain("PATH=");
		expect(body.output).not.toContain("env-token-that-must-not-leak");
		expect(body.output).not.toContain("PI_GATEWAY_");
		expect(body.output).not.toContain("unrelated-secret");
		for (const secret of Object.values(plain.layoutSecrets)) expect(body.output).not.toContain(secret);
	});
});
