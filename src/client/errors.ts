import type { components } from "./schema.ts";

export type Problem = components["schemas"]["Problem"];

/**
 * An answer outside 2xx, decoded from its RFC 9457 problem+json body (every error the gateway
 * sends is one). `code` is the stable machine-readable part; `detail` says what happened.
 */
export class GatewayError extends Error {
	readonly status: number;
	readonly code: string;
	readonly detail: string;
	readonly problem: Problem;
	/** Seconds from `Retry-After`, when the answer had one (429, 503). */
	readonly retryAfter: number | undefined;

	constructor(problem: Problem, retryAfter?: number) {
		super(`HTTP ${problem.status} ${problem.code}: ${problem.detail}`);
		this.name = "GatewayError";
		this.status = problem.status;
		this.code = problem.code;
		this.detail = problem.detail;
		this.problem = problem;
		this.retryAfter = retryAfter;
	}

	/** Reads a failed response's body; something that is not problem+json (a proxy's page) still becomes one. */
	static async from(res: Response): Promise<GatewayError> {
		const text = await res.text().catch(() => "");
		const retry = Number(res.headers.get("retry-after"));
		const retryAfter = res.headers.has("retry-after") && Number.isFinite(retry) ? retry : undefined;
		let problem: Problem | undefined;
		try {
			const parsed = JSON.parse(text) as Partial<Problem>;
			if (parsed && typeof parsed.code === "string") problem = { ...parsed, status: res.status } as Problem;
		} catch {}
		problem ??= {
			type: "about:blank",
			title: res.statusText || `HTTP ${res.status}`,
			status: res.status,
			code: `http_${res.status}`,
			detail: text.slice(0, 500) || res.statusText || `HTTP ${res.status}`,
		};
		return new GatewayError(problem, retryAfter);
	}
}

/** A stream broke and could not be resumed (no position to resume from, or reconnects kept failing). */
export class StreamInterruptedError extends Error {
	readonly lastEventId: string | undefined;

	constructor(message: string, lastEventId: string | undefined, options?: { cause?: unknown }) {
		super(message, options);
		this.name = "StreamInterruptedError";
		this.lastEventId = lastEventId;
	}
}

/**
 * The run a stream followed no longer exists: the gateway (or the cluster node) running it stopped
 * uncleanly (SIGKILL, a crash) and its end was never recorded. The stream's events end with the
 * `gap` before it; the session is `stopped` and can be resumed, but the run's outcome is unknown.
 */
export class RunLostError extends Error {
	readonly sessionId: string;
	/** The run that was in progress (its `run_lost` event's `runId`). */
	readonly runId: string;
	/** Why, as the gateway said it. */
	readonly reason: string;

	constructor(sessionId: string, runId: string, reason: string) {
		super(`Run ${runId} of session ${sessionId} was lost: ${reason}. The session is stopped; resume it to run again`);
		this.name = "RunLostError";
		this.sessionId = sessionId;
		this.runId = runId;
		this.reason = reason;
	}
}
