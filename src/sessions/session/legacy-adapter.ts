import type { Logger } from "pino";
import {
	type Dialect,
	extensionCommandNames,
	hasNameFlag,
	lacksCommand,
	legacyDisposition,
	legacyMessageUpdate,
	looksLegacy,
	synthesisedSettled,
} from "../../pi/dialect.ts";
import type { PiCommand, PiResponse } from "../../pi/protocol.ts";
import { GatewayError } from "../../shared/errors.ts";

/** What the adapter asks of its session's command channel. */
export interface LegacyChannel {
	dispatch(command: PiCommand, timeoutMs: number): Promise<PiResponse>;
	/** The command in flight under `id` (a prompt's message tells an extension command). */
	commandOf(id: string): PiCommand | undefined;
	/** Fails the oldest in-flight command of `type`; false when there is none. */
	failOldest(type: string, error: GatewayError): boolean;
	/** Messages waiting in pi's own queues, as of its last queue_update. */
	readonly piQueued: number;
}

/**
 * One session's adaptation of a pi 0.73 child ("legacy dialect", pi/dialect.ts) to the protocol
 * the rest of the gateway reads: it learns the child's extension commands at start, answers 501
 * for the commands that pi lacks, rewrites its `message_update`s to deltas, gives its prompt
 * answers a `disposition`, and synthesises the `agent_settled` it never sends. For a current pi
 * every method hands its input back unchanged, so Session calls them without asking which pi runs.
 * The dialect comes from the pi package (registry) or is detected from the first prompt answer.
 */
export class LegacyAdapter {
	#dialect: Dialect;
	readonly #channel: LegacyChannel;
	readonly #logger: Logger;
	/** A legacy pi's extension commands, as of its start: their prompts are `handled`. */
	#extensionCommands: ReadonlySet<string> = new Set();

	constructor(dialect: Dialect, channel: LegacyChannel, logger: Logger) {
		this.#dialect = dialect;
		this.#channel = channel;
		this.#logger = logger;
	}

	get dialect(): Dialect {
		return this.#dialect;
	}

	/**
	 * Once pi answered its first get_state: a legacy pi cannot say a prompt was `handled`, so its
	 * extension commands are learnt; it has no --name flag, so a wanted name is set now. Resolves
	 * with the name pi holds afterwards.
	 */
	async start(name: string | undefined, piName: string | undefined, timeoutMs: number): Promise<string | undefined> {
		if (this.#dialect === "legacy") {
			const commands = await this.#channel.dispatch({ type: "get_commands" }, timeoutMs);
			this.#extensionCommands = extensionCommandNames(commands.data);
		}
		if (hasNameFlag(this.#dialect) || !name || piName === name) return piName;
		await this.#channel.dispatch({ type: "set_session_name", name }, timeoutMs);
		return name;
	}

	/** A command this pi does not have: 501 at once (a legacy pi answers it without an id: it would hang). */
	assertSupported(type: string): void {
		if (lacksCommand(this.#dialect, type)) throw notSupported(type);
	}

	/** An event line as pi 1.x prints it (a legacy `message_update` repeats the whole partial message). */
	event(type: string, line: Buffer): Buffer {
		if (this.#dialect !== "legacy" || type !== "message_update") return line;
		return Buffer.from(legacyMessageUpdate(line.toString("utf8")));
	}

	/** The `agent_settled` a legacy pi never sends: after its `agent_end`, when nothing is queued in pi. */
	settledAfter(type: string, line: Buffer): Buffer | undefined {
		if (this.#dialect !== "legacy" || type !== "agent_end" || this.#channel.piQueued !== 0) return undefined;
		return Buffer.from(synthesisedSettled(line.toString("utf8")));
	}

	/**
	 * A response as pi 1.x gives it: a prompt accepted without a disposition (which also tells a
	 * legacy pi that was not detected from its package) gets the one pi 1.x would have sent, so run
	 * streams and wait mode read one contract. `running`: a run was going when the answer came.
	 */
	response(response: PiResponse, line: Buffer, running: boolean): { response: PiResponse; line: Buffer } {
		if (!looksLegacy(response)) return { response, line };
		if (this.#dialect === "current") {
			this.#logger.warn("pi accepted a prompt without a disposition: a legacy pi (0.73)");
			this.#dialect = "legacy";
		}
		const message = response.id ? this.#channel.commandOf(response.id)?.message : undefined;
		const disposition = legacyDisposition(running, message, this.#extensionCommands);
		const adapted = { ...response, data: { disposition } };
		return { response: adapted, line: Buffer.from(JSON.stringify(adapted)) };
	}

	/**
	 * pi 0.73 answers a command it does not know without its id: that would hang the command until
	 * its deadline. The oldest one of that type gets 501 now (a pi whose age was not detected).
	 * True when the response was such an answer and is dealt with.
	 */
	unknownCommand(response: PiResponse): boolean {
		if (response.id || response.success || !/^Unknown command: /.test(response.error ?? "")) return false;
		return this.#channel.failOldest(response.command, notSupported(response.command));
	}
}

function notSupported(type: string): GatewayError {
	return new GatewayError(
		501,
		"not_supported_by_pi",
		`The pi this session runs (an older one, like 0.73) has no ${type} command`,
	);
}
