import { scopes } from "../../auth/principals.ts";
import { createRouter } from "../../transport/openapi.ts";
import { ApiError } from "../../transport/problem.ts";
import { whoami } from "./whoami.routes.ts";

/** GET /v1/whoami: the caller's principal and scopes, read from what bearerAuth set. */
export function whoamiRouter() {
	return createRouter().openapi(whoami, (c) => {
		const principal = c.get("principal");
		if (!principal) throw new ApiError(401, "unauthorized", "Send a bearer token or an API key");
		const held = principal.scopes.has("admin") ? scopes : scopes.filter((s) => principal.scopes.has(s));
		return c.json({ principal: principal.name, scopes: [...held], anonymous: principal.anonymous === true }, 200);
	});
}
