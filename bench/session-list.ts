/**
 * GET /v1/sessions on one gateway (SQLite) holding N stopped sessions: a real session's record
 * (real pi, one settled run) cloned N times into gateway.db, then a gateway started on it (they
 * come back `stopped`). Times the call without a limit (what it answers: its first page) and a
 * walk over every page at limit 500; bytes are the JSON bodies'.
 */
import { mkdtempSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { DatabaseSync } from "node:sqlite";
import { api, now, percentile, startGatewayProcess } from "./lib.ts";

const ms = (ns: bigint) => Number(ns) / 1e6;

async function timed(url: string): Promise<{ body: any; ms: number; bytes: number }> {
	const t0 = now();
	const body = await api(url, "GET");
	return { body, ms: ms(now() - t0), bytes: Buffer.byteLength(JSON.stringify(body)) };
}

/** `extra`: more gateway flags (the smoke pass: `--warm-pool 0`, a pool here is pi started for nothing). */
export async function sessionList(
	count: number,
	lists: number,
	extra: string[] = [],
): Promise<Record<string, string | number>[]> {
	const dataDir = mkdtempSync(join(tmpdir(), "pi-bench-list-"));
	const args = ["--data-dir", dataDir, "--max-sessions", String(count + 10), ...extra];
	const seed = await startGatewayProcess(args);
	try {
		const { id } = await api(`${seed.url}/v1/sessions`, "POST", { name: "seed" });
		await api(`${seed.url}/v1/sessions/${id}/prompt?wait=true`, "POST", { message: "echo: seed" });
	} finally {
		await seed.stop();
	}
	const db = new DatabaseSync(join(dataDir, "gateway.db"));
	const [row] = db.prepare("SELECT record FROM sessions").all() as { record: string }[];
	const model = JSON.parse(row?.record as string);
	const insert = db.prepare("INSERT INTO sessions (id, record) VALUES (?, ?)");
	db.exec("BEGIN");
	for (let i = 0; i < count - 1; i++) {
		const clone = `ses_bench${String(i).padStart(7, "0")}`;
		const createdAt = new Date(Date.parse(model.createdAt) - (count - i) * 1000).toISOString();
		insert.run(clone, JSON.stringify({ ...model, id: clone, name: `bench ${i}`, createdAt }));
	}
	db.exec("COMMIT");
	db.close();

	const gateway = await startGatewayProcess(args);
	try {
		const firsts: number[] = [];
		let bytes = 0;
		for (let i = -2; i < lists; i++) {
			const res = await timed(`${gateway.url}/v1/sessions`);
			if (res.body.sessions.length !== Math.min(count, 100))
				throw new Error(`GET /v1/sessions: ${res.body.sessions.length} sessions`);
			if (i >= 0) firsts.push(res.ms);
			bytes = res.bytes;
		}
		firsts.sort((a, b) => a - b);
		let cursor: string | null = null;
		let walkMs = 0;
		let walkBytes = 0;
		let seen = 0;
		do {
			const res = await timed(`${gateway.url}/v1/sessions?limit=500${cursor ? `&cursor=${cursor}` : ""}`);
			walkMs += res.ms;
			walkBytes += res.bytes;
			seen += res.body.sessions.length;
			cursor = res.body.nextCursor;
		} while (cursor);
		if (seen !== count) throw new Error(`every page: ${seen} sessions of ${count}`);
		return [
			{
				"sessions (stopped)": count,
				"GET /v1/sessions (first page) p50 ms": percentile(firsts, 50),
				"p99 ms": percentile(firsts, 99),
				"body KB": bytes / 1024,
				"every page (limit 500) ms": walkMs,
				"every page KB": walkBytes / 1024,
			},
		];
	} finally {
		await gateway.stop();
	}
}
