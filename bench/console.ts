import { execFileSync } from "node:child_process";
import { mkdtempSync, readdirSync, readFileSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join, resolve } from "node:path";
import { gzipSync } from "node:zlib";
import { firstLoadBudgetBytes } from "../console/budget.ts";

const root = resolve(import.meta.dirname, "..");

/**
 * The console's first load on a phone: each file `GET /console/` fetches (the page, its one script,
 * its one stylesheet; nothing else), raw and gzipped, against the budget test/unit/console-api.test.ts
 * enforces. Built fresh into a temporary folder, as `npm run build` builds dist/console.
 */
export function consoleFirstLoad(): Record<string, string | number>[] {
	const out = mkdtempSync(join(tmpdir(), "pi-bench-console-"));
	try {
		execFileSync(
			process.execPath,
			[
				join(root, "node_modules/vite/bin/vite.js"),
				"build",
				"-c",
				join(root, "console/vite.config.ts"),
				"--outDir",
				out,
			],
			{ stdio: "pipe" },
		);
		const rows = readdirSync(out)
			.sort()
			.map((file) => {
				const bytes = readFileSync(join(out, file));
				return { file, bytes: bytes.length, gzipped: gzipSync(bytes, { level: 9 }).length };
			});
		const total = { bytes: 0, gzipped: 0 };
		for (const r of rows) {
			total.bytes += r.bytes;
			total.gzipped += r.gzipped;
		}
		return [
			...rows.map((r) => ({ ...r, "KB gzipped": (r.gzipped / 1024).toFixed(1) })),
			{
				file: `total (budget ${firstLoadBudgetBytes / 1024} KB gzipped)`,
				bytes: total.bytes,
				gzipped: total.gzipped,
				"KB gzipped": (total.gzipped / 1024).toFixed(1),
			},
		];
	} finally {
		rmSync(out, { recursive: true, force: true });
	}
}
