import { createRoute } from "@hono/zod-openapi";
import { UiState } from "../../../sessions/session/index.ts";
import { json, problems } from "../../transport/openapi.ts";
import { SessionParams } from "../../transport/params.ts";

// Tagged with approvals (dialogs and UI state share a section in the docs), but it is a view of the session.
export const getUi = createRoute({
	operationId: "sessions.getUi",
	method: "get",
	path: "/v1/sessions/{id}/ui",
	tags: ["approvals"],
	summary: "The latest fire-and-forget UI state: title, statuses, widgets, editor text, notifications",
	request: { params: SessionParams },
	responses: { 200: json(UiState, "The UI state"), ...problems(401, 404) },
});
