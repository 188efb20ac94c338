import { execFile } from "node:child_process";
import { resolve } from "node:path";
import { promisify } from "node:util";
import { describe, expect, it } from "vitest";
import { isSqliteWarning } from "../../src/store/sqlite/driver.ts";

// node:sqlite's ExperimentalWarning is the one warning the gateway keeps off stderr (issue 47 item 6:
// `pi-gateway backup` and `restore` printed it), and only that one: by type and by message.
const run = promisify(execFile);
const driver = resolve(import.meta.dirname, "../../src/store/sqlite/driver.ts");
const notice = "SQLite is an experimental feature and might change at any time";

describe("the SQLite warning filter", () => {
	it("matches Node's notice whichever way it is emitted, and nothing else", () => {
		expect(isSqliteWarning(notice, "ExperimentalWarning")).toBe(true);
		expect(isSqliteWarning(notice, { type: "ExperimentalWarning" })).toBe(true);
		expect(isSqliteWarning(Object.assign(new Error(notice), { name: "ExperimentalWarning" }))).toBe(true);
		expect(isSqliteWarning(notice)).toBe(false); // a plain Warning with the same words
		expect(isSqliteWarning(notice, "DeprecationWarning")).toBe(false);
		expect(isSqliteWarning("WASI is an experimental feature and might change at any time", "ExperimentalWarning")).toBe(
			false,
		);
		expect(isSqliteWarning("gateway.db: SQLite is slow here", "ExperimentalWarning")).toBe(false);
	});

	it("a process that loads node:sqlite through it prints no SQLite warning, and other warnings as before", async () => {
		const script = `
			import { loadSqlite } from ${JSON.stringify(driver)};
			const { DatabaseSync } = loadSqlite();
			new DatabaseSync(":memory:").close();
			process.emitWarning("something else", "ExperimentalWarning");
			process.emitWarning("SQLite is an experimental feature, says a plain warning");`;
		const { stderr } = await run(process.execPath, ["--input-type=module", "-e", script]);
		expect(stderr).not.toContain(notice);
		expect(stderr).toContain("ExperimentalWarning: something else");
		expect(stderr).toContain("Warning: SQLite is an experimental feature, says a plain warning");
	});
});
