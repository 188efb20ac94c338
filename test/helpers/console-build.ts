import { execFileSync } from "node:child_process";
import { mkdirSync, mkdtempSync, readdirSync, renameSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join, resolve } from "node:path";

/**
 * Builds the console from this tree into dist/console (what the gateway serves and the package
 * ships) without ever leaving it empty or half-written: vite builds into a folder of its own, then
 * each file is renamed into place (atomic), so two test files building at once both serve whole
 * files, and a file the build no longer makes is removed last.
 */
export function buildConsole(): void {
	const root = resolve(import.meta.dirname, "../..");
	const target = join(root, "dist/console");
	const out = mkdtempSync(join(tmpdir(), "pi-gateway-console-build-"));
	try {
		execFileSync(
			process.execPath,
			[join(root, "node_modules/vite/bin/vite.js"), "build", "-c", "console/vite.config.ts", "--outDir", out],
			{
				cwd: root,
				stdio: "pipe",
			},
		);
		mkdirSync(target, { recursive: true });
		const built = readdirSync(out);
		for (const file of built) {
			const staged = join(target, `.${file}.${process.pid}`);
			renameOrCopy(join(out, file), staged);
			renameSync(staged, join(target, file));
		}
		for (const file of readdirSync(target))
			if (!built.includes(file) && !file.startsWith(".")) rmSync(join(target, file), { force: true });
	} finally {
		rmSync(out, { recursive: true, force: true });
	}
}

/** /tmp may be another file system than the repository: rename when it can, else copy. */
function renameOrCopy(from: string, to: string) {
	try {
		renameSync(from, to);
	} catch {
		execFileSync("cp", [from, to]);
	}
}
