import { type ChildProcess, spawn } from "node:child_process";
import { readFileSync } from "node:fs";
import pino from "pino";
import { afterEach, describe, expect, it } from "vitest";
import { Fence } from "../../src/cluster/fence.ts";
import { alive, sleep, until } from "../helpers/gateway.ts";

// The fence's watchdog is a process of its own: it must kill what it guards at the deadline even
// when the gateway cannot run, and when the gateway is gone.
const started: ChildProcess[] = [];
const fences: Fence[] = [];
afterEach(() => {
	for (const fence of fences.splice(0)) fence.close();
	for (const child of started.splice(0)) child.kill("SIGKILL");
});

/** A process group like a pi child's (detached), with a grandchild in it. */
function group(): { leader: number; member: () => number | undefined } {
	const child = spawn("sh", ["-c", "sleep 60 & echo $!; wait"], {
		detached: true,
		stdio: ["ignore", "pipe", "ignore"],
	});
	started.push(child);
	let member: number | undefined;
	child.stdout?.setEncoding("utf8").on("data", (text: string) => {
		member ??= Number(text.trim());
	});
	return { leader: child.pid as number, member: () => member };
}

const ms = 1_000_000n;

describe("Fence", () => {
	it("kills every guarded process group at the deadline, not before, and spares what it does not guard", async () => {
		const fence = new Fence(pino({ level: "silent" }));
		fences.push(fence);
		const guarded = group();
		const other = group();
		const member = await until(() => guarded.member());
		fence.guard("s1", guarded.leader);
		// A deadline a minute away: nothing happens (the watchdog checks every 50 ms).
		fence.arm(process.hrtime.bigint() + 60_000n * ms);
		await sleep(300);
		expect(alive(guarded.leader)).toBe(true);
		// The deadline passes (as when the gateway stops renewing): the whole group goes.
		fence.arm(process.hrtime.bigint() - 1n);
		await until(() => !alive(member), 5000);
		await until(() => !alive(guarded.leader) || isZombie(guarded.leader), 5000);
		expect(alive(other.leader)).toBe(true);
	});

	it("forgets unguarded pids, and kills what is left when the gateway goes away", async () => {
		const fence = new Fence(pino({ level: "silent" }));
		fences.push(fence);
		const kept = group();
		const released = group();
		fence.guard("kept", kept.leader);
		fence.guard("released", released.leader);
		fence.unguard("released");
		fence.arm(process.hrtime.bigint() + 60_000n * ms);
		await sleep(300);
		expect(alive(kept.leader)).toBe(true);
		fence.close(); // what the watchdog sees when the gateway dies: its stdin ends
		await until(() => !alive(kept.leader) || isZombie(kept.leader), 5000);
		expect(alive(released.leader) && !isZombie(released.leader)).toBe(true);
	});
});

function isZombie(pid: number): boolean {
	try {
		return /^\d+ \(.*\) Z/.test(readFileSync(`/proc/${pid}/stat`, "utf8"));
	} catch {
		return false;
	}
}
