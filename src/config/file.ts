import { existsSync, readFileSync, statSync } from "node:fs";
import { dirname, join, resolve } from "node:path";
import { parse as parseYaml } from "yaml";
import { sectionOf } from "./help.ts";
import {
	closest,
	configEnv,
	envOnly,
	expectedValue,
	fromText,
	type Key,
	kebab,
	lists,
	pairs,
	secrets,
	settingKeys,
} from "./names.ts";

/**
 * The config file: YAML, because services are configured in it (Compose, Kubernetes, Ansible),
 * it takes comments, and the parser (`yaml`) is already a runtime dependency (approval policies
 * are YAML too); TOML would have added one. Its keys are the long flags without `--`, so there is
 * one name per setting everywhere; its values are what the schema takes (YAML lists and mappings
 * where the command line takes comma-separated text).
 */
export const configFileName = "config.yaml";

/** Which file applies: --config, else PI_GATEWAY_CONFIG, else <data-dir>/config.yaml if it exists. */
export function locateConfigFile(
	named: { path: string; by: string } | undefined,
	dataDir: string,
): { path: string; named?: string } {
	if (named) return { path: resolve(named.path), named: named.by };
	return { path: join(resolve(dataDir), configFileName) };
}

export interface ConfigFile {
	path: string;
	/** The schema's input for each setting the file gives. */
	values: Map<Key, unknown>;
}

const byName = new Map(settingKeys.map((key) => [kebab(key), key]));

/**
 * Settings that name files or folders: a relative one in the file is taken from the file's own
 * folder, as Compose and nginx do, not from wherever the gateway happened to start (systemd: /).
 */
const pathKeys = new Set<Key>([
	"dataDir",
	"tokenFile",
	"keysFile",
	"workspaceRoot",
	"databaseUrlFile",
	"clusterSecretFile",
	"piAgentDir",
	"approvalPoliciesFile",
	"webhooksFile",
	"sandboxWritable",
	"sandboxReadable",
	"extensions",
]);

function besideFile(key: Key, value: unknown, folder: string): unknown {
	if (!pathKeys.has(key)) return value;
	if (typeof value === "string") return resolve(folder, value);
	if (Array.isArray(value)) return value.map((item) => resolve(folder, String(item)));
	// Extensions: name → path, or a source with a scheme (builtin:mcp, npm:pkg) left as it is.
	if (typeof value === "object" && value !== null)
		return Object.fromEntries(
			Object.entries(value).map(([name, path]) => [
				name,
				typeof path === "string" && !/^[a-z][\w+.-]*:/i.test(path) ? resolve(folder, path) : path,
			]),
		);
	return value;
}

/**
 * The settings of the file at `path`, or undefined when there is none and none was named.
 * Every problem is an Error whose message says the file, the key and what to write instead.
 */
export function readConfigFile(location: { path: string; named?: string }): ConfigFile | undefined {
	const { path, named } = location;
	if (!existsSync(path)) {
		if (!named) return undefined;
		throw new Error(
			`${named} ${path}: no such file. Name an existing YAML file, or drop ${named} to read <data-dir>/${configFileName} when it exists`,
		);
	}
	let data: unknown;
	try {
		data = parseYaml(readFileSync(path, "utf8"));
	} catch (error) {
		throw new Error(`config file ${path} is not valid YAML: ${(error as Error).message}`);
	}
	if (data === null || data === undefined) return { path, values: new Map() };
	if (typeof data !== "object" || Array.isArray(data))
		throw new Error(`config file ${path}: expected a mapping of settings (port: 8787, host: 127.0.0.1, …)`);
	const openToOthers = (statSync(path).mode & 0o077) !== 0;
	const values = new Map<Key, unknown>();
	for (const [name, value] of Object.entries(data)) {
		const key = byName.get(name);
		if (!key) throw new Error(unknownKey(path, name));
		if (value === null || value === undefined) continue;
		// A database URL is a secret only with a password in it (user:password@host).
		const secret = key === "databaseUrl" ? /\/\/[^/@]*:[^/@]*@/.test(String(value)) : secrets.has(key);
		if (secret && openToOthers)
			throw new Error(
				`config file ${path} holds ${name} but other users may read it: chmod 600 ${path}, or give ${name} through ${envOnly.has(key) ? "its env var" : `--${name}-file`} instead`,
			);
		try {
			values.set(key, besideFile(key, fromFile(key, value), dirname(path)));
		} catch (error) {
			throw new Error(
				`config file ${path}, ${name}: ${(error as Error).message}; expected ${expectedValue(key)} (pi-gateway --help, section ${sectionOf(key)})`,
			);
		}
	}
	return { path, values };
}

function unknownKey(path: string, name: string): string {
	const guess = closest(kebab(name).replace(/^-+/, ""), byName.keys());
	const hint = guess ? `did you mean ${guess}? ` : "";
	return `config file ${path}: unknown setting ${JSON.stringify(name)}; ${hint}its keys are the long flags without -- (pi-gateway --help lists them; ${configEnv} or --config names another file)`;
}

/** YAML's own types pass as they are; text is read as on the command line; lists may be YAML lists. */
function fromFile(key: Key, value: unknown): unknown {
	if (typeof value === "string") return fromText(key, value);
	if (typeof value === "number" || typeof value === "boolean") return value;
	if (Array.isArray(value) && (lists.has(key) || key === "extensions")) {
		if (!value.every((item) => typeof item === "string" || typeof item === "number"))
			throw new Error("a list of plain values");
		const items = value.map(String);
		return key === "extensions" ? pairs(items) : items;
	}
	if (key === "extensions" && typeof value === "object" && value !== null) return value;
	throw new Error(`${Array.isArray(value) ? "a list" : "a mapping"} is not taken here`);
}
