import type { Logger } from "pino";
import type { Config } from "../config.ts";
import type { SessionRegistry } from "../sessions/registry.ts";
import { WebhookStore } from "../store/sqlite/webhooks.ts";
import { hasGit } from "../workspace/git.ts";
import { WebhookService } from "./service.ts";
import type { SharedWebhooks } from "./shared.ts";

/**
 * The one hook point into the registry: its all-sessions event hub and the open gateway.db. In
 * cluster mode the definitions come from `shared` (PostgreSQL) before the first event is seen.
 */
export async function startWebhooks(
	config: Config,
	registry: SessionRegistry,
	logger: Logger,
	shared?: SharedWebhooks,
): Promise<WebhookService> {
	const db = registry.sqliteDatabase;
	if (!db) throw new Error("webhooks need the registry's store: call registry.open() first");
	const service = new WebhookService(
		{ ...config, workspaceChanges: config.workspaceChanges && hasGit() },
		new WebhookStore(db),
		{
			subscribeAll: (listener) => registry.subscribeAll(listener),
			currentRunId: (sessionId) => registry.list().find((s) => s.id === sessionId)?.currentRunId,
		},
		logger.child({ component: "webhooks" }),
	);
	if (shared) await service.share(shared);
	service.start();
	return service;
}
