/**
 * The peers of the peer benchmark (bench/peers.ts), installed from the npm registry into a cache
 * folder of their own (~/.cache/pi-gateway/peers, or $PI_GATEWAY_PEERS_DIR), never into the
 * package's dependencies: opencode-ai (opencode's server, one binary), sandbox-agent (its server
 * binary comes with @sandbox-agent/cli) and pi-acp, which sandbox-agent runs to drive pi.
 *
 * The versions are pinned; the install runs once (a stamp file records what was installed) and is
 * the only thing the benchmark fetches from the network. npm runs no install scripts here: the
 * binaries come in the platform packages and are found there.
 */
import { execFile } from "node:child_process";
import { chmodSync, existsSync, mkdirSync, readFileSync, writeFileSync } from "node:fs";
import { homedir } from "node:os";
import { join } from "node:path";

export const peerVersions = { "opencode-ai": "1.18.33", "sandbox-agent": "0.4.2", "pi-acp": "0.0.34" } as const;

export interface PeerInstall {
	dir: string;
	/** opencode's server binary, or why there is none. */
	opencode: string | { missing: string };
	/** sandbox-agent's server binary, or why there is none. */
	sandboxAgent: string | { missing: string };
	/** pi-acp's entry point (a node script), or why there is none. */
	piAcp: string | { missing: string };
}

export const peersDir = () => process.env.PI_GATEWAY_PEERS_DIR ?? join(homedir(), ".cache", "pi-gateway", "peers");

const arch = () => (process.arch === "arm64" ? "arm64" : "x64");

/** opencode's own postinstall picks the baseline build on an x64 CPU without AVX2; so do we. */
function opencodePackage(): string {
	if (arch() === "arm64") return "opencode-linux-arm64";
	let avx2 = false;
	try {
		avx2 = /(^|\s)avx2(\s|$)/m.test(readFileSync("/proc/cpuinfo", "utf8"));
	} catch {}
	return avx2 ? "opencode-linux-x64" : "opencode-linux-x64-baseline";
}

function found(path: string, what: string): string | { missing: string } {
	return existsSync(path) ? path : { missing: `${what} not found at ${path}` };
}

/** npm's first error lines (its code and message), short enough for a table cell. */
function npmError(stderr: string): string {
	const lines = stderr.split("\n").filter((line) => /^npm (error|ERR!) \S/.test(line));
	return (lines.slice(0, 2).join("; ") || stderr.trim()).slice(0, 160);
}

/** Installs the pinned peers once (npm, into the cache folder) and says where their programs are. */
export async function installPeers(log: (line: string) => void = () => {}): Promise<PeerInstall> {
	const dir = peersDir();
	const stamp = join(dir, "installed.json");
	const wanted = JSON.stringify(peerVersions);
	let failure: string | undefined;
	if (!existsSync(stamp) || readFileSync(stamp, "utf8") !== wanted) {
		mkdirSync(dir, { recursive: true });
		writeFileSync(
			join(dir, "package.json"),
			`${JSON.stringify({ name: "pi-gateway-bench-peers", private: true, dependencies: peerVersions }, null, 2)}\n`,
		);
		log(
			`installing ${Object.entries(peerVersions)
				.map(([n, v]) => `${n}@${v}`)
				.join(", ")} into ${dir}`,
		);
		failure = await new Promise<string | undefined>((resolve) => {
			execFile(
				"npm",
				[
					"install",
					"--no-audit",
					"--no-fund",
					"--ignore-scripts",
					"--no-package-lock",
					// Without a registry (an offline CI), fail in about a minute rather than npm's default retries.
					"--fetch-retries=1",
					"--fetch-timeout=30000",
					"--prefix",
					dir,
				],
				{ cwd: dir, timeout: 300_000, maxBuffer: 16 * 2 ** 20 },
				(error, _stdout, stderr) =>
					resolve(error ? `npm install failed: ${npmError(stderr || error.message)}` : undefined),
			);
		});
		if (!failure) writeFileSync(stamp, wanted);
	}
	const modules = join(dir, "node_modules");
	const missing = (what: string) => ({ missing: failure ?? `${what} is not installed` });
	const pick = (path: string, what: string) => {
		const result = found(path, what);
		return typeof result === "string" || !failure ? result : missing(what);
	};
	// The one install script skipped by --ignore-scripts that matters: @sandbox-agent/cli-linux-*'s
	// postinstall is `chmod +x bin/sandbox-agent` (the tarball holds the binary without it).
	const sandboxBinary = join(modules, "@sandbox-agent", `cli-linux-${arch()}`, "bin", "sandbox-agent");
	try {
		chmodSync(sandboxBinary, 0o755);
	} catch {}
	return {
		dir,
		opencode: pick(join(modules, opencodePackage(), "bin", "opencode"), "opencode"),
		sandboxAgent: pick(sandboxBinary, "sandbox-agent"),
		piAcp: pick(join(modules, "pi-acp", "dist", "index.js"), "pi-acp"),
	};
}
