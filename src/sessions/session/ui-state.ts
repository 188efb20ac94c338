import { z } from "@hono/zod-openapi";
import type { UiRequest } from "../../pi/protocol.ts";

export const UiState = z
	.object({
		title: z.string().nullable().describe("The title an extension set (`setTitle`); null if none"),
		statuses: z.record(z.string(), z.string()).describe("Status texts extensions set (`setStatus`), by key"),
		widgets: z
			.record(
				z.string(),
				z.object({
					lines: z.array(z.string()).describe("The widget's lines of text"),
					placement: z.enum(["aboveEditor", "belowEditor"]).describe("Where a terminal would show it"),
				}),
			)
			.describe("Widgets extensions set (`setWidget`), by key"),
		editorText: z.string().nullable().describe("Text an extension put in the editor (`set_editor_text`); null if none"),
		notifications: z
			.array(
				z.object({
					message: z.string().describe("The notification's text"),
					level: z.enum(["info", "warning", "error"]).describe("How serious it is"),
					at: z.string().describe("When it came (ISO 8601)"),
				}),
			)
			.describe("The latest notifications (`notify`), oldest first"),
	})
	.openapi("UiState", {
		description: "What extensions asked pi's UI to show, kept for clients without a terminal",
		example: {
			title: null,
			statuses: { git: "main" },
			widgets: {},
			editorText: null,
			notifications: [{ message: "Tests passed", level: "info", at: "2026-12-01T10:00:04.000Z" }],
		},
	});
export type UiState = z.infer<typeof UiState>;

export const fireAndForgetMethods: ReadonlySet<string> = new Set([
	"notify",
	"setStatus",
	"setWidget",
	"setTitle",
	"set_editor_text",
]);

type Level = UiState["notifications"][number]["level"];
const levels: ReadonlySet<string> = new Set<Level>(["info", "warning", "error"]);

/** The latest state of an extension's fire-and-forget UI calls, as a client would render it. */
export function emptyUiState(): UiState {
	// Null-prototype maps: a key such as "__proto__" is just another key.
	return {
		title: null,
		statuses: Object.create(null),
		widgets: Object.create(null),
		editorText: null,
		notifications: [],
	};
}

export function applyUiRequest(state: UiState, request: UiRequest, maxNotifications: number): void {
	switch (request.method) {
		case "notify":
			state.notifications.push({
				message: request.message ?? "",
				// pi passes the extension's value through unchecked; anything unknown renders as info.
				level: levels.has(request.notifyType as string) ? (request.notifyType as Level) : "info",
				at: new Date().toISOString(),
			});
			if (state.notifications.length > maxNotifications) state.notifications.shift();
			return;
		case "setStatus":
			if (!request.statusKey) return;
			if (request.statusText == null) delete state.statuses[request.statusKey];
			else state.statuses[request.statusKey] = String(request.statusText);
			return;
		case "setWidget":
			if (!request.widgetKey) return;
			if (!Array.isArray(request.widgetLines)) delete state.widgets[request.widgetKey];
			else
				state.widgets[request.widgetKey] = {
					lines: request.widgetLines.map(String),
					placement: request.widgetPlacement === "belowEditor" ? "belowEditor" : "aboveEditor",
				};
			return;
		case "setTitle":
			state.title = request.title ?? null;
			return;
		case "set_editor_text":
			state.editorText = request.text ?? null;
			return;
	}
}
