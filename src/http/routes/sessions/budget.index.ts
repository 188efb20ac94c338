import { createRouter } from "../../transport/openapi.ts";
import type { Deps } from "../deps.ts";
import { getBudget, putBudget } from "./budget.routes.ts";

/** `GET/PUT …/budget`: a session's budget (src/sessions/runs/budget.ts); the journal writes a change within a second. */
export function budgetRouter({ registry }: Deps) {
	return createRouter()
		.openapi(getBudget, (c) => c.json(registry.get(c.req.valid("param").id).budget.view(), 200))
		.openapi(putBudget, (c) => {
			const { budget } = registry.get(c.req.valid("param").id);
			budget.limits = c.req.valid("json");
			return c.json(budget.view(), 200);
		});
}
