// Over 300 lines on purpose: createApp is the one place the middleware order is decided (auth, scope,
// cluster routing, ownership, limits, bodies, idempotency) and every router is one line of it; split,
// that order would have to be read across files.
import type { Context, MiddlewareHandler } from "hono";
import { bodyLimit } from "hono/body-limit";
import { cors } from "hono/cors";
import { HTTPException } from "hono/http-exception";
import type { Logger } from "pino";
import { ZodError } from "zod";
import type { Cluster } from "../cluster/cluster.ts";
import type { Config } from "../config/config.ts";
import { bearerAuth } from "../http/auth/bearer.ts";
import { JwtVerifier } from "../http/auth/jwt.ts";
import type { KeyStore } from "../http/auth/keys.ts";
import { sessionOwnership } from "../http/auth/ownership.ts";
import { adminPrincipal, declareScopes, requireScope, ScopedRoutes } from "../http/auth/principals.ts";
import { declareRateLimits, requestLimit, sessionLimits } from "../http/auth/rate-limits.ts";
import { StreamTickets } from "../http/auth/tickets.ts";
import {
	clusterRouting,
	declareClusterRetries,
	durableAnswers,
	ticketReconnects,
} from "../http/cluster/cluster-routing.ts";
import { durableFolders } from "../http/cluster/durable-folders.ts";
import { declareIdempotency, IdempotentRoutes, idempotency } from "../http/idempotency/idempotency.ts";
import type { IdempotencyKeys } from "../http/idempotency/key-store.ts";
import { AuditLog, audit } from "../http/observability/audit.ts";
import { instrument } from "../http/observability/instrument.ts";
import { Metrics } from "../http/observability/prometheus.ts";
import { approvalsRouter } from "../http/routes/approvals/approvals.index.ts";
import { approvalHistoryRouter } from "../http/routes/approvals/history.index.ts";
import { auditRouter } from "../http/routes/audit/audit.index.ts";
import { commandsRouter } from "../http/routes/commands/commands.index.ts";
import { commandSpecs } from "../http/routes/commands/commands.table.ts";
import { rpcRouter } from "../http/routes/commands/rpc.index.ts";
import { consolePaths, consoleRouter } from "../http/routes/console/console.index.ts";
import type { Deps } from "../http/routes/deps.ts";
import { eventsRouter } from "../http/routes/events/events.index.ts";
import { mcpRouter } from "../http/routes/mcp/mcp.index.ts";
import { oauthDiscoveryPaths, oauthDiscoveryRouter } from "../http/routes/mcp/oauth-discovery.ts";
import { openaiErrorShape, openaiRouter } from "../http/routes/openai/openai.index.ts";
import { runsRouter } from "../http/routes/runs/runs.index.ts";
import { runStreamsRouter } from "../http/routes/runs/streams.index.ts";
import { schedulesRouter } from "../http/routes/schedules/schedules.index.ts";
import { scheduleTicks } from "../http/routes/schedules/ticks.ts";
import { budgetRouter } from "../http/routes/sessions/budget.index.ts";
import { forkRouter } from "../http/routes/sessions/fork.index.ts";
import { sessionsRouter } from "../http/routes/sessions/sessions.index.ts";
import { uiRouter } from "../http/routes/sessions/ui.index.ts";
import { docsPaths, docsRouter } from "../http/routes/system/docs.index.ts";
import { metricsRouter } from "../http/routes/system/scrape.index.ts";
import { specPaths, specRouter } from "../http/routes/system/spec.index.ts";
import { systemRouter } from "../http/routes/system/system.index.ts";
import { whoamiRouter } from "../http/routes/system/whoami.index.ts";
import { toolCallsRouter } from "../http/routes/tool-calls/tool-calls.index.ts";
import { webhooksRouter } from "../http/routes/webhooks/webhooks.index.ts";
import { workspaceChangesRouter } from "../http/routes/workspace/changes.index.ts";
import { closeAfterRefusedUpload, isUpload, workspaceFilesRouter } from "../http/routes/workspace/files.index.ts";
import { StreamEvent } from "../http/streams/event-schemas.ts";
import { revokingStreams } from "../http/streams/open-streams.ts";
import { BodyRoutes, bodyGuard } from "../http/transport/body-guard.ts";
import { FirstSnapshotRoutes, firstSnapshot } from "../http/transport/first-snapshot.ts";
import { AllowedMethods, headWithoutBody, methodGuard } from "../http/transport/methods.ts";
import { accessLog, hostCheck, pathEncoding, requestId } from "../http/transport/middleware.ts";
import { type AppEnv, createRouter, invalid } from "../http/transport/openapi.ts";
import { ApiError, type Problem, toProblem } from "../http/transport/problem.ts";
import { singleQueryParameters } from "../http/transport/query-params.ts";
import type { ScheduleService } from "../schedules/service.ts";
import type { ApprovalHistory, PolicyEngine } from "../sessions/dialogs/index.ts";
import type { SessionRegistry } from "../sessions/registry/index.ts";
import { liveShare, SessionAccess } from "../sessions/registry/index.ts";
import { GatewayError } from "../shared/errors.ts";
import { gatewayVersion } from "../shared/package-files.ts";
import type { WebhookService } from "../webhooks/service.ts";
import type { RunArchive } from "../workspace/run-archive.ts";
import { startChangeTracker } from "../workspace/start.ts";
import { prebuiltDocument } from "./prebuilt-document.ts";

// The API description and its docs page are public (they ship in the package); the API is not.
const openPaths = new Set(["/healthz", "/readyz", ...specPaths, ...docsPaths, ...consolePaths, ...oauthDiscoveryPaths]);

export function openApiDocument(app: ReturnType<typeof createRouter>) {
	app.openAPIRegistry.register("StreamEvent", StreamEvent);
	app.openAPIRegistry.registerComponent("securitySchemes", "bearer", {
		type: "http",
		scheme: "bearer",
		description:
			"The gateway's token (the admin principal) or an API key from --keys-file. Each operation lists the one scope it needs: sessions:read, sessions:write, approvals:read, approvals:answer or admin (which holds them all); a credential without it gets 403.",
	});
	const document = app.getOpenAPI31Document({
		openapi: "3.1.0",
		info: {
			title: "pi-gateway",
			version: gatewayVersion,
			license: { name: "MIT", url: "https://spdx.org/licenses/MIT.html" },
			description:
				"HTTP REST + Server-Sent Events in front of the pi coding agent's RPC mode. Each session is one `pi --mode rpc` process; commands go to it in order under a per-session queue; its events come back as SSE; extension dialogs become approvals. Errors are RFC 9457 problem+json. HEAD runs GET's operation with its checks and answers its status and headers without a body (a stream's subscriber slot is released at once); OPTIONS answers 204 with `Allow`; a method a path does not declare answers 405 with `Allow`; a path whose percent-escapes do not decode answers 400 `invalid_path`.",
		},
		// Replaced per request with the origin the spec is fetched from.
		servers: [{ url: "http://127.0.0.1:8787" }],
		security: [{ bearer: [] }],
		tags: [
			{ name: "sessions", description: "pi processes" },
			{ name: "runs", description: "Prompts, steering and follow-ups, with streaming and wait modes" },
			{ name: "commands", description: "pi's other RPC commands, one operation each" },
			{ name: "events", description: "Server-Sent Events" },
			{ name: "approvals", description: "Extension dialogs as resources, and UI state" },
			{ name: "tool-calls", description: "Client tools: calls the model makes to tools the calling program runs" },
			{ name: "webhooks", description: "Signed event deliveries (Standard Webhooks) with a durable outbox" },
			{
				name: "schedules",
				description: "Prompts a session runs on its own, on an interval or a cron (docs/schedules.md)",
			},
			{ name: "workspace", description: "A session's folder: files in and out, search, archive, what runs changed" },
			{ name: "mcp", description: "The MCP server (Streamable HTTP) for MCP clients: docs/mcp.md" },
			{ name: "openai", description: "OpenAI-compatible models, Chat Completions and Responses (docs/openai.md)" },
			{ name: "system", description: "Health, info, metrics, docs" },
		],
	});
	declareIdempotency(document as never);
	declareScopes(document as never);
	declareRateLimits(document as never);
	declareClusterRetries(document as never);
	return document;
}

/**
 * The routes' document, built once per process: no route or schema depends on the config (every
 * router is mounted whatever it says), so each app would build the same one, and building it is
 * most of an app's start (≈ 0.3 s of CPU, zod-to-openapi over every schema). A test process starts
 * many gateways; test/unit/spec-per-config.test.ts holds the premise.
 */
let builtDocument: ReturnType<typeof openApiDocument> | undefined;

/** The document createApp built (or the bundle carried): scripts/bundle.ts puts it in the bundle. */
export function builtApiDocument(): SpecDocument | undefined {
	return builtDocument;
}

/** Builds the whole HTTP app; listening is main.ts's job, so tests can drive it directly. */
export function createApp(
	config: Config,
	registry: SessionRegistry,
	logger: Logger,
	metrics: Metrics = new Metrics(registry),
	extras: {
		webhooks?: WebhookService;
		idempotency?: IdempotencyKeys;
		policies?: PolicyEngine;
		history?: ApprovalHistory;
		/** API keys of --keys-file: principals besides the token's admin. */
		keys?: KeyStore;
		/** Session owners and shares (in gateway.db; in memory when absent). */
		access?: SessionAccess;
		/** The audit log (in gateway.db; in memory when absent). */
		audit?: AuditLog;
		/** Cluster mode: the node's cluster, once it joined. */
		cluster?: () => Cluster | undefined;
		/** Cluster mode: settled runs' workspace changes in PostgreSQL (they outlive a move). */
		workspaceRuns?: RunArchive;
		/** The key of stream tickets (cluster mode: the same on every node). */
		ticketKey?: Buffer;
		/** Scheduled runs (in gateway.db, or PostgreSQL in cluster mode). */
		schedules?: ScheduleService;
	} = {},
) {
	const deps: Deps = {
		config,
		registry,
		logger,
		tickets: new StreamTickets({ ttlMs: config.streamTicketTtlMs, key: extras.ticketKey }),
		policies: extras.policies,
		access: extras.access ?? new SessionAccess(),
		cluster: extras.cluster,
	};
	const app = createRouter();
	app.use(requestId());
	// First, so that every error on OpenAI's paths (auth and limits included) leaves in OpenAI's shape.
	app.use(openaiErrorShape());
	app.use(accessLog(logger));
	app.use(closeAfterRefusedUpload());
	app.use(instrument(metrics, commandSpecs));
	app.use(headWithoutBody());
	if (extras.cluster) metrics.setClusterSource(extras.cluster);
	metrics.setOwnerSource((id) => deps.access.get(id).owner);
	if (registry.pool) {
		const pool = registry.pool;
		metrics.setWarmPoolSource(() => pool.readyCount);
	}
	// A node's peers reach it at its --advertise-url (cluster mode): that host is its own, like --host.
	const advertised = config.advertiseUrl ? [new URL(config.advertiseUrl).hostname] : [];
	app.use(hostCheck([...config.allowedHosts, config.host, ...advertised]));
	app.use(pathEncoding(), singleQueryParameters());
	// Built once the spec exists: browser JS may read every response header the spec documents.
	let corsMiddleware: MiddlewareHandler<AppEnv> | undefined;
	if (config.corsOrigins.length > 0) app.use((c, next) => (corsMiddleware as MiddlewareHandler<AppEnv>)(c, next));
	// The one thing before authentication in cluster mode: a stream ticket's late reconnect, for the node that bound it.
	if (extras.cluster) app.use(ticketReconnects(extras.cluster, deps.tickets));
	const jwt = config.jwtJwksUrl ? new JwtVerifier(config) : undefined;
	// A schedule's tick runs as the schedule's principal (ticks.ts); every other request shows a credential.
	const schedules = extras.schedules;
	if (schedules) app.use(scheduleTicks((id, at) => schedules.pendingTick(id, at), extras.cluster, extras.keys));
	const bearer = bearerAuth({ token: config.token, keys: extras.keys, jwt }, openPaths, deps.tickets);
	app.use((c, next) => (c.get("principal") ? next() : bearer(c, next)));
	const scopedRoutes = new ScopedRoutes();
	if (config.rateLimitRequests > 0) app.use(requestLimit(config.rateLimitRequests, config.rateLimitWindowMs));
	const allowedMethods = new AllowedMethods();
	app.use(methodGuard(allowedMethods));
	const auditLog = extras.audit ?? new AuditLog(undefined, config.maxAuditEntries, config.maxAuditEntriesPerPrincipal);
	app.use(audit(auditLog, scopedRoutes, logger));
	app.use(requireScope(scopedRoutes));
	// After authentication and the scope check: a request that has neither never locates, claims or
	// forwards a session. Before ownership: the node that runs the session holds its owner and shares.
	if (extras.cluster) {
		app.use(
			clusterRouting(
				extras.cluster,
				registry,
				config.maxBodyBytes,
				(method, path) => method === "PUT" && isUpload(path),
				(method, path) => scopedRoutes.onSession(method, path),
			),
		);
		app.use(durableAnswers(registry), durableFolders(extras.cluster, registry));
	}
	app.use(sessionOwnership(deps.access, scopedRoutes));
	// Every stream knows who opened it: a share taken back or a key revoked ends it at once.
	app.use(revokingStreams(deps.access, extras.keys));
	// Each principal's share of the live slots; an admin's sessions are held to none.
	const admins = new Set([adminPrincipal.name]);
	registry.setLiveShares((id) => {
		const owner = deps.access.get(id).owner;
		return liveShare(config, owner, admins.has(owner));
	});
	app.use(sessionLimits(config.maxSessionsPerPrincipal, registry, deps.access, admins));
	const limitBody = bodyLimit({
		maxSize: config.maxBodyBytes,
		onError: () => {
			throw new ApiError(413, "body_too_large", `Request bodies are limited to ${config.maxBodyBytes} bytes`);
		},
	});
	// An upload is streamed to disk under its own bound (--workspace-max-upload-bytes), never buffered.
	app.use((c, next) => (c.req.method === "PUT" && isUpload(c.req.path) ? next() : limitBody(c, next)));
	const bodyRoutes = new BodyRoutes();
	app.use(
		bodyGuard(bodyRoutes, {
			tokenRequired: config.token !== undefined || extras.keys !== undefined || jwt !== undefined,
		}),
	);
	const idempotentRoutes = new IdempotentRoutes();
	app.use(idempotency(idempotentRoutes, extras.idempotency));
	const tracker = startChangeTracker(config, registry, logger, extras.workspaceRuns);
	// A change to a session's folder waits for its first snapshot (taken as the session starts);
	// which operations need not is declared in first-snapshot.ts, by operation id.
	const firstSnapshotRoutes = new FirstSnapshotRoutes();
	app.use("/v1/sessions/:id/*", firstSnapshot(firstSnapshotRoutes, tracker));
	// The folder as the run finds it: taken before the prompt reaches pi, or beside it when gated.
	const beforePrompt = async (c: Context, next: () => Promise<void>) => {
		await tracker.beforePrompt(c.req.param("id") as string);
		return next();
	};
	app.post("/v1/sessions/:id/prompt", beforePrompt);
	app.post("/v1/sessions/:id/prompt/stream", beforePrompt);
	app.delete("/v1/sessions/:id", async (c, next) => {
		await next();
		if (c.res.status < 300) await tracker.forget(c.req.param("id"));
	});

	app.route("/", systemRouter(deps));
	app.route("/", whoamiRouter());
	app.route("/", metricsRouter(metrics));
	app.route("/", auditRouter(auditLog));
	app.route("/", docsRouter());
	app.route("/", consoleRouter());
	app.route("/", sessionsRouter(deps));
	app.route("/", budgetRouter(deps));
	app.route("/", forkRouter(deps));
	app.route("/", runsRouter(deps));
	app.route("/", runStreamsRouter(deps));
	app.route("/", commandsRouter(deps));
	app.route("/", rpcRouter(deps));
	app.route("/", eventsRouter(deps));
	// Before the approvals router: /v1/approvals/history is its own operation.
	app.route(
		"/",
		approvalHistoryRouter(() => extras.history, deps.access),
	);
	app.route("/", approvalsRouter(deps));
	app.route("/", uiRouter(deps));
	app.route("/", toolCallsRouter(deps));
	app.route("/", workspaceFilesRouter(deps));
	app.route("/", workspaceChangesRouter(deps, tracker));
	app.route(
		"/",
		webhooksRouter(() => extras.webhooks),
	);
	app.route(
		"/",
		schedulesRouter(deps, () => extras.schedules),
	);
	// Its tools call this app as the caller: the same checks, audit and limits as over the network.
	app.route("/", mcpRouter(deps, { app: (request, env) => app.fetch(request, env as never), version: gatewayVersion }));
	// Where MCP clients look for OAuth after a 401: a 404 that names the bearer header instead.
	app.route("/", oauthDiscoveryRouter());
	// OpenAI's protocol, translated to the routes above and run by this app in-process with the caller's key.
	app.route(
		"/",
		openaiRouter(deps, (request, env) => app.fetch(request, env as never)),
	);

	builtDocument ??= (prebuiltDocument() as SpecDocument | undefined) ?? openApiDocument(app);
	const document = builtDocument;
	bodyRoutes.load(document as never);
	scopedRoutes.load(document as never);
	allowedMethods.load(document as never);
	idempotentRoutes.load(document as never);
	firstSnapshotRoutes.load(document as never);
	corsMiddleware = cors({ origin: config.corsOrigins, exposeHeaders: exposedHeaders(document) });
	// The 3.1 document and its 3.0 twin, written for generators (the gateway reads `document`).
	app.route("/", specRouter(document));

	app.notFound((c) => {
		throw new ApiError(404, "not_found", `No route for ${c.req.method} ${c.req.path}`);
	});
	app.onError((error, c) => {
		const gatewayError = toGatewayError(error, logger, c.get("requestId"));
		const { retryAfter, ...problem } = toProblem(gatewayError, c.get("requestId")) as Problem & { retryAfter?: number };
		// A status worth retrying says when (503s of cluster mode; see README "Running several nodes").
		const retry: Record<string, string> = typeof retryAfter === "number" ? { "Retry-After": String(retryAfter) } : {};
		return c.json(problem, problem.status as 400, { "Content-Type": "application/problem+json", ...retry });
	});
	return app;
}

type SpecDocument = ReturnType<typeof openApiDocument>;

/** X-Request-Id (on every answer) and every response header any operation declares. */
export function exposedHeaders(document: SpecDocument): string[] {
	const names = new Set(["X-Request-Id"]);
	for (const item of Object.values(document.paths ?? {}))
		for (const operation of Object.values(item ?? {})) {
			const responses = (operation as { responses?: Record<string, { headers?: Record<string, unknown> }> }).responses;
			for (const response of Object.values(responses ?? {}))
				for (const name of Object.keys(response.headers ?? {})) names.add(name);
		}
	return [...names];
}

function toGatewayError(error: unknown, logger: Logger, requestId: string): GatewayError {
	if (error instanceof GatewayError) return error;
	if (error instanceof ZodError) return invalid(error.issues);
	if (error instanceof HTTPException) {
		// Hono's own 400s: a body that is not JSON, or a wrong content type.
		if (error.status === 400) return new ApiError(400, "invalid_body", error.message || "The body is not valid JSON");
		if (error.status === 415) {
			return new ApiError(
				415,
				"unsupported_media_type",
				"Send the request body as JSON (Content-Type: application/json)",
			);
		}
		return new ApiError(error.status, "http_error", error.message || "HTTP error");
	}
	logger.error({ err: error, requestId }, "unhandled error");
	return new ApiError(500, "internal_error", "Internal error; the log has the details under this request id");
}

export type App = ReturnType<typeof createApp>;
export type { Config, SessionRegistry };
