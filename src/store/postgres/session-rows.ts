import type pg from "pg";

/** A stored session row for the cluster-wide list: its record, who owns it and whom it is shared with. */
export interface PagedRow {
	id: string;
	record: string;
	created_at: string;
	access_owner: string | null;
	access_grants: string | null;
}

export interface RowQuery {
	/**
	 * Which rows by their owner: held by one of `in` (nodes asked that did not answer), or by none
	 * of `notIn` (the nodes asked: each lists its own), unowned rows included.
	 */
	owners: { in: string[] } | { notIn: string[] };
	/** The owner principal (a session without an access row is the admin's). */
	principal?: string;
	/** Only rows after this (createdAt, id), in the list's order. */
	after?: { createdAt: string; id: string };
	limit: number;
}

/**
 * One batch of stored session rows in the list's order (createdAt, then id by code unit: `COLLATE
 * "C"`, as the nodes compare them), filtered in the database so a page reads a page of records,
 * not the whole registry. createdAt is read from the record (no column of its own to migrate).
 */
export async function storedRows(pool: pg.Pool, query: RowQuery): Promise<PagedRow[]> {
	const args: unknown[] = [];
	const arg = (value: unknown) => `$${args.push(value)}`;
	const created = `(s.record::json->>'createdAt') COLLATE "C"`;
	const where = [
		"in" in query.owners
			? `s.owner = ANY(${arg(query.owners.in)}::text[])`
			: `(s.owner IS NULL OR NOT s.owner = ANY(${arg(query.owners.notIn)}::text[]))`,
	];
	if (query.principal !== undefined) where.push(`COALESCE(a.owner, 'admin') = ${arg(query.principal)}`);
	if (query.after)
		where.push(
			`(${created}, s.id COLLATE "C") > (${arg(query.after.createdAt)}::text COLLATE "C", ${arg(query.after.id)}::text COLLATE "C")`,
		);
	const { rows } = await pool.query<PagedRow>(
		`SELECT s.id, s.record, s.record::json->>'createdAt' AS created_at, a.owner AS access_owner, a.grants AS access_grants
		 FROM sessions s LEFT JOIN session_access a ON a.session_id = s.id
		 WHERE ${where.join(" AND ")}
		 ORDER BY ${created}, s.id COLLATE "C" LIMIT ${arg(query.limit)}`,
		args,
	);
	return rows;
}
