import { mkdirSync, mkdtempSync, readdirSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
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
 * The folder rule: no two folders import each other, whatever the direction of each file's
 * import (static, type-only, re-export or dynamic). A folder is a top-level folder of src/, and
 * for src/http/ and src/sessions/ each folder below it (auth, transport, routes, …; session, process,
 * runs, dialogs, …), since their parts are layered among themselves. Persistence follows it: an area (sessions, workspace, webhooks, cluster,
 * http/idempotency, http/observability) declares the store it needs as an interface in its own
 * folder, src/store/ implements it with the area's types, and only the composition root
 * (app/server.ts, app/stores.ts) names the concrete classes and passes them in. So store sits above the
 * areas whose interfaces it implements, and no area imports it. Nor does any file outside src/store/
 * load a database driver (pg, node:sqlite), however it loads it: the composition root included, which
 * hands the stores to each other and never a driver's object of its own making.
 *
 *   client    src/client/**        (the gateway's HTTP client: pi-gateway/client, the pi-gateway-client package,
 *                                  and what the ACP bridge and the cluster hub read the gateway with; it imports
 *                                  nothing but itself, so it runs anywhere fetch does)
 *   base      src/config/**        (settings and their sources, limits, pi's environment, the layout check),
 *             src/shared/**        (errors, slabs), src/net/** (address ranges, egress allowlists)
 *   pi        src/pi/**            (the child process and its JSONL protocol)
 *   sessions  src/sessions/**      (rooms: session, process, runs, dialogs, events, registry, relay, schemas;
 *                                  each with one door, index.ts, the only file the rest of src imports)
 *   workspace src/workspace/**     (a session's folder: paths, files, search, archive, snapshots and changes)
 *   webhooks  src/webhooks/**      (deliveries: they follow sessions' events, HTTP routes manage them)
 *   schedules src/schedules/**     (scheduled runs: timing, the service, the ticker; a tick is fired through
 *                                  a function the composition root hands in, the app's own prompt route)
 *   cluster   src/cluster/**       (membership, fence, forwarding: where a session lives among nodes)
 *   http      src/http/**          (transport/, auth/, idempotency/, observability/, cluster/ routing,
 *                                  streams/ (SSE), and routes/<feature>/)
 *   store     src/store/**         (persistence: the areas' store interfaces implemented; sqlite/ is
 *                                  gateway.db, postgres/ is cluster mode; each side's schema.ts lists every table)
 *   acp       src/acp/**           (the ACP bridge: an HTTP client of the gateway, so it imports nothing
 *                                  of the server; only src/acp/ itself and src/client/)
 *   app       src/app/**           (the composition root: app, server, stores, token, start-up notices),
 *             src/cli/**           (`keys`, `backup`), src/main.ts (the only file at the root: the entry)
 */
const layers = [
	"client",
	"base",
	"pi",
	"sessions",
	"workspace",
	"webhooks",
	"schedules",
	"cluster",
	"http",
	"store",
	"acp",
	"app",
] as const;
type Layer = (typeof layers)[number];

const src = resolve(import.meta.dirname, "../../src");
const topLevel: Record<string, Layer> = { "main.ts": "app" };
const folderLayer: Record<string, Layer> = {
	client: "client",
	config: "base",
	shared: "base",
	net: "base",
	pi: "pi",
	sessions: "sessions",
	workspace: "workspace",
	webhooks: "webhooks",
	schedules: "schedules",
	cluster: "cluster",
	http: "http",
	store: "store",
	acp: "acp",
	app: "app",
	cli: "app",
};

/** openapi-typescript's reading of openapi.yaml (`npm run clients:types`): generated, not written. */
const generatedSchema = join(src, "client/schema.ts");

function layerOf(file: string): Layer {
	const path = relative(src, file).split("\\").join("/");
	const [first] = path.split("/");
	if (path === first) {
		const layer = topLevel[path];
		if (!layer) throw new Error(`src/${path} has no layer: add it to the table in architecture.test.ts and README`);
		return layer;
	}
	const layer = folderLayer[first as string];
	if (layer) return layer;
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

/**
 * The folder a file sits in for the folder rule, relative to `root`: the top-level folder, or
 * http/<part> or sessions/<room>; undefined for a file directly in `root` (wiring and base files, ruled by layers).
 */
function folderOf(root: string, file: string): string | undefined {
	const parts = relative(root, file).split("\\").join("/").split("/");
	if (parts.length < 2) return undefined;
	// http's parts and sessions' rooms are layered among themselves: each is a folder of its own.
	return (parts[0] === "http" || parts[0] === "sessions") && parts.length > 2 ? `${parts[0]}/${parts[1]}` : parts[0];
}

/**
 * Every pair of folders under `root` that import each other, each named with one import of
 * each way. The test runs it on src/ and on a planted tree, the same code both times.
 */
function twoWayFolders(root: string): string[] {
	const example = new Map<string, string>();
	for (const file of sourceFiles(root)) {
		const from = folderOf(root, file);
		for (const target of importsOf(file)) {
			if (!target.startsWith(`${root}/`)) continue;
			const to = folderOf(root, target);
			if (!from || !to || from === to) continue;
			const edge = `${from} → ${to}`;
			if (!example.has(edge)) example.set(edge, `${relative(root, file)} → ${relative(root, target)}`);
		}
	}
	const found: string[] = [];
	for (const [edge, one] of example) {
		const [from, to] = edge.split(" → ");
		const back = example.get(`${to} → ${from}`);
		if (back && (from as string) < (to as string)) found.push(`${from} and ${to} import each other (${one}; ${back})`);
	}
	return found.sort();
}

/** Every relative import of a file, resolved to an absolute path. */
function importsOf(file: string): string[] {
	const { importedFiles } = ts.preProcessFile(readFileSync(file, "utf8"), true, true);
	return importedFiles
		.map((ref) => ref.fileName)
		.filter((name) => name.startsWith("."))
		.map((name) => resolve(dirname(file), name));
}

/** Every circle of files under `root` (an import of any kind, type-only too), each as its files in order. */
function fileCircles(root: string): string[] {
	const graph = new Map(
		sourceFiles(root).map((file) => [file, importsOf(file).filter((to) => to.startsWith(`${root}/`))]),
	);
	const index = new Map<string, number>();
	const low = new Map<string, number>();
	const stack: string[] = [];
	const found: string[] = [];
	let next = 0;
	// Tarjan's strongly connected components: each one of more than one file is a circle.
	const visit = (file: string): void => {
		index.set(file, next);
		low.set(file, next++);
		stack.push(file);
		for (const to of graph.get(file) ?? []) {
			if (!graph.has(to)) continue;
			if (!index.has(to)) {
				visit(to);
				low.set(file, Math.min(low.get(file) as number, low.get(to) as number));
			} else if (stack.includes(to)) low.set(file, Math.min(low.get(file) as number, index.get(to) as number));
		}
		if (low.get(file) !== index.get(file)) return;
		const part: string[] = [];
		let top: string | undefined;
		do {
			top = stack.pop() as string;
			part.push(relative(root, top));
		} while (top !== file);
		if (part.length > 1) found.push(part.sort().join(" ↔ "));
	};
	for (const file of graph.keys()) if (!index.has(file)) visit(file);
	return found.sort();
}

/**
 * Imports from outside `root`/sessions/ that pass a room's door: a file of src reaches a room of
 * sessions/ (process, runs, dialogs, …) only through its index.ts, and sessions/ itself holds rooms, no loose file.
 */
function bypassedDoors(root: string): string[] {
	const sessions = join(root, "sessions");
	const found: string[] = [];
	for (const file of sourceFiles(root)) {
		if (dirname(file) === sessions) found.push(`${relative(root, file)} sits loose in sessions/: put it in a room`);
		if (file.startsWith(`${sessions}/`)) continue;
		for (const target of importsOf(file)) {
			if (!target.startsWith(`${sessions}/`)) continue;
			const inRoom = relative(sessions, target).split("/");
			if (inRoom.length === 2 && inRoom[1] === "index.ts") continue;
			found.push(`${relative(root, file)} → ${relative(root, target)}: import the room's index.ts`);
		}
	}
	return found.sort();
}

/** The database drivers: pg (and its family: pg-pool, pg-cursor, …) and Node's SQLite. */
const drivers = /^(pg(-[a-z]+)*|node:sqlite)(\/.*)?$/;

/**
 * Every module a file names: its imports of any kind (static, type-only, re-export, dynamic,
 * `typeof import(…)`, `import x = require(…)`) and every string any call is given first, which is how
 * `require(…)`, `createRequire(…)(…)` or a loader of one's own would load one.
 */
function modulesNamed(file: string): string[] {
	const names: string[] = [];
	const visit = (node: ts.Node): void => {
		if ((ts.isImportDeclaration(node) || ts.isExportDeclaration(node)) && node.moduleSpecifier)
			names.push((node.moduleSpecifier as ts.StringLiteral).text);
		else if (ts.isImportTypeNode(node) && ts.isLiteralTypeNode(node.argument))
			names.push((node.argument.literal as ts.StringLiteral).text);
		else if (ts.isExternalModuleReference(node)) names.push((node.expression as ts.StringLiteral).text);
		else if (ts.isCallExpression(node) && node.arguments[0] && ts.isStringLiteralLike(node.arguments[0]))
			names.push(node.arguments[0].text);
		ts.forEachChild(node, visit);
	};
	visit(ts.createSourceFile(file, readFileSync(file, "utf8"), ts.ScriptTarget.Latest, true));
	return names;
}

/** Every file under `root` outside store/ that loads a database driver, with the driver. */
function driversOutsideStore(root: string): string[] {
	const store = join(root, "store");
	return (
		sourceFiles(root)
			.filter((file) => !file.startsWith(`${store}/`))
			// Parsed only where a driver's name is quoted: parsing all of src takes seconds.
			.filter((file) => /["'`](pg|node:sqlite)\b/.test(readFileSync(file, "utf8")))
			.flatMap((file) =>
				modulesNamed(file)
					.filter((name) => drivers.test(name))
					.map((name) => `${relative(root, file)} loads ${name}: only src/store/ talks to a database`),
			)
			.sort()
	);
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
			if (from === "acp" && to !== "acp" && to !== "client")
				found.push(`${name}: the ACP bridge talks to the gateway over HTTP only (through src/client)`);
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

	it("no two folders of src import each other", () => {
		expect(twoWayFolders(src)).toEqual([]);
	});

	it("the folder rule reports two folders that import each other, whichever kind of import", () => {
		const root = mkdtempSync(join(tmpdir(), "pi-gateway-arch-"));
		try {
			const plant = (path: string, text: string) => {
				mkdirSync(dirname(join(root, path)), { recursive: true });
				writeFileSync(join(root, path), text);
			};
			plant("area/service.ts", 'import { SqlStore } from "../store/sql.ts";\nexport const s = SqlStore;\n');
			plant("store/sql.ts", 'import type { Port } from "../area/service.ts";\nexport class SqlStore {}\n');
			plant("http/routes/a.ts", 'export * from "../transport/b.ts";\n');
			plant("http/transport/b.ts", 'export const load = () => import("../routes/a.ts");\n');
			plant("one-way/user.ts", 'import "../store/sql.ts";\n');
			plant("sessions/runs/a.ts", 'import type { S } from "../session/s.ts";\nexport type A = 1;\n');
			plant("sessions/session/s.ts", 'import type { A } from "../runs/a.ts";\nexport type S = A;\n');
			plant("top.ts", 'import "./area/service.ts";\nimport "./store/sql.ts";\n');
			expect(twoWayFolders(root)).toEqual([
				"area and store import each other (area/service.ts → store/sql.ts; store/sql.ts → area/service.ts)",
				"http/routes and http/transport import each other (http/routes/a.ts → http/transport/b.ts; http/transport/b.ts → http/routes/a.ts)",
				"sessions/runs and sessions/session import each other (sessions/runs/a.ts → sessions/session/s.ts; sessions/session/s.ts → sessions/runs/a.ts)",
			]);
		} finally {
			rmSync(root, { recursive: true, force: true });
		}
	});

	it("no circle of files in src, type-only imports included", () => {
		expect(fileCircles(src)).toEqual([]);
	});

	it("the rest of src enters a room of sessions/ only by its door (index.ts)", () => {
		expect(bypassedDoors(src)).toEqual([]);
	});

	it("src's root holds only the entry file; everything else sits in a folder named for its job", () => {
		const loose = readdirSync(src, { withFileTypes: true })
			.filter((entry) => entry.isFile())
			.map((entry) => entry.name);
		expect(loose).toEqual(["main.ts"]);
	});

	it("the circle and door rules report a planted circle and a planted bypass", () => {
		const root = mkdtempSync(join(tmpdir(), "pi-gateway-arch-"));
		try {
			const plant = (path: string, text: string) => {
				mkdirSync(dirname(join(root, path)), { recursive: true });
				writeFileSync(join(root, path), text);
			};
			plant("sessions/runs/index.ts", 'export { Budget } from "./budget.ts";\n');
			plant(
				"sessions/runs/budget.ts",
				'import type { Session } from "../session/session.ts";\nexport class Budget {}\n',
			);
			plant("sessions/session/session.ts", 'import { Budget } from "../runs/budget.ts";\nexport class Session {}\n');
			plant("sessions/loose.ts", "export const loose = 1;\n");
			plant(
				"http/route.ts",
				'import { Budget } from "../sessions/runs/budget.ts";\nimport "../sessions/runs/index.ts";\n',
			);
			expect(fileCircles(root)).toEqual(["sessions/runs/budget.ts ↔ sessions/session/session.ts"]);
			expect(bypassedDoors(root)).toEqual([
				"http/route.ts → sessions/runs/budget.ts: import the room's index.ts",
				"sessions/loose.ts sits loose in sessions/: put it in a room",
			]);
		} finally {
			rmSync(root, { recursive: true, force: true });
		}
	});

	it("only src/store/ loads a database driver (pg, node:sqlite)", () => {
		expect(driversOutsideStore(src)).toEqual([]);
	});

	it("the driver rule reports a driver loaded outside store/, whichever way it is loaded", () => {
		const root = mkdtempSync(join(tmpdir(), "pi-gateway-arch-"));
		try {
			const plant = (path: string, text: string) => {
				mkdirSync(dirname(join(root, path)), { recursive: true });
				writeFileSync(join(root, path), text);
			};
			plant("cluster/notices.ts", 'import pg from "pg";\nexport const listener = new pg.Client();\n');
			plant("cluster/store.ts", 'import type { Pool } from "pg";\nexport interface S {\n\tpool: Pool;\n}\n');
			plant("app/stores.ts", 'export type { DatabaseSync } from "node:sqlite";\n');
			plant(
				"cli/backup.ts",
				'import { createRequire } from "node:module";\nexport const { DatabaseSync } = createRequire(import.meta.url)("node:sqlite");\n',
			);
			plant(
				"app/lazy.ts",
				'export const pool = () => import("pg-pool");\nexport type Sqlite = typeof import("node:sqlite");\n',
			);
			plant("app/quiet.ts", 'console.log("driver:", "node:sqlite");\nexport const name = "pg";\n');
			plant("store/postgres/pool.ts", 'import pg from "pg";\nexport const pool = new pg.Pool();\n');
			plant(
				"store/sqlite/driver.ts",
				'import { createRequire } from "node:module";\nexport const load = () => createRequire(import.meta.url)("node:sqlite");\n',
			);
			const rule = ": only src/store/ talks to a database";
			expect(driversOutsideStore(root)).toEqual([
				`app/lazy.ts loads node:sqlite${rule}`,
				`app/lazy.ts loads pg-pool${rule}`,
				`app/stores.ts loads node:sqlite${rule}`,
				`cli/backup.ts loads node:sqlite${rule}`,
				`cluster/notices.ts loads pg${rule}`,
				`cluster/store.ts loads pg${rule}`,
			]);
		} finally {
			rmSync(root, { recursive: true, force: true });
		}
	});

	it("a file in src over 300 lines says at its top why it is one piece", () => {
		const long = sourceFiles(src)
			.filter((file) => file !== generatedSchema)
			.map((file) => ({ file: `src/${relative(src, file)}`, text: readFileSync(file, "utf8") }))
			.filter(({ text }) => (text.match(/\n/g) ?? []).length > 300);
		expect(long.length).toBeGreaterThan(0);
		expect(long.filter(({ text }) => !text.startsWith("// Over 300 lines on purpose: ")).map((f) => f.file)).toEqual(
			[],
		);
	});
});
