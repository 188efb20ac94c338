#!/usr/bin/env node
// A stand-in for `pi --mode rpc` that emits timestamped events on demand, for benchmarks.
// Each event carries `t`: process.hrtime.bigint() (CLOCK_MONOTONIC, comparable across
// processes on one machine) as a decimal string, so a reader can measure delivery latency.
//   {"type":"emit","count":N,"rate":R,"size":B}  N events of ~B bytes at R events/s
//                                                (rate 0: as fast as the pipe takes them;
//                                                paced, the events due are sent on a timer)
// The command is answered at once; the last event is {"type":"agent_settled"}.
const send = (line) => process.stdout.write(line);
let buffer = "";

function padFor(size) {
	return "x".repeat(Math.max(0, size - 90));
}

async function emit({ count, rate, size }) {
	const pad = padFor(size);
	const started = process.hrtime.bigint();
	let i = 0;
	const one = () =>
		`{"type":"message_update","assistantMessageEvent":{"type":"text_delta","delta":"${pad}"},"i":${i++},"t":"${process.hrtime.bigint()}"}\n`;
	while (i < count) {
		if (rate > 0) {
			const due = Math.min(count, Math.floor((Number(process.hrtime.bigint() - started) / 1e9) * rate) + 1);
			while (i < due) send(one());
			// Asleep until the next event is due, as pi is between tokens. (It used to spin on
			// setImmediate, which held one of this machine's two cores for the whole run and put the
			// gateway and the client behind each other: most of the old p99, see BENCHMARKS.md.)
			const nextAt = (i / rate) * 1e9 - Number(process.hrtime.bigint() - started);
			await new Promise((r) => setTimeout(r, Math.max(0, nextAt / 1e6)));
		} else {
			let ok = true;
			while (i < count && ok) ok = send(one());
			if (!ok) await new Promise((r) => process.stdout.once("drain", r));
		}
	}
	send(`{"type":"agent_settled","aborted":false,"t":"${process.hrtime.bigint()}"}\n`);
}

process.stdin.setEncoding("utf8");
process.stdin.on("data", (chunk) => {
	buffer += chunk;
	for (let lf = buffer.indexOf("\n"); lf !== -1; lf = buffer.indexOf("\n")) {
		const cmd = JSON.parse(buffer.slice(0, lf));
		buffer = buffer.slice(lf + 1);
		if (cmd.type === "emit") {
			send(`${JSON.stringify({ id: cmd.id, type: "response", command: "emit", success: true })}\n`);
			emit(cmd);
		} else {
			const data = cmd.type === "get_state" ? { sessionId: "bench", thinkingLevel: "off" } : null;
			send(`${JSON.stringify({ id: cmd.id, type: "response", command: cmd.type, success: true, data })}\n`);
		}
	}
});
process.stdin.on("end", () => process.exit(0));
