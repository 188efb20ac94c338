import { Hono } from "hono";
import { stringify } from "yaml";
import type { AppEnv } from "../../transport/openapi.ts";
import { toOpenApi30 } from "../../transport/openapi-30.ts";
import { forGenerators, type Json } from "../../transport/openapi-generators.ts";

/**
 * The API description, public (it ships in the package): the 3.1 document at /openapi.json and
 * /openapi.yaml, its 3.0.3 twin at /openapi-3.0.json and /openapi-3.0.yaml for generators that
 * stop at 3.0. Both are the routes' document written for generators (openapi-generators.ts).
 * Not API operations, so not in the spec.
 */
export const specPaths = ["/openapi.json", "/openapi.yaml", "/openapi-3.0.json", "/openapi-3.0.yaml"];

export function specRouter(routesDocument: Json) {
	// Written on the first request for them: a start that nobody asks for the spec skips the work.
	let published: Json | undefined;
	let published30: Json | undefined;
	const documents: Record<string, () => Json> = {
		"": () => (published ??= forGenerators(routesDocument)),
		"-3.0": () => (published30 ??= toOpenApi30(documents[""]?.() as Json)),
	};
	// The served spec names the origin it was fetched from, so an SDK generated from a running
	// gateway talks to that gateway (the checked-in files are what the default address serves).
	const served = (document: Json, url: string) => ({ ...document, servers: [{ url: new URL(url).origin }] });
	const router = new Hono<AppEnv>();
	for (const [suffix, document] of Object.entries(documents)) {
		router.get(`/openapi${suffix}.json`, (c) => c.json(served(document(), c.req.url)));
		router.get(`/openapi${suffix}.yaml`, (c) =>
			c.body(stringify(served(document(), c.req.url)), 200, { "Content-Type": "application/yaml" }),
		);
	}
	return router;
}
