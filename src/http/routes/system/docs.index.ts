import { readFileSync } from "node:fs";
import { createRequire } from "node:module";
import { dirname, join } from "node:path";
import { Hono } from "hono";
import type { AppEnv } from "../../transport/openapi.ts";

/**
 * GET /docs: Swagger UI from the installed swagger-ui-dist package (no CDN: the machine may be
 * offline), reading this gateway's /openapi.json. Not an API operation, so not in the spec.
 */

const dist = dirname(createRequire(import.meta.url).resolve("swagger-ui-dist/package.json"));

/** The package files the page uses, with their content types; nothing else of the package is served. */
const packageFiles: Record<string, string> = {
	"swagger-ui.css": "text/css; charset=utf-8",
	"swagger-ui-bundle.js": "text/javascript; charset=utf-8",
	"favicon-32x32.png": "image/png",
	"favicon-16x16.png": "image/png",
};

const indexHtml = `<!DOCTYPE html>
<html lang="en">
<head>
<meta charset="utf-8">
<title>pi-gateway API</title>
<link rel="stylesheet" href="./swagger-ui.css">
<link rel="icon" type="image/png" href="./favicon-32x32.png" sizes="32x32">
<link rel="icon" type="image/png" href="./favicon-16x16.png" sizes="16x16">
<style>body { margin: 0 }</style>
</head>
<body>
<div id="swagger-ui"></div>
<script src="./swagger-ui-bundle.js"></script>
<script src="./init.js"></script>
</body>
</html>
`;

// Relative URLs throughout, so the page also works behind a proxy that adds a path prefix.
const initJs = `window.onload = async () => {
  const root = new URL("..", location.href).href.replace(/\\/$/, "");
  const spec = await (await fetch(root + "/openapi.json")).json();
  // "Try it out" talks to the gateway that served this page, whatever its address.
  spec.servers = [{ url: root }];
  window.ui = SwaggerUIBundle({
    spec,
    dom_id: "#swagger-ui",
    deepLinking: true,
    persistAuthorization: true,
    validatorUrl: null, // the default sends the spec to validator.swagger.io
    presets: [SwaggerUIBundle.presets.apis],
    layout: "BaseLayout",
  });
};
`;

/** Paths served without a bearer token: the page and its assets hold nothing secret. */
export const docsPaths = ["/docs", "/docs/", "/docs/init.js", ...Object.keys(packageFiles).map((f) => `/docs/${f}`)];

const cache = new Map<string, Buffer>();
const read = (file: string) => {
	let bytes = cache.get(file);
	if (!bytes) {
		bytes = readFileSync(join(dist, file));
		cache.set(file, bytes);
	}
	return bytes;
};

export function docsRouter() {
	const router = new Hono<AppEnv>();
	// Relative, so a proxy's path prefix survives.
	router.get("/docs", (c) => c.redirect("docs/", 301));
	router.get("/docs/", (c) => c.html(indexHtml));
	router.get("/docs/init.js", (c) => c.body(initJs, 200, { "Content-Type": "text/javascript; charset=utf-8" }));
	for (const [file, type] of Object.entries(packageFiles)) {
		router.get(`/docs/${file}`, (c) =>
			c.body(new Uint8Array(read(file)), 200, { "Content-Type": type, "Cache-Control": "public, max-age=3600" }),
		);
	}
	return router;
}
