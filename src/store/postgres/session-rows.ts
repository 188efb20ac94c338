import type pg from "pg";
import type { PagedRow, RowQuery } from "../../cluster/cluster-store.ts";

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
