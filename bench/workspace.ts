/**
 * What a workspace snapshot costs (src/workspace/snapshots.ts: `git add -A` into a shadow index
 * under the data dir, then `git write-tree`) on a folder of N files of about 1 KiB in 100 folders:
 * the first snapshot (every file hashed and stored), an unchanged one (what each prompt pays:
 * a stat per file), one after 10 files changed, the diff of those 10, and the shadow repository's
 * size on disk. Run alone with `node bench/workspace.ts [--smoke]`, or as part of bench/run.ts.
 */
import { execFileSync } from "node:child_process";
import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { changesBetween } from "../src/workspace/changes.ts";
import { Snapshots } from "../src/workspace/snapshots.ts";

const ms = (since: bigint) => Number(process.hrtime.bigint() - since) / 1e6;
const median = (values: number[]) => [...values].sort((a, b) => a - b)[Math.floor(values.length / 2)] as number;

export async function snapshotCost(files: number, repeats = 5): Promise<Record<string, string | number>[]> {
	const base = mkdtempSync(join(tmpdir(), "pi-bench-ws-"));
	const work = join(base, "folder");
	try {
		for (let i = 0; i < files; i++) {
			const dir = join(work, `dir${i % 100}`);
			if (i < 100) mkdirSync(dir, { recursive: true });
			writeFileSync(join(dir, `file${i}.txt`), `${`line ${i} `.repeat(100)}\n`);
		}
		const snaps = new Snapshots(join(base, "shadow"), work, 600_000);
		let at = process.hrtime.bigint();
		const first = await snaps.snapshot();
		const cold = ms(at);
		const warm: number[] = [];
		for (let i = 0; i < repeats; i++) {
			at = process.hrtime.bigint();
			await snaps.snapshot();
			warm.push(ms(at));
		}
		for (let i = 0; i < 10; i++) writeFileSync(join(work, `dir${i}`, `file${i}.txt`), `changed ${i}\n`);
		at = process.hrtime.bigint();
		const second = await snaps.snapshot();
		const changed = ms(at);
		at = process.hrtime.bigint();
		const diff = await changesBetween(snaps.repo, first, second, {
			maxFiles: 500,
			maxDiffBytes: 256 * 1024,
			maxTotalBytes: 4 * 1024 * 1024,
			timeoutMs: 600_000,
		});
		const diffMs = ms(at);
		if (diff.files.length !== 10) throw new Error(`expected 10 changed files, got ${diff.files.length}`);
		const disk = execFileSync("du", ["-sk", join(base, "shadow")], { encoding: "utf8" }).split("\t")[0];
		return [
			{
				files,
				"first snapshot (ms)": Math.round(cold),
				"unchanged snapshot, median of 5 (ms)": Math.round(median(warm)),
				"after 10 changed (ms)": Math.round(changed),
				"diff of the 10 (ms)": Math.round(diffMs),
				"shadow repo on disk (KiB)": Number(disk),
			},
		];
	} finally {
		rmSync(base, { recursive: true, force: true });
	}
}

if (import.meta.url === `file://${process.argv[1]}`) {
	const { table } = await import("./lib.ts");
	const smoke = process.argv.includes("--smoke");
	console.log(
		table(
			"7. Workspace snapshot (shadow git repository) of a folder of N files",
			await snapshotCost(smoke ? 500 : 10_000),
		),
	);
}
