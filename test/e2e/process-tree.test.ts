import { readdirSync, readFileSync } from "node:fs";
import { afterEach, describe, expect, it } from "vitest";
import { noPool, startTestGateway, type TestGateway, until } from "../helpers/gateway.ts";

// Tool processes die with their pi. pi's bash tool starts each command in a process group of its
// own, so they used to outlive pi (re-parented to PID 1) when pi was killed, crashed or stopped.
// Each case runs a `sleep` with a number no other test uses and polls until none is left.

/** Processes whose command line mentions `sleep N` (the shell that runs it, and sleep itself). */
function sleepers(seconds: number): number[] {
	const found: number[] = [];
	for (const entry of readdirSync("/proc")) {
		if (!/^\d+$/.test(entry)) continue;
		try {
			const argv = readFileSync(`/proc/${entry}/cmdline`, "utf8").split("\0").join(" ");
			if (argv.includes(`sleep ${seconds}`) && !argv.includes("--mode")) found.push(Number(entry));
		} catch {}
	}
	return found;
}

/** The pi process of a session: the child itself, or (sandboxed) the one bwrap runs. */
function piPid(root: number): number {
	const children = new Map<number, number[]>();
	for (const entry of readdirSync("/proc")) {
		if (!/^\d+$/.test(entry)) continue;
		try {
			const stat = readFileSync(`/proc/${entry}/stat`, "utf8");
			const ppid = Number(stat.slice(stat.lastIndexOf(")") + 2).split(" ")[1]);
			children.set(ppid, [...(children.get(ppid) ?? []), Number(entry)]);
		} catch {}
	}
	const queue = [root];
	while (queue.length > 0) {
		const pid = queue.shift() as number;
		const argv = readFileSync(`/proc/${pid}/cmdline`, "utf8").split("\0");
		// pi renames itself (process.title "pi"); the sandbox's own processes are bwrap.
		if (!argv[0]?.endsWith("bwrap")) return pid;
		queue.push(...(children.get(pid) ?? []));
	}
	throw new Error(`no pi below ${root}`);
}

const gone = (seconds: number) => until(() => sleepers(seconds).length === 0, 15_000);

describe.each(["on", "off"] as const)("sandbox %s", (sandbox) => {
	let gw: TestGateway | undefined;
	afterEach(async () => {
		await gw?.stop();
		gw = undefined;
	});
	// Distinct durations per case and per sandbox mode, so parallel test files cannot be confused.
	const base = sandbox === "on" ? 3100 : 3200;

	/** A session whose bash tool is running `sleep N` (started by the model, as an agent would). */
	async function sleeping(seconds: number): Promise<string> {
		gw ??= await startTestGateway({ sandbox, ...noPool });
		expect(gw.sandbox.enabled).toBe(sandbox === "on");
		const id = await gw.session({});
		const run = await gw.api(`/v1/sessions/${id}/prompt`, {
			method: "POST",
			json: { message: `bash: sleep ${seconds}` },
		});
		expect(run.status).toBe(202);
		await until(() => sleepers(seconds).length > 0);
		return id;
	}

	it("SIGKILL of pi mid-bash: its sleep dies too", async () => {
		const id = await sleeping(base + 1);
		const session = (await gw?.api(`/v1/sessions/${id}`))?.body;
		process.kill(piPid(session.pid), "SIGKILL");
		await gone(base + 1);
		await until(async () => (await gw?.api(`/v1/sessions/${id}`))?.body.status === "crashed");
	});

	it("DELETE of a session mid-bash: its sleep dies too", async () => {
		const id = await sleeping(base + 2);
		expect((await gw?.api(`/v1/sessions/${id}`, { method: "DELETE" }))?.status).toBe(204);
		await gone(base + 2);
	});

	it("gateway shutdown mid-bash: every sleep dies too", async () => {
		await sleeping(base + 3);
		await sleeping(base + 4);
		await gw?.stop();
		gw = undefined;
		await gone(base + 3);
		await gone(base + 4);
	});
});
