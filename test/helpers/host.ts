import { execFileSync } from "node:child_process";
import { createServer } from "node:net";

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
