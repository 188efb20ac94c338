import { readdirSync, readFileSync } from "node:fs";
import { dirname, join, relative, resolve } from "node:path";
import ts from "typescript";
import { describe, expect, it } from "vitest";

/**
 * The layer rule, read from the source itself: every import in src/ (static, type-only,
 * re-export or dynamic) points down or sideways, never up, no feature folder under
 * src/http/routes reaches into another, and the shared http code (outside routes/) reaches
 * into none: features build on it, and app.ts wires them. docs/development.md says the same in prose.
 * And the size rule: a file over 300 lines starts by saying why it is one piece.
 *
 *   base      src/config.ts, src/config-*.ts, src/errors.ts, src/patterns.ts, src/child-env.ts, src/limits.ts, src/layout-check.ts
 *   pi        src/pi/**            (the child process and its JSONL protocol)
 *   store     src/store/**         (persistence: sqlite/ is gateway.db, postgres/ is cluster mode; each
 *                                  side's schema.ts lists every table) — except the files in
 *                                  `storedFor` below, which keep the layer of what they store
 *   sessions  src/sessions/**      (sessions, approvals, the registry and its store's interface)
 *   workspace src/workspace/**     (a session's folder: paths, files, search, archive, snapshots and changes)
 *   webhooks  src/webhooks/**      (deliveries: they follow sessions' events, HTTP routes manage them)
 *   cluster   src/cluster/**       (membership, fence, forwarding: where a session lives among nodes)
 *   http      src/http/**          (transport/, auth/, idempotency/, observability/, cluster/ routing,
 *                                  streams/ (SSE), and routes/<feature>/)
 *   acp       src/acp/**           (the ACP bridge: an HTTP client of the gateway, so it imports nothing
 *                                  of the server; only src/acp/ itself)
 *   app       src/app.ts, src/server.ts, src/main.ts, src/token.ts, src/keys-command.ts (wiring and startup)
 */
const layers = ["base", "pi", "store", "sessions", "workspace", "webhooks", "cluster", "http", "acp", "app"] as const;
type Layer = (typeof layers)[number];

const src = resolve(import.meta.dirname, "../../src");
const topLevel: Record<string, Layer> = {
	"config.ts": "base",
	"errors.ts": "base",
	"patterns.ts": "base",
	"limits.ts": "base",
	"child-env.ts": "base",
	"slabs.ts": "base",
	"layout-check.ts": "base",
	"config-names.ts": "base",
	"config-file.ts": "base",
	"config-help.ts": "base",
	"config-sources.ts": "base",
	"app.ts": "app",
	"server.ts": "app",
	"main.ts": "app",
	"token.ts": "app",
	"startup-notices.ts": "app",
	"backup.ts": "app",
	"stores.ts": "app",
	"keys-command.ts": "app",
};

/**
 * src/store/ puts every table in one place for a reader; a store built on a capability's own types
 * (a session record, a webhook delivery) sits in that capability's layer, so it may read them and
 * the capability may open it. Every other file in src/store/ is the store layer, below them all.
 */
const storedFor: Record<string, Layer> = {
	"store/sqlite/sessions.ts": "sessions",
	"store/postgres/sessions.ts": "sessions",
	"store/postgres/claims.ts": "sessions",
	"store/postgres/run-archive.ts": "workspace",
	"store/postgres/folder-store.ts": "workspace",
	"store/sqlite/webhooks.ts": "webhooks",
	"store/postgres/webhook-outbox.ts": "webhooks",
	"store/postgres/webhooks.ts": "cluster",
};

function layerOf(file: string): Layer {
	const path = relative(src, file).split("\\").join("/");
	const [first] = path.split("/");
	if (path === first) {
		const layer = topLevel[path];
		if (!layer) throw new Error(`src/${path} has no layer: add it to the table in architecture.test.ts and README`);
		return layer;
	}
	if (first === "store") return storedFor[path] ?? "store";
	if (
		first === "pi" ||
		first === "sessions" ||
		first === "workspace" ||
		first === "webhooks" ||
		first === "cluster" ||
		first === "http" ||
		first === "acp"
	)
		return first;
	throw new Error(`src/${path}: no layer for the folder ${first}/`);
}

/** The routes/<feature> folder a file sits in, if any. */
function featureOf(file: string): string | undefined {
	const match = /^http\/routes\/([^/]+)\//.exec(relative(src, file).split("\\").join("/"));
	return match?.[1];
}

function sourceFiles(dir: string): string[] {
	return readdirSync(dir, { withFileTypes: true }).flatMap((entry) => {
		const path = join(dir, entry.name);
		if (entry.isDirectory()) return sourceFiles(path);
		return entry.name.endsWith(".ts") ? [path] : [];
	});
}

/** Every relative import of a file, resolved to an absolute path. */
function importsOf(file: string): string[] {
	const { importedFiles } = ts.preProcessFile(readFileSync(file, "utf8"), true, true);
	return importedFiles
		.map((ref) => ref.fileName)
		.filter((name) => name.startsWith("."))
		.map((name) => resolve(dirname(file), name));
}

function violations(files = sourceFiles(src)): string[] {
	const found: string[] = [];
	for (const file of files) {
		const from = layerOf(file);
		for (const target of importsOf(file)) {
			const name = `src/${relative(src, file)} → src/${relative(src, target)}`;
			if (!target.startsWith(`${src}/`)) continue; // package.json (the version) sits outside the layers
			const to = layerOf(target);
			if (layers.indexOf(to) > layers.indexOf(from)) found.push(`${name}: ${from} imports ${to}, a layer above`);
			const [a, b] = [featureOf(file), featureOf(target)];
			if (a && b && a !== b) found.push(`${name}: routes/${a} imports routes/${b}; share it from src/http instead`);
			if (from === "http" && !a && b) found.push(`${name}: shared http code imports a feature; app.ts wires features`);
			if (from === "acp" && to !== "acp") found.push(`${name}: the ACP bridge talks to the gateway over HTTP only`);
		}
	}
	return found;
}

describe("architecture", () => {
	it("every import in src points down a layer or sideways, and feature folders do not import each other", () => {
		expect(violations()).toEqual([]);
	});

	it("every file in src has a layer", () => {
		for (const file of sourceFiles(src)) expect(layers).toContain(layerOf(file));
	});

	it("every table is created in src/store/, one schema.ts per database", () => {
		const outside = sourceFiles(src)
			.filter((file) => !relative(src, file).startsWith("store/"))
			.filter((file) => /CREATE (TABLE|INDEX)/i.test(readFileSync(file, "utf8")))
			.map((file) => `src/${relative(src, file)}`);
		expect(outside).toEqual([]);
		const inStore = sourceFiles(join(src, "store"))
			.filter((file) => /CREATE (TABLE|INDEX)/i.test(readFileSync(file, "utf8")))
			.map((file) => relative(src, file));
		expect(inStore.sort()).toEqual(["store/postgres/schema.ts", "store/sqlite/schema.ts"]);
	});

	it("each file named in storedFor exists", () => {
		for (const path of Object.keys(storedFor)) expect(sourceFiles(src)).toContain(join(src, path));
	});

	it("a file in src over 300 lines says at its top why it is one piece", () => {
		const long = sourceFiles(src)
			.map((file) => ({ file: `src/${relative(src, file)}`, text: readFileSync(file, "utf8") }))
			.filter(({ text }) => (text.match(/\n/g) ?? []).length > 300);
		expect(long.length).toBeGreaterThan(0);
		expect(long.filter(({ text }) => !text.startsWith("// Over 300 lines on purpose: ")).map((f) => f.file)).toEqual(
			[],
		);
	});
});
