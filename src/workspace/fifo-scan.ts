import { spawnConfined } from "./confined.ts";
import type { GitRepo } from "./git.ts";

/** FIFOs covered at most; past it the snapshot goes on without covers (and may meet its deadline). */
const maxCovered = 1000;

/**
 * The FIFOs among the files git reads for itself in the agent's folder (`.gitattributes`,
 * `.gitignore`, any `.git*`): git opens them and waits for a writer that never comes, so each
 * snapshot ran to its deadline and each prompt waited for it. Found by `find`, which never opens
 * them, confined like git; "/"-separated paths relative to the folder, for Tool.covered. Only run
 * after a snapshot met its deadline: a folder without such traps pays nothing.
 */
export function gitFifos(repo: GitRepo, timeoutMs: number): Promise<string[]> {
	return new Promise((resolve) => {
		const found: string[] = [];
		let rest = "";
		let child: ReturnType<typeof spawnConfined>;
		try {
			child = spawnConfined(repo.confine, {
				command: "find",
				args: [".", "-name", ".git*", "-type", "p", "-print0"],
				folder: repo.workTree,
				env: { PATH: process.env.PATH ?? "/usr/bin:/bin", LC_ALL: "C" },
			});
		} catch {
			resolve([]);
			return;
		}
		const timer = setTimeout(() => child.kill("SIGKILL"), timeoutMs);
		child.stdout.on("data", (chunk: Buffer) => {
			const names = (rest + chunk.toString("utf8")).split("\0");
			rest = names.pop() ?? "";
			for (const name of names) if (found.length < maxCovered) found.push(name.replace(/^\.\//, ""));
			if (found.length >= maxCovered) child.kill("SIGKILL");
		});
		child.stderr.resume();
		child.once("error", () => {});
		child.once("close", () => {
			clearTimeout(timer);
			resolve(found.filter((name) => name !== "" && name !== "."));
		});
	});
}
