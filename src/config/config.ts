// Over 300 lines on purpose: every setting is one entry of the one zod schema that flags and env vars
// land in (DESIGN: "one zod schema for every setting"); split up, a setting would have two homes.
import { freemem, homedir } from "node:os";
import { join, resolve } from "node:path";
import { z } from "zod";
import { parseAllowHosts } from "../net/egress-allow.ts";
import { packageFile } from "../shared/package-files.ts";
import { checkPassEnvName, defaultPiNodeOptions, nodeFlagsProblem } from "./child-env.ts";
import { refuseOverlap } from "./layout-check.ts";

const int = (min: number) => z.coerce.number().int().min(min);

/** Every setting in one place; flags and env vars (PI_GATEWAY_*) both land here. */
export const ConfigSchema = z.object({
	host: z.string().default("127.0.0.1").describe("Address to listen on"),
	port: int(0).max(65535).default(8787).describe("Port to listen on (0 picks a free one)"),
	token: z
		.string()
		.min(16)
		.optional()
		.describe(
			"Bearer token for every route but /healthz, /readyz, /openapi.json, /openapi.yaml and /docs; prefer the env var or --token-file (argv is readable in /proc)",
		),
	tokenFile: z
		.string()
		.optional()
		.describe(
			"File holding the bearer token (default: PI_GATEWAY_TOKEN, else <data-dir>/token, generated at first start)",
		),
	keysFile: z
		.string()
		.optional()
		.describe(
			"JSON file of API keys (hashed, each with a principal, scopes and an optional expiry; `pi-gateway keys create` adds one), default <data-dir>/keys.json; reloaded on change or SIGHUP, so a key created or revoked takes effect without a restart",
		),
	jwtJwksUrl: z
		.url()
		.optional()
		.describe(
			"JWKS URL of an identity provider whose JWTs are accepted as bearer credentials (needs --jwt-issuer and --jwt-audience)",
		),
	jwtIssuer: z.string().optional().describe("The `iss` a JWT must carry"),
	jwtAudience: z.string().optional().describe("The `aud` a JWT must carry"),
	jwtPrincipalClaim: z.string().default("sub").describe("The JWT claim that names the principal"),
	jwtScopesClaim: z
		.string()
		.default("scope")
		.describe("The JWT claim that carries the scopes (a space-separated string or an array)"),
	jwtJwksCooldownMs: int(0)
		.default(30_000)
		.describe("Least time between two JWKS fetches for tokens naming an unknown key (key rotation)"),
	auth: z
		.boolean()
		.default(true)
		.describe(
			"Require the bearer token; --no-auth is refused beyond loopback and lets any local process answer approvals",
		),
	sandbox: z
		.enum(["auto", "on", "off"])
		.default("auto")
		.describe("Run each pi in bubblewrap (auto: when bwrap works; on: refuse to start without it; off: never)"),
	sandboxTmpBytes: int(1024 * 1024)
		.default(256 * 1024 * 1024)
		.describe(
			"Size of a sandboxed pi's private /tmp (memory-backed: unbounded, one agent filled the host's RAM); the hides over the data dir and workspace root get 1 MiB",
		),
	sandboxWritable: z
		.array(z.string())
		.default([])
		.describe("Extra paths a sandboxed pi may write (e.g. ~/.npm); its cwd, pi's agent dir and a private /tmp always"),
	sandboxReadable: z
		.array(z.string())
		.default([])
		.describe(
			"Extra paths a sandboxed pi and its tools may read (e.g. /srv/datasets, ~/.gitconfig) beside the system's allowlist (docs/security.md); refused at start when one is, holds or lies in the data dir, holds a secret file or the workspace root, or lies in the workspace root",
		),
	sandboxAllowHosts: z
		.array(z.string())
		.default([])
		.describe(
			"Hosts a sandboxed pi's tools may reach through the gateway's egress proxy (HTTP_PROXY): host names, *.suffix, addresses, each with an optional :port, or `registries` (npm, PyPI, Debian and Ubuntu mirrors). None by default: no network. A loopback, private, link-local or metadata address is reached only where an entry names that address (docs/security.md)",
		),
	passEnv: z
		.array(z.string())
		.default([])
		.describe("Extra environment variables pi gets besides the allow-list (never PI_GATEWAY_*)"),
	allowedHosts: z
		.array(z.string())
		.default([])
		.describe("Host header values accepted besides loopback names (DNS-rebinding guard)"),
	corsOrigins: z.array(z.string()).default([]).describe("Origins allowed by CORS (off when empty)"),
	// No default of the gateway's own directory: an agent told to `rm -rf` there deletes the gateway.
	workspaceRoot: z
		.string()
		.optional()
		.describe("Session cwds must lie inside this folder (default: <data-dir>/workspaces)"),
	defaultCwd: z
		.enum(["own", "root"])
		.optional()
		.describe(
			"Where a session without cwd works: own = a new folder <workspace-root>/<session id>, root = the workspace root itself (default: own, or root when --workspace-root is given)",
		),
	dataDir: z
		.string()
		.default(join(homedir(), ".pi-gateway"))
		.describe("Where the gateway keeps its session registry (gateway.db) and pi's session files"),
	databaseUrl: z
		.string()
		.regex(/^postgres(ql)?:\/\//, "a postgres:// or postgresql:// URL")
		.optional()
		.describe(
			"PostgreSQL for the session registry instead of <data-dir>/gateway.db: cluster mode, where every node on the same database serves every session; with a password prefer the env var or --database-url-file (argv is readable in /proc)",
		),
	databaseUrlFile: z
		.string()
		.optional()
		.describe("File holding the PostgreSQL URL of --database-url (its password stays off the command line)"),
	clusterSecret: z
		.string()
		.optional()
		.describe(
			"Cluster mode: the secret every node shares (at least 32 characters), which signs stream tickets and forwarded requests; never in the database. Env only, or --cluster-secret-file",
		),
	clusterSecretFile: z.string().optional().describe("Cluster mode: file holding the cluster secret"),
	leaseTtlMs: int(1000)
		.default(10_000)
		.describe(
			"Cluster mode: a node that has not renewed its lease for this long is dead; its pi processes are stopped by then and its sessions move to the other nodes",
		),
	drainTimeoutMs: int(0)
		.default(30_000)
		.describe(
			"On SIGTERM/SIGINT, how long runs in progress get to settle (/readyz, new runs and new sessions answer 503 with Retry-After meanwhile) before every session stops (cluster mode: hibernates and moves to other nodes); a second signal stops at once",
		),
	nodeName: z
		.string()
		.regex(/^[\w.:-]{1,100}$/)
		.optional()
		.describe("Cluster mode: this node's name in /v1/info and metrics (default: host name and port)"),
	advertiseUrl: z
		.url({ protocol: /^https?$/ })
		.optional()
		.describe("Cluster mode: the URL other nodes reach this one at (default: http://<host>:<port>)"),
	piCommand: z
		.array(z.string())
		.min(1)
		.optional()
		.describe("Command that starts pi (default: the bundled pi on this Node); `--mode rpc` is appended"),
	// On pi's node command line, not in NODE_OPTIONS: Node refuses --optimize-for-size there, and
	// NODE_OPTIONS would reach every node the agent's tools start. Figures: BENCHMARKS.md, table 9.
	piNodeOptions: z
		.string()
		.default(defaultPiNodeOptions)
		.superRefine((value, ctx) => {
			const problem = nodeFlagsProblem(value);
			if (problem) ctx.addIssue({ code: "custom", message: problem });
		})
		.describe(
			'Node flags for each pi child, space-separated, when pi runs on node (the bundled pi, or a --pi-command starting with node); "" for Node\'s defaults. On the command line write --pi-node-options="--flag …"',
		),
	piAgentDir: z.string().optional().describe("PI_CODING_AGENT_DIR for the children (pi's config folder)"),
	// Decided in parseConfig: on unless a provider or model is named, so a fresh install answers without a key.
	demo: z
		.boolean()
		.optional()
		.describe("Use the built-in offline demo model (default: on when neither --provider nor --model is given)"),
	provider: z.string().optional().describe("Default provider for new sessions"),
	model: z.string().optional().describe("Default model for new sessions"),
	// A Map, not an object: a session's extension names are user strings, and `__proto__` or
	// `constructor` must never find something through Object.prototype.
	extensions: z
		.record(z.string(), z.string())
		.default({})
		.transform((pairs) => new Map(Object.entries(pairs)))
		.describe("Extensions sessions may load, by name: name=path (permission-gate is always there)"),
	maxSessions: int(1).default(1000).describe("Sessions at most, stopped ones included"),
	maxLiveSessions: int(1)
		.default(32)
		.describe("pi processes at most; past it the least recently used idle session is hibernated"),
	// A minute: an idle pi holds ~75 MB and waking it is one cold start (~1 s); a run, a dialog
	// waiting for an answer or a client tool call is never idle (Session.isQuiet).
	idleTimeoutMs: int(0)
		.default(60_000)
		.describe(
			"Hibernate a persistent session's pi after this long without activity: its next command starts pi again on its file (0: never). A run, a pending approval or a client tool call is activity; an open event stream is not (it gets session_exit, resumable)",
		),
	ephemeralIdleTimeoutMs: int(0)
		.default(1_800_000)
		.describe(
			"Stop an ephemeral session (persist:false) after this long without activity: it cannot hibernate, so it is reaped (410 session_gone) (0: never)",
		),
	warmPool: int(0)
		.optional()
		.describe(
			"pi processes kept started ahead of demand for the operator's plain creates, so a new session starts at once; each other principal who made a plain create lately (the last N) gets one more in its own area; 0: no pool. Default: sized for the machine at start, N = free memory / 3.2 GB (so the whole pool, 2N idle pi of ~100 MB, holds at most 1/16 of what is free), at most 2 and at most a quarter of --max-live-sessions; 0 with --pi-command (its memory is unknown). A create that finds the default pool empty doubles it, up to 8 within the same 1/16 of free memory, back after 10 minutes without one; a --warm-pool N stays N",
		),
	autoResume: z.boolean().default(true).describe("A command to a stopped session starts pi again first"),
	maxImageBytes: int(1)
		.default(5 * 1024 * 1024)
		.describe("Largest image in a prompt (decoded bytes)"),
	streamTicketTtlMs: int(1000).default(60_000).describe("How long an event-stream ticket stays valid"),
	maxQueued: int(1).default(32).describe("Queued commands per session at most"),
	commandTimeoutMs: int(1).default(120_000).describe("How long pi may take to answer a command"),
	startupTimeoutMs: int(1).default(30_000).describe("How long pi may take to start"),
	shutdownGraceMs: int(1).default(3_000).describe("Wait after stdin close before SIGTERM, and again before SIGKILL"),
	eventLogMaxEvents: int(1).default(10_000).describe("Events kept per session for replay"),
	eventLogMaxBytes: int(1024)
		.default(16 * 1024 * 1024)
		.describe("Bytes of events kept per session for replay"),
	sseHeartbeatMs: int(100).default(15_000).describe("Interval of SSE heartbeat comments"),
	sseMaxBufferedBytes: int(1024)
		.default(4 * 1024 * 1024)
		.describe("Unsent bytes a slow SSE subscriber may hold before it is cut off"),
	maxSubscribers: int(1).default(64).describe("SSE subscribers per session at most"),
	maxEventStreams: int(1).default(64).describe("Subscribers of the all-sessions stream (GET /v1/events) at most"),
	headersTimeoutMs: int(1000)
		.default(10_000)
		.describe("Time a client has to send a request's headers (Node's default is 60 s); SSE streams are not affected"),
	requestTimeoutMs: int(1000)
		.default(30_000)
		.describe("Time a client has to send a whole request, body included; responses and SSE streams are not affected"),
	maxConnections: int(1)
		.default(1000)
		.describe("Open HTTP connections at most; past it the oldest half-open one is closed, else 503"),
	maxHalfOpenConnections: int(1)
		.default(100)
		.describe("New connections that have not sent complete headers yet at most; past it the oldest is closed"),
	maxBodyBytes: int(1024)
		.default(8 * 1024 * 1024)
		.describe("Largest request body"),
	maxLineChars: int(1024)
		.default(64 * 1024 * 1024)
		.describe("Longest line accepted from pi's stdout"),
	stderrTailBytes: int(256).default(8192).describe("Bytes of pi's stderr kept per session"),
	approvalTimeoutMs: int(0).default(0).describe("Cancel unanswered dialogs after this long (0: never)"),
	maxPendingDialogs: int(1)
		.default(64)
		.describe(
			"Dialogs, and client tool calls, one session may have pending at once (each); past it an extension's new one is refused as it opens (cancelled, resolvedBy gateway-limit), so no agent grows the gateway's memory or the inbox for everyone",
		),
	maxNotifications: int(1).default(50).describe("Notifications kept per session in its UI state"),
	waitTimeoutMs: int(1).default(300_000).describe("Longest wait mode (Prefer: wait) before 202"),
	approvalPoliciesFile: z
		.string()
		.optional()
		.describe("JSON or YAML file of gateway approval policies: {rules: [...], unanswered: {afterMs, action}}"),
	approvalHistoryMs: int(1000)
		.default(7 * 24 * 3600_000)
		.describe("How long resolved approvals stay listable in GET /v1/approvals/history"),
	maxApprovalHistory: int(1)
		.default(100_000)
		.describe(
			"Resolved approvals kept at most in the history; past it the oldest of the principal that holds the most goes (an approval counts for the owner of its session), never another's",
		),
	maxApprovalHistoryPerPrincipal: int(1)
		.optional()
		.describe(
			"Resolved approvals kept per principal (the owner of their session); past it that principal's own oldest go",
		),
	rateLimitRequests: int(0)
		.default(0)
		.describe("Requests per principal per --rate-limit-window-ms at most, then 429 with Retry-After (0: no limit)"),
	rateLimitWindowMs: int(1000).default(60_000).describe("The window of --rate-limit-requests"),
	maxSessionsPerPrincipal: int(0)
		.optional()
		.describe(
			"Sessions one principal (not an admin) may have, stopped and crashed ones included; creating more is a 429 (0: no limit). Default: a quarter of --max-sessions, at most 100, so no principal fills the gateway alone",
		),
	maxLiveSessionsPerPrincipal: int(0)
		.optional()
		.describe(
			"Sessions with a live pi process one principal (not an admin) may have; past it a create or wake-up hibernates that principal's own least recently used idle session, else is a 429 (0: no limit). Default: a quarter of --max-live-sessions, so no principal takes every live slot",
		),
	maxAuditEntries: int(1)
		.default(100_000)
		.describe(
			"Audit log entries kept at most (GET /v1/audit); past it the oldest entry of the principal that holds the most goes, never another's",
		),
	maxAuditEntriesPerPrincipal: int(1)
		.optional()
		.describe("Audit log entries kept per principal; past it that principal's own oldest go"),
	idempotencyTtlMs: int(1000)
		.default(24 * 3600_000)
		.describe("How long an Idempotency-Key and its first answer are kept"),
	maxIdempotencyKeys: int(1)
		.default(10_000)
		.describe(
			"Idempotency keys kept at most; past it the oldest finished key of the principal that holds the most goes, never another's",
		),
	maxIdempotencyKeysPerPrincipal: int(1)
		.optional()
		.describe("Idempotency keys kept per principal; past it that principal's own oldest finished key goes"),
	mcpMaxSessions: int(1)
		.default(1000)
		.describe(
			"MCP sessions (Mcp-Session-Id of /mcp) kept at most; past it the least recently used idle one of the principal that holds the most ends, never another's",
		),
	mcpMaxSessionsPerPrincipal: int(1)
		.optional()
		.describe(
			"MCP sessions one principal may hold; past it that principal's own least recently used idle one ends (none idle: 429)",
		),
	mcpIdleTimeoutMs: int(1000)
		.default(1_800_000)
		.describe("End an MCP session after this long without a request (its pi sessions stay)"),
	webhookAllow: z
		.array(z.string())
		.default([])
		.describe(
			"Webhook destinations allowed (CIDRs, addresses, host names, *.suffix, or `loopback`); when set, only these. Loopback, private (RFC 1918, 100.64.0.0/10), link-local and metadata, unique-local (fc00::/7), multicast, reserved and unspecified addresses and this host's own are refused unless listed, each entry lifting the refusal for exactly what it names (docs/webhooks.md)",
		),
	webhooksFile: z
		.string()
		.optional()
		.describe("JSON file of static webhooks: [{id, url, events, sessions?, secret}], loaded at start"),
	webhookTimeoutMs: int(100).default(10_000).describe("Time a webhook receiver has to connect and answer"),
	webhookRetryBaseMs: int(1)
		.default(10_000)
		.describe("First retry delay of a failed webhook delivery; it doubles per attempt (with jitter, at most 1 h)"),
	webhookMaxAttempts: int(1)
		.default(15)
		.describe("Attempts per webhook delivery before it is marked failed (15 spans about 8 hours)"),
	webhookConcurrency: int(1).default(4).describe("Webhook requests in flight at most, across all webhooks"),
	maxWebhooks: int(1).default(100).describe("Webhooks at most"),
	webhookMaxPending: int(1)
		.default(1000)
		.describe(
			"Undelivered messages kept per webhook; past it the oldest of the principal whose sessions hold the most are dropped, never another's",
		),
	webhookMaxPendingPerPrincipal: int(1)
		.optional()
		.describe(
			"Undelivered messages of one principal's sessions kept per webhook; past it that principal's own oldest are dropped",
		),
	scheduleMinIntervalSeconds: int(1)
		.default(60)
		.describe(
			"Shortest intervalSeconds a schedule may have (POST …/schedules); a cron expression fires at most once a minute anyway. Lower only for tests",
		),
	maxSchedulesPerSession: int(1).default(10).describe("Schedules one session may have"),
	maxSchedulesPerPrincipal: int(1)
		.default(100)
		.describe("Schedules one principal may have across its sessions; past it 429, whatever others hold"),
	scheduleCheckMs: int(100)
		.default(1000)
		.describe("How often each node looks for schedules that are due (cluster mode: in PostgreSQL)"),
	workspaceMaxUploadBytes: int(1)
		.default(64 * 1024 * 1024)
		.describe("Largest file uploaded to a session's folder (PUT …/files/content), streamed to disk"),
	workspaceMaxArchiveBytes: int(1)
		.default(512 * 1024 * 1024)
		.describe("Largest folder (bytes of its files) GET …/archive sends; past it 413"),
	workspaceMaxForkBytes: int(0)
		.default(256 * 1024 * 1024)
		.describe(
			"Largest folder (bytes of its files) POST …/fork-session copies into the new session's folder; past it 413 folder_too_large, before anything is made",
		),
	workspaceMaxSearchResults: int(1).default(200).describe("Matches one workspace search returns at most"),
	workspaceSearchTimeoutMs: int(100).default(5_000).describe("Time one workspace search may take"),
	workspaceRipgrep: z
		.enum(["auto", "off"])
		.default("auto")
		.describe("Search with ripgrep (rg) when it is on PATH (auto), or always with the bounded built-in search (off)"),
	workspaceChanges: z
		.boolean()
		.default(true)
		.describe(
			"Snapshot each session's folder at its start and around each run (a shadow git repository under <data-dir>/snapshots) for GET …/changes and run summaries",
		),
	workspaceSnapshotTimeoutMs: int(100).default(30_000).describe("Time one snapshot or diff of a folder may take"),
	workspaceMaxChangedFiles: int(1).default(500).describe("Files GET …/changes lists at most"),
	workspaceMaxDiffBytes: int(1024)
		.default(256 * 1024)
		.describe("Bytes of one file's diff at most (past it: truncated)"),
	workspaceMaxChangesBytes: int(1024)
		.default(4 * 1024 * 1024)
		.describe("Bytes of all diffs of one answer at most"),
	workspaceMaxSnapshotBytes: int(1024 * 1024)
		.default(1024 * 1024 * 1024)
		.describe(
			"Bytes one session's shadow repository (its snapshots) may hold; a snapshot that would pass it is refused, and GET …/changes answers 507 snapshot_limit",
		),
	workspaceSyncMaxBytes: int(0)
		.default(256 * 1024 * 1024)
		.describe(
			"Cluster mode: bytes of files of one session's folder kept in PostgreSQL, so that the folder follows its session to another node (stored at every settled run; an unchanged file costs nothing). Past it the rest is left out, said in a folder_sync event and counted in pi_gateway_folder_sync_over_cap_total; 0 keeps no folder (a shared --workspace-root needs none)",
		),
	workspaceRetentionDays: z.coerce
		.number()
		.min(0)
		.default(30)
		.describe(
			"Days a deleted session's own folder (<workspace-root>/<session id>, made for a session created without cwd) is kept before it is removed; 0 keeps it forever. A cwd the client named is never removed",
		),
	logLevel: z
		.enum(["fatal", "error", "warn", "info", "debug", "trace", "silent"])
		.default("info")
		.describe("Log level: fatal, error, warn, info, debug, trace or silent (JSON lines on stdout)"),
	logFormat: z
		.enum(["auto", "json", "pretty"])
		.default("auto")
		.describe("The log on stdout: json (one object a line), pretty (for a person), auto: pretty on a terminal"),
});

/** The settings as parseConfig leaves them: the workspace root and the default cwd always decided. */
export type Config = Omit<
	z.infer<typeof ConfigSchema>,
	"workspaceRoot" | "defaultCwd" | "demo" | "warmPool" | "maxSessionsPerPrincipal" | "maxLiveSessionsPerPrincipal"
> & {
	workspaceRoot: string;
	defaultCwd: "own" | "root";
	demo: boolean;
	warmPool: number;
	/** How far the operator's pool may grow under a burst of creates (warm-pool.ts): --warm-pool when given. */
	warmPoolMax: number;
	maxSessionsPerPrincipal: number;
	maxLiveSessionsPerPrincipal: number;
	/** The config file the CLI read (--config, PI_GATEWAY_CONFIG or the default place): it may hold `token:`. */
	configFile?: string;
};
export type ConfigInput = z.input<typeof ConfigSchema>;

/**
 * A principal's share of a store shared by principals (DESIGN, "Fair shares"): the --…-per-principal
 * setting, by default a tenth of the store's cap, so ten principals fill it before the cap makes the
 * one that holds the most give up its oldest.
 */
export function shareOf(cap: number, perPrincipal?: number): number {
	return perPrincipal ?? Math.max(1, Math.floor(cap / 10));
}

/**
 * `principal`'s share of a cap of `max`: `share`, but the whole cap for the operator (the gateway's
 * own token, principal `admin`), so a gateway its operator alone uses keeps what it kept before
 * shares; tenants hold a share each, and past the cap the one that holds the most gives up first.
 */
export function shareFor(principal: string, share: number, max: number): number {
	return principal === "admin" ? Math.max(share, max) : share;
}

/** What one idle pi holds (measured ~85 MB PSS, ~97 MiB RSS: BENCHMARKS.md, "Cost of a session"), rounded up. */
export const idlePiBytes = 100 * 2 ** 20;

/**
 * The warm pool when --warm-pool is not given. A pooled pi costs memory and nothing else while it
 * waits, and a pool of N holds at most 2N of them (N for the operator, one for each of the last N
 * other principals), so N is what keeps them within 1/16 of the memory free at start (one per
 * 3.2 GB), at most 2 (a burst past that waits for pi's own start either way, ~0.3 s a refill), and
 * at most a quarter of --max-live-sessions (the pool must not crowd out sessions). A --pi-command's
 * memory is not known: 0 unless asked for.
 */
export function autoWarmPool(maxLiveSessions: number, customPi: boolean, freeBytes: number): number {
	if (customPi) return 0;
	const byMemory = Math.floor(freeBytes / 16 / (2 * idlePiBytes));
	return Math.max(0, Math.min(2, Math.floor(maxLiveSessions / 4), byMemory));
}

/**
 * How far the default pool may grow while creates come faster than it refills (a create that finds
 * it empty doubles it): what is left of 1/16 of the free memory after the principals' pools, at
 * most 8 and a quarter of --max-live-sessions. Never below the pool itself.
 */
export function autoWarmPoolMax(maxLiveSessions: number, customPi: boolean, freeBytes: number): number {
	const size = autoWarmPool(maxLiveSessions, customPi, freeBytes);
	if (size === 0) return 0;
	const byMemory = Math.floor(freeBytes / 16 / idlePiBytes) - size;
	return Math.max(size, Math.min(8, Math.floor(maxLiveSessions / 4), byMemory));
}

const permissionGatePath = packageFile("extensions/permission-gate.ts");

export function parseConfig(input: ConfigInput): Config {
	const parsed = ConfigSchema.parse(input);
	const dataDir = resolve(parsed.dataDir);
	// An operator who names a workspace root has chosen where agents work (scripts put files there
	// for them); without one, each session gets a folder of its own under the data dir.
	const config: Config = {
		...parsed,
		dataDir,
		workspaceRoot: resolve(parsed.workspaceRoot ?? join(dataDir, "workspaces")),
		defaultCwd: parsed.defaultCwd ?? (parsed.workspaceRoot === undefined ? "own" : "root"),
		// The demo model is the default so a fresh install does something real without an API key.
		demo: parsed.demo ?? (!parsed.provider && !parsed.model),
		warmPool: parsed.warmPool ?? autoWarmPool(parsed.maxLiveSessions, parsed.piCommand !== undefined, freemem()),
		warmPoolMax: parsed.warmPool ?? autoWarmPoolMax(parsed.maxLiveSessions, parsed.piCommand !== undefined, freemem()),
		// A share of the gateway's own caps (DESIGN, "Fair shares"): four principals fill them, not one.
		maxSessionsPerPrincipal:
			parsed.maxSessionsPerPrincipal ?? Math.min(100, Math.max(1, Math.floor(parsed.maxSessions / 4))),
		maxLiveSessionsPerPrincipal:
			parsed.maxLiveSessionsPerPrincipal ?? Math.max(1, Math.floor(parsed.maxLiveSessions / 4)),
	};
	refuseOverlap(config.dataDir, config.workspaceRoot, parsed.workspaceRoot !== undefined);
	if (config.tokenFile) config.tokenFile = resolve(config.tokenFile);
	// Where `pi-gateway keys create` writes by default: a key created there works without a flag.
	if (config.keysFile) config.keysFile = resolve(config.keysFile);
	else if (config.auth) config.keysFile = join(dataDir, "keys.json");
	if (config.databaseUrlFile) config.databaseUrlFile = resolve(config.databaseUrlFile);
	if (config.clusterSecretFile) config.clusterSecretFile = resolve(config.clusterSecretFile);
	if (config.jwtJwksUrl && (!config.jwtIssuer || !config.jwtAudience))
		throw new Error(
			"--jwt-jwks-url needs --jwt-issuer and --jwt-audience (a token for another service must not work here)",
		);
	config.sandboxWritable = config.sandboxWritable.map((path) => resolve(path));
	config.sandboxReadable = config.sandboxReadable.map((path) => resolve(path));
	parseAllowHosts(config.sandboxAllowHosts);
	for (const name of config.passEnv) {
		const problem = checkPassEnvName(name);
		if (problem) throw new Error(`--pass-env: ${problem}`);
	}
	// pi resolves an -e path against the session's cwd: pin relative paths to the gateway's own cwd
	// (sources with a scheme, like builtin:mcp or npm:pkg, pass as they are).
	// The shipped permission gate is always on the allow-list; a session loads it only when it asks.
	const extensions = new Map([["permission-gate", permissionGatePath]]);
	for (const [name, path] of config.extensions)
		extensions.set(name, /^[a-z][\w+.-]*:/i.test(path) ? path : resolve(path));
	config.extensions = extensions;
	return config;
}
