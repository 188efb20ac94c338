import { execFileSync } from "node:child_process";
import { mkdtempSync, readdirSync, readFileSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join, resolve } from "node:path";
import { gzipSync } from "node:zlib";
import { firstLoadBudgetBytes } from "../console/budget.ts";

const root = resolve(import.meta.dirname, "..");

/**
 * The console's first load on a phone: each file `GET /console/` fetches (the page, its one script,
 * its one stylesheet), raw and gzipped, against the budget test/unit/console-api.test.ts enforces;
 * then the lazy chunks (console-*.js: the changes review), fetched only by the view that needs them
 * and not in the total. Built fresh into a temporary folder, as `npm run build` builds dist/console.
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
		// The files as built, each with the .br the gateway sends a browser that takes brotli (scripts/console-assets.ts).
		const rows = readdirSync(out)
			.filter((file) => !/\.(br|gz)$/.test(file))
			.sort()
			.map((file) => {
				const bytes = readFileSync(join(out, file));
				const brotli = readFileSync(join(out, `${file}.br`)).length;
				return { file, bytes: bytes.length, gzipped: gzipSync(bytes, { level: 9 }).length, brotli };
			});
		const lazy = (file: string) => /^console-.+\.js$/.test(file);
		const total = { bytes: 0, gzipped: 0, brotli: 0 };
		for (const r of rows.filter((r) => !lazy(r.file))) {
			total.bytes += r.bytes;
			total.gzipped += r.gzipped;
			total.brotli += r.brotli;
		}
		const row = (r: (typeof rows)[number]) => ({ ...r, "KB gzipped": (r.gzipped / 1024).toFixed(1) });
		return [
			...rows.filter((r) => !lazy(r.file)).map(row),
			{
				file: `first load (budget ${firstLoadBudgetBytes / 1024} KB gzipped)`,
				bytes: total.bytes,
				gzipped: total.gzipped,
				brotli: total.brotli,
				"KB gzipped": (total.gzipped / 1024).toFixed(1),
			},
			...rows.filter((r) => lazy(r.file)).map((r) => row({ ...r, file: `${r.file} (lazy, not in the first load)` })),
		];
	} finally {
		rmSync(out, { recursive: true, force: true });
	}
}
