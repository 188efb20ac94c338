import { mkdirSync } from "node:fs";
import { homedir } from "node:os";
import { dirname, join, resolve } from "node:path";
import { parseArgs } from "node:util";
import { closest } from "../config/names.ts";
import { readSettings } from "../config/sources.ts";
import { createKey, KeyRecord, readKeysFile, revokeKeys } from "../http/auth/keys.ts";
import { Scope, scopes } from "../http/auth/principals.ts";
import { listProviderKeys, parseProviderKey, providerKeyUsage, setProviderKeys } from "./provider-keys.ts";

export const keysUsage = [
	"Usage: pi-gateway keys create --principal NAME --scopes SCOPE[,SCOPE] [--expires-in-days N]",
	"                              [--provider-key PROVIDER=SOURCE ...]",
	"       pi-gateway keys list [--json]",
	"       pi-gateway keys revoke ID|PRINCIPAL",
	...providerKeyUsage.slice(0, 1),
	"  each also takes [--keys-file F] [--data-dir D] [--config FILE]",
	"",
	"  create   adds a key and prints its secret on stdout, the only time it is shown",
	"  list     every key: id, principal, scopes, created, expires (never a secret or its hash)",
	"  revoke   removes the key with this id, or every key of this principal",
	...providerKeyUsage.slice(1),
	"",
	"A running gateway reads the same file and takes a created or revoked key from its next request, without",
	"a restart (a request with a key reads a changed file first; open streams see it within a second).",
	`Scopes: ${scopes.join(", ")}`,
	"The keys file: --keys-file, else PI_GATEWAY_KEYS_FILE, else keys-file in the config file, else",
	"<data-dir>/keys.json — where the gateway reads it too (data dir: --data-dir, PI_GATEWAY_DATA_DIR,",
	"the config file's data-dir, else ~/.pi-gateway).",
].join("\n");

const options = {
	principal: { type: "string" },
	scopes: { type: "string" },
	"expires-in-days": { type: "string" },
	"provider-key": { type: "string", multiple: true },
	"keys-file": { type: "string" },
	"data-dir": { type: "string" },
	config: { type: "string" },
	json: { type: "boolean" },
	help: { type: "boolean", short: "h" },
} as const;

/** A mistake: what was wrong, then the usage. */
const wrong = (what: string) => new Error(`${what}\n\n${keysUsage}`);

/** `pi-gateway keys create|list|revoke`: the keys file, edited as the running gateway reads it. */
export function keysCommand(argv: string[], env: NodeJS.ProcessEnv = process.env): void {
	const { positionals, values, tokens } = parseArgs({
		args: argv,
		allowPositionals: true,
		options,
		strict: false,
		tokens: true,
	});
	for (const token of tokens)
		if (token.kind === "option" && !(token.name in options)) {
			const guess = closest(token.name, Object.keys(options));
			throw wrong(`unknown option ${token.rawName}${guess ? `; did you mean --${guess}?` : ""}`);
		}
	const text = (name: keyof typeof options) => {
		const value = values[name];
		if (value === true) throw wrong(`--${name} needs a value`);
		return value as string | undefined;
	};
	const [verb, name, ...extra] = positionals;
	if (values.help || verb === "help") {
		console.log(keysUsage);
		return;
	}
	const file = keysFile(text("keys-file"), text("data-dir"), text("config"), env);
	if (verb === undefined) throw wrong("which keys command? create, list or revoke");
	const providerKeys = (values["provider-key"] ?? []) as (string | boolean)[];
	if (providerKeys.some((v) => typeof v !== "string")) throw wrong("--provider-key needs PROVIDER=SOURCE");
	if (verb === "provider-key") {
		if (!name || extra.length === 0)
			throw wrong("keys provider-key needs a principal and PROVIDER=SOURCE (e.g. alice openai=env:ALICE_OPENAI_KEY)");
		setProviderKeys(file, principalName(name), extra.map(String));
		return;
	}
	if (verb === "list") {
		if (name) throw wrong(`keys list takes no argument (got ${JSON.stringify(name)})`);
		listKeys(file, values.json === true);
		return;
	}
	if (verb === "revoke") {
		if (!name) throw wrong("keys revoke needs the key's id or its principal (pi-gateway keys list shows both)");
		if (extra.length > 0) throw wrong(`keys revoke takes one id or principal (got also ${extra.join(" ")})`);
		const gone = revokeKeys(file, name);
		if (gone.length === 0)
			throw new Error(
				`no key with the id or principal ${JSON.stringify(name)} in ${file} (pi-gateway keys list shows the keys there)`,
			);
		for (const key of gone)
			console.error(
				`pi-gateway: key ${key.id} of ${key.principal} revoked in ${file}; a running gateway refuses it now`,
			);
		return;
	}
	if (verb !== "create")
		throw wrong(`unknown keys command ${JSON.stringify(verb)}: the commands are create, list, revoke, provider-key`);
	if (name) throw wrong(`keys create takes no argument (got ${JSON.stringify(name)}); name the owner with --principal`);
	create(file, text("principal"), text("scopes"), text("expires-in-days"), providerKeys as string[]);
}

function principalName(principal: string): string {
	const owner = KeyRecord.shape.principal.safeParse(principal);
	if (!owner.success)
		throw wrong(`--principal ${JSON.stringify(principal)}: ${owner.error.issues.map((i) => i.message).join("; ")}`);
	return owner.data;
}

function create(
	file: string,
	principal?: string,
	scopeList?: string,
	expires?: string,
	providerKeys: string[] = [],
): void {
	if (!principal) throw wrong("keys create needs --principal NAME: who the key is for (e.g. --principal erin)");
	const owner = { data: principalName(principal) };
	for (const entry of providerKeys) parseProviderKey(entry);
	if (!scopeList) throw wrong(`keys create needs --scopes: one or more of ${scopes.join(", ")}, comma-separated`);
	const requested = scopeList
		.split(",")
		.map((s) => s.trim())
		.filter(Boolean);
	const unknown = requested.filter((s) => !Scope.safeParse(s).success);
	if (unknown.length > 0 || requested.length === 0)
		throw wrong(
			`--scopes ${JSON.stringify(scopeList)}: ${unknown.length > 0 ? `${unknown.map((s) => JSON.stringify(s)).join(", ")} is not a scope` : "no scope given"}; the scopes are ${scopes.join(", ")}`,
		);
	const days = expires === undefined ? undefined : Number(expires);
	if (days !== undefined && !(days > 0))
		throw wrong(`--expires-in-days ${JSON.stringify(expires)}: a number of days above 0 (e.g. 90)`);
	mkdirSync(dirname(file), { recursive: true, mode: 0o700 });
	const { secret, record } = createKey(
		file,
		owner.data,
		requested as Scope[],
		days === undefined ? undefined : new Date(Date.now() + days * 86_400_000),
	);
	console.error(
		`pi-gateway: key ${record.id} for ${record.principal} (${record.scopes.join(",")}) added to ${file}; a running gateway reading that file accepts it from its next request. The secret below is shown only now`,
	);
	console.log(secret);
	if (providerKeys.length > 0) setProviderKeys(file, record.principal, providerKeys);
}

/** Where the gateway reads its keys with the same flags, env and config file: so a new key works there. */
function keysFile(
	flag: string | undefined,
	dataDirFlag: string | undefined,
	config: string | undefined,
	env: NodeJS.ProcessEnv,
): string {
	const argv = [
		...(flag ? ["--keys-file", flag] : []),
		...(dataDirFlag ? ["--data-dir", dataDirFlag] : []),
		...(config ? ["--config", config] : []),
	];
	const command = readSettings(argv, env);
	const input = command.kind === "start" ? command.settings.input : {};
	return resolve(input.keysFile ?? join(input.dataDir ?? join(homedir(), ".pi-gateway"), "keys.json"));
}

/**
 * One line per key (or a JSON array with --json); the hash stays in the file. With --json each key
 * carries its principal's own provider keys (where each is and what is wrong with it, never the
 * key), so a script sees what the table's "provider key" lines say.
 */
function listKeys(file: string, json: boolean): void {
	const keys = readKeysFile(file).map(({ hash: _hash, ...key }) => key);
	if (json) {
		const own = listProviderKeys(file, true) as { principal: string; problem?: string }[];
		const withOwn = keys.map((key) => ({
			...key,
			providerKeys: own
				.filter((row) => row.principal === key.principal)
				.map(({ principal: _p, ...row }) => ({ ...row, problem: row.problem ?? null })),
		}));
		console.log(JSON.stringify(withOwn, null, 2));
	} else if (keys.length === 0) console.error(`pi-gateway: no keys in ${file}`);
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
	if (!json) listProviderKeys(file, false);
}
