/**
 * Node's built-in SQLite, loaded in one place for every user of gateway.db (the stores, the
 * backup). It still prints an ExperimentalWarning on load; this is the one warning hidden.
 */
import { createRequire } from "node:module";

/** gateway.db's connection, as the composition root hands it to the per-node stores. */
export type { DatabaseSync } from "node:sqlite";

export function loadSqlite(): typeof import("node:sqlite") {
	const emit = process.emitWarning;
	process.emitWarning = ((warning: string | Error, ...rest: unknown[]) => {
		const text = typeof warning === "string" ? warning : warning.message;
		if (/SQLite/.test(text)) return;
		(emit as (...args: unknown[]) => void).call(process, warning, ...rest);
	}) as typeof process.emitWarning;
	try {
		return createRequire(import.meta.url)("node:sqlite");
	} finally {
		process.emitWarning = emit;
	}
}
