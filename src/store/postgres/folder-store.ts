import type pg from "pg";
import type { CommitResult, FolderCommit, FolderState, FolderStore, StoredFolder } from "../../cluster/folder-store.ts";
import type { FolderEntry, Manifest } from "../../workspace/folder-scan.ts";
import { transaction } from "./schema.ts";

/**
 * Sessions' folders in PostgreSQL (migration 11), for src/cluster/folder-sync.ts. Content is
 * stored once whatever holds it: `folder_blobs` are chunks keyed by their sha256, shared by every
 * session; `folder_entries` is each session's manifest, one row per path, so a settled run writes
 * the rows of what changed and nothing for what did not; `folder_refs` lists the chunks a session
 * holds (a foreign key: a chunk someone holds cannot be collected); `folder_state` says where the
 * folder was (its node's workspace root and the path below it) and counts every commit.
 *
 * Writing is in two steps: chunks first, each on its own (a chunk nobody holds yet is harmless
 * and collected later), then the manifest in one transaction fenced like every write of a session:
 * only while its row names this node and this node's lease holds, the row locked so no claim
 * passes the commit.
 */

/** Rows per statement: far below PostgreSQL's 65,535 parameters and a few MB of SQL each. */
const rowsPerStatement = 2000;
/** Chunk bytes per INSERT at most. */
const blobBytesPerStatement = 8 * 1024 * 1024;

export class PostgresFolderStore implements FolderStore {
	readonly #pool: pg.Pool;
	readonly #node: string;

	constructor(pool: pg.Pool, node: string) {
		this.#pool = pool;
		this.#node = node;
	}

	async state(id: string): Promise<FolderState | undefined> {
		const { rows } = await this.#pool.query("SELECT * FROM folder_state WHERE session_id = $1", [id]);
		return rows[0] ? stateOf(rows[0]) : undefined;
	}

	/** The folder as last stored, or undefined when none was. */
	async load(id: string): Promise<StoredFolder | undefined> {
		return await transaction(this.#pool, async (client) => {
			await client.query("SET TRANSACTION ISOLATION LEVEL REPEATABLE READ");
			const { rows } = await client.query("SELECT * FROM folder_state WHERE session_id = $1", [id]);
			if (!rows[0]) return undefined;
			const entries: Manifest = new Map();
			const listed = await client.query<{
				path: Buffer;
				kind: FolderEntry["kind"];
				mode: number;
				size: string;
				hash: Buffer | null;
				chunks: Buffer | null;
				target: Buffer | null;
			}>("SELECT path, kind, mode, size, hash, chunks, target FROM folder_entries WHERE session_id = $1", [id]);
			for (const row of listed.rows) {
				const entry: FolderEntry = { kind: row.kind, mode: row.mode, size: Number(row.size) };
				if (row.hash) entry.hash = row.hash;
				if (row.chunks) entry.chunks = row.chunks;
				if (row.target) entry.target = row.target;
				entries.set(row.path.toString("latin1"), entry);
			}
			return { state: stateOf(rows[0]), entries };
		});
	}

	/** Which of these chunks (sha256) the database does not hold. */
	async absent(hashes: Buffer[]): Promise<Buffer[]> {
		if (hashes.length === 0) return [];
		const { rows } = await this.#pool.query<{ hash: Buffer }>(
			"SELECT hash FROM folder_blobs WHERE hash = ANY($1::bytea[])",
			[hashes],
		);
		const held = new Set(rows.map((r) => r.hash.toString("hex")));
		return hashes.filter((h) => !held.has(h.toString("hex")));
	}

	/** Stores chunks (their hash given, checked by whoever reads them back); returns the bytes sent. */
	async put(chunks: { hash: Buffer; content: Buffer }[]): Promise<number> {
		let sent = 0;
		for (let at = 0; at < chunks.length; ) {
			const values: Buffer[] = [];
			const rows: string[] = [];
			let bytes = 0;
			while (
				at < chunks.length &&
				rows.length < rowsPerStatement &&
				(rows.length === 0 || bytes < blobBytesPerStatement)
			) {
				const chunk = chunks[at++] as { hash: Buffer; content: Buffer };
				rows.push(`($${values.length + 1}, $${values.length + 2})`);
				values.push(chunk.hash, chunk.content);
				bytes += chunk.hash.length + chunk.content.length;
			}
			// Buffers travel as binary parameters (no hex doubling).
			await this.#pool.query(
				`INSERT INTO folder_blobs (hash, content) VALUES ${rows.join(", ")} ON CONFLICT (hash) DO NOTHING`,
				values,
			);
			sent += bytes;
		}
		return sent;
	}

	/** The chunks asked for that the database holds, by sha256 (hex). */
	async fetch(hashes: string[]): Promise<Map<string, Buffer>> {
		const found = new Map<string, Buffer>();
		for (let at = 0; at < hashes.length; at += rowsPerStatement) {
			const some = hashes.slice(at, at + rowsPerStatement).map((h) => Buffer.from(h, "hex"));
			const { rows } = await this.#pool.query<{ hash: Buffer; content: Buffer }>(
				"SELECT hash, content FROM folder_blobs WHERE hash = ANY($1::bytea[])",
				[some],
			);
			for (const row of rows) found.set(row.hash.toString("hex"), row.content);
		}
		return found;
	}

	/** Writes a manifest change in one fenced transaction (see the module's comment). */
	async commit(id: string, change: FolderCommit): Promise<CommitResult> {
		return await transaction(this.#pool, async (client) => {
			const owned = await client.query(
				`SELECT 1 FROM sessions WHERE id = $1 AND owner = $2
				 AND EXISTS (SELECT 1 FROM nodes WHERE id = $2 AND lease_until > now()) FOR SHARE OF sessions`,
				[id, this.#node],
			);
			if (owned.rowCount !== 1) return { kind: "not_owner" };
			const { rows } = await client.query<{ generation: string }>(
				"SELECT generation FROM folder_state WHERE session_id = $1 FOR UPDATE",
				[id],
			);
			const current = rows[0] ? Number(rows[0].generation) : undefined;
			if (current !== change.generation) return { kind: "stale" };
			const generation = (current ?? 0) + 1;
			let bytes = 0;
			const stateRow = [
				id,
				this.#node,
				change.root,
				change.rel,
				generation,
				change.files,
				change.bytes,
				JSON.stringify(change.omitted),
			];
			bytes += JSON.stringify(stateRow).length;
			await client.query(
				`INSERT INTO folder_state (session_id, node, root, rel, generation, files, bytes, omitted, synced_at)
				 VALUES ($1, $2, $3, $4, $5, $6, $7, $8, now())
				 ON CONFLICT (session_id) DO UPDATE SET node = EXCLUDED.node, root = EXCLUDED.root, rel = EXCLUDED.rel,
				 generation = EXCLUDED.generation, files = EXCLUDED.files, bytes = EXCLUDED.bytes,
				 omitted = EXCLUDED.omitted, synced_at = now()`,
				stateRow,
			);
			for (let at = 0; at < change.addRefs.length; at += rowsPerStatement) {
				const some = change.addRefs.slice(at, at + rowsPerStatement);
				bytes += some.length * 32;
				await client.query(
					"INSERT INTO folder_refs (session_id, hash) SELECT $1::text, unnest($2::bytea[]) ON CONFLICT DO NOTHING",
					[id, some],
				);
			}
			for (let at = 0; at < change.upserts.length; at += rowsPerStatement) {
				const some = change.upserts.slice(at, at + rowsPerStatement);
				const column = <T>(pick: (entry: FolderEntry, path: string) => T) => some.map(([path, e]) => pick(e, path));
				const paths = column((_, path) => Buffer.from(path, "latin1"));
				const hashes = column((e) => e.hash ?? null);
				const chunks = column((e) => e.chunks ?? null);
				const targets = column((e) => e.target ?? null);
				for (const list of [paths, hashes, chunks, targets])
					for (const b of list) bytes += b ? (b as Buffer).length : 0;
				bytes += some.length * 16;
				await client.query(
					`INSERT INTO folder_entries (session_id, path, kind, mode, size, hash, chunks, target)
					 SELECT $1::text, * FROM unnest($2::bytea[], $3::text[], $4::integer[], $5::bigint[], $6::bytea[], $7::bytea[], $8::bytea[])
					 ON CONFLICT (session_id, path) DO UPDATE SET kind = EXCLUDED.kind, mode = EXCLUDED.mode, size = EXCLUDED.size,
					 hash = EXCLUDED.hash, chunks = EXCLUDED.chunks, target = EXCLUDED.target`,
					[id, paths, column((e) => e.kind), column((e) => e.mode), column((e) => e.size), hashes, chunks, targets],
				);
			}
			for (let at = 0; at < change.deletes.length; at += rowsPerStatement) {
				const some = change.deletes.slice(at, at + rowsPerStatement).map((p) => Buffer.from(p, "latin1"));
				await client.query("DELETE FROM folder_entries WHERE session_id = $1 AND path = ANY($2::bytea[])", [id, some]);
			}
			for (let at = 0; at < change.dropRefs.length; at += rowsPerStatement) {
				const some = change.dropRefs.slice(at, at + rowsPerStatement);
				await client.query("DELETE FROM folder_refs WHERE session_id = $1 AND hash = ANY($2::bytea[])", [id, some]);
			}
			return { kind: "ok", generation, bytes };
		});
	}

	/**
	 * Removes chunks no session holds (a deleted session's, a file's old content), a batch at a
	 * time, on one node at a time (an advisory lock). A chunk a commit starts to hold meanwhile
	 * makes its batch fail on the foreign key: it is kept, and the next round goes on.
	 */
	async collect(): Promise<number> {
		const client = await this.#pool.connect().catch(() => undefined);
		if (!client) return 0;
		let lost: Error | undefined;
		const onError = (error: Error) => {
			lost = error;
		};
		client.on("error", onError);
		let removed = 0;
		try {
			const { rows } = await client.query<{ locked: boolean }>("SELECT pg_try_advisory_lock($1) AS locked", [gcLock]);
			if (!rows[0]?.locked) return 0;
			try {
				for (;;) {
					const { rowCount } = await client.query(
						`DELETE FROM folder_blobs WHERE hash IN (SELECT b.hash FROM folder_blobs b
						 WHERE NOT EXISTS (SELECT 1 FROM folder_refs r WHERE r.hash = b.hash) LIMIT 500)`,
					);
					removed += rowCount ?? 0;
					if (!rowCount) break;
				}
			} finally {
				await client.query("SELECT pg_advisory_unlock($1)", [gcLock]);
			}
		} catch {
			// a batch lost a race with a commit (or the database went away): the rest waits for the next round
		} finally {
			client.off("error", onError);
			client.release(lost);
		}
		return removed;
	}
}

/** An arbitrary constant: the advisory lock of the chunk collector ("pigf"). */
const gcLock = 0x70_69_67_66;

function stateOf(row: Record<string, unknown>): FolderState {
	let omitted: FolderState["omitted"] = { paths: [], count: 0 };
	try {
		omitted = JSON.parse(row.omitted as string);
	} catch {}
	return {
		node: row.node as string,
		root: row.root as string,
		rel: row.rel as string,
		generation: Number(row.generation),
		files: Number(row.files),
		bytes: Number(row.bytes),
		omitted,
	};
}
