import { randomBytes } from "node:crypto";
import { chmodSync, existsSync, mkdirSync, readFileSync, statSync, writeFileSync } from "node:fs";
import { dirname, join } from "node:path";
import type { Config } from "../config/config.ts";

/** Where the bearer token came from; said at startup so a user knows where to find it. */
export type TokenSource =
	| { kind: "env" }
	| { kind: "argv" }
	| { kind: "file"; path: string }
	/** `unwritten`: made now, kept in memory until keepToken() (a start that is refused writes none). */
	| { kind: "generated"; path: string; reused: boolean; unwritten?: string }
	| { kind: "none" };

export function defaultTokenFile(config: Config): string {
	return join(config.dataDir, "token");
}

function readTokenFile(path: string): string {
	let text: string;
	try {
		text = readFileSync(path, "utf8");
	} catch (error) {
		throw new Error(`Cannot read the token file ${path}: ${(error as NodeJS.ErrnoException).code ?? error}`);
	}
	const token = text.trim();
	if (token.length < 16) throw new Error(`The token in ${path} is shorter than 16 characters`);
	return token;
}

/**
 * Settles config.token, in this order: the value given (env PI_GATEWAY_TOKEN, or --token on argv),
 * --token-file, else `<data-dir>/token` — made on first start with 32 random bytes, written (mode
 * 0600) by keepToken() once the start cannot be refused any more, and reused after that (Jupyter's
 * convention for a local server that runs code). `--no-auth` skips all of it.
 */
export function resolveToken(config: Config, given: "env" | "argv" | undefined): TokenSource {
	if (!config.auth) {
		if (config.token || config.tokenFile) throw new Error("--no-auth contradicts --token / --token-file");
		return { kind: "none" };
	}
	if (config.token) {
		if (config.tokenFile) throw new Error("Give the token one way: --token/PI_GATEWAY_TOKEN or --token-file");
		return { kind: given ?? "env" };
	}
	if (config.tokenFile) {
		config.token = readTokenFile(config.tokenFile);
		return { kind: "file", path: config.tokenFile };
	}
	const path = defaultTokenFile(config);
	if (!existsSync(path)) {
		config.token = randomBytes(32).toString("base64url");
		config.tokenFile = path;
		return { kind: "generated", path, reused: false, unwritten: config.token };
	}
	// A file left readable by others (copied, restored from a backup) is tightened, not trusted as is.
	if ((statSync(path).mode & 0o077) !== 0) chmodSync(path, 0o600);
	config.token = readTokenFile(path);
	config.tokenFile = path;
	return { kind: "generated", path, reused: true };
}

/** Writes a token made by this start (resolveToken), once nothing can refuse the start any more. */
export function keepToken(source: TokenSource): void {
	if (source.kind !== "generated" || source.unwritten === undefined) return;
	mkdirSync(dirname(source.path), { recursive: true, mode: 0o700 });
	// wx: a token another start wrote meanwhile is never overwritten (its holders would lose access).
	writeFileSync(source.path, `${source.unwritten}\n`, { mode: 0o600, flag: "wx" });
	source.unwritten = undefined;
}

/** The human line printed at start (stderr), like Jupyter's "… ?token=…" line, minus the secret. */
export function tokenNotice(source: TokenSource): string | undefined {
	switch (source.kind) {
		case "generated":
		case "file":
			return `pi-gateway: bearer token in ${source.path}${source.kind === "generated" && !source.reused ? " (generated now, kept for the next start)" : ""}; use it as: curl -H "Authorization: Bearer $(cat ${source.path})" …`;
		case "argv":
			return "pi-gateway: WARNING: --token on the command line is readable by every local process of this user (/proc/<pid>/cmdline), pi's tools included; use PI_GATEWAY_TOKEN or --token-file";
		case "none":
			return "pi-gateway: WARNING: --no-auth: no token; any local process, pi's own tools included, can call the API and answer approvals";
		default:
			return undefined;
	}
}
