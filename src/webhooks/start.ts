import type { Logger } from "pino";
import type { Config } from "../config/config.ts";
import type { SessionRegistry } from "../sessions/registry/index.ts";
import { hasGit } from "../workspace/git.ts";
import { DestinationError, Destinations } from "./destinations.ts";
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
	await checkStatic(await service.list(), new Destinations(config.webhookAllow), config.webhookTimeoutMs, logger);
	if (shared) await service.share(shared);
	service.start();
	return service;
}

/**
 * --webhooks-file: each webhook's destination is checked as a registration's is, and a refused one
 * stops the start (saying what to allow). A name that does not resolve now only warns: every
 * delivery checks the answer it has then.
 */
async function checkStatic(
	hooks: { id: string; url: string; static: boolean }[],
	destinations: Destinations,
	timeoutMs: number,
	logger: Logger,
): Promise<void> {
	for (const hook of hooks.filter((h) => h.static)) {
		let timer: NodeJS.Timeout | undefined;
		const late = new Promise<never>((_, fail) => {
			timer = setTimeout(() => fail(new Error(`no DNS answer within ${timeoutMs} ms`)), timeoutMs);
		});
		try {
			await Promise.race([destinations.resolve(new URL(hook.url)), late]);
		} catch (error) {
			if (error instanceof DestinationError) throw new Error(`--webhooks-file: webhook ${hook.id}: ${error.message}`);
			logger.warn(
				{ webhookId: hook.id, err: error },
				"webhooks: a --webhooks-file destination was not resolved at start; each delivery checks it again",
			);
		} finally {
			clearTimeout(timer);
		}
	}
}
