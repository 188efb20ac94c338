import { Hono } from "hono";
import type { AppEnv } from "../../transport/openapi.ts";
import { ApiError } from "../../transport/problem.ts";

/**
 * Where MCP clients look for OAuth when /mcp answers 401 (RFC 9728 protected resource metadata,
 * RFC 8414 and OpenID authorization server metadata, each at the root and for the /mcp path), and
 * the client registration they fall back to (RFC 7591's default /register): what Claude Code
 * 2.1.328, Codex 0.169.0 and the MCP SDKs requested, seen on the wire. The gateway is no OAuth
 * server, so each answers 404, without a credential: a 404 is how the metadata's absence is said,
 * and Claude Code shows the problem's detail, which names the header to configure (no URL path in
 * it: Claude Code redacts the server's path from what it prints). Behind auth they were 401s
 * "a valid bearer token is required", which Claude Code reported as its client registration refused.
 */
const metadata = ["oauth-protected-resource", "oauth-authorization-server", "openid-configuration"];
const getPaths = metadata.flatMap((name) => [
	`/.well-known/${name}`,
	`/.well-known/${name}/mcp`,
	`/mcp/.well-known/${name}`,
]);
const registration = "/register";

/** Served without a credential: each answers the same 404 and holds nothing. */
export const oauthDiscoveryPaths = [...getPaths, registration];

/** Not API operations (the spec does not list them), as /docs is not. */
export function oauthDiscoveryRouter() {
	const router = new Hono<AppEnv>();
	const refuse = () => {
		throw new ApiError(
			404,
			"oauth_not_supported",
			"pi-gateway offers no OAuth: configure the MCP client to send the header Authorization: Bearer <the gateway's token or an API key> (pi-gateway's docs, MCP server)",
		);
	};
	for (const path of getPaths) router.get(path, refuse);
	router.post(registration, refuse);
	return router;
}
