import { randomBytes } from "node:crypto";
import { closeSync, constants, openSync, renameSync, writeFileSync } from "node:fs";
import { homedir } from "node:os";
import { basename, dirname, join } from "node:path";
import { pathToFileURL } from "node:url";
import type { Config } from "../../config/config.ts";
import { ownKeysOf } from "../../config/own-keys.ts";
import { type AllowEntry, parseAllowHosts } from "../../net/egress-allow.ts";
import { packageFile } from "../../shared/package-files.ts";
import { readAgentFile } from "../../shared/paths.ts";
import { type RelayPlan, relayPlan } from "./credentials.ts";
import { applyOwnKeys, withOwnKeyVariables } from "./own-key-plan.ts";

/**
 * What a sandboxed pi needs to call its model through the relay: the socket bound into the sandbox
 * (`<data-dir>/relay/<session id>.sock`, at the same path inside), the forwarder pi's node loads,
 * and pi's agent folder and environment with placeholders where keys were.
 */
export interface SandboxRelay {
	socket: string;
	plan: RelayPlan;
	/** `--import=<forwarder>`: for a pi run by node. */
	nodeFlag: string;
	/** The forwarder's file, shown read-only in the sandbox. */
	forwarder: string;
	/** Every socket to bind into the sandbox: the relay's, and the proxy's when there is one. */
	sockets: string[];
	/** The tools' egress proxy (egress-proxy.ts), when the operator allows hosts: its socket and the list. */
	proxy?: { socket: string; allow: AllowEntry[] };
	/**
	 * Reads the operator's files again, for a pooled pi handed to a session: the area's models.json
	 * and auth.json are written anew where they differ (the pool's stamp then hands that pi out no
	 * more), and the plan's routes are replaced in place (the open relay reads them at each call).
	 * A pool filled before a key was rotated or removed from models.json let its pis use it on.
	 */
	refresh: () => void;
}

/** The port the forwarder listens on inside the sandbox's own network (nothing else is there). */
export const relayPort = 4317;
/** The port the forwarder gives the tools' egress proxy (HTTP_PROXY), beside the relay's. */
export const proxyPort = 4318;
const proxyNames = ["HTTP_PROXY", "HTTPS_PROXY", "http_proxy", "https_proxy"];
const otherProxyNames = ["ALL_PROXY", "all_proxy", "NO_PROXY", "no_proxy"];
export const forwarderPath = packageFile("extensions/relay-forwarder.mjs");

/** The longest path a unix socket takes (108 bytes with its NUL on Linux). */
const maxSocketPath = 107;

export function relaySocket(dataDir: string, sessionId: string, kind: "relay" | "proxy" = "relay"): string {
	const path = join(dataDir, "relay", kind === "relay" ? `${sessionId}.sock` : `${sessionId}.proxy.sock`);
	if (Buffer.byteLength(path) > maxSocketPath)
		throw new Error(`The relay's socket ${path} is longer than a unix socket allows: use a shorter --data-dir`);
	return path;
}

/**
 * Writes `value` as JSON unless the file already holds exactly that (a pooled pi's folder stamp
 * stays). The folder is the agent's to write: what is at `path` may be a link it planted (to the
 * operator's models.json, /etc/passwd, the token) or a FIFO. So the old text is read only from a
 * regular file, without following a link or blocking, and the new one goes to a file made anew
 * beside it (O_EXCL, never through a link) that is renamed over `path`, which replaces a link
 * itself rather than writing where it points (an attacker's review overwrote files as root so).
 */
function writeIfChanged(path: string, value: unknown): void {
	const text = `${JSON.stringify(value, null, "\t")}\n`;
	if (sameText(path, text)) return;
	const staged = join(dirname(path), `.${basename(path)}.${randomBytes(6).toString("hex")}`);
	const { O_WRONLY, O_CREAT, O_EXCL, O_NOFOLLOW } = constants;
	const fd = openSync(staged, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW, 0o600);
	try {
		writeFileSync(fd, text);
	} finally {
		closeSync(fd);
	}
	renameSync(staged, path);
}

/** Whether `path` is a regular file holding exactly `text` (a link, a FIFO or anything else: no). */
function sameText(path: string, text: string): boolean {
	// One byte past the text: a file that holds more is not the same.
	return readAgentFile(path, Buffer.byteLength(text) + 1)?.toString("utf8") === text;
}

/** The operator's own pi folder, where the real models.json and auth.json are (never shown to pi). */
export function operatorAgentDir(config: Pick<Config, "piAgentDir">): string {
	return config.piAgentDir ?? process.env.PI_CODING_AGENT_DIR ?? join(process.env.HOME ?? homedir(), ".pi", "agent");
}

/**
 * Sets up a sandboxed pi's relay: `env` (pi's environment, changed in place) gets placeholders for
 * keys and loses the other credentials; its agent folder (PI_CODING_AGENT_DIR, the area's copy)
 * gets models.json and auth.json made from the operator's with placeholders and relay base URLs,
 * over whatever the copy held; `nodeArgs` (pi node's argv, or [] for another pi command) gets the
 * forwarder at `at`. With --sandbox-allow-hosts, the forwarder gives the egress proxy a second port
 * and `env` names it in HTTP(S)_PROXY (the relay's own address left out in NO_PROXY); without, no
 * proxy variable of the gateway's own environment is left (nothing it names is reachable).
 * `principal`: the session's owner when it works in that principal's own area (spawn.ts), whose
 * own provider keys (config/own-keys.ts) the relay uses where it would use the operator's.
 */
export function sandboxRelay(
	config: Pick<Config, "dataDir" | "piAgentDir" | "passEnv" | "sandboxAllowHosts" | "keysFile">,
	sessionId: string,
	env: Record<string, string>,
	nodeArgs: string[] = [],
	at = 0,
	principal?: string,
): SandboxRelay {
	const socket = relaySocket(config.dataDir, sessionId);
	const base = `http://127.0.0.1:${relayPort}`;
	// `env` as pi got it (placeholders for the keys it reads) serves a later read as well. The
	// principal's own keys (config/own-keys.ts) are read again at each read, as the operator's files are.
	const read = () => {
		const own = ownKeysOf(config.keysFile, principal);
		const { source, childEnv } = withOwnKeyVariables(process.env, env, own);
		const plan = relayPlan(source, childEnv, operatorAgentDir(config), base, config.passEnv);
		if (principal !== undefined) applyOwnKeys(plan, principal, own);
		return plan;
	};
	const areaDir = env.PI_CODING_AGENT_DIR;
	const write = (plan: RelayPlan) => {
		if (!areaDir) return;
		writeIfChanged(join(areaDir, "models.json"), plan.modelsJson);
		writeIfChanged(join(areaDir, "auth.json"), plan.authJson);
	};
	const plan = read();
	for (const [name, value] of Object.entries(plan.env)) {
		if (value === undefined) delete env[name];
		else env[name] = value;
	}
	write(plan);
	const refresh = () => {
		const fresh = read();
		write(fresh);
		plan.routes.clear();
		for (const [id, route] of fresh.routes) plan.routes.set(id, route);
		plan.modelsJson = fresh.modelsJson;
		plan.authJson = fresh.authJson;
	};
	const allow = parseAllowHosts(config.sandboxAllowHosts);
	const proxy = allow.length > 0 ? { socket: relaySocket(config.dataDir, sessionId, "proxy"), allow } : undefined;
	for (const name of [...proxyNames, ...otherProxyNames]) delete env[name];
	if (proxy) {
		for (const name of proxyNames) env[name] = `http://127.0.0.1:${proxyPort}`;
		env.NO_PROXY = env.no_proxy = "127.0.0.1,localhost";
	}
	const url = pathToFileURL(forwarderPath);
	url.searchParams.set("socket", socket);
	url.searchParams.set("port", String(relayPort));
	if (proxy) {
		url.searchParams.set("proxySocket", proxy.socket);
		url.searchParams.set("proxyPort", String(proxyPort));
	}
	const nodeFlag = `--import=${url.href}`;
	// pi's node loads the forwarder first (a pi run by node; `nodeArgs` is empty otherwise).
	if (nodeArgs.length > 0) nodeArgs.splice(at, 0, nodeFlag);
	const sockets = proxy ? [socket, proxy.socket] : [socket];
	return { socket, sockets, plan, nodeFlag, forwarder: forwarderPath, proxy, refresh };
}
