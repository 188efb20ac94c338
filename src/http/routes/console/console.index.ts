import { createHash } from "node:crypto";
import { readFileSync } from "node:fs";
import { fileURLToPath } from "node:url";
import { Hono } from "hono";
import type { AppEnv } from "../../transport/openapi.ts";
import { ApiError } from "../../transport/problem.ts";

/**
 * GET /console: the web console, built by `npm run build` into dist/console and shipped in the
 * package. A client of the public API like any other, so no operation of its own and not in the
 * spec. Its files hold nothing secret and are served without a token; the person signs in on the
 * page. Every answer carries a strict Content-Security-Policy: scripts, styles and connections
 * from this origin only, no inline script or style, no framing, no plugins, no forms elsewhere.
 */

/** From src/http/routes/console and dist/http/routes/console alike: the package root's dist/console. */
const dir = fileURLToPath(new URL("../../../../dist/console/", import.meta.url));

const files: Record<string, { file: string; type: string }> = {
	"/console/": { file: "index.html", type: "text/html; charset=utf-8" },
	"/console/console.js": { file: "console.js", type: "text/javascript; charset=utf-8" },
	"/console/console.css": { file: "console.css", type: "text/css; charset=utf-8" },
	// The changes review, a chunk the page imports only when changes are shown (console/vite.config.ts).
	"/console/console-review.js": { file: "console-review.js", type: "text/javascript; charset=utf-8" },
};

export const consolePaths = ["/console", ...Object.keys(files)];

export const consoleCsp = [
	"default-src 'self'",
	"script-src 'self'",
	"style-src 'self'",
	"img-src 'self' data:",
	"font-src 'none'",
	"connect-src 'self'",
	"object-src 'none'",
	"base-uri 'none'",
	"form-action 'none'",
	"frame-ancestors 'none'",
	"manifest-src 'none'",
	"worker-src 'none'",
].join("; ");

const securityHeaders = {
	"Content-Security-Policy": consoleCsp,
	"X-Content-Type-Options": "nosniff",
	"Referrer-Policy": "no-referrer",
	"X-Frame-Options": "DENY",
	"Cross-Origin-Opener-Policy": "same-origin",
	"Cross-Origin-Resource-Policy": "same-origin",
	"Permissions-Policy": "camera=(), microphone=(), geolocation=()",
};

type Loaded = { bytes: Uint8Array<ArrayBuffer>; etag: string };
const cache = new Map<string, Loaded>();

function load(file: string): Loaded | undefined {
	let loaded = cache.get(file);
	if (loaded) return loaded;
	try {
		const bytes = new Uint8Array(readFileSync(dir + file)) as Uint8Array<ArrayBuffer>;
		loaded = { bytes, etag: `"${createHash("sha256").update(bytes).digest("base64url").slice(0, 22)}"` };
	} catch {
		return undefined;
	}
	cache.set(file, loaded);
	return loaded;
}

export function consoleRouter() {
	const router = new Hono<AppEnv>();
	// Relative, so a proxy's path prefix survives.
	router.get("/console", (c) => c.redirect("console/", 301));
	for (const [path, { file, type }] of Object.entries(files)) {
		router.get(path, (c) => {
			const loaded = load(file);
			if (!loaded) throw new ApiError(404, "console_not_built", "The console is not built: run npm run build");
			// Unhashed names: always revalidated, cheaply (304 on the same ETag).
			const headers = { ...securityHeaders, ETag: loaded.etag, "Cache-Control": "no-cache" };
			if (c.req.header("if-none-match") === loaded.etag) return c.body(null, 304, headers);
			return c.body(loaded.bytes, 200, { ...headers, "Content-Type": type });
		});
	}
	return router;
}
