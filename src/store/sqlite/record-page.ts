import type { DatabaseSync } from "node:sqlite";

/**
 * One page, newest first, of a bounded table of JSON records (`record` column, rowid order):
 * the shape approval history and the audit log share. `filters` name columns (from code, never
 * from a request) and the values to match; an undefined value matches anything. `before` is the
 * `nextCursor` of an earlier page.
 */
export function recordPage<T>(
	db: DatabaseSync,
	table: string,
	filters: Record<string, string | undefined>,
	limit: number,
	before?: number,
): { records: T[]; nextCursor: string | null } {
	const where = ["1 = 1"];
	const args: (string | number)[] = [];
	for (const [column, value] of Object.entries(filters)) {
		if (value === undefined || value === "") continue;
		where.push(`${column} = ?`);
		args.push(value);
	}
	if (before !== undefined) {
		where.push("rowid < ?");
		args.push(before);
	}
	const rows = db
		.prepare(`SELECT rowid, record FROM ${table} WHERE ${where.join(" AND ")} ORDER BY rowid DESC LIMIT ?`)
		.all(...args, limit + 1) as { rowid: number; record: string }[];
	const page = rows.slice(0, limit);
	return {
		records: page.map((r) => JSON.parse(r.record) as T),
		nextCursor: rows.length > limit ? String(page.at(-1)?.rowid) : null,
	};
}
