import { type ChildProcess, spawn, spawnSync } from "node:child_process";
import {
	chmodSync,
	chownSync,
	copyFileSync,
	mkdirSync,
	mkdtempSync,
	readFileSync,
	rmSync,
	writeFileSync,
} from "node:fs";
import { tmpdir } from "node:os";
import { join, resolve } from "node:path";
import { createKey } from "../../src/http/auth/keys.ts";
import { specCheckedApi } from "./gateway.ts";

const repo = resolve(import.meta.dirname, "../..");
const nobody = 65534;

/**
 * Why the gateway cannot be run as `nobody` here, or undefined when it can: this process must be
 * root (to switch user) with setpriv installed, and the checkout must be readable by others.
 */
export function cannotRunAsNobody(): string | undefined {
	if (process.getuid?.() !== 0) return "this test process is not root, so it cannot switch to nobody";
	if (spawnSync("sh", ["-c", "command -v setpriv"]).status !== 0) return "setpriv not installed";
	const probe = spawnSync("setpriv", [
		`--reuid=${nobody}`,
		`--regid=${nobody}`,
		"--clear-groups",
		"cat",
		join(repo, "package.json"),
	]);
	if (probe.status !== 0) return `the checkout ${repo} is not readable by nobody`;
	return undefined;
}

export interface GatewayAsNobody {
	url: string;
	pid: number;
	token: string;
	/** The node binary nobody runs (a copy: root's cache folder is mode 700). */
	node: string;
	root: string;
	workspace: string;
	dataDir: string;
	tokenFile: string;
	keysFile: string;
	api: ReturnType<typeof specCheckedApi>;
	stop(): Promise<void>;
}

/**
 * `node src/main.ts` as nobody (setpriv), on 127.0.0.1:0 with the sandbox on, in a folder of
 * nobody's own: a data dir, a keys file, and in `layout`
 * - `default` (README's): nothing more; the workspace root is <data-dir>/workspaces and the token
 *   is generated in <data-dir>/token;
 * - `shared-root`: a --workspace-root folder beside the data dir and a --token-file of its own.
 * Resolves once it listens.
 */
export async function startGatewayAsNobody(layout: "default" | "shared-root" = "default"): Promise<GatewayAsNobody> {
	const root = mkdtempSync(join(tmpdir(), "pi-gateway-nobody-"));
	chmodSync(root, 0o755);
	// Outside /tmp (which the sandbox hides): the attacker runs this node inside. pi itself runs
	// from the gateway's own sealed copy (sealed-node.ts), which puts nothing of this back.
	const bin = mkdtempSync("/var/tmp/pi-gateway-nobody-bin-");
	chmodSync(bin, 0o755);
	const node = join(bin, "node");
	copyFileSync(process.execPath, node);
	chmodSync(node, 0o755);
	const [dataDir, agentDir, secrets] = ["data", "agent", "secrets"].map((d) => join(root, d)) as [
		string,
		string,
		string,
	];
	const shared = layout === "shared-root";
	const workspace = shared ? join(root, "workspace") : join(dataDir, "workspaces");
	const tokenFile = shared ? join(secrets, "token") : join(dataDir, "token");
	const keysFile = join(secrets, "keys.json");
	// nobody's own cache folder, as a service user's home has one (the sealed node goes there).
	const cache = join(root, "cache");
	const made = [dataDir, agentDir, secrets, cache, ...(shared ? [workspace] : [])];
	for (const dir of made) mkdirSync(dir);
	createKey(keysFile, "mallory", ["sessions:read"]);
	if (shared) writeFileSync(tokenFile, `tok_nobody_${"k9".repeat(16)}\n`, { mode: 0o600 });
	for (const path of [...made, keysFile, ...(shared ? [tokenFile] : [])]) chownSync(path, nobody, nobody);
	const args = [
		...[`--reuid=${nobody}`, `--regid=${nobody}`, "--clear-groups", node, join(repo, "src/main.ts")],
		...["--host", "127.0.0.1", "--port", "0", "--sandbox", "on"],
		...(shared ? ["--workspace-root", workspace, "--token-file", tokenFile] : []),
		...["--data-dir", dataDir, "--keys-file", keysFile, "--pi-agent-dir", agentDir],
	];
	const child: ChildProcess = spawn("setpriv", args, {
		cwd: root,
		env: { PATH: `${bin}:/usr/local/bin:/usr/bin:/bin`, HOME: root, XDG_CACHE_HOME: cache, LANG: "C.UTF-8" },
		stdio: ["ignore", "pipe", "pipe"],
	});
	let stderr = "";
	child.stderr?.on("data", (chunk) => {
		stderr += chunk;
	});
	const url = await new Promise<string>((done, fail) => {
		let out = "";
		child.stdout?.on("data", (chunk) => {
			out += chunk;
			const line = out.split("\n").find((l) => l.includes("pi-gateway listening"));
			if (line) done(JSON.parse(line).url);
		});
		child.on("exit", (code) => fail(new Error(`gateway as nobody exited ${code}: ${stderr}`)));
	});
	const token = readFileSync(tokenFile, "utf8").trim();
	const withAuth = (init: RequestInit["headers"]) => {
		const headers = new Headers(init);
		if (!headers.has("authorization")) headers.set("authorization", `Bearer ${token}`);
		return headers;
	};
	return {
		url,
		pid: child.pid as number,
		token,
		node,
		root,
		workspace,
		dataDir,
		tokenFile,
		keysFile,
		api: specCheckedApi(url, withAuth),
		async stop() {
			if (child.exitCode === null) {
				const exited = new Promise((done) => child.once("exit", done));
				child.kill("SIGTERM");
				await exited;
			}
			rmSync(root, { recursive: true, force: true });
			rmSync(bin, { recursive: true, force: true });
		},
	};
}

/** The keys file's hashes, by key id: strings the attacker must never see. */
export function keyHashes(keysFile: string): Record<string, string> {
	const { keys } = JSON.parse(readFileSync(keysFile, "utf8")) as { keys: { hash: string; id: string }[] };
	return Object.fromEntries(keys.map((k) => [`key hash ${k.id}`, k.hash]));
}
