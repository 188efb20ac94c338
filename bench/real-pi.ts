import {
	api,
	auth,
	countPrompt,
	type GatewayProcess,
	now,
	openSse,
	percentile,
	procStats,
	readPipe,
	readSse,
	settledMemory,
	smokeRun,
	spawnDemoPi,
} from "./lib.ts";

const ms = (ns: bigint) => Number(ns) / 1e6;

/** Waits (at most `ms`) until the gateway's warm pool holds a ready pi, as its /metrics says. */
async function poolReady(gateway: GatewayProcess, ms: number): Promise<void> {
	for (const deadline = Date.now() + ms; Date.now() < deadline; ) {
		const text = await (await fetch(`${gateway.url}/metrics`, { headers: auth })).text();
		if (Number(/^pi_gateway_warm_pool_size (\d+)/m.exec(text)?.[1] ?? 0) > 0) return;
		// Each poll is a /metrics the gateway renders (≈ 4 ms of a core): a smoke pass polls less often.
		await new Promise((r) => setTimeout(r, smokeRun ? 100 : 50));
	}
}

export async function sessionStart(gateway: GatewayProcess, samples: number, label = "cold", pauseMs = 0) {
	const starts: number[] = [];
	const firsts: number[] = [];
	for (let i = 0; i < samples; i++) {
		// A pause lets a warm pool refill between samples (its processes take pi's cold start); on a
		// loaded machine that takes longer, so the sample waits until the pool says it holds one.
		await new Promise((r) => setTimeout(r, pauseMs));
		if (pauseMs > 0) await poolReady(gateway, 30_000);
		const t0 = now();
		// An empty body: the default options, which a warm pool serves.
		const session = await api(`${gateway.url}/v1/sessions`, "POST", {});
		starts.push(ms(now() - t0));
		firsts.push((await countPrompt(gateway, session.id)).firstDeltaMs);
		await api(`${gateway.url}/v1/sessions/${session.id}`, "DELETE");
	}
	starts.sort((a, b) => a - b);
	firsts.sort((a, b) => a - b);
	return {
		start: label,
		samples,
		"POST /v1/sessions p50 ms": percentile(starts, 50),
		"p99 ms": percentile(starts, 99),
		"prompt → first text_delta p50 ms": percentile(firsts, 50),
	};
}

export async function scale(gateway: GatewayProcess, sessions: number) {
	const before = await settledMemory(gateway);
	const cpuBefore = procStats(gateway.pid).cpuSeconds;
	const t0 = now();
	const ids: string[] = await Promise.all(
		Array.from(
			{ length: sessions },
			async () => (await api(`${gateway.url}/v1/sessions`, "POST", { persist: false })).id,
		),
	);
	const started = ms(now() - t0);
	const idle = await settledMemory(gateway);
	const runs = await Promise.all(
		ids.map((id) =>
			api(`${gateway.url}/v1/sessions/${id}/prompt?wait=true`, "POST", { message: "count: 200" }).then(
				(r) => r.text.length,
			),
		),
	);
	const total = ms(now() - t0);
	const after = procStats(gateway.pid);
	await Promise.all(ids.map((id) => api(`${gateway.url}/v1/sessions/${id}`, "DELETE")));
	return {
		sessions,
		"all started s": started / 1000,
		"all prompts settled s": total / 1000,
		replies: runs.filter((n) => n > 0).length,
		"gateway CPU s": after.cpuSeconds - cpuBefore,
		"gateway RSS MB (idle sessions)": idle.rssBytes / 2 ** 20,
		"RSS per idle session KB": (idle.rssBytes - before.rssBytes) / sessions / 1024,
		"JS heap per idle session KB": (idle.heapBytes - before.heapBytes) / sessions / 1024,
		"gateway RSS MB (after runs)": after.rssBytes / 2 ** 20,
	};
}

/** pi read directly from its pipe, as a client without the gateway would. */
async function directRun(deltas: number) {
	const child = spawnDemoPi();
	const ready = readPipe(child, (r) => r.type === "response");
	child.stdin?.write(`${JSON.stringify({ id: "0", type: "get_state" })}\n`);
	await ready;
	const t0 = now();
	let text = "";
	const done = readPipe(child, (r) => {
		if (r.type === "message_update" && r.assistantMessageEvent?.type === "text_delta")
			text += r.assistantMessageEvent.delta;
		return r.type === "agent_settled";
	});
	child.stdin?.write(`${JSON.stringify({ id: "1", type: "prompt", message: `count: ${deltas}` })}\n`);
	const bytes = await done;
	const elapsed = ms(now() - t0);
	child.stdin?.end();
	await new Promise((r) => child.once("exit", r));
	return { bytes, elapsed, text };
}

async function gatewayRun(gateway: GatewayProcess, deltas: number) {
	const session = await api(`${gateway.url}/v1/sessions`, "POST", { persist: false });
	const t0 = now();
	let text = "";
	const res = await openSse(`${gateway.url}/v1/sessions/${session.id}/prompt`, {
		method: "POST",
		body: { message: `count: ${deltas}` },
	});
	const bytes = await readSse(res, (event, data) => {
		if (event === "message_update") {
			const update = JSON.parse(data).assistantMessageEvent;
			if (update.type === "text_delta") text += update.delta;
		}
		return event === "agent_settled";
	});
	const elapsed = ms(now() - t0);
	await api(`${gateway.url}/v1/sessions/${session.id}`, "DELETE");
	return { bytes, elapsed, text };
}

export async function fullRun(gateway: GatewayProcess, deltas: number) {
	const direct = await directRun(deltas);
	const viaGateway = await gatewayRun(gateway, deltas);
	if (direct.text !== viaGateway.text) throw new Error("the gateway delivered a different text than pi printed");
	return [
		{ path: "direct pipe", deltas, "bytes on the wire": direct.bytes, "time ms": direct.elapsed },
		{ path: "gateway SSE", deltas, "bytes on the wire": viaGateway.bytes, "time ms": viaGateway.elapsed },
		{
			path: "gateway / pipe",
			deltas,
			"bytes on the wire": (viaGateway.bytes / direct.bytes).toFixed(3),
			"time ms": (viaGateway.elapsed / direct.elapsed).toFixed(3),
		},
	];
}
