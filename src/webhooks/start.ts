import type { Logger } from "pino";
import type { Config } from "../config.ts";
import type { SessionRegistry } from "../sessions/registry.ts";
import { WebhookService } from "./service.ts";
import { WebhookStore } from "./store.ts";

/** The one hook point into the registry: its all-sessions event hub and the open gateway.db. */
export function startWebhooks(config: Config, registry: SessionRegistry, logger: Logger): WebhookService {
	const db = registry.sqliteDatabase;
	if (!db) throw new Error("webhooks need the registry's store: call registry.open() first");
	const service = new WebhookService(
		config,
		new WebhookStore(db),
		{
			subscribeAll: (listener) => registry.subscribeAll(listener),
			currentRunId: (sessionId) => registry.list().find((s) => s.id === sessionId)?.currentRunId,
		},
		logger.child({ component: "webhooks" }),
	);
	service.start();
	return service;
}
