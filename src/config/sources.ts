import { homedir } from "node:os";
import { join } from "node:path";
import { parseArgs } from "node:util";
import type { ZodError } from "zod";
import type { Config, ConfigInput } from "./config.ts";
import { type ConfigFile, locateConfigFile, readConfigFile } from "./file.ts";
import { sectionOf } from "./help.ts";
import {
	booleans,
	closest,
	configEnv,
	envName,
	envOnly,
	expectedValue,
	fromText,
	type Key,
	kebab,
	pairs,
	secrets,
	settingKeys,
	settingSchema,
	shape,
	shown,
} from "./names.ts";

/**
 * Every setting from its four places, strongest first: flag, env var, config file, default. Keeps
 * where each value came from, so start-up can say it and an error can name the flag, the env var
 * or the file's key that holds the bad value, with what to write instead.
 */
export type Source =
	| { from: "flag"; name: string; raw: unknown }
	| { from: "env"; name: string; raw: unknown }
	| { from: "file"; name: string; raw: unknown; path: string }
	| { from: "default" };

type Given = Exclude<Source, { from: "default" }>;

export interface Settings {
	input: ConfigInput;
	sources: Map<Key, Source>;
	/** The config file that applies (read, or absent at its default place). */
	file: { path: string; read: boolean };
	tokenOnArgv: boolean;
	printConfig: boolean;
	/** Lines for stderr before start: env vars that look like a setting's, misspelt. */
	warnings: string[];
}

/** PI_GATEWAY_* names that are not settings but read elsewhere (the CLI's file, acp, the demo model, scripts). */
const otherEnv = new Set([
	configEnv,
	"PI_GATEWAY_URL",
	"PI_GATEWAY_TOKEN_FILE",
	"PI_GATEWAY_DEMO_DELAY_MS",
	"PI_GATEWAY_NODE_DIR",
]);

/** An env var that is no setting but close to one is a typo that would otherwise do nothing, silently. */
function misspeltEnv(env: NodeJS.ProcessEnv): string[] {
	const names = settingKeys.map(envName);
	const known = new Set(names);
	return Object.keys(env)
		.filter((name) => name.startsWith("PI_GATEWAY_") && !known.has(name) && !otherEnv.has(name))
		.flatMap((name) => {
			const prefix = "PI_GATEWAY_".length;
			const guess = closest(
				name.slice(prefix),
				names.map((n) => n.slice(prefix)),
			);
			return guess
				? [`pi-gateway: WARNING: ${name} is no setting and is ignored; did you mean PI_GATEWAY_${guess}?`]
				: [];
		});
}

const commandLineOnly = {
	config: { type: "string" },
	"print-config": { type: "boolean" },
	extension: { type: "string", multiple: true },
	help: { type: "boolean", short: "h" },
	version: { type: "boolean", short: "V" },
} as const;

const options = {
	...Object.fromEntries(
		settingKeys
			.filter((key) => !envOnly.has(key))
			.map((key) => [kebab(key), { type: booleans.has(key) ? ("boolean" as const) : ("string" as const) }]),
	),
	...commandLineOnly,
};

const helpHint = "pi-gateway --help lists every option";

/**
 * argv → the flags given, with every mistake said as what was wrong and the fix: an unknown
 * option with the closest known one, a value missing or given to a switch, a stray word.
 */
function readFlags(argv: string[]): Record<string, string | boolean | string[] | undefined> {
	const { tokens, values } = parseArgs({
		args: argv,
		options,
		allowNegative: true,
		allowPositionals: true,
		strict: false,
		tokens: true,
	});
	for (const token of tokens) {
		if (token.kind === "positional")
			throw new Error(
				`unexpected argument ${JSON.stringify(token.value)}: the gateway takes only options; the commands are keys, acp, backup and restore (${helpHint})`,
			);
		if (token.kind !== "option") continue;
		const option = (options as Record<string, { type: string }>)[token.name];
		if (!option) {
			const guess = closest(token.name, Object.keys(options));
			const known = token.name.startsWith("no-") && booleans.has(key(token.name.slice(3)));
			if (known) continue;
			throw new Error(
				`unknown option ${token.rawName}${guess ? `; did you mean --${guess}?` : ""} (${helpHint}; settings are --kebab-case)`,
			);
		}
		if (option.type === "boolean" && token.inlineValue)
			throw new Error(
				`${token.rawName} is a switch and takes no value: write --${token.name} or --no-${token.name}, not ${token.rawName}=${token.value}`,
			);
		if (option.type === "string" && (token.value === undefined || (!token.inlineValue && token.value.startsWith("--"))))
			throw new Error(
				`${token.rawName} needs a value: ${token.rawName} <value> or ${token.rawName}=<value>${token.name in commandLineOnly ? "" : `, ${expectedValue(key(token.name))}`} (${helpHint})`,
			);
	}
	return values as Record<string, string | boolean | string[] | undefined>;
}

const key = (flag: string) => flag.replace(/-([a-z])/g, (_, ch: string) => ch.toUpperCase()) as Key;

export type Command = { kind: "help" } | { kind: "version" } | { kind: "start"; settings: Settings };

/** What the command line and the environment ask for: help, the version, or a start with these settings. */
export function readSettings(argv: string[], env: NodeJS.ProcessEnv = process.env): Command {
	const flags = readFlags(argv);
	if (flags.help) return { kind: "help" };
	if (flags.version) return { kind: "version" };
	const given = (k: Key): Given | undefined => {
		const flag = flags[kebab(k)];
		if (flag !== undefined) return { from: "flag", name: `--${kebab(k)}`, raw: flag };
		const text = env[envName(k)];
		// An empty env var means unset (PI_GATEWAY_TOKEN= in a unit file must not be a token); empty
		// Node options mean none, Node's defaults.
		if (text !== undefined && (text !== "" || k === "piNodeOptions"))
			return { from: "env", name: envName(k), raw: text };
		return undefined;
	};
	// The file's default place depends on the data dir, so that one is read from flag and env first.
	const named =
		typeof flags.config === "string"
			? { path: flags.config, by: "--config" }
			: env[configEnv]
				? { path: env[configEnv] as string, by: configEnv }
				: undefined;
	const dataDir = given("dataDir")?.raw;
	const location = locateConfigFile(named, typeof dataDir === "string" ? dataDir : join(homedir(), ".pi-gateway"));
	const file: ConfigFile | undefined = readConfigFile(location);
	const input: Record<string, unknown> = {};
	const sources = new Map<Key, Source>();
	for (const k of settingKeys) {
		const source: Given | undefined =
			given(k) ??
			(file?.values.has(k)
				? { from: "file" as const, name: kebab(k), raw: file.values.get(k), path: file.path }
				: undefined);
		if (!source) {
			sources.set(k, { from: "default" });
			continue;
		}
		sources.set(k, source);
		if (source.from === "file") input[k] = source.raw;
		else if (typeof source.raw === "boolean") input[k] = source.raw;
		else {
			try {
				input[k] = fromText(k, String(source.raw));
			} catch (error) {
				throw new Error(`${where(source, k)}: ${(error as Error).message}. ${expected(k)}`);
			}
		}
	}
	if (Array.isArray(flags.extension)) {
		input.extensions = { ...(input.extensions as object), ...pairs(flags.extension) };
		sources.set("extensions", { from: "flag", name: "--extension", raw: flags.extension });
	}
	return {
		kind: "start",
		settings: {
			input: input as ConfigInput,
			sources,
			file: { path: location.path, read: file !== undefined },
			tokenOnArgv: flags.token !== undefined,
			printConfig: flags["print-config"] === true,
			warnings: misspeltEnv(env),
		},
	};
}

/** Where a value came from, as the person would find it again: `--port abc`, `PI_GATEWAY_PORT=abc`, `port: abc in FILE`. */
function where(source: Source, k: Key): string {
	if (source.from === "default") return "the default";
	// A secret's value never reaches the terminal, not even a bad one (a database URL shows without its password).
	const raw = secrets.has(k)
		? shown(k, String(source.raw))
		: Array.isArray(source.raw)
			? source.raw.join(",")
			: String(source.raw);
	if (source.from === "flag") return `${source.name} ${JSON.stringify(raw)}`;
	if (source.from === "env") return `${source.name}=${JSON.stringify(raw)}`;
	return `${source.name}: ${JSON.stringify(raw)} in ${source.path}`;
}

function expected(k: Key): string {
	const fallback = settingSchema(k).default;
	const dflt = fallback === undefined ? "" : `, default ${JSON.stringify(fallback)}`;
	return `${shownDescription(k)}: ${expectedValue(k)}${dflt} (pi-gateway --help, section ${sectionOf(k)})`;
}

const shownDescription = (k: Key) => (shape[k].description ?? "").replace(/\.$/, "");

/** A schema refusal → one line per bad value: where it came from, what is wrong, what to write. */
export function explainConfigError(error: ZodError, sources: Map<Key, Source>): string {
	return error.issues
		.map((issue) => {
			const k = issue.path[0] as Key;
			const source = sources.get(k) ?? { from: "default" };
			const at = source.from === "default" ? `--${kebab(String(k))}` : where(source, k);
			const what =
				issue.code === "invalid_type" && (issue.expected === "number" || issue.expected === "int")
					? issue.expected === "int"
						? "not a whole number"
						: "not a number"
					: issue.code === "too_small"
						? issue.origin === "string"
							? `shorter than ${issue.minimum} characters`
							: `less than ${issue.minimum}`
						: issue.code === "too_big"
							? `more than ${issue.maximum}`
							: issue.code === "invalid_value"
								? "not one of the choices"
								: issue.message;
			return `${at}: ${what}. ${expected(k)}`;
		})
		.join("\npi-gateway: ");
}

/** Start-up's account of the settings: the file read (or where one would be), and every value not a default. */
export function settingsReport(settings: Settings, config: Config): string[] {
	const { file, sources } = settings;
	const lines = [
		file.read
			? `pi-gateway: config file ${file.path} read`
			: `pi-gateway: no config file (none at ${file.path}; --config FILE or ${configEnv} names one)`,
	];
	const set = [...sources].filter(([, source]) => source.from !== "default");
	const value = (k: Key) => shown(k, (config as unknown as Record<string, unknown>)[k]);
	const label = (s: Source) =>
		s.from === "file" ? "config file" : s.from === "flag" || s.from === "env" ? s.name : "";
	if (set.length > 0)
		lines.push(
			`pi-gateway: settings given: ${set.map(([k, s]) => `${kebab(k)}=${value(k)} (${label(s)})`).join(", ")}`,
		);
	lines.push(
		`pi-gateway: ${sources.size - set.length} other settings at their defaults (pi-gateway --print-config lists every value and its source)`,
	);
	return lines;
}

/** --print-config: every setting, its value as the gateway would use it, and where it came from. */
export function printConfig(settings: Settings, config: Config): string {
	const rows = settingKeys.map((k) => {
		const source = settings.sources.get(k) ?? { from: "default" };
		const from = source.from === "file" ? `file ${source.path}` : source.from === "default" ? "default" : source.name;
		return [kebab(k), shown(k, (config as unknown as Record<string, unknown>)[k]), from];
	});
	const widths = [0, 1].map((i) => Math.max(...rows.map((row) => (row[i] as string).length)));
	const head = settings.file.read ? `# config file ${settings.file.path}` : `# no config file at ${settings.file.path}`;
	return [
		head,
		...rows.map(([name, value, from]) =>
			`${(name as string).padEnd(widths[0] as number)}  ${(value as string).padEnd(Math.min(widths[1] as number, 40))}  # ${from}`.trimEnd(),
		),
	].join("\n");
}
