import { createHash } from "node:crypto";
import { readdirSync, readFileSync, writeFileSync } from "node:fs";
import { join, resolve } from "node:path";
import { brotliCompressSync, constants, gzipSync } from "node:zlib";

/**
 * The console's build, finished for serving (a vite plugin, console/vite.config.ts): every script
 * and stylesheet is asked for as `<name>?v=<build id>`, the id a hash of the whole build, so a
 * browser may keep them for a year (src/http/routes/console serves a matching `v` as immutable)
 * and a new build is a new URL. The names stay fixed because the gateway lets a short, known list
 * of paths through without a token; one id for the whole build because the chunks import each
 * other (console-review.js imports console.js), so a hash per file would be circular. Then each
 * file is compressed once, here, with brotli and gzip at their best (`.br`, `.gz` beside it), never
 * per request.
 */
export function consoleAssets() {
	let outDir = "";
	return {
		name: "pi-gateway-console-assets",
		apply: "build" as const,
		configResolved(config: { build: { outDir: string }; root: string }) {
			outDir = resolve(config.root, config.build.outDir);
		},
		closeBundle() {
			finishBuild(outDir);
		},
	};
}

const served = /^(index\.html|console[\w-]*\.(?:js|css))$/;

export function finishBuild(dir: string): string {
	const files = readdirSync(dir)
		.filter((f) => served.test(f))
		.sort();
	const hash = createHash("sha256");
	for (const file of files)
		hash
			.update(file)
			.update("\0")
			.update(readFileSync(join(dir, file)))
			.update("\0");
	const id = hash.digest("base64url").slice(0, 12);
	// `./console.js`, `./console-review.js`, `./console.css` wherever they are named: the page's
	// script and stylesheet, an import() of a lazy chunk, a chunk's import of what it shares.
	const reference = /(["'`])\.\/(console[\w-]*\.(?:js|css))\1/g;
	for (const file of files) {
		const text = readFileSync(join(dir, file), "utf8");
		const versioned = text.replace(reference, (_all, quote: string, name: string) =>
			files.includes(name) ? `${quote}./${name}?v=${id}${quote}` : _all,
		);
		writeFileSync(join(dir, file), versioned);
		const bytes = Buffer.from(versioned);
		writeFileSync(join(dir, `${file}.gz`), gzipSync(bytes, { level: 9 }));
		writeFileSync(
			join(dir, `${file}.br`),
			brotliCompressSync(bytes, {
				params: { [constants.BROTLI_PARAM_QUALITY]: 11, [constants.BROTLI_PARAM_SIZE_HINT]: bytes.length },
			}),
		);
	}
	return id;
}
