import type { Logger } from "pino";
import type { Config } from "../config/config.ts";
import { type AppFetch, fireTicks } from "../http/routes/schedules/ticks.ts";
import { ScheduleService } from "../schedules/service.ts";
import type { ScheduleStore } from "../schedules/store.ts";
import { ScheduleTicker, type TickReport } from "../schedules/ticker.ts";
import type { WebhookService } from "../webhooks/service.ts";

/**
 * Scheduled runs: the service the routes use, and the ticker that fires them once the node listens
 * (and, in cluster mode, has joined): each tick goes through `app` in-process as its principal.
 */
export function scheduleService(store: ScheduleStore, config: Config): ScheduleService {
	return new ScheduleService(store, config);
}

export function startTicker(
	store: ScheduleStore,
	config: Config,
	node: string,
	app: AppFetch,
	origin: string,
	logger: Logger,
	webhooks?: WebhookService,
): ScheduleTicker {
	const log = logger.child({ component: "schedules" });
	const ticker = new ScheduleTicker(store, node, fireTicks(app, origin), log, webhooks && tickWebhooks(webhooks));
	ticker.start(config.scheduleCheckMs);
	return ticker;
}

/** schedule.fired (a run started or was queued) and schedule.failed, thin as every webhook message. */
function tickWebhooks(webhooks: WebhookService): TickReport {
	return (schedule, tickAt, outcome) => {
		const failed = outcome.status === "failed";
		webhooks.notify(schedule.sessionId, failed ? "schedule.failed" : "schedule.fired", {
			sessionId: schedule.sessionId,
			scheduleId: schedule.id,
			at: new Date(tickAt).toISOString(),
			status: outcome.status,
			runId: outcome.runId ?? null,
			// The refusal's status and code ("409 budget_exhausted"), not its words: thin, as every message.
			...(failed && { error: outcome.detail?.split(":")[0] ?? null }),
			links: {
				session: `/v1/sessions/${schedule.sessionId}`,
				schedule: `/v1/sessions/${schedule.sessionId}/schedules/${schedule.id}`,
			},
		});
	};
}
