import { createHash } from "node:crypto";
import { mkdirSync, readFileSync, renameSync, writeFileSync } from "node:fs";
import { registerHooks, stripTypeScriptTypes } from "node:module";
import { join, sep } from "node:path";
import { fileURLToPath } from "node:url";

/**
 * Keeps the JavaScript Node makes of the gateway's own TypeScript (`npm start` runs src/ directly)
 * in `dir`, named by a hash of the source and the Node version, and loads it from there on the next
 * start. Node 22 strips every file's types again at each start (its compile cache keeps bytecode,
 * not the stripped text): about a quarter of the CPU a start takes before it listens.
 * stripTypeScriptTypes is what Node itself runs for a .ts module, and it keeps every position
 * (types become spaces), so stack traces point where they did.
 * Only files under `root`, and only .ts: anything else loads as Node would load it.
 */
export function cacheStrippedTypes(dir: string, root: string): void {
	mkdirSync(dir, { recursive: true, mode: 0o700 });
	const under = root.endsWith(sep) ? root : root + sep;
	registerHooks({
		load(url, context, nextLoad) {
			if (!url.startsWith("file:") || !url.endsWith(".ts")) return nextLoad(url, context);
			const path = fileURLToPath(url);
			if (!path.startsWith(under)) return nextLoad(url, context);
			const source = readFileSync(path, "utf8");
			const key = createHash("sha256").update(process.version).update("\0").update(source).digest("base64url");
			const cached = join(dir, `${key}.js`);
			let code: string;
			try {
				code = readFileSync(cached, "utf8");
			} catch {
				code = stripTypeScriptTypes(source, { mode: "strip" });
				try {
					// Written whole or not at all: a start that stops halfway leaves no half file.
					const partial = `${cached}.${process.pid}`;
					writeFileSync(partial, code, { mode: 0o600 });
					renameSync(partial, cached);
				} catch {}
			}
			return { format: "module", source: code, shortCircuit: true };
		},
	});
}
