import { existsSync, readFileSync } from "node:fs";
import { isAbsolute } from "node:path";
import { z } from "zod";
import { GatewayError } from "../shared/errors.ts";

/**
 * A principal's own provider keys (issue 42 item 5): the operator names, per principal and
 * provider, where the key is (`env:NAME`, a variable of the gateway's environment, or
 * `file:/abs/path`, a file the gateway reads), never the key itself. They live in the keys file's
 * `providerKeys` (`{ "alice": { "openai": "env:ALICE_OPENAI_KEY" } }`), written by `pi-gateway keys`;
 * the keys file is never shown to a sandbox, and the key is read only by the relay, at each call of
 * that principal's sessions (own-key-plan.ts).
 */
export const OwnKeySource = z
	.string()
	.regex(
		/^(env:[A-Za-z_][A-Za-z0-9_]*|file:\/.+)$/,
		"env:NAME (a variable of the gateway's environment) or file:/absolute/path (a file holding the key)",
	)
	.refine((s) => !s.startsWith("file:") || isAbsolute(s.slice(5)), "file: takes an absolute path");

/** A provider as pi names it (`openai`, `anthropic`, a models.json provider). */
export const ProviderId = z.string().regex(/^[A-Za-z0-9][\w.-]{0,99}$/, "a provider's id as pi names it");

/** principal → provider → where its key is. */
export const ProviderKeys = z.record(z.string(), z.record(ProviderId, OwnKeySource));
export type ProviderKeys = z.infer<typeof ProviderKeys>;

/** Every principal's own keys in the keys file (none when there is no file or no section). */
export function readProviderKeys(keysFile: string | undefined): ProviderKeys {
	if (!keysFile || !existsSync(keysFile)) return {};
	const text = readFileSync(keysFile, "utf8");
	let parsed: unknown;
	try {
		parsed = JSON.parse(text);
	} catch (error) {
		throw new Error(`The keys file ${keysFile} is invalid: ${(error as Error).message}`);
	}
	const section = (parsed as { providerKeys?: unknown } | null)?.providerKeys;
	if (section === undefined) return {};
	const result = ProviderKeys.safeParse(section);
	if (!result.success)
		throw new Error(`The keys file ${keysFile}'s providerKeys is invalid: ${z.prettifyError(result.error)}`);
	return result.data;
}

/**
 * `principal`'s own keys, by provider (an own Map: a principal or provider named `__proto__` is a
 * key like any other). A keys file that cannot be read throws: the spawn fails rather than give the
 * principal's session the operator's keys.
 */
export function ownKeysOf(keysFile: string | undefined, principal: string | undefined): Map<string, string> {
	if (principal === undefined) return new Map();
	let keys: ProviderKeys;
	try {
		keys = readProviderKeys(keysFile);
	} catch {
		// Not the file's path or its parse error: a client reads this.
		throw new GatewayError(
			503,
			"provider_keys_unreadable",
			"The gateway cannot read the principals' own provider keys (the keys file's providerKeys), so it starts no session that could need one; `pi-gateway keys list` says why",
		);
	}
	const all = new Map(Object.entries(keys));
	return new Map(Object.entries(all.get(principal) ?? {}));
}

/**
 * What is wrong with a key source as the gateway would read it now, or undefined when it gives a
 * key. Says where, never what the key is (the value is not read into any message).
 */
export function ownKeyProblem(source: string, env: NodeJS.ProcessEnv = process.env): string | undefined {
	if (source.startsWith("env:")) {
		const name = source.slice(4);
		return env[name] ? undefined : `the variable ${name} is not set in the gateway's environment`;
	}
	const path = source.slice(5);
	try {
		return readFileSync(path, "utf8").trim() ? undefined : `the file ${path} is empty`;
	} catch (error) {
		return `the file ${path} cannot be read (${(error as NodeJS.ErrnoException).code ?? "error"})`;
	}
}

/** Every own key's problem, as lines for the operator (startup, `keys list`). */
export function ownKeyProblems(keys: ProviderKeys, env: NodeJS.ProcessEnv = process.env): string[] {
	const lines: string[] = [];
	for (const [principal, providers] of Object.entries(keys))
		for (const [provider, source] of Object.entries(providers)) {
			const problem = ownKeyProblem(source, env);
			if (problem)
				lines.push(
					`${principal}'s own key for ${provider} (${source}): ${problem}; that principal's calls to ${provider} fail until it is fixed (the operator's key is not used instead)`,
				);
		}
	return lines;
}

/** The files own keys are read from: hidden from every sandbox, whatever folder they lie in. */
export function ownKeyFiles(keysFile: string | undefined): string[] {
	let keys: ProviderKeys;
	try {
		keys = readProviderKeys(keysFile);
	} catch {
		return [];
	}
	return Object.values(keys)
		.flatMap((providers) => Object.values(providers))
		.filter((s) => s.startsWith("file:"))
		.map((s) => s.slice(5))
		.filter((path) => existsSync(path));
}
