import { execFileSync } from "node:child_process";
import { existsSync, mkdirSync, readdirSync, symlinkSync } from "node:fs";
import { createServer } from "node:net";
import { dirname, join } from "node:path";

/** Whether `command` is on PATH (a test of a third-party tool skips, naming it, where it is not). */
export function hasCommand(command: string): boolean {
	try {
		execFileSync("sh", ["-c", 'command -v "$1"', "sh", command], { stdio: "ignore" });
		return true;
	} catch {
		return false;
	}
}

/** A loopback port free a moment ago, for a tool that must be told its port (it cannot take 0). */
export function freePort(): Promise<number> {
	return new Promise((resolve, reject) => {
		const server = createServer();
		server.once("error", reject);
		server.listen(0, "127.0.0.1", () => {
			const { port } = server.address() as { port: number };
			server.close(() => resolve(port));
		});
	});
}

/**
 * A PATH for a child that sees this machine without `missing` (say bwrap): a folder of links to
 * every command on the current PATH but those, plus Node's own folder first. What a fresh machine
 * without those packages looks like to the gateway, with no package removed from this one.
 */
export function bareMachinePath(folder: string, missing: string[]): string {
	mkdirSync(folder, { recursive: true });
	const linked = new Set(missing);
	for (const dir of [dirname(process.execPath), ...(process.env.PATH ?? "").split(":")]) {
		if (!dir || !existsSync(dir)) continue;
		for (const name of readdirSync(dir)) {
			if (linked.has(name)) continue;
			linked.add(name);
			symlinkSync(join(dir, name), join(folder, name));
		}
	}
	return folder;
}

/**
 * A bwrap that runs but does not hold: the real one (`realBwrap`), minus the flags that take
 * privilege away (--cap-drop, --unshare-user, --disable-userns), as a shell script's body. What
 * bwrap was for root before issue 20; the start-up probe and set-up must call it unavailable.
 */
export function weakBwrapScript(realBwrap: string): string {
	return `skip=0
for a do
	shift
	if [ $skip = 1 ]; then skip=0; continue; fi
	case "$a" in --cap-drop) skip=1; continue;; --unshare-user|--disable-userns) continue;; esac
	set -- "$@" "$a"
done
exec ${realBwrap} "$@"`;
}
