import { GatewayError, PiGateway, type Schemas, type StreamEvent } from "../client/index.ts";

/**
 * The bridge reaches the gateway through its own client (src/client: typed operations, problem+json
 * as GatewayError, streams that resume), over HTTP only: the bridge runs on the editor's machine,
 * the gateway elsewhere. This file holds what the bridge adds to it.
 */

/** The longest frame the bridge holds (characters of text, about bytes): past it the run fails, not retried. */
export const maxFrameChars = 16 * 1024 * 1024;

export interface GatewayOptions {
	url: string;
	token: string | undefined;
	/** Where logs go (stderr): never stdout, which carries only ACP. */
	log: (line: string) => void;
	/** How long a cut stream keeps being retried before the run is given up (ms; one try every 250 ms). */
	reconnectForMs?: number;
	fetch?: typeof fetch;
}

export function connectGateway(options: GatewayOptions): PiGateway {
	const delayMs = 250;
	return new PiGateway({
		baseUrl: options.url,
		token: options.token,
		fetch: options.fetch,
		maxFrameChars,
		reconnect: {
			delayMs,
			maxAttempts: Math.max(1, Math.ceil((options.reconnectForMs ?? 60_000) / delayMs)),
			onCut: ({ after, reason }) =>
				options.log(`pi-gateway acp: event stream cut (${reason}); reconnecting after ${after}`),
		},
	});
}

/**
 * A run, streamed: `POST …/prompt/stream` (the gateway subscribes before it sends the prompt, so
 * nothing of the run is missed), each event to `onEvent` until it returns true or the run ends.
 * After a cut the client resumes with the same POST and `Last-Event-ID`: the rest of the run,
 * nothing lost or repeated, and pi sees the prompt once. A refused prompt throws the gateway's
 * problem before any event; an `error` frame (the command failed once streaming) throws it too.
 */
export async function run(
	gateway: PiGateway,
	id: string,
	body: Schemas["PromptBody"],
	onEvent: (event: StreamEvent) => boolean | Promise<boolean>,
	signal: AbortSignal,
): Promise<void> {
	for await (const event of gateway.promptStream(id, body, { signal })) {
		if (event.type === "error")
			throw new GatewayError({
				type: "about:blank",
				title: event.code,
				status: event.status,
				code: event.code,
				detail: event.detail,
			});
		if (await onEvent(event)) return;
	}
}

/** A problem as the bridge tells it to the editor and its log: `409 conflict: …`. */
export const problemText = (error: GatewayError) => `${error.status} ${error.code}: ${error.detail}`;
