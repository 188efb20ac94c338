import { eventJson, type LoggedEvent } from "./event-log.ts";

/**
 * What a list of sessions shows of each without opening it (the console's sidebar): the last thing
 * said or the tool running now, and whether the last run failed. Folded from the session's own
 * events as they are appended, so listing costs nothing; a session restored after a gateway restart
 * starts with none (its log starts again too).
 */
export interface ActivityView {
	preview: { role: "user" | "assistant" | "tool"; text: string } | null;
	lastError: { message: string; retries: number } | null;
}

/** A preview is one line of a list: longer text is cut here, not sent whole with every poll. */
const previewChars = 160;
/** Only these events are read (parsed); every other passes untouched. */
const watched = new Set([
	"message_end",
	"tool_execution_start",
	"tool_execution_end",
	"auto_retry_start",
	"agent_start",
]);

// biome-ignore lint/suspicious/noExplicitAny: pi's event JSON, read field by field
type Json = any;

const oneLine = (text: string) => {
	const line = text.replace(/\s+/g, " ").trim();
	return line.length > previewChars ? `${line.slice(0, previewChars - 1)}…` : line;
};

function textOf(content: Json): string {
	if (typeof content === "string") return content;
	if (!Array.isArray(content)) return "";
	return content
		.filter((c: Json) => c?.type === "text")
		.map((c: Json) => String(c.text ?? ""))
		.join("");
}

/** What a running tool is about: bash's command, else the tool's name and its path or first argument. */
function toolLine(data: Json): string {
	const args = (data?.args ?? {}) as Record<string, unknown>;
	const name = String(data?.toolName ?? "tool");
	if (name === "bash") return `$ ${String(args.command ?? "")}`;
	const main = args.path ?? args.file_path ?? args.pattern ?? Object.values(args)[0];
	return typeof main === "string" ? `${name} ${main}` : name;
}

export class Activity {
	#message: ActivityView["preview"] = null;
	#tools = new Map<string, string>();
	#error: ActivityView["lastError"] = null;
	#retries = 0;

	/** The listener for the session's event log. */
	readonly onEvent = (event: LoggedEvent): void => {
		if (!watched.has(event.type)) return;
		let data: Json;
		try {
			data = eventJson(event);
		} catch {
			return;
		}
		this.apply(event.type, data);
	};

	apply(type: string, data: Json): void {
		switch (type) {
			case "message_end": {
				const message = data?.message;
				if (message?.role !== "user" && message?.role !== "assistant") return;
				if (message.role === "user") {
					// A new prompt: the last run's failure is history, its retries too.
					this.#error = null;
					this.#retries = 0;
				}
				if (message.role === "assistant" && (message.stopReason === "error" || message.errorMessage)) {
					this.#error = { message: String(message.errorMessage ?? "error"), retries: this.#retries };
					return;
				}
				if (message.role === "assistant") this.#error = null;
				const text = oneLine(textOf(message.content));
				if (text) this.#message = { role: message.role, text };
				return;
			}
			case "tool_execution_start":
				this.#tools.set(String(data?.toolCallId), oneLine(toolLine(data)));
				return;
			case "tool_execution_end":
				this.#tools.delete(String(data?.toolCallId));
				return;
			case "auto_retry_start":
				this.#retries = Number(data?.attempt ?? this.#retries + 1);
				return;
			case "agent_start":
				// A run that starts ends any tool a lost run left behind.
				this.#tools.clear();
				return;
		}
	}

	view(): ActivityView {
		const running = [...this.#tools.values()].at(-1);
		return { preview: running ? { role: "tool", text: running } : this.#message, lastError: this.#error };
	}
}

const activities = new WeakMap<object, Activity>();

/** Starts folding a session's events (`log.subscribe`), kept with the session. */
export function trackActivity(session: object, subscribe: (listener: (event: LoggedEvent) => void) => unknown): void {
	const activity = new Activity();
	activities.set(session, activity);
	subscribe(activity.onEvent);
}

export const activityOf = (session: object): ActivityView =>
	activities.get(session)?.view() ?? { preview: null, lastError: null };
