import { Counter, collectDefaultMetrics, Gauge, Histogram, Registry } from "prom-client";
import type { Cluster } from "../../cluster/cluster.ts";
import { eventJson, type LoggedEvent } from "../../sessions/events/index.ts";
import type { SessionRegistry } from "../../sessions/registry/index.ts";
import { egressDenialReasons } from "../../sessions/relay/index.ts";
import { SessionStatus } from "../../sessions/session/index.ts";
import { folderCounters } from "./folder-metrics.ts";
import { usageCounters } from "./usage-metrics.ts";

const statuses = SessionStatus.options;

type NodeCount = { id: string; alive: boolean; sessions: number };

/**
 * The gateway's Prometheus metrics, in a registry of its own (not prom-client's global one), so a
 * process can hold several gateways (tests do). Nothing here is on a hot path: state is read from
 * the session registry at scrape time, counters come from the all-sessions event hub, and commands
 * and requests are counted by an HTTP middleware (src/http/observability/instrument.ts).
 */
export class Metrics {
	readonly registry = new Registry();
	readonly commands: Counter<"command" | "outcome">;
	readonly commandSeconds: Histogram<"command">;
	readonly httpRequests: Counter<"method" | "route" | "status">;
	readonly httpSeconds: Histogram<"method" | "route">;
	/** Run commands refused because the session's budget is spent (counted by instrument.ts). */
	readonly budgetRefusals: Counter<"kind">;
	#warmPool: () => number = () => 0;
	#cluster: () => Cluster | undefined = () => undefined;
	#ownerOf: (sessionId: string) => string = () => "admin";

	constructor(sessions: SessionRegistry) {
		const registers = [this.registry];
		collectDefaultMetrics({ register: this.registry });

		new Gauge({
			name: "pi_gateway_sessions",
			help: "Sessions by status (exited and crashed ones count until they are deleted)",
			labelNames: ["status"],
			registers,
			collect() {
				const counts = Object.fromEntries(statuses.map((s) => [s, 0]));
				for (const session of sessions.list()) counts[session.status] = (counts[session.status] ?? 0) + 1;
				for (const [status, n] of Object.entries(counts)) this.set({ status }, n);
			},
		});
		new Gauge({
			name: "pi_gateway_registry_writable",
			help: "1 while the session registry (gateway.db) can be written; 0 while writes fail (disk full): new sessions get 507",
			registers,
			collect() {
				this.set(sessions.storeHealth().writable ? 1 : 0);
			},
		});
		new Counter({
			name: "pi_gateway_registry_write_errors_total",
			help: "Session registry writes that failed (each is retried until it passes)",
			registers,
			collect() {
				this.reset();
				this.inc(sessions.storeHealth().writeErrors);
			},
		});
		const nodes = (): Promise<readonly NodeCount[]> | readonly NodeCount[] => this.#cluster()?.liveNodes() ?? [];
		new Gauge({
			name: "pi_gateway_cluster_nodes",
			help: "Cluster mode: nodes whose lease holds (as of this node's last renewal)",
			registers,
			async collect() {
				this.set((await nodes()).filter((n) => n.alive).length);
			},
		});
		new Gauge({
			name: "pi_gateway_cluster_sessions",
			help: "Cluster mode: sessions each node owns, read from the database at scrape time (stopped sessions no node owns are not counted)",
			labelNames: ["node"],
			registers,
			async collect() {
				const now = await nodes();
				this.reset();
				for (const n of now) this.set({ node: n.id }, n.sessions);
			},
		});
		new Gauge({
			name: "pi_gateway_pi_processes",
			help: "Live pi child processes: sessions' and the warm pool's (pi_gateway_warm_pool_size of them are idle in the pool)",
			registers,
			collect() {
				const pooled = sessions.pool?.size ?? 0;
				this.set(sessions.list().filter((s) => s.isAlive && s.pid !== undefined).length + pooled);
			},
		});
		new Gauge({
			name: "pi_gateway_sse_subscribers",
			help: "Open event streams on sessions (session streams and streamed runs)",
			registers,
			collect() {
				this.set(sessions.list().reduce((sum, s) => sum + s.sseSubscribers, 0));
			},
		});
		new Gauge({
			name: "pi_gateway_approvals_pending",
			help: "Extension dialogs waiting for an answer",
			registers,
			collect() {
				this.set(sessions.approvals("pending").length);
			},
		});
		const warmPool = () => this.#warmPool();
		new Gauge({
			name: "pi_gateway_warm_pool_size",
			help: "Idle pi processes started ahead of demand (0 without a warm pool)",
			registers,
			collect() {
				this.set(warmPool());
			},
		});

		// Per event only a number in a Map goes up; the counter takes the sums when it is scraped.
		const eventCounts = new Map<string, number>();
		new Counter({
			name: "pi_gateway_events_total",
			help: "Events appended to session logs and forwarded to subscribers, by type (pi's and the gateway's)",
			labelNames: ["type"],
			registers,
			collect() {
				for (const [type, n] of eventCounts) if (n > 0) this.inc({ type }, n);
				eventCounts.clear();
			},
		});
		const requested = new Counter({
			name: "pi_gateway_approvals_requested_total",
			help: "Extension dialogs opened",
			registers,
		});
		const resolved = new Counter({
			name: "pi_gateway_approvals_resolved_total",
			help: "Extension dialogs settled, by how: answered, cancelled or expired",
			labelNames: ["status"],
			registers,
		});
		const exits = new Counter({
			name: "pi_gateway_pi_exits_total",
			help: "pi processes that ended, by reason: stopped (asked to), exited (on its own, code 0) or crashed",
			labelNames: ["reason"],
			registers,
		});
		const crashes = new Counter({
			name: "pi_gateway_pi_crashes_total",
			help: "pi processes that crashed (exited non-zero or by a signal the gateway did not send)",
			registers,
		});
		// Known label values start at 0, so rate() and alerts see a series before the first increment.
		for (const status of ["answered", "cancelled", "expired"]) resolved.inc({ status }, 0);
		for (const reason of ["stopped", "exited", "crashed"]) exits.inc({ reason }, 0);
		const limitsReached = new Counter({
			name: "pi_gateway_run_limits_reached_total",
			help: "Runs the gateway aborted past one of their limits (run_limit_reached), by kind: turns, tokens, cost or duration",
			labelNames: ["kind"],
			registers,
		});
		for (const kind of ["turns", "tokens", "cost", "duration"]) limitsReached.inc({ kind }, 0);
		this.budgetRefusals = new Counter({
			name: "pi_gateway_budget_refusals_total",
			help: "Commands that call the model (prompts, steers, follow-ups, compactions) refused (409 budget_exhausted) because the session's budget is spent, by the limit reached: tokens or cost",
			labelNames: ["kind"],
			registers,
		});
		for (const kind of ["tokens", "cost"]) this.budgetRefusals.inc({ kind }, 0);
		const egressDenied = new Counter({
			name: "pi_gateway_egress_denied_total",
			help: "Requests of sandboxed tools the egress proxy refused (egress_denied), by reason: not_allowed, private_address or bad_request",
			labelNames: ["reason"],
			registers,
		});
		for (const reason of egressDenialReasons) egressDenied.inc({ reason }, 0);
		const usage = usageCounters(registers, (sessionId) => this.#ownerOf(sessionId));
		folderCounters(registers, () => this.#cluster()?.folders.counts);
		sessions.subscribeAll((sessionId, event) => {
			eventCounts.set(event.type, (eventCounts.get(event.type) ?? 0) + 1);
			if (event.type === "message_end" || event.type === "compaction_end" || event.type === "entry_appended")
				usage(sessionId, event);
			else if (event.type === "approval_requested") requested.inc();
			else if (event.type === "approval_resolved") {
				resolved.inc({ status: field(event, "approval", "status") ?? "unknown" });
			} else if (event.type === "run_limit_reached") {
				limitsReached.inc({ kind: field(event, "limit", "kind") ?? "unknown" });
			} else if (event.type === "egress_denied") {
				egressDenied.inc({ reason: field(event, "reason") ?? "unknown" });
			} else if (event.type === "session_exit") {
				const reason = field(event, "reason") ?? "unknown";
				exits.inc({ reason });
				if (reason === "crashed") crashes.inc();
			}
		});

		this.commands = new Counter({
			name: "pi_gateway_commands_total",
			help: "pi commands sent through the HTTP API, by pi command type and outcome (ok, or the problem code)",
			labelNames: ["command", "outcome"],
			registers,
		});
		this.commandSeconds = new Histogram({
			name: "pi_gateway_command_duration_seconds",
			help: "Time from request to pi's answer (for streamed and 202 runs: acceptance; wait-mode runs are not included)",
			labelNames: ["command"],
			buckets: [0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60],
			registers,
		});
		this.httpRequests = new Counter({
			name: "pi_gateway_http_requests_total",
			help: "HTTP requests by method, route template and status",
			labelNames: ["method", "route", "status"],
			registers,
		});
		this.httpSeconds = new Histogram({
			name: "pi_gateway_http_request_duration_seconds",
			help: "Time to the response headers (an event stream counts until it opens)",
			labelNames: ["method", "route"],
			buckets: [0.001, 0.005, 0.01, 0.05, 0.1, 0.5, 1, 5, 30],
			registers,
		});
	}

	/**
	 * Cluster mode: the node's cluster, once it joined: the nodes and the sessions each owns, asked at
	 * scrape time, for the cluster gauges, and the counts of its folder sync.
	 */
	setClusterSource(cluster: () => Cluster | undefined): void {
		this.#cluster = cluster;
	}

	/** Whose a session is (its owner principal), for the usage counters' `principal` label. */
	setOwnerSource(ownerOf: (sessionId: string) => string): void {
		this.#ownerOf = ownerOf;
	}

	/** Where the warm-pool gauge reads its size at scrape time (the pool registers itself here). */
	setWarmPoolSource(size: () => number): void {
		this.#warmPool = size;
	}

	get contentType(): string {
		return this.registry.contentType;
	}

	text(): Promise<string> {
		return this.registry.metrics();
	}
}

/** A string field of a gateway event's JSON (`approval.status`, `reason`), read only for the few that need it. */
function field(event: LoggedEvent, ...path: string[]): string | undefined {
	try {
		let value: unknown = eventJson(event);
		for (const key of path) value = (value as Record<string, unknown> | undefined)?.[key];
		return typeof value === "string" ? value : undefined;
	} catch {
		return undefined;
	}
}
