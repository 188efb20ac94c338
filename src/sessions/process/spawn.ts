import { existsSync, mkdirSync, realpathSync } from "node:fs";
import { basename, dirname, isAbsolute, join, resolve, sep } from "node:path";
import { fileURLToPath } from "node:url";
import { z } from "@hono/zod-openapi";
import { childEnv, nodeFlags } from "../../config/child-env.ts";
import type { Config } from "../../config/config.ts";
import { dialectOf, hasNameFlag, piPackageOf } from "../../pi/dialect.ts";
import { SessionName, ThinkingLevel } from "../../pi/protocol.ts";
import { GatewayError } from "../../shared/errors.ts";
import { packageFile } from "../../shared/package-files.ts";
import { isInside } from "../../shared/paths.ts";
import { ClientTools, clientToolsEnv } from "../dialogs/client-tools.ts";
import { PolicySet } from "../dialogs/policies.ts";
import { type SandboxRelay, SessionAllowHosts, sandboxRelay, sessionAllowHosts } from "../relay/index.ts";
import { SessionBudget } from "../session/budget.ts";
import { type Area, areaAgentDir, areaCaches, areaOf, areaOfCwd, confineToArea, ensureArea } from "./areas.ts";
import { keyOwner } from "./key-owner.ts";
import { agentDir, confinedByConfig, wrapCommand } from "./sandbox.ts";
import { SandboxReadable, sandboxEnv, sessionReadable } from "./sandbox-view.ts";
import { sealedRunner } from "./sealed-node.ts";
import { folderFor, newSessionFolder, ownFolder } from "./session-files.ts";

// pi's argument parser takes a flag's next argument whatever it looks like, so a value cannot turn
// into a flag; names share one schema (SessionName) with PUT …/name.
const promptText = z
	.string()
	.max(100_000)
	.regex(/^[^\0]*$/, "no NUL characters");
const cliSafe = z.string().regex(/^[A-Za-z0-9][\w.:/@+-]*$/, "letters, digits and . : / @ + - _ only");

export const CreateSessionBody = z
	.strictObject({
		name: SessionName.optional().openapi({ description: "A display name for the session", example: "refactor-auth" }),
		cwd: z
			.string()
			.min(1)
			.max(4096)
			.regex(/^[^\0]*$/, "no NUL characters")
			.optional()
			.openapi({
				description:
					"Working folder, relative to the caller's area of the workspace root (an admin's: the root; another principal's: `<workspace-root>/@<name>`), and inside it once links are followed: the root, another principal's area or its folders are 403 `path_outside_root`. Default: a folder of the session's own in that area, `<area>/<session id>` (created empty); a gateway started with an explicit --workspace-root gives the area itself instead, unless --default-cwd own",
			}),
		provider: cliSafe
			.max(100)
			.optional()
			.openapi({ description: "The model's provider (pi's --provider)", example: "pi-gateway-demo" }),
		model: cliSafe.max(200).optional().openapi({ description: "The model's id (pi's --model)", example: "demo" }),
		thinkingLevel: ThinkingLevel.optional(),
		systemPrompt: promptText.optional().openapi({
			description: "Replaces pi's system prompt (pi's --system-prompt)",
			example: "You review code and answer in short lists.",
		}),
		appendSystemPrompt: promptText.optional().openapi({
			description: "Added to the end of pi's system prompt (pi's --append-system-prompt)",
			example: "Answer in English.",
		}),
		tools: z
			.array(z.string().regex(/^[A-Za-z0-9_*-]+$/))
			.max(100)
			.optional()
			.openapi({ description: "Allow-list of tool names (pi's --tools)", example: ["read", "bash"] }),
		extensions: z
			.array(z.string().min(1))
			.max(50)
			.optional()
			.openapi({ description: "Names from the gateway's extension allow-list (GET /v1/info)" }),
		persist: z.boolean().default(true).openapi({ description: "Keep a pi session file (false: --no-session)" }),
		resume: z
			.string()
			.regex(/^[0-9a-fA-F-]{8,64}$/)
			.optional()
			.openapi({
				description:
					"A pi session id (from a session's piSessionId), or a prefix of one, to continue. It finds only sessions the caller may see (404 otherwise, as for an id that never existed); one a session still holds is 409 (use POST /v1/sessions/{id}/resume), and a file no session holds any more only an admin may continue",
			}),
		clientTools: ClientTools.optional(),
		budget: SessionBudget.optional(),
		sandboxReadable: SandboxReadable.optional(),
		sandboxAllowHosts: SessionAllowHosts.optional(),
		policies: PolicySet.optional().openapi({
			description:
				"Approval policies of this session, tried after the gateway's (--approval-policies-file) and the session's remembered answers. Rules that approve (`allow`, `{value}`) need the scope approvals:answer (403 otherwise)",
		}),
	})
	.openapi("CreateSession", {
		description: "How to start a session; every field is optional",
		example: { name: "refactor-auth", provider: "pi-gateway-demo", model: "demo" },
	});
export type CreateSessionBody = z.infer<typeof CreateSessionBody>;

export interface SpawnPlan {
	command: string;
	args: string[];
	env: Record<string, string>;
	cwd: string;
	/** The command bwrap runs, when `command` is bwrap, and the relay its model calls go through (relay/). */
	sandboxed?: { command: string; relay?: SandboxRelay };
	/**
	 * Sandboxed: the folder to open and hand to bwrap as descriptor 3 (`--bind-fd`), and the root it
	 * must lie in. The spawn opens it and checks the kernel's name for it (areas.ts).
	 */
	bindFolder?: { path: string; root: string };
}

export const demoExtensionPath = packageFile("extensions/demo-model.ts");
/** Holds a run's first tool call until its start snapshot is taken (src/workspace/snapshot-gate.ts). */
export const snapshotGatePath = packageFile("extensions/snapshot-gate.ts");

/**
 * Whether pi gets the snapshot gate, so a prompt need not wait for its snapshot: with change
 * tracking on and a pi known to load it (the bundled one, or a --pi-command into pi 1.x). Any other
 * command (a wrapper, a stub, pi 0.73) has the prompt wait for the snapshot instead.
 */
export function gatesSnapshots(config: Config): boolean {
	return config.workspaceChanges && isPi1(config);
}

/** Imports the code for the session's model API once a pooled pi is up, not at its first prompt (the bundled pi). */
export const warmUpPath = packageFile("extensions/warm-up.ts");

/** Whether pi is the bundled one, or a --pi-command into pi 1.x: the one whose layout warm-up.ts knows. */
function isPi1(config: Config): boolean {
	return config.piCommand === undefined || piPackageOf(config.piCommand)?.name === "@earendil-works/pi-coding-agent";
}

/** Registers a session's client tools in pi (src/sessions/dialogs/client-tools.ts). */
export const clientToolsExtensionPath = packageFile("extensions/client-tools.ts");

/** The installed pi package's folder (its package.json is not exported, so found from its main entry). */
export function piPackageDir(): string {
	const main = fileURLToPath(import.meta.resolve("@earendil-works/pi-coding-agent"));
	let dir = dirname(main);
	while (!existsSync(join(dir, "package.json"))) dir = dirname(dir);
	return dir;
}

/** The node_modules folder pi is installed in (the outermost one on its path). */
export function installedModules(): string {
	const dir = piPackageDir();
	const at = dir.indexOf(`${sep}node_modules${sep}`);
	return at === -1 ? dirname(dir) : dir.slice(0, at + "/node_modules".length);
}

export function bundledPiCli(): string {
	return join(piPackageDir(), "dist/bundle/cli.js");
}

/** True when `command` is a Node binary (this one, or one named node, node22, …), which takes Node's flags. */
export function isNode(command: string): boolean {
	return command === process.execPath || /^node(js)?[\d.]*$/.test(basename(command));
}

/** Which session a spawn is for, and the pi session file it starts on, if any. */
export interface SpawnAt {
	/** The gateway session's id: a session without `cwd` may work in `<workspace-root>/<id>`. */
	id: string;
	/** The session's own file, to start pi again on (it knows its model, thinking level and name). */
	restore?: string;
	/** A file `resume` found (registry.ts checked it is the caller's to continue). */
	resume?: string;
	/** A new session: the area of the principal creating it, where its folder is and its cwd must lie. */
	area?: Area;
	/** A session that exists: the folder it was given at create, which it keeps (checked again). */
	cwd?: string;
	/** A warm pool's pi: started ahead of any create, so it can load what its first prompt needs (warm-up.ts). */
	pooled?: boolean;
	/** A session that exists: its owner, whose own provider keys its relay may use (key-owner.ts). */
	owner?: string;
}

/**
 * The folder a session works in. At create: its `cwd` inside the caller's area, else a folder of
 * its own there (`--default-cwd own`) or the area itself (`root`). After: the folder it was given,
 * still a real folder inside the root (not a link put in its place since).
 */
function workingFolder(config: Config, body: CreateSessionBody, at: SpawnAt): string {
	if (at.cwd !== undefined) {
		if (isInside(config.workspaceRoot, at.cwd)) mkdirSync(at.cwd, { recursive: true });
		return at.cwd;
	}
	const area = at.area ?? areaOf(config, "admin", true);
	if (body.cwd) return confineToArea(area, body.cwd);
	const base = ensureArea(area);
	if (config.defaultCwd === "root") return base;
	mkdirSync(join(base, at.id), { recursive: true });
	return confineToArea(area, at.id);
}

/**
 * Turns validated create options into pi's argv: nothing user-supplied reaches it unchecked.
 * Starting on `at.restore`, once that file exists, leaves the model, thinking level and name
 * flags out: the file knows them.
 */
export function planSpawn(config: Config, body: CreateSessionBody, at: SpawnAt): SpawnPlan {
	// First, before any folder is made: no agent starts unconfined unless the operator said so.
	const confined = confinedByConfig(config);
	const restoring = at.restore !== undefined && existsSync(at.restore);
	if (restoring) body = { ...body, provider: undefined, model: undefined, thinkingLevel: undefined, name: undefined };
	const cwd = workingFolder(config, body, at);
	// The session's read-only extras, checked for whose session it is at every start (a path swapped
	// for a link since is checked as what it is now).
	const extraReadable = sessionReadable(config, body.sandboxReadable, at.area ?? areaOfCwd(config, cwd));
	const [command, ...prefix] = config.piCommand ?? [process.execPath, bundledPiCli()];
	// Node's flags go before pi's script, on argv: only the operator's config names them (never a
	// request), and they reach pi alone, not the node processes its tools start.
	const nodeOptions = isNode(command as string) ? nodeFlags(config.piNodeOptions) : [];
	const args = [...nodeOptions, ...prefix, "--mode", "rpc"];
	// Each pi process keeps its files in a folder of its own (session-files.ts): the one of the file
	// it starts on, or a new one.
	let sessionDir: string | undefined;
	// pi writes its file once there is something to keep: a session stopped before its first prompt
	// (hibernated when idle, a gateway restart) has none, and a pi told to open it failed that
	// prompt (ENOENT). It starts anew, in its own folder (the registry checked that a file it saw is
	// still there: continuable.ts).
	const unwritten = at.restore !== undefined && !existsSync(at.restore) ? ownFolder(config, at.restore) : undefined;
	let sessionFile = unwritten ? undefined : (at.restore ?? at.resume);
	if (sessionFile !== undefined && existsSync(sessionFile))
		({ folder: sessionDir, file: sessionFile } = folderFor(config, sessionFile));
	else if (unwritten && existsSync(unwritten)) sessionDir = unwritten;
	else if (body.persist) sessionDir = newSessionFolder(config);
	if (sessionDir && (body.persist || sessionFile)) args.push("--session-dir", sessionDir);
	else args.push("--no-session");
	if (sessionFile) args.push("--session", sessionFile);
	const extensionPaths: string[] = [];
	// First: its hold comes before any other extension's tool_call (an approval is asked of a person after it).
	if (gatesSnapshots(config)) extensionPaths.push(snapshotGatePath);
	if (config.demo) extensionPaths.push(demoExtensionPath);
	// A pooled pi only: its start is on no one's path. A cold start would pay the extension's load
	// and the import before its session is ready, for the same few ms off its first prompt.
	if (at.pooled && isPi1(config)) extensionPaths.push(warmUpPath);
	for (const ext of body.extensions ?? []) {
		const path = config.extensions.get(ext);
		if (!path)
			throw new GatewayError(400, "extension_not_allowed", `Extension ${JSON.stringify(ext)} is not in the allow-list`);
		extensionPaths.push(path);
	}
	const clientTools = body.clientTools ?? [];
	if (clientTools.length > 0) extensionPaths.push(clientToolsExtensionPath);
	for (const path of extensionPaths) args.push("-e", path);
	const provider = body.provider ?? (body.model ? undefined : config.provider);
	const model = body.model ?? config.model;
	if (restoring) {
		// pi takes the model from the file
	} else if (provider || model) {
		if (provider) args.push("--provider", provider);
		if (model) args.push("--model", model);
	} else if (config.demo) args.push("--provider", "pi-gateway-demo", "--model", "demo");
	if (body.thinkingLevel) args.push("--thinking", body.thinkingLevel);
	// pi reads a prompt argument that names an existing file as that file: never let a path through.
	for (const [flag, text] of [
		["--system-prompt", body.systemPrompt],
		["--append-system-prompt", body.appendSystemPrompt],
	] as const) {
		if (text === undefined) continue;
		if (existsSync(resolve(cwd, text))) {
			throw new GatewayError(400, "prompt_is_a_path", `${flag.slice(2)} must be text, not the name of a file`);
		}
		args.push(flag, text);
	}
	// An allow-list of tools names the client tools too: they are what the session was made for.
	if (body.tools) args.push("--tools", [...body.tools, ...clientTools.map((t) => t.name)].join(","));
	if (body.name && hasNameFlag(dialectOf(piPackageOf(config.piCommand ?? [])))) args.push("--name", body.name);
	const env = childEnv(process.env, {
		passEnv: config.passEnv,
		set: {
			PI_OFFLINE: config.demo ? "1" : process.env.PI_OFFLINE,
			...(config.piAgentDir ? { PI_CODING_AGENT_DIR: config.piAgentDir } : {}),
			// Not secret: the extension reads and removes it before any tool runs.
			...(clientTools.length > 0 ? { [clientToolsEnv]: JSON.stringify(clientTools) } : {}),
		},
	});
	const owner = keyOwner(config, at, cwd, confined);
	if (!confined) return { command: command as string, args, env, cwd };
	// A private /tmp as TMPDIR, an empty HOME, the gateway's node on PATH (sandbox-view.ts).
	sandboxEnv(env);
	env.PI_CODING_AGENT_DIR = areaAgentDir(config, cwd, agentDir(env));
	const { compileCache, jitiCache } = areaCaches(config, cwd);
	env.NODE_COMPILE_CACHE = compileCache;
	// No key, no network: model calls go through the relay, tools' requests the egress proxy (relay/).
	const egress = { ...config, sandboxAllowHosts: sessionAllowHosts(config, body.sandboxAllowHosts) };
	const relay = sandboxRelay(egress, at.id, env, isNode(command as string) ? args : [], nodeOptions.length, owner);
	// Shown read-only where a hide would take it away: what pi runs and loads (its files, the
	// node_modules its bundle and the extensions import from), pi's node (sealed-node.ts: a copy).
	const runner = command === process.execPath ? sealedRunner() : (command as string);
	const readable = [runner, ...prefix, ...extensionPaths, installedModules(), relay.forwarder];
	const paths = { cwd, sessionDir, compileCache, jitiCache, extraReadable, env, sockets: relay.sockets };
	const wrapped = wrapCommand(config, { ...paths, readable: readable.filter((p) => isAbsolute(p)) }, runner, args);
	const bindFolder = { path: cwd, root: realpathSync(config.workspaceRoot) };
	return { ...wrapped, env, cwd, sandboxed: { command: runner, relay }, bindFolder };
}
