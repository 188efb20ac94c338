import { createHash } from "node:crypto";
import { readFileSync, statSync } from "node:fs";
import { brotliCompressSync, gzipSync } from "node:zlib";
import { Hono } from "hono";
import { packageFile } from "../../../shared/package-files.ts";
import type { AppEnv } from "../../transport/openapi.ts";
import { ApiError } from "../../transport/problem.ts";
import { chooseEncoding, type Encoding } from "./encoding.ts";
import { notBuiltPage } from "./not-built.ts";

/**
 * GET /console: the web console, built by `npm run build` into dist/console and shipped in the
 * package. A client of the public API like any other, so no operation of its own and not in the
 * spec. Its files hold nothing secret and are served without a token; the person signs in on the
 * page. Every answer carries a strict Content-Security-Policy: scripts, styles and connections
 * from this origin only, no inline script or style, no framing, no plugins, no forms elsewhere.
 *
 * Each file is sent as the build compressed it (`.br`, `.gz` beside it: scripts/console-assets.ts)
 * to a browser that accepts it, else as it is, always with `Vary: Accept-Encoding`. The page asks for
 * its scripts and stylesheet as `<name>?v=<build id>`: such an answer, its `v` the build's own, is
 * kept for a year (`immutable`); the page itself and any other `v` are revalidated (`no-cache`, 304
 * on the same ETag), so a new build is seen at once.
 */

/** The package root's dist/console, whichever layout runs (package-files.ts). */
const defaultDir = `${packageFile("dist/console")}/`;

const files: Record<string, { file: string; type: string }> = {
	"/console/": { file: "index.html", type: "text/html; charset=utf-8" },
	"/console/console.js": { file: "console.js", type: "text/javascript; charset=utf-8" },
	"/console/console.css": { file: "console.css", type: "text/css; charset=utf-8" },
	// The changes review, a chunk the page imports only when changes are shown (console/vite.config.ts).
	"/console/console-review.js": { file: "console-review.js", type: "text/javascript; charset=utf-8" },
	// The JSON Schema validator, imported only when a client tool call is shown (approvals/tool-call.tsx).
	"/console/console-schema-check.js": { file: "console-schema-check.js", type: "text/javascript; charset=utf-8" },
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

type Bodies = Record<Encoding, Uint8Array<ArrayBuffer>>;
/** A file as read, with the stamp it was read at (a rebuild under a running gateway is seen). */
type Loaded = { stamp: string; bodies: Bodies; etag: string };

const asBytes = (b: Buffer) => new Uint8Array(b) as Uint8Array<ArrayBuffer>;

/** The build's compressed copy, or one made here once (a dist/console from before they were built). */
function variant(path: string, raw: Buffer, make: (b: Buffer) => Buffer): Uint8Array<ArrayBuffer> {
	try {
		return asBytes(readFileSync(path));
	} catch {
		return asBytes(make(raw));
	}
}

export function consoleRouter(dir = defaultDir) {
	const cache = new Map<string, Loaded>();
	const load = (file: string): Loaded | undefined => {
		let stamp: string;
		try {
			const st = statSync(dir + file);
			stamp = `${st.mtimeMs}:${st.size}:${st.ino}`;
		} catch {
			return undefined;
		}
		const had = cache.get(file);
		if (had?.stamp === stamp) return had;
		let raw: Buffer;
		try {
			raw = readFileSync(dir + file);
		} catch {
			return undefined;
		}
		const bodies: Bodies = {
			identity: asBytes(raw),
			br: variant(`${dir + file}.br`, raw, (b) => brotliCompressSync(b)),
			gzip: variant(`${dir + file}.gz`, raw, (b) => gzipSync(b, { level: 9 })),
		};
		const loaded = { stamp, bodies, etag: createHash("sha256").update(raw).digest("base64url").slice(0, 22) };
		cache.set(file, loaded);
		return loaded;
	};
	/** The build id the page names its files by (`?v=…`), read off the page as it is now. */
	const buildId = () => {
		const page = load("index.html");
		return page && /\?v=([\w-]+)/.exec(Buffer.from(page.bodies.identity).toString("latin1"))?.[1];
	};

	const router = new Hono<AppEnv>();
	// Relative, so a proxy's path prefix survives.
	router.get("/console", (c) => c.redirect("console/", 301));
	for (const [path, { file, type }] of Object.entries(files)) {
		router.get(path, (c) => {
			const loaded = load(file);
			if (!loaded) {
				if (file === "index.html" && /text\/html/.test(c.req.header("accept") ?? ""))
					return c.html(notBuiltPage, 503, { ...securityHeaders, "Cache-Control": "no-store" });
				throw new ApiError(404, "console_not_built", "The console is not built: run npm run build:console");
			}
			const encoding = chooseEncoding(c.req.header("accept-encoding"));
			const body = loaded.bodies[encoding];
			const version = c.req.query("v");
			const immutable = file !== "index.html" && version !== undefined && version === buildId();
			// One ETag per encoding: a cache that stored the gzip answer must not revalidate it as br.
			const etag = `"${loaded.etag}${encoding === "identity" ? "" : `-${encoding}`}"`;
			const headers: Record<string, string> = {
				...securityHeaders,
				ETag: etag,
				Vary: "Accept-Encoding",
				"Cache-Control": immutable ? "public, max-age=31536000, immutable" : "no-cache",
			};
			if (c.req.header("if-none-match") === etag) return c.body(null, 304, headers);
			if (encoding !== "identity") headers["Content-Encoding"] = encoding;
			headers["Content-Length"] = String(body.byteLength);
			return c.body(body, 200, { ...headers, "Content-Type": type });
		});
	}
	return router;
}
