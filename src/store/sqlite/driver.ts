/**
 * Node's built-in SQLite, loaded in one place for every user of gateway.db (the stores, the
 * backup). Node 22 still emits an ExperimentalWarning when node:sqlite loads, which every start,
 * `pi-gateway backup` and `restore` printed on stderr; that one warning is not emitted, by its type
 * and its message, and only while the module loads: any other warning passes as before
 * (removing the process's 'warning' listeners would hide them all).
 */
import { createRequire } from "node:module";

/** gateway.db's connection, as the composition root hands it to the per-node stores. */
export type { DatabaseSync } from "node:sqlite";

/** Node's words, from lib/internal/util.js emitExperimentalWarning("SQLite"). */
const sqliteWarning = /^SQLite is an experimental feature/;

/** Whether process.emitWarning(warning, typeOrOptions) is node:sqlite's experimental notice. */
export function isSqliteWarning(warning: string | Error, typeOrOptions?: unknown): boolean {
	const type =
		typeof warning !== "string"
			? warning.name
			: typeof typeOrOptions === "string"
				? typeOrOptions
				: (typeOrOptions as { type?: string } | undefined)?.type;
	const message = typeof warning === "string" ? warning : warning.message;
	return type === "ExperimentalWarning" && sqliteWarning.test(message);
}

export function loadSqlite(): typeof import("node:sqlite") {
	const emit = process.emitWarning;
	process.emitWarning = ((warning: string | Error, ...rest: unknown[]) => {
		if (isSqliteWarning(warning, rest[0])) return;
		(emit as (...args: unknown[]) => void).call(process, warning, ...rest);
	}) as typeof process.emitWarning;
	try {
		return createRequire(import.meta.url)("node:sqlite");
	} finally {
		process.emitWarning = emit;
	}
}
