import { createRouter } from "../../transport/openapi.ts";
import type { Deps } from "../deps.ts";
import { getUi } from "./ui.routes.ts";

/** `GET …/ui`: registered after the approvals router so the spec keeps its order. */
export function uiRouter({ registry }: Deps) {
	return createRouter().openapi(getUi, (c) => c.json(registry.get(c.req.valid("param").id).ui, 200));
}
