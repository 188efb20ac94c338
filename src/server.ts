import type { AddressInfo } from "node:net";
import { serve } from "@hono/node-server";
import pino, { type Logger } from "pino";
import { createApp } from "./app.ts";
import { type Config, type ConfigInput, parseConfig } from "./config.ts";
import { SessionRegistry } from "./sessions/registry.ts";

export interface Gateway {
	url: string;
	port: number;
	config: Config;
	registry: SessionRegistry;
	/** Stop accepting, end streams, stop every child. Idempotent. */
	close(): Promise<void>;
}

const loopback = /^(127\.\d+\.\d+\.\d+|localhost|::1|\[::1\])$/;

export async function startGateway(input: ConfigInput, logger?: Logger): Promise<Gateway> {
	const config = parseConfig(input);
	if (!loopback.test(config.host) && !config.token) {
		throw new Error(`Refusing to listen on ${config.host} without a token: set --token (or PI_GATEWAY_TOKEN)`);
	}
	const log = logger ?? pino({ level: config.logLevel });
	const registry = new SessionRegistry(config, log);
	// Before listening: a data dir held by another gateway fails here, and restored sessions are listed from the first request.
	registry.open();
	const app = createApp(config, registry, log);
	let server: ReturnType<typeof serve>;
	try {
		server = await new Promise<ReturnType<typeof serve>>((resolve, reject) => {
			const s = serve({ fetch: app.fetch, hostname: config.host, port: config.port }, () => resolve(s));
			s.once("error", reject);
		});
	} catch (error) {
		await registry.shutdown();
		throw error;
	}
	const port = (server.address() as AddressInfo).port;
	const host = config.host.includes(":") && !config.host.startsWith("[") ? `[${config.host}]` : config.host;
	const url = `http://${host}:${port}`;
	log.info({ url, demo: config.demo, workspaceRoot: config.workspaceRoot }, "pi-gateway listening");

	let closing: Promise<void> | undefined;
	const close = () => {
		closing ??= (async () => {
			const stopped = new Promise<void>((resolve) => server.close(() => resolve()));
			await registry.shutdown();
			// Streams ended with their sessions; whatever is left (hub streams, idle keep-alives) goes now.
			(server as unknown as { closeAllConnections?: () => void }).closeAllConnections?.();
			await stopped;
			log.info("pi-gateway stopped");
		})();
		return closing;
	};
	return { url, port, config, registry, close };
}
