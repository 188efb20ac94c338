import { type ChildProcess, spawn } from "node:child_process";
import { chownSync, copyFileSync, existsSync, mkdirSync, readFileSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { expect } from "vitest";
import { fixtures, type TestGateway, until } from "./gateway.ts";

/** What test/fixtures/attacker-escape.mjs writes: each escape tried, with what it printed. */
export interface EscapeReport {
	hides: string[];
	attacks: { name: string; command: string; status: number | null; output: string }[];
	requests: Record<string, number>;
	answered: { id: string; status: number }[];
	tokenFound: boolean;
	candidates: number;
}

/** The gateway under attack, wherever it runs (in this process, or as another user). */
export interface Target {
	/** The caller whose session the agent runs in (the admin token, or a key's principal). */
	api: TestGateway["api"];
	url: string;
	gatewayPid: number;
	/** The workspace root. */
	workspace: string;
	/**
	 * The session's `cwd`, a folder the test makes under the workspace root first (an admin's
	 * `agent` in a shared root); without it the session works where the layout puts it (its own
	 * folder, or the shared root's area).
	 */
	cwd?: string;
	/** Every secret-bearing path the attacker is told about (worst case: it knows them all). */
	paths: string[];
	/** The node binary the agent runs the attacker with (one the gateway's user can read). */
	node: string;
	/** The gateway's uid, when not this process's: what the test writes into the session's folder is given to it. */
	owner?: number;
	/** Strings that must never reach the attacker, by name: the token, the keys file's hashes, decoy secrets. */
	secrets: Record<string, string>;
}

/**
 * A process on the host with a database password on its command line and a secret in its
 * environment, as a cluster node given `--database-url` would be: the attacker must not see it.
 */
export function startDecoy(): { child: ChildProcess; secrets: Record<string, string> } {
	const secrets = { "decoy cmdline": "decoy-db-password-7f3a91c2", "decoy environ": "decoy-env-secret-5b8e20d4" };
	const child = spawn(
		process.execPath,
		["-e", "setInterval(() => {}, 1e6)", "--", `--database-url=postgres://gw:${secrets["decoy cmdline"]}@db/gw`],
		{ env: { PATH: process.env.PATH, DECOY_SECRET: secrets["decoy environ"] }, stdio: "ignore" },
	);
	return { child, secrets };
}

/**
 * The battery, run as an agent would: pi's bash tool (the demo model's `bash: CMD`) starts the
 * attacker in the background, then asks for an `rm -rf` the permission gate holds; once that
 * approval is pending the attacker runs every escape and tries what it found against the API.
 * Asserts the token stays unread, every call is refused and the approval is still pending, then
 * answers it "Block" itself. Returns the report for the caller's own checks.
 */
export async function runEscapeBattery(t: Target, decoyPid: number): Promise<EscapeReport> {
	if (t.cwd !== undefined) {
		mkdirSync(join(t.workspace, t.cwd), { recursive: true });
		if (t.owner !== undefined) chownSync(join(t.workspace, t.cwd), t.owner, t.owner);
	}
	// Another principal's work, in its area of the root: out of this session's sight in every layout.
	const neighbour = join(t.workspace, "@neighbour", "work", "secret.txt");
	const neighbourSecret = "neighbour-secret-3c9d51e8a7";
	mkdirSync(join(neighbour, ".."), { recursive: true });
	writeFileSync(neighbour, neighbourSecret);
	const created = await t.api("/v1/sessions", {
		method: "POST",
		json: { ...(t.cwd === undefined ? {} : { cwd: t.cwd }), extensions: ["permission-gate"] },
	});
	expect(created.status).toBe(201);
	const cwd = created.body.cwd as string;
	const base = `/v1/sessions/${created.body.id}`;
	mkdirSync(join(cwd, "victim"), { recursive: true });
	copyFileSync(join(fixtures, "attacker-escape.mjs"), join(cwd, "escape.mjs"));
	writeFileSync(
		join(cwd, "escape.json"),
		JSON.stringify({ url: t.url, gatewayPid: t.gatewayPid, decoyPid, paths: [...t.paths, neighbour] }),
	);
	if (t.owner !== undefined)
		for (const name of ["victim", "escape.mjs", "escape.json"]) chownSync(join(cwd, name), t.owner, t.owner);
	try {
		const start = await t.api(`${base}/prompt?wait=true`, {
			method: "POST",
			json: { message: `bash: ${t.node} escape.mjs > escape.log 2>&1 &` },
		});
		expect(start.status).toBe(200);
		const run = t.api(`${base}/prompt?wait=true`, {
			method: "POST",
			json: { message: "bash: rm -rf ./victim && echo removed" },
		});
		const pending = await until(
			async () => (await t.api(`${base}/approvals?status=pending`)).body.approvals[0],
			30_000,
		);
		writeFileSync(join(cwd, "attack.go"), "");
		const reportPath = join(cwd, "escape-report.json");
		await until(() => existsSync(reportPath), 150_000).catch((error) => {
			const log = join(cwd, "escape.log");
			throw new Error(`${error}; escape.log: ${existsSync(log) ? readFileSync(log, "utf8").slice(0, 2000) : "none"}`);
		});
		const report = JSON.parse(readFileSync(reportPath, "utf8")) as EscapeReport;
		// Per attack: its exit status (0 = the escape ran to its end) and which secrets its output held.
		const secrets: Record<string, string> = {
			...t.secrets,
			"gateway.db": "SQLite format 3",
			"another principal's file": neighbourSecret,
		};
		const outcome = report.attacks.map((a) => {
			const leaked = Object.keys(secrets).filter((name) => a.output.includes(secrets[name] as string));
			return `${a.name}: exit ${a.status}${leaked.length ? `, read ${leaked.join(", ")}` : ""}`;
		});
		const controls = ["caps", "baseline", "pidfd control"];
		const escaped = report.attacks.filter((a) => !controls.includes(a.name) && a.status === 0);
		const leaks = Object.keys(secrets).filter((name) => JSON.stringify(report).includes(secrets[name] as string));

		// Nothing it found is a secret, no escape ran to its end, every call was refused.
		expect({ leaks, escaped: escaped.map((a) => a.name), tokenFound: report.tokenFound }, outcome.join("\n")).toEqual({
			leaks: [],
			escaped: [],
			tokenFound: false,
		});
		// A tool missing from the host (unshare, nsenter, mount) would make its attack pass for nothing.
		expect(report.attacks.filter((a) => /not found/.test(a.output)).map((a) => a.name)).toEqual([]);
		expect(report.answered).toEqual([]);
		// The gateway's port is out of reach (issue 42): the sandbox's loopback is its own, nothing
		// listens there, so every call is refused at connect, with a candidate or without.
		expect(Object.keys(report.requests).filter((k) => !/ ECONNREFUSED$/.test(k))).toEqual([]);
		expect(report.requests["without-token ECONNREFUSED"]).toBe(1);
		expect(report.requests["with-candidate ECONNREFUSED"]).toBeGreaterThan(0);
		// pi is out of its tools' reach (sealed-node.ts): refused by permission, where the same call
		// on a process of the tool's own works.
		const output = (name: string) => report.attacks.find((a) => a.name === name)?.output ?? "";
		expect(output("pidfd control")).toMatch(/pidfd_getfd [1-9]\d* pipe:/);
		expect(output("take pi's stdin")).toMatch(/pidfd_getfd -1 Operation not permitted/);
		expect(output("take pi's stdout")).toMatch(/pidfd_getfd -1 Operation not permitted/);
		expect(output("take bwrap init's stdout")).toMatch(/pidfd_getfd \d+ \/dev\/null/);
		expect(output("open pi's memory")).toMatch(/PermissionError/);
		expect(output("read pi's fds and environ")).toMatch(/Permission denied/);
		const caps = report.attacks.find((a) => a.name === "caps")?.output ?? "";
		expect(caps).toMatch(/CapEff:\s+0000000000000000/);
		expect(caps).toMatch(/CapBnd:\s+0000000000000000/);
		expect(caps).toMatch(/NoNewPrivs:\s+1/);
		// The approval waits for a person.
		expect((await t.api(`${base}/approvals/${pending.id}`)).body.status).toBe("pending");
		expect(existsSync(join(cwd, "victim"))).toBe(true);
		const blocked = await t.api(`${base}/approvals/${pending.id}`, { method: "POST", json: { value: "Block" } });
		expect(blocked.status).toBe(200);
		expect((await run).status).toBe(200);
		expect(existsSync(join(cwd, "victim"))).toBe(true);
		return report;
	} finally {
		await t.api(base, { method: "DELETE" });
	}
}
