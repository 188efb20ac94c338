import { mkdirSync, mkdtempSync, realpathSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, describe, expect, it } from "vitest";
import { parseConfig } from "../../src/config.ts";
import { sandboxArgs } from "../../src/sessions/sandbox.ts";

// bwrap applies mounts in order, each from the host's tree: hides must come before what is put
// back below them, however the folders nest.
const root = realpathSync(mkdtempSync(join(tmpdir(), "pi-gateway-bwrap-args-")));
afterAll(() => rmSync(root, { recursive: true, force: true }));

/** The mount operations as [flag, path] pairs, in order. */
function mounts(args: string[]): string[][] {
	const out: string[][] = [];
	for (let i = 0; i < args.length; i++) {
		const flag = args[i] as string;
		if (flag === "--tmpfs") out.push([flag, args[++i] as string]);
		// The session's folder comes by descriptor (3), never by a path bwrap would resolve again.
		else if (flag === "--bind-fd") out.push([`${flag} ${args[++i]}`, args[++i] as string]);
		else if (flag === "--bind" || flag === "--ro-bind") {
			const [src, dest] = [args[++i], args[++i]];
			out.push(src === "/" ? [flag, "/"] : src === "/dev/null" ? ["null", dest as string] : [flag, dest as string]);
		}
	}
	return out;
}

describe("sandboxArgs", () => {
	it("the session in the root, the data dir beside it: both hidden, the folder bound from its descriptor", () => {
		// A data dir inside the root is refused at start (layout-check.ts); beside it is the layout.
		const ws = join(root, "ws");
		const data = join(root, "data");
		mkdirSync(ws, { recursive: true });
		mkdirSync(join(data, "pi-sessions"), { recursive: true });
		writeFileSync(join(data, "token"), "t".repeat(20));
		const config = parseConfig({ workspaceRoot: ws, dataDir: data, tokenFile: join(data, "token") });
		const args = sandboxArgs(config, {
			cwd: ws,
			sessionDir: join(data, "pi-sessions"),
			readable: [],
			env: { PI_CODING_AGENT_DIR: join(root, "agent") },
		});
		// No privilege left to undo the mounts, as root too (issue 20: bwrap as root keeps every capability).
		expect(args.slice(0, 7)).toEqual([
			"--die-with-parent",
			"--unshare-pid",
			"--unshare-user",
			"--disable-userns",
			"--cap-drop",
			"ALL",
			"--new-session",
		]);
		expect(mounts(args)).toEqual([
			["--ro-bind", "/"],
			["--tmpfs", "/tmp"],
			["--tmpfs", data],
			["--bind-fd 3", ws],
			["--bind", join(root, "agent")],
			["--bind", join(data, "pi-sessions")],
			["null", join(data, "token")],
		]);
		expect(args.slice(-3)).toEqual(["--chdir", ws, "--"]);
	});

	it("a session in a sub-folder: the root is hidden, the sub-folder and the files pi runs put back", () => {
		const ws = join(root, "ws2");
		mkdirSync(join(ws, "a"), { recursive: true });
		mkdirSync(join(ws, "ext"), { recursive: true });
		writeFileSync(join(ws, "ext", "gate.ts"), "");
		const config = parseConfig({ workspaceRoot: ws, dataDir: join(root, "data2") });
		const args = sandboxArgs(config, {
			cwd: join(ws, "a"),
			readable: [join(ws, "ext", "gate.ts"), join(ws, "a", "inside-cwd.ts"), "/usr/bin/env"],
			env: { PI_CODING_AGENT_DIR: join(root, "agent") },
		});
		expect(mounts(args)).toEqual([
			["--ro-bind", "/"],
			["--tmpfs", "/tmp"],
			["--tmpfs", ws],
			["--bind", join(root, "agent")],
			["--bind-fd 3", join(ws, "a")],
			["--ro-bind", join(ws, "ext", "gate.ts")],
		]);
	});
});
