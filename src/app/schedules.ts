import type { Logger } from "pino";
import type { Config } from "../config/config.ts";
import { type AppFetch, fireTicks } from "../http/routes/schedules/ticks.ts";
import { ScheduleService } from "../schedules/service.ts";
import type { ScheduleStore } from "../schedules/store.ts";
import { ScheduleTicker } from "../schedules/ticker.ts";

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
): ScheduleTicker {
	const ticker = new ScheduleTicker(store, node, fireTicks(app, origin), logger.child({ component: "schedules" }));
	ticker.start(config.scheduleCheckMs);
	return ticker;
}
