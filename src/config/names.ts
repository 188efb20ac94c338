import { z } from "zod";
import { ConfigSchema } from "./config.ts";

/**
 * The names one setting goes by, all derived from its key in the one schema (src/config/config.ts):
 * the flag `--kebab-case`, the env var `PI_GATEWAY_SNAKE_CASE` and the config file's `kebab-case`
 * key. Nothing here lists the settings again, only how some of them are written.
 */
export const shape = ConfigSchema.shape;
export type Key = keyof typeof shape;
export const settingKeys = Object.keys(shape) as Key[];

export const kebab = (key: string) => key.replace(/[A-Z]/g, (ch) => `-${ch.toLowerCase()}`);
export const envName = (key: string) => `PI_GATEWAY_${kebab(key).replaceAll("-", "_").toUpperCase()}`;
/** The env var naming a config file other than <data-dir>/config.yaml (--config on the command line). */
export const configEnv = "PI_GATEWAY_CONFIG";

export const booleans = new Set<Key>(["demo", "autoResume", "auth", "workspaceChanges"]);
export const lists = new Set<Key>([
	"allowedHosts",
	"corsOrigins",
	"piCommand",
	"sandboxWritable",
	"sandboxReadable",
	"sandboxAllowHosts",
	"passEnv",
	"webhookAllow",
]);
/** Secrets with no flag at all: on argv every local process could read them. */
export const envOnly = new Set<Key>(["clusterSecret"]);
/** Values never printed (start-up, --print-config): a database URL shows without its password. */
export const secrets = new Set<Key>(["token", "clusterSecret", "databaseUrl"]);

/** The setting's JSON Schema (input side): its type, range, choices and default, for messages and --help. */
export function settingSchema(key: Key): {
	type?: string;
	minimum?: number;
	maximum?: number;
	enum?: unknown[];
	format?: string;
	minLength?: number;
	default?: unknown;
} {
	return z.toJSONSchema(shape[key], { io: "input", unrepresentable: "any" }) as ReturnType<typeof settingSchema>;
}

/** What a value of this setting looks like, in words: "a whole number from 0 to 65535", "auto, on or off". */
export function expectedValue(key: Key): string {
	const schema = settingSchema(key);
	if (schema.enum) return `one of ${schema.enum.join(", ")}`;
	if (booleans.has(key)) return "true or false";
	if (schema.type === "integer" || schema.type === "number") {
		const what = schema.type === "integer" ? "a whole number" : "a number";
		const max = schema.maximum !== undefined && schema.maximum < Number.MAX_SAFE_INTEGER ? schema.maximum : undefined;
		if (schema.minimum !== undefined && max !== undefined) return `${what} from ${schema.minimum} to ${max}`;
		if (schema.minimum !== undefined) return `${what}, at least ${schema.minimum}`;
		return what;
	}
	if (schema.format === "uri") return "an http(s) URL";
	if (schema.type === "string" && schema.minLength) return `text of at least ${schema.minLength} characters`;
	if (key === "piCommand") return "a command (words split on spaces)";
	if (lists.has(key)) return "a comma-separated list";
	if (key === "extensions") return "name=path pairs, comma-separated";
	return "text";
}

/** Levenshtein distance, for "did you mean": small inputs only (option names). */
function distance(a: string, b: string): number {
	let previous = Array.from({ length: b.length + 1 }, (_, i) => i);
	for (let i = 1; i <= a.length; i++) {
		const row = [i];
		for (let j = 1; j <= b.length; j++)
			row[j] = Math.min(
				(previous[j] as number) + 1,
				(row[j - 1] as number) + 1,
				(previous[j - 1] as number) + (a[i - 1] === b[j - 1] ? 0 : 1),
			);
		previous = row;
	}
	return previous[b.length] as number;
}

/** The known name closest to `name` when it is close enough to be a typo (or a prefix of one), else undefined. */
export function closest(name: string, known: Iterable<string>): string | undefined {
	let best: string | undefined;
	let bestDistance = Number.POSITIVE_INFINITY;
	const wanted = name.toLowerCase();
	for (const candidate of known) {
		const lower = candidate.toLowerCase();
		const d = lower.startsWith(wanted) && wanted.length >= 3 ? 1 : distance(wanted, lower);
		if (d < bestDistance) [best, bestDistance] = [candidate, d];
	}
	return best !== undefined && bestDistance <= Math.max(2, Math.floor(wanted.length / 3)) ? best : undefined;
}

/** A value for start-up and --print-config: secrets masked, a database URL without its password. */
export function shown(key: Key, value: unknown): string {
	if (value === undefined) return "none";
	if (key === "databaseUrl" && typeof value === "string") {
		try {
			const url = new URL(value);
			if (url.password) url.password = "***";
			return url.href;
		} catch {
			return "***";
		}
	}
	if (secrets.has(key)) return "***";
	if (value instanceof Map) return JSON.stringify(Object.fromEntries(value));
	return typeof value === "string" ? value : JSON.stringify(value);
}

const truthy = new Set(["true", "1", "yes", "on"]);
const falsy = new Set(["false", "0", "no", "off"]);

/**
 * A setting written as text (a flag, an env var, a string in the config file) → the schema's input.
 * Throws a short reason ("not true or false") that the caller places after where the text came from.
 */
export function fromText(key: Key, raw: string): unknown {
	if (booleans.has(key)) {
		const word = raw.trim().toLowerCase();
		if (truthy.has(word)) return true;
		if (falsy.has(word)) return false;
		throw new Error(`${JSON.stringify(raw)} is not true or false`);
	}
	if (key === "piCommand") return raw.split(" ").filter(Boolean);
	if (lists.has(key))
		return raw
			.split(",")
			.map((s) => s.trim())
			.filter(Boolean);
	if (key === "extensions") return pairs(raw.split(",").map((s) => s.trim()));
	return raw;
}

/** `name=path` pairs → an object (the schema turns it into a Map). */
export function pairs(list: string[]): Record<string, string> {
	const out: Record<string, string> = {};
	for (const pair of list.filter(Boolean)) {
		const at = pair.indexOf("=");
		if (at < 1) throw new Error(`expected name=path, got ${JSON.stringify(pair)}`);
		// defineProperty: a name like __proto__ stays an own key of the plain object.
		Object.defineProperty(out, pair.slice(0, at), { value: pair.slice(at + 1), enumerable: true, writable: true });
	}
	return out;
}
