import { existsSync } from "node:fs";
import { ownKeyProblems, readProviderKeys } from "../config/own-keys.ts";
import type { Settings } from "../config/sources.ts";
import { sandboxFix } from "../sessions/process/index.ts";
import type { Gateway } from "./server.ts";
import { tokenNotice } from "./token.ts";

/**
 * What start-up says on stderr to the person at the terminal (stdout carries the JSON log): where
 * the token is and what is unsafe, where sessions work, what files were read, where to look.
 */
export function startupNotices(gateway: Gateway): string[] {
	const lines: string[] = [];
	const notice = tokenNotice(gateway.tokenSource);
	if (notice) lines.push(notice);
	// Where an agent works unless told otherwise: never this process's own directory by accident.
	const { workspaceRoot, defaultCwd } = gateway.config;
	lines.push(
		defaultCwd === "own"
			? `pi-gateway: sessions without cwd work in a folder of their own, ${workspaceRoot}/@<principal>/<session id> (an admin's: ${workspaceRoot}/<session id>)`
			: `pi-gateway: sessions without cwd work in their principal's folder ${workspaceRoot}/@<principal> (an admin's: the root ${workspaceRoot}), all of one principal in the same folder`,
	);
	const { state, reason } = gateway.sandbox;
	if (state === "unconfined")
		lines.push(`pi-gateway: sandbox off (${reason}): pi and its tools run unconfined as this user`);
	if (state === "unavailable")
		lines.push(
			`pi-gateway: NO SESSION CAN START: the sandbox is unavailable (${reason}); creates answer 503 sandbox_unavailable until you ${sandboxFix}`,
		);
	const { keysFile, approvalPoliciesFile, webhooksFile } = gateway.loaded;
	const count = (n: number, what: string) => `${n} ${what}${n === 1 ? "" : "s"}`;
	// Said even with no key yet: `pi-gateway keys create` writes there, and the gateway takes it without a restart.
	if (keysFile)
		lines.push(
			keysFile.keys > 0 || existsSync(keysFile.path)
				? `pi-gateway: API keys from ${keysFile.path} (${count(keysFile.keys, "key")})`
				: `pi-gateway: API keys: none yet; \`pi-gateway keys create\` writes them to ${keysFile.path}, taken without a restart`,
		);
	lines.push(...ownKeyNotices(gateway));
	if (approvalPoliciesFile)
		lines.push(
			`pi-gateway: approval policies from ${approvalPoliciesFile.path} (${count(approvalPoliciesFile.rules, "rule")})`,
		);
	if (webhooksFile)
		lines.push(`pi-gateway: webhooks from ${webhooksFile.path} (${count(webhooksFile.webhooks, "webhook")})`);
	lines.push(
		`pi-gateway: listening on ${gateway.url}; API reference ${gateway.url}/docs, console ${gateway.url}/console`,
	);
	return lines;
}

/**
 * Principals' own provider keys (issue 42 item 5) the gateway cannot read now: where each should be
 * and what is wrong, never a key. Their principals' calls fail until fixed; none uses the operator's.
 */
function ownKeyNotices(gateway: Gateway): string[] {
	const { keysFile } = gateway.config;
	let keys: ReturnType<typeof readProviderKeys>;
	try {
		keys = readProviderKeys(keysFile);
	} catch (error) {
		return [
			`pi-gateway: PROVIDER KEYS: ${(error as Error).message}; sessions of key principals are refused until it is fixed`,
		];
	}
	const lines = ownKeyProblems(keys).map((problem) => `pi-gateway: PROVIDER KEY: ${problem}`);
	const owners = Object.keys(keys).filter((name) => Object.keys(keys[name] ?? {}).length > 0);
	if (owners.length > 0 && gateway.sandbox.state === "unconfined")
		lines.push(
			`pi-gateway: PROVIDER KEYS of ${owners.join(", ")} need the sandbox's relay: with the sandbox ${gateway.sandbox.state}, their sessions are refused (503 provider_keys_need_sandbox)`,
		);
	return lines;
}

/**
 * A listen that failed on the port or the address (the port taken, a port below 1024 without the
 * right), said in one line with the setting that chose it and how to choose another: Node's own
 * message names only the errno. Undefined for any other error.
 */
export function listenRefusal(error: unknown, sources?: Settings["sources"]): string | undefined {
	const { code, address, port } = error as NodeJS.ErrnoException & { address?: string; port?: number };
	if (code !== "EADDRINUSE" && code !== "EACCES") return undefined;
	const source = sources?.get("port");
	const chosen =
		source === undefined || source.from === "default"
			? "the default port"
			: source.from === "file"
				? `port: in ${source.path}`
				: source.name;
	const where = `port ${port} on ${address}`;
	const fix = `choose another with --port N, PI_GATEWAY_PORT=N or port: N in the config file (0 takes a free one)`;
	return code === "EADDRINUSE"
		? `${where} (${chosen}) is already in use, by another pi-gateway or another program: stop that one, or ${fix}`
		: `${where} (${chosen}) needs privileges this user lacks (ports below 1024): ${fix}`;
}
