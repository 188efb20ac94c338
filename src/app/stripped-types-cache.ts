import { createHash } from "node:crypto";
import { mkdirSync, readFileSync, renameSync, writeFileSync } from "node:fs";
import { registerHooks, stripTypeScriptTypes } from "node:module";
import { join, sep } from "node:path";
import { fileURLToPath } from "node:url";

/**
 * Keeps the JavaScript Node makes of the gateway's own TypeScript (`npm start` runs src/ directly)
 * in `dir`, one file per source file (named by its path, so edits replace it rather than pile up),
 * stamped with a hash of the Node version and the source it was made from, and loads it from there
 * on the next start while the stamp matches. Node 22 strips every file's types again at each start (its compile cache keeps bytecode,
 * not the stripped text): about a quarter of the CPU a start takes before it listens.
 * stripTypeScriptTypes is what Node itself runs for a .ts module, and it keeps every position
 * (types become spaces), so stack traces point where they did.
 * Only files under `root`, and only .ts: anything else loads as Node would load it. What is read
 * back runs as the gateway: `dir` must be the gateway's own (the data dir's, mode 0700), never a
 * folder another user can write, such as one NODE_COMPILE_CACHE names.
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
			const cached = join(dir, `${createHash("sha256").update(path).digest("base64url")}.js`);
			const stamp = `// ${createHash("sha256").update(process.version).update("\0").update(source).digest("base64url")}\n`;
			let kept: string | undefined;
			try {
				kept = readFileSync(cached, "utf8");
			} catch {}
			if (kept?.startsWith(stamp)) return { format: "module", source: kept.slice(stamp.length), shortCircuit: true };
			const code = stripTypeScriptTypes(source, { mode: "strip" });
			try {
				// Written whole or not at all: a start that stops halfway leaves no half file.
				const partial = `${cached}.${process.pid}`;
				writeFileSync(partial, stamp + code, { mode: 0o600 });
				renameSync(partial, cached);
			} catch {}
			return { format: "module", source: code, shortCircuit: true };
		},
	});
}
