import {
	booleans,
	configEnv,
	envName,
	envOnly,
	type Key,
	kebab,
	lists,
	settingKeys,
	settingSchema,
	shape,
} from "./names.ts";

/**
 * `pi-gateway --help`, in sections: each setting of the one schema (src/config/config.ts) under the
 * heading an operator looks for, with its flag, env var, config-file key and its real default.
 * A setting missing from every section lands in "Other" (a unit test keeps that empty).
 */
export const sections: readonly { title: string; intro: string; keys: readonly Key[] }[] = [
	{
		title: "Server",
		intro: "where it listens, what it logs, how long clients may take",
		keys: [
			"host",
			"port",
			"dataDir",
			"logLevel",
			"logFormat",
			"allowedHosts",
			"corsOrigins",
			"headersTimeoutMs",
			"requestTimeoutMs",
			"maxConnections",
			"maxHalfOpenConnections",
			"maxBodyBytes",
			"drainTimeoutMs",
		],
	},
	{
		title: "Auth",
		intro: "who may call: the token, API keys, an identity provider's JWTs; limits per principal",
		keys: [
			"auth",
			"token",
			"tokenFile",
			"keysFile",
			"jwtJwksUrl",
			"jwtIssuer",
			"jwtAudience",
			"jwtPrincipalClaim",
			"jwtScopesClaim",
			"jwtJwksCooldownMs",
			"streamTicketTtlMs",
			"rateLimitRequests",
			"rateLimitWindowMs",
			"maxSessionsPerPrincipal",
			"maxLiveSessionsPerPrincipal",
			"maxAuditEntries",
			"maxAuditEntriesPerPrincipal",
		],
	},
	{
		title: "Model and pi",
		intro: "the model sessions use and how pi is started",
		keys: ["demo", "provider", "model", "extensions", "piCommand", "piNodeOptions", "piAgentDir", "passEnv"],
	},
	{
		title: "Sessions",
		intro: "how many, for how long, and the bounds of each",
		keys: [
			"maxSessions",
			"maxLiveSessions",
			"idleTimeoutMs",
			"ephemeralIdleTimeoutMs",
			"warmPool",
			"autoResume",
			"maxQueued",
			"maxImageBytes",
			"commandTimeoutMs",
			"startupTimeoutMs",
			"shutdownGraceMs",
			"waitTimeoutMs",
			"maxLineChars",
			"stderrTailBytes",
			"idempotencyTtlMs",
			"maxIdempotencyKeys",
			"maxIdempotencyKeysPerPrincipal",
		],
	},
	{
		title: "MCP",
		intro: "the MCP server at /mcp (docs/mcp.md)",
		keys: ["mcpMaxSessions", "mcpMaxSessionsPerPrincipal", "mcpIdleTimeoutMs"],
	},
	{
		title: "Events",
		intro: "the event log kept for replay and the SSE streams",
		keys: [
			"eventLogMaxEvents",
			"eventLogMaxBytes",
			"sseHeartbeatMs",
			"sseMaxBufferedBytes",
			"maxSubscribers",
			"maxEventStreams",
			"maxNotifications",
		],
	},
	{
		title: "Approvals",
		intro: "dialogs pi opens: timeouts, policies, history",
		keys: [
			"approvalTimeoutMs",
			"maxPendingDialogs",
			"approvalPoliciesFile",
			"approvalHistoryMs",
			"maxApprovalHistory",
			"maxApprovalHistoryPerPrincipal",
		],
	},
	{
		title: "Sandbox",
		intro: "bubblewrap around each pi (README: what holds with and without it)",
		keys: ["sandbox", "sandboxTmpBytes", "sandboxWritable", "sandboxReadable", "sandboxAllowHosts"],
	},
	{
		title: "Workspace",
		intro: "where sessions work and what the folder routes may do",
		keys: [
			"workspaceRoot",
			"defaultCwd",
			"workspaceRetentionDays",
			"workspaceMaxUploadBytes",
			"workspaceMaxArchiveBytes",
			"workspaceMaxForkBytes",
			"workspaceMaxSearchResults",
			"workspaceSearchTimeoutMs",
			"workspaceRipgrep",
			"workspaceChanges",
			"workspaceSnapshotTimeoutMs",
			"workspaceMaxChangedFiles",
			"workspaceMaxDiffBytes",
			"workspaceMaxChangesBytes",
			"workspaceMaxSnapshotBytes",
		],
	},
	{
		title: "Cluster",
		intro: "several nodes on one PostgreSQL (docs/cluster.md)",
		keys: [
			"databaseUrl",
			"databaseUrlFile",
			"clusterSecret",
			"clusterSecretFile",
			"nodeName",
			"advertiseUrl",
			"leaseTtlMs",
			"workspaceSyncMaxBytes",
		],
	},
	{
		title: "Schedules",
		intro: "prompts a session runs on its own, every N seconds or on a cron (docs/schedules.md)",
		keys: ["scheduleMinIntervalSeconds", "maxSchedulesPerSession", "maxSchedulesPerPrincipal", "scheduleCheckMs"],
	},
	{
		title: "Webhooks",
		intro: "HTTP callbacks on session events (docs/webhooks.md)",
		keys: [
			"webhooksFile",
			"webhookAllow",
			"maxWebhooks",
			"webhookTimeoutMs",
			"webhookRetryBaseMs",
			"webhookMaxAttempts",
			"webhookConcurrency",
			"webhookMaxPending",
			"webhookMaxPendingPerPrincipal",
		],
	},
];

/** The help section a setting is listed in ("Other" for one nobody placed yet). */
export function sectionOf(key: Key): string {
	return sections.find((section) => section.keys.includes(key))?.title ?? "Other";
}

/** Defaults decided at start rather than in the schema, said as they really are. */
const decidedDefaults: Partial<Record<Key, string>> = {
	demo: "on unless --provider or --model is given",
	dataDir: "~/.pi-gateway",
	tokenFile: "PI_GATEWAY_TOKEN, else <data-dir>/token (generated at first start)",
	keysFile: "<data-dir>/keys.json",
	workspaceRoot: "<data-dir>/workspaces",
	defaultCwd: "own (root when --workspace-root is given)",
	piCommand: "the bundled pi on this Node",
	nodeName: "host name and a random suffix",
	advertiseUrl: "http://<host>:<port>",
	maxAuditEntriesPerPrincipal: "a tenth of --max-audit-entries",
	maxApprovalHistoryPerPrincipal: "a tenth of --max-approval-history",
	maxIdempotencyKeysPerPrincipal: "a tenth of --max-idempotency-keys",
	mcpMaxSessionsPerPrincipal: "a tenth of --mcp-max-sessions",
	webhookMaxPendingPerPrincipal: "a tenth of --webhook-max-pending",
};

function defaultOf(key: Key): string {
	const decided = decidedDefaults[key];
	if (decided) return decided;
	const value = settingSchema(key).default;
	if (value === undefined) return "none";
	if (Array.isArray(value) && value.length === 0) return "none";
	if (typeof value === "object" && value !== null && Object.keys(value).length === 0) return "none";
	if (booleans.has(key)) return value ? "on" : "off";
	return typeof value === "string" ? JSON.stringify(value) : String(value);
}

function flagOf(key: Key): string {
	if (envOnly.has(key)) return `(no flag: env or config file)`;
	if (booleans.has(key)) return `--[no-]${kebab(key)}`;
	const schema = settingSchema(key);
	if (schema.enum) return `--${kebab(key)} <${schema.enum.join("|")}>`;
	if (schema.type === "integer" || schema.type === "number") return `--${kebab(key)} <n>`;
	if (key === "piCommand") return `--${kebab(key)} <command>`;
	if (lists.has(key)) return `--${kebab(key)} <a,b,…>`;
	return `--${kebab(key)} <value>`;
}

const column = 36;
const entry = (flag: string, text: string) =>
	flag.length < column - 2 ? `  ${flag.padEnd(column - 2)}${text}` : `  ${flag}\n  ${"".padEnd(column - 2)}${text}`;

function option(key: Key): string {
	const where = `env ${envName(key)}, config ${kebab(key)}:, default ${defaultOf(key)}`;
	return `${entry(flagOf(key), shape[key].description ?? "")}\n  ${"".padEnd(column - 2)}${where}`;
}

export function help(): string {
	const placed = new Set(sections.flatMap((section) => section.keys));
	const others = settingKeys.filter((key) => !placed.has(key));
	const all = others.length > 0 ? [...sections, { title: "Other", intro: "", keys: others }] : sections;
	return [
		"pi-gateway — HTTP REST + SSE for pi's RPC mode",
		"",
		"Usage: pi-gateway [options]                  start the gateway (Ctrl-C stops it)",
		"       pi-gateway keys create|list|revoke …  API keys (pi-gateway keys --help)",
		"       pi-gateway acp --url GW …             the ACP bridge for editors (pi-gateway acp --help)",
		"       pi-gateway backup|restore FILE …      the data dir in one archive, and back (pi-gateway backup --help)",
		"",
		"Every setting below is taken, strongest first, from its flag, its env var, the config file, its default.",
		`The config file is YAML: --config FILE, else ${configEnv}, else <data-dir>/config.yaml when it exists;`,
		"its keys are the long flag names without `--` (port: 8080, allowed-hosts: [a, b]). Start-up prints",
		"which file was read and where each value that is not a default came from; --print-config shows all.",
		"",
		...all.flatMap((section) => [
			`${section.title}${section.intro ? ` — ${section.intro}` : ""}`,
			...section.keys.map(option),
			"",
		]),
		"Command line",
		entry("--config <file>", `The config file (env ${configEnv}; default <data-dir>/config.yaml if it exists)`),
		entry("--print-config", "Print every setting, its value and where it came from (secrets masked), then exit"),
		entry("--extension <name=path>", "Same as --extensions; repeatable"),
		entry("-h, --help", "This text"),
		entry("-V, --version", "The version of pi-gateway"),
		"",
		"Lists (allowed hosts, CORS origins, extensions, pass-env, sandbox-writable, sandbox-readable, webhook-allow) are comma-separated",
		"on the command line and in env vars, YAML lists in the config file; --pi-command splits on spaces.",
		"Relative paths are taken from the current directory on the command line and in env vars, from the",
		"config file's own folder in the file.",
	].join("\n");
}
