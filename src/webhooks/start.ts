import type { Logger } from "pino";
import type { Config } from "../config.ts";
import type { SessionRegistry } from "../sessions/registry.ts";
import { hasGit } from "../workspace/git.ts";
import { WebhookService } from "./service.ts";
import type { SharedWebhooks } from "./shared.ts";
import type { WebhookStore } from "./store.ts";

/**
 * The one hook point into the registry: its all-sessions event hub. `store` is the node's own
 * (gateway.db, opened by the registry: the composition root builds it once registry.open() ran).
 * In cluster mode the definitions come from `shared` (PostgreSQL) before the first event is seen.
 */
export async function startWebhooks(
	config: Config,
	registry: SessionRegistry,
	store: WebhookStore,
	logger: Logger,
	shared?: SharedWebhooks,
): Promise<WebhookService> {
	const service = new WebhookService(
		{ ...config, workspaceChanges: config.workspaceChanges && hasGit() },
		store,
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
