import { randomBytes } from "node:crypto";
import type { Server as HttpServer, ServerResponse } from "node:http";
import type { AddressInfo } from "node:net";
import { hostname } from "node:os";
import { resolve } from "node:path";
import { serve } from "@hono/node-server";
import pino, { type Logger } from "pino";
import pinoPretty from "pino-pretty";
import { Cluster } from "../cluster/cluster.ts";
import { clusterKeys, databaseUrlOnArgv, resolveClusterSecret, resolveDatabaseUrl } from "../cluster/credentials.ts";
import { type Config, type ConfigInput, parseConfig } from "../config/config.ts";
import { KeyStore } from "../http/auth/keys.ts";
import type { IdempotencyKeys } from "../http/idempotency/key-store.ts";
import { AuditLog } from "../http/observability/audit.ts";
import { takeOver } from "../http/streams/sse.ts";
import { ConnectionGuard } from "../http/transport/connections.ts";
import { ApprovalHistory, loadPolicyFile, PolicyEngine, PolicySet } from "../sessions/dialogs/index.ts";
import type { SandboxStatus } from "../sessions/process/index.ts";
import { sandboxLogFields, startSandbox } from "../sessions/process/index.ts";
import { SessionAccess, SessionRegistry } from "../sessions/registry/index.ts";
import { warmSchemaChecks } from "../sessions/runs/index.ts";
import { PostgresDatabase } from "../store/postgres/database.ts";
import { redact } from "../store/postgres/sessions.ts";
import type { WebhookService } from "../webhooks/service.ts";
import { startWebhooks } from "../webhooks/start.ts";
import { gitSettled } from "../workspace/git.ts";
import { createApp } from "./app.ts";
import { scheduleService, startTicker } from "./schedules.ts";
import { idempotencyKeys, recordStores, sessionBackend } from "./stores.ts";
import { keepToken, resolveToken, type TokenSource } from "./token.ts";
import { warmNewPrincipals, warmRecentPrincipals } from "./warm-new-principals.ts";

export interface Gateway {
	url: string;
	port: number;
	config: Config;
	registry: SessionRegistry;
	/** Open and half-open HTTP connections (the slowloris bounds). */
	connections: ConnectionGuard;
	/** Where the bearer token came from (never the token itself). */
	tokenSource: TokenSource;
	/** Whether pi children run in bubblewrap, and why not when they do not. */
	sandbox: SandboxStatus;
	/** Webhooks and their outbox (in gateway.db). */
	webhooks: WebhookService;
	/** The API keys of --keys-file (reload() on SIGHUP). */
	keys?: KeyStore;
	/** Cluster mode (--database-url): this node's membership. */
	cluster?: Cluster;
	/** The keys, policies and webhooks files read at start, with their counts. */
	loaded: LoadedFiles;
	/** Stop accepting, end streams, stop every child; `drain` (SIGTERM) lets runs settle first. Idempotent. */
	close(options?: { drain?: boolean }): Promise<void>;
}

/** How long open streams get to deliver their final frames at shutdown. */
const drainMs = 1000;

const loopback = /^(127\.\d+\.\d+\.\d+|localhost|::1|\[::1\])$/;

export interface StartOptions {
	/** How the CLI got config.token: on argv it is readable from /proc, and that is said loudly. */
	tokenFrom?: "env" | "argv";
	/** --database-url on argv named a password (readable in /proc too): logged as loudly. */
	databasePasswordOnArgv?: boolean;
	/** The config file the CLI read: covered in every sandbox like the token file (it may hold `token:`). */
	configFile?: string;
}

/** JSON lines on stdout (for `| jq` and log shippers), or pino-pretty's lines for a person at a terminal. */
function gatewayLogger(config: Config): Logger {
	const pretty = config.logFormat === "pretty" || (config.logFormat === "auto" && process.stdout.isTTY === true);
	if (!pretty) return pino({ level: config.logLevel });
	return pino({ level: config.logLevel }, pinoPretty({ destination: 1, sync: true, colorize: process.stdout.isTTY }));
}

/** The files read at start, with what they held: said at start (main.ts) and in the listening log. */
export interface LoadedFiles {
	keysFile?: { path: string; keys: number };
	approvalPoliciesFile?: { path: string; rules: number };
	webhooksFile?: { path: string; webhooks: number };
}

export async function startGateway(input: ConfigInput, logger?: Logger, options: StartOptions = {}): Promise<Gateway> {
	const config = parseConfig(input);
	if (options.configFile) config.configFile = resolve(options.configFile);
	if (!loopback.test(config.host) && !config.auth) {
		throw new Error(`Refusing to listen on ${config.host} with --no-auth: a token is required beyond loopback`);
	}
	if (!config.auth && (config.keysFile || config.jwtJwksUrl))
		throw new Error("--no-auth contradicts --keys-file and --jwt-jwks-url");
	const log = logger ?? gatewayLogger(config);
	const sandbox = startSandbox(config, log);
	const tokenSource = resolveToken(config, options.tokenFrom);
	if (tokenSource.kind === "argv")
		log.warn(
			"--token on the command line is readable from /proc/<pid>/cmdline by every local process of this user, pi's tools included; use PI_GATEWAY_TOKEN or --token-file",
		);
	if (tokenSource.kind === "none")
		log.warn("--no-auth: the API has no token; any local process, pi's own tools included, can answer approvals");
	if (options.databasePasswordOnArgv) log.warn(databaseUrlOnArgv);
	resolveDatabaseUrl(config);
	// Cluster mode: tickets and forwarded requests are signed with what only the nodes hold.
	const keysOfCluster = config.databaseUrl ? clusterKeys(resolveClusterSecret(config)) : undefined;
	// Read before the registry takes its lock: a bad file fails the start with nothing to undo.
	const gatewayPolicies = config.approvalPoliciesFile
		? loadPolicyFile(config.approvalPoliciesFile)
		: PolicySet.parse({});
	// Read before the registry too: a bad keys file fails the start.
	const keys = config.keysFile ? new KeyStore(config.keysFile, log) : undefined;
	keys?.watch();
	// PostgreSQL is reached (and migrated) before anything else starts: a wrong URL fails the start.
	const nodeId = config.nodeName ?? `${hostname()}-${randomBytes(3).toString("hex")}`;
	const database = config.databaseUrl
		? await PostgresDatabase.connect(config.databaseUrl, config.dataDir, nodeId)
		: undefined;
	const postgres = database?.sessions;
	if (postgres && config.databaseUrl)
		log.info({ database: redact(config.databaseUrl), node: nodeId }, "cluster mode: sessions in PostgreSQL");
	const backend = sessionBackend(config, postgres);
	const registry = new SessionRegistry(config, log, backend.open);
	// Before listening: a data dir held by another gateway fails here, and restored sessions are listed from the first request.
	registry.open();
	// Deleted sessions' own folders past --workspace-retention-days go, now and then periodically.
	registry.retention.start(() => registry.list().map((session) => session.cwd));
	const db = backend.database();
	let webhooks: WebhookService;
	let idempotency: IdempotencyKeys;
	let stores: ReturnType<typeof recordStores>;
	try {
		stores = recordStores(db, config, log, database);
		// Cluster mode: webhook definitions and Idempotency-Key answers are the cluster's, in PostgreSQL.
		idempotency = await idempotencyKeys(db, config, log, database);
		webhooks = await startWebhooks(config, registry, stores.webhooks, log, database?.webhooks());
		// Undelivered messages outlive their node: recorded in PostgreSQL, adopted by a live node within a lease.
		if (database) {
			webhooks.handOver(database.outbox(), config.leaseTtlMs);
			// A stopping node gives them up once its sessions have stopped (their last events queued).
			database.sessions.beforeClose(() => webhooks.release());
		}
	} catch (error) {
		await registry.retention.stop();
		await registry.shutdown();
		throw error;
	}
	const policies = new PolicyEngine(gatewayPolicies, registry, stores.rules, log, postgres);
	policies.start();
	const history = new ApprovalHistory(stores.history);
	history.start(registry);
	const access = new SessionAccess(stores.access, postgres);
	let cluster: Cluster | undefined;
	const schedules = scheduleService(stores.schedules, config);
	const app = createApp(config, registry, log, undefined, {
		cluster: postgres && (() => cluster),
		ticketKey: keysOfCluster?.tickets,
		webhooks,
		idempotency,
		policies,
		history,
		keys,
		access,
		audit: new AuditLog(stores.audit, config.maxAuditEntries),
		workspaceRuns: database?.runArchive(),
		schedules,
	});
	const connections = new ConnectionGuard(config, log);
	// A start that fails after this point undoes what it started, in reverse.
	const abandon = async (error: unknown): Promise<never> => {
		await registry.retention.stop();
		keys?.close();
		history.stop();
		policies.stop();
		webhooks.stop();
		await registry.shutdown();
		webhooks.detach();
		throw error;
	};
	let server: ReturnType<typeof serve>;
	try {
		server = await new Promise<ReturnType<typeof serve>>((resolve, reject) => {
			const s = serve(
				{
					// An SSE answer is written to Node's response by its own pump (sse.ts); this server is HTTP/1.1.
					fetch: async (request, env) => takeOver(await app.fetch(request, env), env.outgoing as ServerResponse),
					hostname: config.host,
					port: config.port,
					// Bounds on receiving a request only: a long response (SSE) is never cut by them.
					serverOptions: {
						headersTimeout: Math.min(config.headersTimeoutMs, config.requestTimeoutMs),
						requestTimeout: config.requestTimeoutMs,
						// Node checks both timeouts on this interval (30 s by default, which would stretch them).
						connectionsCheckingInterval: Math.min(1000, config.headersTimeoutMs),
					},
				},
				() => resolve(s),
			);
			connections.attach(s as HttpServer);
			s.once("error", reject);
		});
	} catch (error) {
		return await abandon(error);
	}
	const port = (server.address() as AddressInfo).port;
	const host = config.host.includes(":") && !config.host.startsWith("[") ? `[${config.host}]` : config.host;
	const url = `http://${host}:${port}`;
	if (database) {
		// Other nodes reach this one at its advertised URL: a wildcard address names no host.
		const reachable = /^(0\.0\.0\.0|::|\[::\])$/.test(config.host) ? url.replace(host, hostname()) : url;
		try {
			cluster = await Cluster.start({
				config,
				store: database.cluster(),
				notices: database.notices(config.databaseUrl as string, log.child({ node: nodeId })),
				forwardKey: (keysOfCluster as { forward: Buffer }).forward,
				registry,
				access,
				policies,
				logger: log,
				url: config.advertiseUrl ?? reachable,
			});
			// Another node changed a webhook: read them again now (the 30 s resync covers a lost notice).
			const self = cluster.node;
			cluster.onNotice((n) => n.type === "webhooks" && n.node !== self && void webhooks.reload().catch(() => {}));
		} catch (error) {
			server.close();
			return await abandon(error);
		}
	}
	const appFetch = (request: Request, env: unknown) => app.fetch(request, env as never);
	const ticker = startTicker(stores.schedules, config, nodeId, appFetch, url, log, webhooks);
	// Written once nothing can refuse the start any more: a refused start leaves no token behind.
	keepToken(tokenSource);
	// Once listening: /healthz answers while the pool's pis start (registry.warm).
	registry.warm();
	setImmediate(warmSchemaChecks);
	warmRecentPrincipals(config, keys, registry, access);
	warmNewPrincipals(config, keys, registry);
	const tokenFile = "path" in tokenSource ? tokenSource.path : undefined;
	const loaded: LoadedFiles = {};
	if (config.keysFile && keys) loaded.keysFile = { path: config.keysFile, keys: keys.size };
	if (config.approvalPoliciesFile)
		loaded.approvalPoliciesFile = { path: config.approvalPoliciesFile, rules: gatewayPolicies.rules.length };
	if (config.webhooksFile)
		loaded.webhooksFile = {
			path: config.webhooksFile,
			webhooks: (await webhooks.list()).filter((hook) => hook.static).length,
		};
	log.info(
		{
			url,
			docs: `${url}/docs`,
			console: `${url}/console`,
			...loaded,
			demo: config.demo,
			workspaceRoot: config.workspaceRoot,
			defaultCwd: config.defaultCwd,
			...sandboxLogFields(sandbox),
			tokenFile,
		},
		"pi-gateway listening",
	);

	let closing: Promise<void> | undefined;
	const close = (options: { drain?: boolean } = {}) => {
		closing ??= (async () => {
			// No tick starts a run from here on; those already sent are answered first.
			await ticker.stop();
			// Runs in progress settle first, the server answering: /readyz and new runs 503 (cluster mode:
			// this node's sessions go elsewhere, 421 to the node that forwarded, 503 to a direct caller).
			if (cluster || options.drain) await registry.drain(config.drainTimeoutMs);
			let done = false;
			const stopped = new Promise<void>((resolve) => server.close(() => resolve())).then(() => {
				done = true;
			});
			// Sending stops first; events of the stopping sessions still reach the outbox, for the next start.
			webhooks.stop();
			await registry.retention.stop();
			await registry.shutdown();
			// Snapshots of the sessions that just stopped finish (or meet their deadline) before we return.
			await gitSettled();
			webhooks.detach();
			policies.stop();
			history.stop();
			keys?.close();
			// Session streams end with their session_exit frame; let them drain, closing each
			// connection as it falls idle. What is left after that (hub streams) is cut.
			const http = server as unknown as { closeIdleConnections(): void; closeAllConnections(): void };
			for (const deadline = Date.now() + drainMs; !done && Date.now() < deadline; ) {
				http.closeIdleConnections();
				await Promise.race([stopped, new Promise((r) => setTimeout(r, 25))]);
			}
			http.closeAllConnections();
			await stopped;
			log.info("pi-gateway stopped");
		})();
		return closing;
	};
	return { url, port, config, registry, connections, tokenSource, sandbox, webhooks, keys, cluster, loaded, close };
}
