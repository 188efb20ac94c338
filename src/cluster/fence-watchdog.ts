// The fence's watchdog: a process of its own, so that it runs while the gateway does not (paused by
// SIGSTOP, a stalled VM, a blocked event loop). It reads lines on stdin from the gateway:
//   d <ns>   the lease holds until this CLOCK_MONOTONIC time (process.hrtime.bigint() of any process)
//   g <pid>  a pi process to stop when the lease runs out (its process group)
//   u <pid>  that process is gone, forget it
// Past the deadline it SIGKILLs every guarded process group, before any other node may take their
// sessions over (the lease in the database outlasts the deadline). When stdin ends (the gateway
// died) it does the same and exits. It never decides anything else.
import { createInterface } from "node:readline";

const guarded = new Set<number>();
let deadline = 0n;

function killAll(why: string): void {
	if (guarded.size === 0) return;
	for (const pid of guarded) {
		try {
			process.kill(-pid, "SIGKILL");
		} catch {
			try {
				process.kill(pid, "SIGKILL");
			} catch {}
		}
	}
	process.stderr.write(`pi-gateway fence: ${why}: killed ${guarded.size} pi process group(s)\n`);
	guarded.clear();
}

const lines = createInterface({ input: process.stdin });
lines.on("line", (line) => {
	const [op, arg] = line.split(" ");
	if (op === "d" && arg) deadline = BigInt(arg);
	else if (op === "g" && arg) guarded.add(Number(arg));
	else if (op === "u" && arg) guarded.delete(Number(arg));
});
lines.on("close", () => {
	killAll("the gateway is gone");
	process.exit(0);
});

setInterval(() => {
	if (deadline > 0n && process.hrtime.bigint() > deadline) killAll("the lease ran out");
}, 50);
