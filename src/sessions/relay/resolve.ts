import { execFile } from "node:child_process";
import { readFile } from "node:fs/promises";
import type { Secret } from "./credentials.ts";

/**
 * A secret's real value, resolved in the gateway as pi would have (pi-coding-agent's
 * resolve-config-value.js): `!command` runs the command (its trimmed output, cached for the
 * gateway's life as pi caches it for its own; 10 s at most), anything else is a template where
 * `$NAME`/`${NAME}` is the variable (auth.json's own first), `$$` a `$` and `$!` a `!`.
 */
const commands = new Map<string, Promise<string | undefined>>();

/**
 * How long a failed command's failure stands before the command runs again. Tried again at once, an
 * agent's calls with the key's placeholder made the gateway run the operator's command as often as
 * it liked (an attacker's review); a key that came up since is found on the first call after.
 */
export const commandRetryMs = 10_000;

function runCommand(command: string): Promise<string | undefined> {
	let result = commands.get(command);
	if (!result) {
		result = new Promise((resolve) =>
			execFile("/bin/sh", ["-c", command], { timeout: 10_000, maxBuffer: 64 * 1024 }, (error, stdout) =>
				resolve(error ? undefined : stdout.trim() || undefined),
			),
		);
		commands.set(command, result);
		// A failure is tried again once commandRetryMs has passed (a call before then fails as it did).
		void result.then((value) => {
			if (value !== undefined) return;
			const failed = result;
			setTimeout(() => commands.get(command) === failed && commands.delete(command), commandRetryMs).unref();
		});
	}
	return result;
}

export function resolveTemplate(value: string, env: Record<string, string | undefined>): string | undefined {
	let out = "";
	for (let i = 0; i < value.length; i++) {
		const c = value[i];
		if (c !== "$") {
			out += c;
			continue;
		}
		const next = value[i + 1];
		if (next === "$" || next === "!") {
			out += next;
			i++;
			continue;
		}
		const braced = next === "{" ? /^\{([A-Za-z_][A-Za-z0-9_]*)\}/.exec(value.slice(i + 1)) : null;
		const bare = braced ? null : /^[A-Za-z_][A-Za-z0-9_]*/.exec(value.slice(i + 1));
		const name = braced?.[1] ?? bare?.[0];
		if (name === undefined) {
			out += c;
			continue;
		}
		const found = env[name];
		if (found === undefined || found === "") return undefined;
		out += found;
		i += (braced ? braced[0] : name).length;
	}
	return out;
}

export async function resolveSecret(
	secret: Secret,
	source: NodeJS.ProcessEnv = process.env,
): Promise<string | undefined> {
	if (secret.file !== undefined) return readKeyFile(secret.file);
	if (secret.value.startsWith("!")) return runCommand(secret.value.slice(1));
	return resolveTemplate(secret.value, { ...source, ...secret.env });
}

/** A principal's own key from its file (own-keys.ts): the trimmed text, or undefined if unreadable or empty. */
async function readKeyFile(path: string): Promise<string | undefined> {
	try {
		return (await readFile(path, "utf8")).trim() || undefined;
	} catch {
		return undefined;
	}
}
