import { createRoute } from "@hono/zod-openapi";
import { BudgetView, SessionBudget } from "../../../sessions/runs/index.ts";
import { json, jsonBody, problems } from "../../transport/openapi.ts";
import { SessionParams } from "../../transport/params.ts";

export const getBudget = createRoute({
	operationId: "sessions.getBudget",
	method: "get",
	path: "/v1/sessions/{id}/budget",
	tags: ["sessions"],
	summary: "The session's budget and what its runs used so far",
	description:
		"Tokens and cost are summed from the usage pi reports for every model call of the session (assistant messages and compactions), kept with the session across gateway restarts. Once a limit is reached, prompts, steers, follow-ups and compactions are refused with 409 `budget_exhausted` (docs/limits.md).",
	request: { params: SessionParams },
	responses: { 200: json(BudgetView, "The budget and its usage"), ...problems(401, 404) },
});

export const putBudget = createRoute({
	operationId: "sessions.putBudget",
	method: "put",
	path: "/v1/sessions/{id}/budget",
	tags: ["sessions"],
	summary: "Set the session's budget (replaces both limits; the usage so far stays)",
	description:
		"A limit left out is removed; `{}` removes both. Raising a limit past the usage lets refused commands through again.",
	request: { params: SessionParams, body: jsonBody(SessionBudget, { maxTokens: 2000000, maxCostUsd: 10 }) },
	responses: { 200: json(BudgetView, "The budget as now set, and its usage"), ...problems(400, 401, 404, 415) },
});
