import {
	cpSync,
	existsSync,
	lstatSync,
	mkdirSync,
	readdirSync,
	readFileSync,
	realpathSync,
	unlinkSync,
	writeFileSync,
} from "node:fs";
import { join, relative, resolve, sep } from "node:path";
import type { Config } from "../../config/config.ts";
import { GatewayError } from "../../shared/errors.ts";
import { confine, isInside } from "../../shared/paths.ts";

/**
 * Each principal's own part of the workspace root: its sessions work there, and a `cwd` it names
 * must resolve there. Without it one tenant's `{"cwd":"."}`, or the id or path of another's folder,
 * was that folder, read and written by the tenant's files API and agent.
 *
 * An admin (the token, or a key with the admin scope) is the operator: its area is the whole root,
 * where its sessions keep the folders they had before areas existed (`<root>/<session id>`).
 * Everyone else has `<root>/@<name>`: the `@` keeps areas apart from those session folders
 * (ids start `ses_`), and the name is escaped so that no principal's area is `.`, `..` or hidden.
 */
export interface Area {
	/** The area's path (real once it exists: the root is resolved when the gateway starts). */
	path: string;
	/** Whose it is, for messages. */
	principal: string;
	admin: boolean;
}

/** A principal's name as one path component: `[A-Za-z0-9_@.-]` kept (no leading dot), the rest %XX. */
export function areaName(principal: string): string {
	const escaped = principal.replace(
		/[^\w@.-]/g,
		(c) => `%${c.charCodeAt(0).toString(16).toUpperCase().padStart(2, "0")}`,
	);
	return `@${escaped.replace(/^\./, "%2E")}`;
}

export function areaOf(config: Config, principal: string, admin: boolean): Area {
	const root = realpathSync(config.workspaceRoot);
	return { path: admin ? root : join(root, areaName(principal)), principal, admin };
}

/** The area, made if missing (its parent, the root, exists: the registry made it at start). */
export function ensureArea(area: Area): string {
	mkdirSync(area.path, { recursive: true, mode: 0o700 });
	return area.path;
}

/**
 * A user's `cwd`, relative to the caller's area (absolute paths allowed), symlinks resolved, held
 * inside that area: 400 when it does not exist, 403 when it leads out (the root itself and other
 * principals' areas included, by whatever path or symlink).
 */
export function confineToArea(area: Area, cwd: string): string {
	const base = ensureArea(area);
	try {
		return confine(base, resolve(base, cwd), "cwd");
	} catch (error) {
		if (error instanceof GatewayError && error.status === 403)
			throw new GatewayError(
				403,
				"path_outside_root",
				area.admin
					? `cwd must lie inside the workspace root ${base}`
					: `cwd must lie inside ${base}, the folder of ${area.principal}'s sessions (relative paths start there)`,
			);
		throw error;
	}
}

/** The principal's area a sandboxed session's `cwd` lies in (`@<name>`), or undefined for the operator's. */
function areaOfFolder(config: Config, cwd: string): string | undefined {
	const rel = relative(realpathSync(config.workspaceRoot), cwd);
	const first = rel.split(sep)[0] ?? "";
	return first.startsWith("@") && !rel.startsWith("..") ? first : undefined;
}

/**
 * The area a session's folder lies in, read from the folder (a restart knows no caller): `@name`'s
 * for a folder there, else the operator's (the whole root). A session's own read-only extras are
 * checked against it (sandbox-view.ts sessionReadable).
 */
export function areaOfCwd(config: Config, cwd: string): { path: string; admin: boolean } {
	const name = areaOfFolder(config, cwd);
	const root = realpathSync(config.workspaceRoot);
	return name ? { path: join(root, name), admin: false } : { path: root, admin: true };
}

/**
 * Where a sandboxed pi keeps what it compiles, one folder of each per area like the agent folder:
 * - `compileCache`, Node's compile cache (the bytecode of pi's bundle and of the chunks it loads on
 *   its first prompt): `<data-dir>/compile-cache/<area>`. pi turns the cache on itself, in /tmp by
 *   default, and the sandbox's /tmp is empty at each start, so every sandboxed pi compiled pi from
 *   scratch (a start took ≈ 1.6× as long as with the cache).
 * - `jitiCache`, the JavaScript pi's extension loader (jiti) makes of each extension, shown at
 *   /tmp/jiti (sandbox.ts): `<data-dir>/compile-cache/jiti/<area>`. Not inside the compile cache: a
 *   folder the agent can write must never hold a bind's source, or the agent swaps it for a link
 *   (`ln -s ../../../workspace/@bob jiti`) and the next pi of its area is shown whatever the link
 *   names, as bwrap follows it on the host (an attacker's review). Its parent is shown to no pi.
 * pi writes both, so neither is ever shared between areas: one tenant's agent could otherwise plant
 * code that ran in another tenant's next pi. Within an area they are as trusted as the agent folder
 * that area's agents can already write.
 */
export function areaCaches(config: Config, cwd: string): { compileCache: string; jitiCache: string } {
	const area = areaOfFolder(config, cwd) ?? "admin";
	const compileCache = join(config.dataDir, "compile-cache", area);
	const jitiCache = join(config.dataDir, "compile-cache", "jiti", area);
	for (const dir of [compileCache, jitiCache]) mkdirSync(dir, { recursive: true, mode: 0o700 });
	return { compileCache, jitiCache };
}

const real = (path: string) => {
	try {
		return realpathSync(path);
	} catch {
		return path;
	}
};

/** Copies `from` to `to` but for `left` (and what they hold); a folder that holds one of them is walked. */
function copyAgentDir(from: string, to: string, left: string[]): void {
	const path = real(from);
	if (left.some((l) => isInside(l, path))) return;
	if (!left.some((l) => isInside(path, l))) {
		cpSync(from, to, { recursive: true });
		return;
	}
	mkdirSync(to, { recursive: true });
	for (const name of readdirSync(from)) copyAgentDir(join(from, name), join(to, name), left);
}

/**
 * What an area's agent folder gets of the operator's (pi's docs/configuration.md says what one
 * holds): settings and key bindings, the instructions (AGENTS.md and its kin, SYSTEM.md,
 * APPEND_SYSTEM.md), extensions, skills, prompt templates and themes, the pi packages settings.json
 * installs (npm/, git/), the fd and rg pi fetched (bin/) and its cache of providers' model lists.
 * Nothing else: the whole folder was copied, so mcp.json (MCP servers' bearer headers, a GITHUB_TOKEN
 * in their env), mcp-auth.json and the old oauth.json reached every principal's agent (an attacker's
 * review). models.json and auth.json are the relay's to write, with placeholders (relay/).
 */
export const agentDirShown = [
	...["settings.json", "keybindings.json", "models-store.json"],
	...["AGENTS.override.md", "AGENTS.md", "AGENTS.MD", "CLAUDE.md", "CLAUDE.MD", "SYSTEM.md", "APPEND_SYSTEM.md"],
	...["extensions", "skills", "prompts", "themes", "npm", "git", "bin"],
];

/** Written in an area's agent folder once it holds only agentDirShown of the operator's. */
const allowlisted = ".pi-gateway-allowlist";

/**
 * settings.json without `httpProxy`: a proxy's URL may carry its password, and pi would send its
 * model calls there instead of to the relay (the sandbox reaches no proxy). One pi cannot parse
 * stays out (pi would not read it either).
 */
function copySettings(from: string, to: string): void {
	let settings: unknown;
	try {
		settings = JSON.parse(readFileSync(from, "utf8").replace(/^\uFEFF/, ""));
	} catch {
		return;
	}
	if (!settings || typeof settings !== "object" || Array.isArray(settings)) return;
	const { httpProxy: _, ...kept } = settings as Record<string, unknown>;
	writeFileSync(to, `${JSON.stringify(kept, null, "\t")}\n`, { mode: 0o600 });
}

/**
 * A folder made before agentDirShown held the operator's whole one: its files (mcp.json, …) off the
 * list go, once. unlink only (never a walk: the folder is the agent's, and a link it swapped in
 * mid-walk would lead the gateway's deletes out of it); a folder off the list stays.
 */
function pruneOldCopy(dir: string): void {
	for (const name of readdirSync(dir)) {
		if (agentDirShown.includes(name) || ["models.json", "auth.json"].includes(name)) continue;
		try {
			if (!lstatSync(join(dir, name)).isDirectory()) unlinkSync(join(dir, name));
		} catch {}
	}
	markAllowlisted(dir);
}

/** The mark, made anew (`wx`: never through a link the agent planted under its name). */
function markAllowlisted(dir: string): void {
	try {
		writeFileSync(join(dir, allowlisted), "", { flag: "wx" });
	} catch {}
}

function isMarked(dir: string): boolean {
	try {
		lstatSync(join(dir, allowlisted));
		return true;
	} catch {
		return false;
	}
}

/**
 * pi's agent folder (its settings and the extensions it loads at every start) for a sandboxed
 * session working in `cwd`: one per area, `<data-dir>/agents/@<name>` (an admin's sessions:
 * `<data-dir>/agents/admin`), made from the operator's (`base`, agentDirShown of it) the first time.
 * pi must be able to write it, so a folder shared by every session let one tenant's agent drop an
 * extension there that then ran in every other tenant's sessions, reading their folders; and the
 * operator's own, given to an admin's sessions, let an agent plant one that ran unsandboxed the
 * next time the operator ran pi on the host (an attacker's review).
 */
export function areaAgentDir(config: Config, cwd: string, base: string): string {
	const dir = join(config.dataDir, "agents", areaOfFolder(config, cwd) ?? "admin");
	if (!existsSync(dir)) {
		mkdirSync(join(config.dataDir, "agents"), { recursive: true, mode: 0o700 });
		mkdirSync(dir, { recursive: true });
		// Never the gateway's data dir when an agent dir holds it (the copy went into itself: a 500 on
		// every create, and the copy would have put the token and gateway.db in the agent's reach).
		const left = [real(config.dataDir)];
		for (const name of existsSync(base) ? readdirSync(base) : [])
			if (name === "settings.json") copySettings(join(base, name), join(dir, name));
			else if (agentDirShown.includes(name)) copyAgentDir(join(base, name), join(dir, name), left);
		markAllowlisted(dir);
	} else if (!isMarked(dir)) pruneOldCopy(dir);
	return dir;
}
