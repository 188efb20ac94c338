import {
	type AgentApp,
	type AgentContext,
	agent,
	type ClientCapabilities,
	type ContentBlock,
	type InitializeResponse,
	PROTOCOL_VERSION,
	RequestError,
	type SessionUpdate,
} from "@agentclientprotocol/sdk";
import { z } from "zod";
import { GatewayError, type PiGateway, type Schemas, type StreamEvent } from "../client/index.ts";
import { ask } from "./ask.ts";
import { configOptions } from "./config-options.ts";
import { problemText, run } from "./gateway.ts";
import { history } from "./history.ts";
import { closeOpenTools, emptyTurn, mapEvent, stopReason, type TurnState } from "./mapping.ts";
import { availableCommands, promptBody } from "./prompt.ts";

/**
 * The ACP agent: each handler calls the gateway operations of mapping.ts's methodTable and sends
 * what mapping.ts makes of the events. One turn per session at a time; one chain per connection
 * carries every update, so they reach the editor in the order the gateway logged them.
 */

export interface BridgeOptions {
	gateway: PiGateway;
	version: string;
	/** Extensions every new session loads (names from the gateway's allow-list). */
	extensions?: string[];
	/** provider/id for new sessions. */
	model?: { provider: string; id: string };
	/** Editor folder → gateway folder, longest prefix first (--cwd-map LOCAL=REMOTE). */
	cwdMap?: [string, string][];
	log: (line: string) => void;
	/** How long a cancelled run may take to settle before the prompt returns anyway (ms). */
	cancelGraceMs?: number;
}

interface Turn {
	cancelled: boolean;
	/** pi accepted the prompt: an abort now has a run to stop. */
	started: boolean;
	controller: AbortController;
	/** Editor requests open for an approval, by approval id: dropped when someone else answers. */
	asking: Map<string, AbortController>;
	state: TurnState;
	/** Set once the turn is cancelled: how long the run may take to settle. */
	onCancel?: () => void;
}

interface Live {
	id: string;
	turn?: Turn;
}

/** The editor's folder on the gateway: the longest mapped prefix, else undefined (the session's own folder there). */
export function mapCwd(cwd: string, map: [string, string][] = []): string | undefined {
	const sorted = [...map].sort((a, b) => b[0].length - a[0].length);
	for (const [local, remote] of sorted) {
		const base = local.replace(/\/+$/, "");
		if (cwd === base || cwd.startsWith(`${base}/`)) return remote.replace(/\/+$/, "") + cwd.slice(base.length);
	}
	return undefined;
}

export function initializeResponse(version: string): InitializeResponse {
	return {
		protocolVersion: PROTOCOL_VERSION,
		agentInfo: { name: "pi-gateway", title: "pi (gateway)", version },
		agentCapabilities: {
			loadSession: true,
			// pi takes images; embedded context arrives as text in the message; no audio.
			promptCapabilities: { image: true, audio: false, embeddedContext: true },
			mcpCapabilities: { http: false, sse: false },
		},
		authMethods: [],
	};
}

const SetModelParams = z.object({ sessionId: z.string(), modelId: z.string() });

export function createBridge(options: BridgeOptions): AgentApp {
	const { gateway, log } = options;
	const sessions = new Map<string, Live>();
	let capabilities: ClientCapabilities = {};
	let chain: Promise<void> = Promise.resolve();

	/** Sends updates in order, after everything sent before; resolves when they are written. */
	const send = (client: AgentContext, sessionId: string, updates: SessionUpdate[]): Promise<void> => {
		for (const update of updates)
			chain = chain.then(() => client.notify("session/update", { sessionId, update }).catch(() => {}));
		return chain;
	};

	const live = (id: string): Live => {
		const session = sessions.get(id);
		if (!session) throw RequestError.resourceNotFound(id);
		return session;
	};

	const announceCommands = async (client: AgentContext, id: string) => {
		try {
			const { commands } = await gateway.request("GET", "/v1/sessions/{id}/slash-commands", { path: { id } });
			await send(client, id, [
				{ sessionUpdate: "available_commands_update", availableCommands: availableCommands(commands) },
			]);
		} catch (error) {
			log(`pi-gateway acp: slash commands of ${id}: ${(error as Error).message}`);
		}
	};

	const setModel = async (id: string, value: string) => {
		const slash = value.indexOf("/");
		if (slash < 1) throw RequestError.invalidParams({ value }, "a model is provider/id");
		await gateway.request("PUT", "/v1/sessions/{id}/model", {
			path: { id },
			body: { provider: value.slice(0, slash), modelId: value.slice(slash + 1) },
		});
	};

	const abortRun = (id: string) =>
		gateway.abort(id).catch((error) => log(`pi-gateway acp: abort ${id}: ${(error as Error).message}`));

	return (
		agent({ name: "pi-gateway" })
			.onRequest("initialize", ({ params }) => {
				capabilities = params.clientCapabilities ?? {};
				return initializeResponse(options.version);
			})
			.onRequest("authenticate", () => ({}))
			.onRequest("session/new", async ({ params, client }) => {
				const cwd = mapCwd(params.cwd, options.cwdMap);
				const session = await gateway.createSession({
					...(cwd ? { cwd } : {}),
					...(options.extensions?.length ? { extensions: options.extensions } : {}),
					...(options.model ? { provider: options.model.provider, model: options.model.id } : {}),
				});
				sessions.set(session.id, { id: session.id });
				log(`pi-gateway acp: session ${session.id} in ${session.cwd} (editor folder ${params.cwd})`);
				void announceCommands(client, session.id);
				return { sessionId: session.id, configOptions: await configOptions(gateway, session.id) };
			})
			.onRequest("session/load", async ({ params, client }) => {
				const id = params.sessionId;
				try {
					await gateway.request("POST", "/v1/sessions/{id}/resume", { path: { id } });
				} catch (error) {
					if (error instanceof GatewayError && (error.status === 404 || error.status === 410))
						throw RequestError.resourceNotFound(id);
					throw error;
				}
				sessions.set(id, sessions.get(id) ?? { id });
				// The conversation again, before the answer (ACP: loadSession replays history first).
				const { messages } = await gateway.request("GET", "/v1/sessions/{id}/messages", { path: { id } });
				await send(client, id, history(messages));
				await announceCommands(client, id);
				return { configOptions: await configOptions(gateway, id) };
			})
			.onRequest("session/set_config_option", async ({ params }) => {
				live(params.sessionId);
				const value = String(params.value);
				if (params.configId === "model") await setModel(params.sessionId, value);
				else if (params.configId === "thinking_level")
					await gateway.request("PUT", "/v1/sessions/{id}/thinking-level", {
						path: { id: params.sessionId },
						body: { level: value as Schemas["ThinkingLevel"] },
					});
				else throw RequestError.invalidParams({ configId: params.configId }, "unknown config option");
				return { configOptions: await configOptions(gateway, params.sessionId) };
			})
			// Older editors (Zed's unstable model picker) still send session/set_model.
			.onRequest("session/set_model", SetModelParams, async ({ params }) => {
				live(params.sessionId);
				await setModel(params.sessionId, params.modelId);
				return {};
			})
			.onRequest("session/prompt", async ({ params, client }) => {
				const session = live(params.sessionId);
				const id = session.id;
				if (session.turn) throw RequestError.invalidRequest({ sessionId: id }, "a prompt is already running");
				const turn: Turn = {
					cancelled: false,
					started: false,
					controller: new AbortController(),
					asking: new Map(),
					state: emptyTurn,
				};
				session.turn = turn;
				let aborted = false;
				let piStop: string | undefined;
				let exited: string | undefined;
				let grace: NodeJS.Timeout | undefined;
				const onEvent = async (event: StreamEvent): Promise<boolean> => {
					if (event.type === "response" && event.command === "prompt") {
						turn.started = true;
						// A cancel that came before the run existed stops it now.
						if (turn.cancelled) void abortRun(id);
						const data = (event.data ?? {}) as { disposition?: string };
						if (event.success === true && data.disposition === "handled") return true; // an extension command: no run
						return false;
					}
					if (event.type === "approval_requested") {
						const { approval } = event;
						if (approval.status === "pending")
							void ask({ gateway, client, sessionId: id, turn, approval, capabilities, send, log });
						return false;
					}
					if (event.type === "approval_resolved") {
						turn.asking.get(event.approval.id)?.abort();
						return false;
					}
					const [next, updates] = mapEvent(turn.state, event);
					turn.state = next;
					if (updates.length) void send(client, id, updates);
					if (event.type === "message_end") {
						const message = event.message as { role?: string; stopReason?: string };
						if (message?.role === "assistant") piStop = message.stopReason;
					}
					if (event.type === "agent_settled") {
						aborted = event.aborted === true;
						return true;
					}
					if (event.type === "session_exit" && event.resumable !== true) {
						exited = String(event.reason ?? "exit");
						return true;
					}
					return false;
				};
				turn.onCancel = () => {
					grace = setTimeout(() => turn.controller.abort(), options.cancelGraceMs ?? 10_000);
				};
				try {
					await run(gateway, id, promptBody(params.prompt as ContentBlock[]), onEvent, turn.controller.signal);
				} catch (error) {
					if (!turn.controller.signal.aborted) {
						if (error instanceof GatewayError)
							throw new RequestError(-32603, `The gateway refused the prompt: ${problemText(error)}`, {
								code: error.code,
							});
						throw error;
					}
				} finally {
					clearTimeout(grace);
					for (const asking of turn.asking.values()) asking.abort();
					session.turn = undefined;
				}
				if (turn.cancelled || aborted || exited) await send(client, id, closeOpenTools(turn.state));
				else await chain;
				// pi ended mid-run (crashed, killed): an error, not a turn that ended; session/load resumes it.
				if (exited && !turn.cancelled) throw RequestError.internalError({ reason: exited }, "pi exited during the run");
				return { stopReason: turn.cancelled ? "cancelled" : stopReason(aborted, piStop) };
			})
			.onNotification("session/cancel", ({ params }) => {
				const turn = sessions.get(params.sessionId)?.turn;
				if (!turn || turn.cancelled) return;
				turn.cancelled = true;
				for (const asking of turn.asking.values()) asking.abort();
				// Before pi accepted the prompt there is nothing to abort yet: the response does it (onEvent).
				if (turn.started) void abortRun(params.sessionId);
				turn.onCancel?.();
			})
	);
}
