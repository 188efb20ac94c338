import { existsSync, readFileSync, realpathSync } from "node:fs";
import { dirname, join } from "node:path";

/**
 * Which protocol a pi child speaks. `current`: pi 1.x (`@earendil-works/pi-coding-agent`), the
 * protocol the gateway is written against. `legacy`: pi 0.73 (`@mariozechner/pi-coding-agent`),
 * which lacks four commands, `agent_settled` and `data.disposition`, and repeats the whole partial
 * message in every `message_update`. The gateway adapts a legacy child's lines to the current
 * protocol (this module), so clients, wait mode and run streams see one contract.
 */
export type Dialect = "current" | "legacy";

/** Commands pi 0.73 does not know (protocol-check.ts holds this equal to the legacy package's types). */
export const legacyMissingCommands = [
	"clear_queue",
	"get_available_thinking_levels",
	"get_entries",
	"get_tree",
] as const;

const missing: ReadonlySet<string> = new Set(legacyMissingCommands);

export function lacksCommand(dialect: Dialect, type: string): boolean {
	return dialect === "legacy" && missing.has(type);
}

export interface PiPackage {
	name: string;
	version: string;
}

const piPackageNames = new Set(["@earendil-works/pi-coding-agent", "@mariozechner/pi-coding-agent"]);

/**
 * The pi package a pi command runs, found without starting it: the first argument that is a file
 * inside a pi package (`node …/dist/cli.js`, or the `pi` bin, a symlink into the package).
 * Undefined for anything else (a wrapper script, a stub): the session then detects it in band.
 */
export function piPackageOf(command: readonly string[]): PiPackage | undefined {
	const key = command.join("\0");
	if (!found.has(key)) found.set(key, findPiPackage(command));
	return found.get(key);
}

const found = new Map<string, PiPackage | undefined>();

function findPiPackage(command: readonly string[]): PiPackage | undefined {
	for (const arg of command) {
		if (!existsSync(arg)) continue;
		let dir = dirname(realpathSync(arg));
		for (;;) {
			const file = join(dir, "package.json");
			if (existsSync(file)) {
				try {
					const { name, version } = JSON.parse(readFileSync(file, "utf8")) as Partial<PiPackage>;
					if (name && version && piPackageNames.has(name)) return { name, version };
				} catch {}
			}
			const parent = dirname(dir);
			if (parent === dir) break;
			dir = parent;
		}
	}
	return undefined;
}

/** pi 0.73 has no `--name` flag: its name is set with set_session_name once it runs. */
export function hasNameFlag(dialect: Dialect): boolean {
	return dialect !== "legacy";
}

/** pi before 1.0 speaks the legacy protocol. */
export function dialectOf(pkg: PiPackage | undefined): Dialect {
	return pkg && /^0\./.test(pkg.version) ? "legacy" : "current";
}

/**
 * A prompt accepted without `data.disposition` comes from a legacy pi (pi 1.x always sends one):
 * how a session detects a pi whose package `piPackageOf` could not see.
 */
export function looksLegacy(response: { command: string; success: boolean; data?: unknown }): boolean {
	return response.command === "prompt" && response.success && response.data === undefined;
}

/**
 * The disposition pi 1.x would have given. A legacy pi answers an extension command's prompt only
 * after the command ran (no run follows): `handled` when the message names one of the extension
 * commands pi listed at start (get_commands). Otherwise the prompt started a run, or joined the
 * running one. (An `input` handler that swallows a prompt cannot be told apart: `started`.)
 */
export function legacyDisposition(
	running: boolean,
	message: unknown,
	extensionCommands: ReadonlySet<string>,
): "started" | "queued" | "handled" {
	const name = typeof message === "string" ? /^\/(\S+)/.exec(message)?.[1] : undefined;
	if (name !== undefined && extensionCommands.has(name)) return "handled";
	return running ? "queued" : "started";
}

/** The extension commands in a get_commands answer (pi's `RpcSlashCommand`s with source "extension"). */
export function extensionCommandNames(data: unknown): Set<string> {
	const commands = (data as { commands?: { name?: unknown; source?: unknown }[] } | undefined)?.commands;
	const names = new Set<string>();
	for (const command of Array.isArray(commands) ? commands : [])
		if (command.source === "extension" && typeof command.name === "string") names.add(command.name);
	return names;
}

/**
 * A legacy `message_update` as pi 1.x sends it: delta only. pi 0.73 repeats the whole partial
 * message in each update (quadratic bytes on a long reply); `message_end` still carries it whole.
 */
export function legacyMessageUpdate(line: string): string {
	try {
		const event = JSON.parse(line) as { message?: unknown; assistantMessageEvent?: { partial?: unknown } };
		delete event.message;
		if (event.assistantMessageEvent) delete event.assistantMessageEvent.partial;
		return JSON.stringify(event);
	} catch {
		return line;
	}
}

/**
 * The `agent_settled` a legacy pi never sends, synthesised after its `agent_end` when nothing is
 * queued in pi. Marked `synthetic: true` so a client can tell it from pi's own; `aborted` is read
 * from the run's last assistant message, as pi 1.x sets it.
 */
export function synthesisedSettled(agentEndLine: string): string {
	let aborted = false;
	try {
		const { messages } = JSON.parse(agentEndLine) as { messages?: { role?: string; stopReason?: string }[] };
		const last = messages?.filter((m) => m.role === "assistant").at(-1);
		aborted = last?.stopReason === "aborted";
	} catch {}
	return JSON.stringify({ type: "agent_settled", aborted, synthetic: true });
}
