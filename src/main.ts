import { mkdirSync } from "node:fs";
import { createRequire } from "node:module";
import { homedir } from "node:os";
import { dirname, join, resolve } from "node:path";
import { parseArgs } from "node:util";
import { setFlagsFromString } from "node:v8";
import { ZodError } from "zod";
import { databaseUrlOnArgv, hasPassword } from "./cluster/credentials.ts";
import { type ConfigInput, ConfigSchema } from "./config.ts";
import { createKey, readKeysFile, revokeKeys } from "./http/auth/keys.ts";
import { Scope, scopes } from "./http/auth/principals.ts";
import { startGateway } from "./server.ts";
import { startupNotices } from "./startup-notices.ts";

/** package.json sits one folder up from both src/main.ts (npm start) and dist/main.js (the bin). */
const version: string = createRequire(import.meta.url)("../package.json").version;

/** A signal within this long after the first is the same one delivered twice, not a second. */
const sameSignalMs = 200;

/** Flag name (kebab-case) ↔ config key ↔ env var PI_GATEWAY_<SNAKE>. */
const kebab = (key: string) => key.replace(/[A-Z]/g, (ch) => `-${ch.toLowerCase()}`);
const envName = (key: string) => `PI_GATEWAY_${kebab(key).replaceAll("-", "_").toUpperCase()}`;
const shape = ConfigSchema.shape;
type Key = keyof typeof shape;
const keys = Object.keys(shape) as Key[];
const booleans = new Set<Key>(["demo", "autoResume", "auth", "workspaceChanges"]);
const lists = new Set<Key>(["allowedHosts", "corsOrigins", "piCommand", "sandboxWritable", "passEnv", "webhookAllow"]);
// Secrets with no flag at all: on argv every local process could read them.
const envOnly = new Set<Key>(["clusterSecret"]);

function help(): string {
	const lines = keys.map((key) => {
		const schema = shape[key];
		const fallback = (() => {
			try {
				const value = schema.parse(undefined);
				return value === undefined ? "none" : JSON.stringify(value);
			} catch {
				return "none";
			}
		})();
		const flag = envOnly.has(key)
			? `(${kebab(key)}: no flag)`
			: booleans.has(key)
				? `--[no-]${kebab(key)}`
				: `--${kebab(key)} <value>`;
		return `  ${flag.padEnd(34)} ${schema.description ?? ""}\n  ${"".padEnd(34)} env ${envName(key)}, default ${fallback}`;
	});
	return [
		"pi-gateway — HTTP REST + SSE for pi's RPC mode",
		"",
		"Usage: pi-gateway [options]",
		"       pi-gateway keys create|list|revoke … (pi-gateway keys --help)",
		"       pi-gateway acp --url GW [--extensions a,b] [--model provider/id] [--cwd-map LOCAL=REMOTE] [--token-file F]",
		"",
		...lines,
		`  ${"--extension <name=path>".padEnd(34)} Same as --extensions; repeatable`,
		`  ${"-h, --help".padEnd(34)} This text`,
		`  ${"-V, --version".padEnd(34)} The version of pi-gateway`,
		"",
		"Lists (allowed hosts, CORS origins, extensions, pass-env, sandbox-writable, webhook-allow) are comma-separated; --pi-command splits on spaces.",
		"With no token given, one is generated at first start in <data-dir>/token (mode 0600) and reused after.",
		"Relative extension paths are resolved against the current directory.",
		"With no --provider/--model the offline demo model is used.",
	].join("\n");
}

function readInput(argv: string[]): { input: ConfigInput; tokenOnArgv: boolean; databaseUrlOnArgv: boolean } {
	const options = Object.fromEntries(
		keys
			.filter((key) => !envOnly.has(key))
			.map((key) => [kebab(key), { type: booleans.has(key) ? ("boolean" as const) : ("string" as const) }]),
	);
	const { values } = parseArgs({
		args: argv,
		allowNegative: true,
		options: {
			...options,
			extension: { type: "string", multiple: true },
			help: { type: "boolean", short: "h" },
			version: { type: "boolean", short: "V" },
		},
		strict: true,
	});
	if (values.help) {
		console.log(help());
		process.exit(0);
	}
	if (values.version) {
		console.log(version);
		process.exit(0);
	}
	const input: Record<string, unknown> = {};
	for (const key of keys) {
		const raw = (values as Record<string, string | boolean | undefined>)[kebab(key)] ?? process.env[envName(key)];
		// An empty env var means unset (PI_GATEWAY_TOKEN= in a unit file must not be a token); empty
		// Node options mean none, Node's defaults.
		if (raw === undefined || (raw === "" && key !== "piNodeOptions")) continue;
		if (booleans.has(key)) input[key] = raw === true || raw === "true" || raw === "1";
		else if (key === "piCommand") input[key] = String(raw).split(" ").filter(Boolean);
		else if (lists.has(key))
			input[key] = String(raw)
				.split(",")
				.map((s) => s.trim())
				.filter(Boolean);
		else if (key === "extensions") input[key] = parsePairs(String(raw).split(","));
		else input[key] = raw;
	}
	if (values.extension)
		input.extensions = { ...(input.extensions as object), ...parsePairs(values.extension as string[]) };
	const given = values as Record<string, unknown>;
	return {
		input: input as ConfigInput,
		tokenOnArgv: given.token !== undefined,
		databaseUrlOnArgv: typeof given["database-url"] === "string" && hasPassword(given["database-url"]),
	};
}

function parsePairs(pairs: string[]): Record<string, string> {
	return Object.fromEntries(
		pairs.map((pair) => {
			const at = pair.indexOf("=");
			if (at < 1) throw new Error(`Expected name=path, got ${JSON.stringify(pair)}`);
			return [pair.slice(0, at), pair.slice(at + 1)];
		}),
	);
}

const keysUsage = [
	"Usage: pi-gateway keys create --principal NAME --scopes SCOPE[,SCOPE] [--expires-in-days N] [--keys-file F]",
	"       pi-gateway keys list [--json] [--keys-file F]",
	"       pi-gateway keys revoke ID|PRINCIPAL [--keys-file F]",
	"",
	"  create   adds a key and prints its secret on stdout, the only time it is shown",
	"  list     every key: id, principal, scopes, created, expires (never a secret or its hash)",
	"  revoke   removes the key with this id, or every key of this principal; a running gateway",
	"           stops accepting it within a second (it polls the keys file; SIGHUP reloads at once)",
	"",
	`Scopes: ${scopes.join(", ")}`,
	"The keys file: --keys-file, else PI_GATEWAY_KEYS_FILE, else <data-dir>/keys.json (--data-dir, PI_GATEWAY_DATA_DIR, ~/.pi-gateway).",
].join("\n");

/** `pi-gateway keys create|list|revoke`: the keys file, edited as the running gateway reads it. */
function keysCommand(argv: string[]): void {
	const { positionals, values } = parseArgs({
		args: argv,
		allowPositionals: true,
		options: {
			principal: { type: "string" },
			scopes: { type: "string" },
			"expires-in-days": { type: "string" },
			"keys-file": { type: "string" },
			"data-dir": { type: "string" },
			json: { type: "boolean" },
			help: { type: "boolean", short: "h" },
		},
		strict: true,
	});
	const [verb, name, ...extra] = positionals;
	if (values.help || verb === "help") {
		console.log(keysUsage);
		return;
	}
	const dataDir = values["data-dir"] ?? process.env.PI_GATEWAY_DATA_DIR ?? join(homedir(), ".pi-gateway");
	const file = resolve(values["keys-file"] ?? process.env.PI_GATEWAY_KEYS_FILE ?? join(dataDir, "keys.json"));
	if (verb === "list" && !name) {
		listKeys(file, values.json === true);
		return;
	}
	if (verb === "revoke" && name && extra.length === 0) {
		const gone = revokeKeys(file, name);
		if (gone.length === 0) throw new Error(`no key with the id or principal ${JSON.stringify(name)} in ${file}`);
		for (const key of gone) console.error(`pi-gateway: key ${key.id} of ${key.principal} revoked in ${file}`);
		return;
	}
	if (verb !== "create" || name || !values.principal || !values.scopes) throw new Error(keysUsage);
	const requested = values.scopes
		.split(",")
		.map((s) => s.trim())
		.filter(Boolean);
	const parsed = Scope.array().min(1).safeParse(requested);
	if (!parsed.success) throw new Error(`--scopes: each of ${scopes.join(", ")}`);
	const days = values["expires-in-days"] === undefined ? undefined : Number(values["expires-in-days"]);
	if (days !== undefined && !(days > 0)) throw new Error("--expires-in-days: a positive number");
	mkdirSync(dirname(file), { recursive: true, mode: 0o700 });
	const { secret, record } = createKey(
		file,
		values.principal,
		parsed.data,
		days === undefined ? undefined : new Date(Date.now() + days * 86_400_000),
	);
	console.error(
		`pi-gateway: key ${record.id} for ${record.principal} (${record.scopes.join(",")}) added to ${file}; the secret below is shown only now`,
	);
	console.log(secret);
}

/** One line per key (or a JSON array with --json); the hash stays in the file. */
function listKeys(file: string, json: boolean): void {
	const keys = readKeysFile(file).map(({ hash: _hash, ...key }) => key);
	if (json) console.log(JSON.stringify(keys, null, 2));
	else if (keys.length === 0) console.error(`pi-gateway: no keys in ${file}`);
	else {
		const rows = [
			["ID", "PRINCIPAL", "SCOPES", "CREATED", "EXPIRES"],
			...keys.map((k) => [k.id, k.principal, k.scopes.join(","), k.createdAt ?? "-", k.expiresAt ?? "never"]),
		];
		const widths = (rows[0] as string[]).map((_, i) => Math.max(...rows.map((row) => (row[i] as string).length)));
		for (const row of rows)
			console.log(
				row
					.map((cell, i) => cell.padEnd(widths[i] as number))
					.join("  ")
					.trimEnd(),
			);
	}
}

async function main(): Promise<void> {
	if (process.argv[2] === "acp") {
		// The ACP bridge (src/acp/): stdout is the protocol's, so errors go to stderr only.
		const { acpCommand } = await import("./acp/cli.ts");
		try {
			await acpCommand(process.argv.slice(3));
		} catch (error) {
			console.error(`pi-gateway acp: ${(error as Error).message}`);
			process.exit(2);
		}
		process.exit(0);
	}
	if (process.argv[2] === "backup" || process.argv[2] === "restore") {
		(await import("./backup.ts")).backupCli(process.argv[2], process.argv.slice(3));
		return;
	}
	if (process.argv[2] === "keys") {
		try {
			keysCommand(process.argv.slice(3));
		} catch (error) {
			console.error(`pi-gateway: ${(error as Error).message}`);
			process.exit(2);
		}
		return;
	}
	// A process-wide V8 setting, so the CLI's: after paced traffic V8 put the log's events in old space
	// for good and floods cost 2× (BENCHMARKS.md, fourth pass). Read at each GC, so it takes effect now.
	setFlagsFromString("--no-allocation-site-pretenuring");
	let gateway: Awaited<ReturnType<typeof startGateway>>;
	try {
		const { input, tokenOnArgv, databaseUrlOnArgv: urlOnArgv } = readInput(process.argv.slice(2));
		if (urlOnArgv) console.error(`pi-gateway: WARNING: ${databaseUrlOnArgv}`);
		gateway = await startGateway(input, undefined, {
			tokenFrom: tokenOnArgv ? "argv" : "env",
			databasePasswordOnArgv: urlOnArgv,
		});
	} catch (error) {
		const message =
			error instanceof ZodError
				? error.issues.map((i) => `--${i.path.map(String).map(kebab).join(".")}: ${i.message}`).join("\n")
				: (error as Error).message;
		console.error(`pi-gateway: ${message}`);
		process.exit(2);
	}
	for (const line of startupNotices(gateway)) console.error(line);
	// Whatever ends this process, no pi child outlives it unasked (they would also exit on stdin EOF).
	process.on("exit", () => gateway.registry.killAll());
	let firstSignalAt: number | undefined;
	const stop = (signal: string) => {
		if (firstSignalAt !== undefined) {
			// One signal delivered twice at once counts once: Ctrl-C reaches npm and the gateway, and npm
			// passes it on; so does a signal to the process group.
			if (Date.now() - firstSignalAt < sameSignalMs) return;
			console.error(`pi-gateway: second ${signal}, killing every pi process now`);
			process.exit(1);
		}
		firstSignalAt = Date.now();
		const ms = gateway.config.drainTimeoutMs;
		console.error(
			`pi-gateway: ${signal}, stopping every session once runs in progress settle (at most ${ms} ms, --drain-timeout-ms; a second signal stops at once)…`,
		);
		gateway.close({ drain: true }).then(
			() => process.exit(0),
			(error) => {
				console.error(`pi-gateway: shutdown failed: ${(error as Error).message}`);
				process.exit(1);
			},
		);
	};
	// SIGHUP reloads the keys file (a change to it is also picked up by itself).
	process.on("SIGHUP", () => gateway.keys?.reload());
	process.on("SIGTERM", () => stop("SIGTERM"));
	process.on("SIGINT", () => stop("SIGINT"));
}

await main();
