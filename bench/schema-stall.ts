/**
 * Issue 41 item 3, "No request holds the event loop": one principal (bob) sends the worst output
 * schemas and tool parameters found (test/helpers/hostile-schemas.ts) in loops, and runs whose
 * schema is at the compile bound and whose answers are at the check bound (each answer fails at its
 * last value, so every run checks three times), while another principal (alice) lists her sessions.
 * Figures: alice's GET /v1/sessions latency in each phase, bob's requests, and the gateway's
 * RSS. Goals: p99 < 50 ms during, growth < 100 MB. Real pi, demo model. A control phase sends as
 * many requests refused at once, so what the schemas themselves cost shows beside what bob's
 * request rate costs.
 */
import { mkdtempSync, rmSync } from "node:fs";
import { loadavg, tmpdir } from "node:os";
import { join } from "node:path";
import { createKey } from "../src/http/auth/keys.ts";
import { compileOutputSchema, maxCheckSteps } from "../src/sessions/runs/run-output.ts";
import { hostileOutputSchemas, hostileToolParameters } from "../test/helpers/hostile-schemas.ts";
import { percentile, procStats, settledMemory, startGatewayProcess } from "./lib.ts";

type Answer = { status: number; body: any; ms: number };

function caller(url: string, secret: string) {
	return async (path: string, method = "GET", body?: unknown): Promise<Answer> => {
		const t0 = performance.now();
		const res = await fetch(url + path, {
			method,
			headers: {
				authorization: `Bearer ${secret}`,
				...(body === undefined ? {} : { "content-type": "application/json" }),
			},
			body: body === undefined ? undefined : JSON.stringify(body),
		});
		const text = await res.text();
		return { status: res.status, body: text ? JSON.parse(text) : undefined, ms: performance.now() - t0 };
	};
}

/** The largest schema of `shape(k)` under the compile bound: what compiles longest and is still accepted. */
function atCompileBound(shape: (k: number) => unknown): unknown {
	let k = 8;
	for (;;) {
		try {
			compileOutputSchema(shape(k * 2));
		} catch {
			break;
		}
		k *= 2;
	}
	for (let step = k / 2; step >= 1; step /= 2) {
		try {
			compileOutputSchema(shape(k + step));
			k += step;
		} catch {}
	}
	return shape(k);
}

/** Items that make a failing branch (an error object) per `{type: "null"}` before the last one passes. */
const errorHeavy = (k: number) => ({
	type: "array",
	items: { anyOf: [...Array.from({ length: k }, () => ({ type: "null" })), { type: "integer" }] },
});
const manyProperties = (k: number) => ({
	type: "object",
	properties: Object.fromEntries(Array.from({ length: k }, (_, i) => [`p${i}`, { type: "integer", minimum: 0 }])),
});

/** An answer just under the check bound for `schema`, failing at its last value (so every run repairs twice). */
function answerAtCheckBound(schema: unknown): string {
	const spec = compileOutputSchema(schema);
	const perItem = (spec.cost.atDepth[1] as number) + (spec.cost.perChar[1] as number);
	const n = Math.floor((maxCheckSteps - (spec.cost.atDepth[0] as number)) / perItem) - 1;
	return JSON.stringify([...Array.from({ length: n - 1 }, () => 0), "x"]);
}

const mb = (bytes: number) => Math.round(bytes / 2 ** 20);

type Phase = { name: string; requests: (() => Promise<Answer>)[]; runLoops: number; schemas: boolean };
const emptyTally = () => ({ refused: 0, other: 0, runs: 0, checks: 0, cpuSeconds: 0, wallSeconds: 0 });

/**
 * `seconds` per phase in `rounds` slices; `loops` of refused schemas, `runLoops` of runs. The smoke
 * pass gives alice one session instead of three and the gateway `--warm-pool 0` (`args`): each is
 * a pi start, and neither is what the table measures.
 */
export async function schemaStall(
	seconds: number,
	loops: number,
	runLoops: number,
	rounds: number,
	{ aliceSessions = 3, args = [] as string[] } = {},
): Promise<Record<string, string | number>[]> {
	const dir = mkdtempSync(join(tmpdir(), "pi-bench-schema-stall-"));
	const keysFile = join(dir, "keys.json");
	const aliceKey = createKey(keysFile, "alice", ["sessions:read", "sessions:write"]).secret;
	const bobKey = createKey(keysFile, "bob", ["sessions:read", "sessions:write"]).secret;
	const gateway = await startGatewayProcess(["--keys-file", keysFile, "--data-dir", join(dir, "data"), ...args]);
	const alice = caller(gateway.url, aliceKey);
	const bob = caller(gateway.url, bobKey);
	try {
		for (let i = 0; i < aliceSessions; i++) await alice("/v1/sessions", "POST", { name: `alice ${i}` });
		const bobSession = (await bob("/v1/sessions", "POST", { name: "bob" })).body.id as string;
		const runSessions: string[] = [];
		for (let i = 0; i < runLoops; i++)
			runSessions.push((await bob("/v1/sessions", "POST", { name: `bob runs ${i}` })).body.id as string);
		const heavy = atCompileBound(errorHeavy);
		const wide = atCompileBound(manyProperties);
		const runs: { schema: unknown; message: string; turns: number }[] = [
			{ schema: heavy, message: `echo: ${answerAtCheckBound(heavy)}`, turns: 3 },
			{ schema: wide, message: "echo: {}", turns: 1 },
		];

		const hostile = [
			...hostileOutputSchemas.map(
				([, outputSchema]) =>
					() =>
						bob(`/v1/sessions/${bobSession}/prompt`, "POST", { message: "echo: []", outputSchema }),
			),
			...hostileToolParameters.map(
				([, parameters]) =>
					() =>
						bob("/v1/sessions", "POST", { clientTools: [{ name: "lookup", description: "d", parameters }] }),
			),
		];
		// The control: as many requests, refused at once (an unknown type: ajv's meta-schema check).
		const cheap = [
			() => bob(`/v1/sessions/${bobSession}/prompt`, "POST", { message: "echo: []", outputSchema: { type: "strin" } }),
		];
		const phases: Phase[] = [
			{ name: "idle", requests: [], runLoops: 0, schemas: false },
			{
				name: `bob: ${loops} loops of a schema refused at once (control)`,
				requests: cheap,
				runLoops: 0,
				schemas: false,
			},
			{
				name: `bob: ${loops} loops of the worst schemas (all refused)`,
				requests: hostile,
				runLoops: 0,
				schemas: false,
			},
			{
				name: `bob: the same + ${runLoops} loops of as many runs, no schema (control)`,
				requests: hostile,
				runLoops,
				schemas: false,
			},
			{
				name: `bob: the same + ${runLoops} loops of runs at the compile and check bounds`,
				requests: hostile,
				runLoops,
				schemas: true,
			},
		];
		const tallies = phases.map(() => ({ ...emptyTally(), latencies: [] as number[], load: "" }));
		let peak = 0;

		/** alice lists her sessions every 10 ms for `ms` while bob does what `phase` says. */
		const slice = async (phase: Phase, tally: (typeof tallies)[number], ms: number) => {
			const cpu0 = procStats(gateway.pid).cpuSeconds;
			const t0 = performance.now();
			let going = true;
			const lister = async () => {
				while (going) {
					const { status, body, ms } = await alice("/v1/sessions");
					if (status !== 200 || body.sessions.length !== aliceSessions) throw new Error(`alice's list: ${status}`);
					tally.latencies.push(ms);
					peak = Math.max(peak, procStats(gateway.pid).rssBytes);
					await new Promise((r) => setTimeout(r, 10));
				}
			};
			const refusing = async (offset: number) => {
				for (let i = offset; going; i++) {
					const { status } = await (phase.requests[i % phase.requests.length] as () => Promise<Answer>)();
					if (status === 400) tally.refused++;
					else tally.other++;
				}
			};
			const running = async (session: string, offset: number) => {
				for (let i = offset; going; i++) {
					const { schema, message, turns } = runs[i % runs.length] as (typeof runs)[number];
					// The control: as many model turns (a run with repairs is three), no schema.
					for (let turn = 0; turn < (phase.schemas ? 1 : turns); turn++) {
						const { status, body } = await bob(`/v1/sessions/${session}/prompt?wait=60`, "POST", {
							message,
							...(phase.schemas ? { outputSchema: schema } : {}),
						});
						if (status !== 200) throw new Error(`bob's run: ${status} ${JSON.stringify(body)}`);
						tally.runs++;
						tally.checks += phase.schemas ? (body.outputError?.attempts ?? 1) : 0;
					}
				}
			};
			const all = [
				lister(),
				...(phase.requests.length > 0 ? Array.from({ length: loops }, (_, i) => refusing(i)) : []),
				...runSessions.slice(0, phase.runLoops).map((s, i) => running(s, i)),
			];
			await new Promise((r) => setTimeout(r, ms));
			going = false;
			await Promise.all(all);
			tally.cpuSeconds += procStats(gateway.pid).cpuSeconds - cpu0;
			tally.wallSeconds += (performance.now() - t0) / 1000;
			tally.load = loadavg()
				.map((l) => l.toFixed(2))
				.join(" ");
		};

		const before = await settledMemory(gateway);
		peak = before.rssBytes;
		// Once each first: the figures are of a gateway whose code has run (V8 compiles it on first use).
		for (const request of [...cheap, ...hostile]) await request();
		for (const { schema, message } of runs)
			await bob(`/v1/sessions/${runSessions[0]}/prompt?wait=60`, "POST", { message, outputSchema: schema });
		// The phases take turns, so the machine's other load falls on all of them alike.
		for (let round = 0; round < rounds; round++)
			for (const [i, phase] of phases.entries())
				await slice(phase, tallies[i] as (typeof tallies)[number], (seconds * 1000) / rounds);
		// What stays once bob's sessions are gone: their event logs (16 MiB each at most, the schema in
		// every instruction) are the sessions', not the schemas'.
		for (const id of [bobSession, ...runSessions]) await bob(`/v1/sessions/${id}?purge=true`, "DELETE");
		const after = await settledMemory(gateway);
		const rows: Record<string, string | number>[] = phases.map((phase, i) => {
			const t = tallies[i] as (typeof tallies)[number];
			t.latencies.sort((x, y) => x - y);
			const bobs =
				phase.requests.length === 0
					? "none"
					: `${t.refused} × 400, ${t.other} other${phase.runLoops ? `; ${t.runs} runs, ${t.checks} checks` : ""}`;
			return {
				phase: phase.name,
				"alice's GETs": t.latencies.length,
				"p50 ms": percentile(t.latencies, 50),
				"p99 ms": percentile(t.latencies, 99),
				"max ms": t.latencies.at(-1) ?? Number.NaN,
				"bob's requests": bobs,
				"gateway CPU %": Math.round((100 * t.cpuSeconds) / t.wallSeconds),
				"load average (last slice)": t.load,
			};
		});
		rows.push({
			phase: "gateway memory",
			"bob's requests": `RSS peak +${mb(peak - before.rssBytes)} MB; after bob's sessions are deleted and a full GC +${mb(after.rssBytes - before.rssBytes)} MB; heap used ${mb(before.heapBytes)} → ${mb(after.heapBytes)} MB`,
		});
		return rows;
	} finally {
		await gateway.stop();
		rmSync(dir, { recursive: true, force: true });
	}
}
