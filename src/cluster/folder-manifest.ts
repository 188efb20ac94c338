import type { Session } from "../sessions/session/index.ts";
import {
	chunkHashes,
	displayPath,
	type FolderEntry,
	type Manifest,
	type Omitted,
	type ScanResult,
	type StatKey,
} from "../workspace/folder-scan.ts";
import type { FolderCommit, FolderState } from "./folder-store.ts";

/**
 * What a node knows of a session's folder as stored in PostgreSQL (the manifest as committed, the
 * chunks it holds, the lstat each file's hash was taken at), and the change a new scan makes to it:
 * the rows of what changed and nothing for what did not (folder-sync.ts commits it).
 */
export interface Held {
	generation: number | undefined;
	root: string;
	rel: string;
	entries: Manifest;
	stats: Map<string, StatKey>;
	refs: Set<string>;
	/** The stored `omitted` summary, as JSON. */
	omitted: string;
	/** Stored entries this node could not restore: kept in the manifest until the path shows up again. */
	carry: Set<string>;
}

/** Paths named in an event or a view at most. */
export const maxNamed = 100;

export function emptyHeld(root: string, rel: string): Held {
	return {
		generation: undefined,
		root,
		rel,
		entries: new Map(),
		stats: new Map(),
		refs: new Set(),
		omitted: "",
		carry: new Set(),
	};
}

export function heldOf(state: FolderState, entries: Manifest): Held {
	const refs = new Set<string>();
	for (const entry of entries.values()) for (const h of chunkHashes(entry)) refs.add(h);
	return {
		generation: state.generation,
		root: state.root,
		rel: state.rel,
		entries,
		stats: new Map(),
		refs,
		omitted: JSON.stringify(state.omitted),
		carry: new Set(),
	};
}

/** The change from what is stored (`held`) to the scan; `unchanged` when there is nothing to write. */
export interface Plan {
	unchanged: boolean;
	change: FolderCommit;
	/** What is held once the change is committed (its generation set by the commit). */
	next: Held;
	/** Files were left out for the cap (or the walk stopped at its entry limit). */
	overCap: boolean;
}

export function plan(held: Held, scanned: ScanResult, root: string, rel: string, maxBytes: number): Plan {
	const entries = new Map(scanned.entries);
	// What this node could not restore stays in the manifest until the path shows up again.
	for (const path of held.carry) {
		const entry = held.entries.get(path);
		if (entries.has(path) || !entry) held.carry.delete(path);
		else entries.set(path, entry);
	}
	const omitted = summary(scanned.omitted, scanned.truncated, maxBytes);
	const upserts: [string, FolderEntry][] = [];
	for (const [path, entry] of entries) {
		const before = held.entries.get(path);
		if (!before || !sameEntry(before, entry)) upserts.push([path, entry]);
	}
	const deletes = [...held.entries.keys()].filter((path) => !entries.has(path));
	const refs = new Set<string>();
	for (const entry of entries.values()) for (const h of chunkHashes(entry)) refs.add(h);
	const omittedText = JSON.stringify(omitted);
	const unchanged =
		held.generation !== undefined &&
		upserts.length === 0 &&
		deletes.length === 0 &&
		held.omitted === omittedText &&
		held.root === root &&
		held.rel === rel;
	return {
		unchanged,
		overCap: scanned.truncated || scanned.omitted.some((o) => o.why === overCap),
		change: {
			generation: held.generation,
			root,
			rel,
			files: entries.size,
			bytes: scanned.bytes,
			omitted,
			upserts,
			deletes,
			addRefs: [...refs].filter((h) => !held.refs.has(h)).map((h) => Buffer.from(h, "hex")),
			dropRefs: [...held.refs].filter((h) => !refs.has(h)).map((h) => Buffer.from(h, "hex")),
		},
		next: { ...held, root, rel, entries, stats: scanned.stats, refs, omitted: omittedText },
	};
}

/** The reason folder-scan.ts gives a file left out for the cap. */
const overCap = "over the folder's cap";

const same = (a: Buffer | undefined, b: Buffer | undefined) => (a && b ? a.equals(b) : a === b);

function sameEntry(a: FolderEntry, b: FolderEntry): boolean {
	return (
		a.kind === b.kind &&
		a.mode === b.mode &&
		a.size === b.size &&
		same(a.hash, b.hash) &&
		same(a.chunks, b.chunks) &&
		same(a.target, b.target)
	);
}

function summary(omitted: Omitted[], truncated: boolean, maxBytes: number): FolderState["omitted"] {
	if (maxBytes === 0) return { paths: [], count: 0, why: "no folder is kept (--workspace-sync-max-bytes 0)" };
	const reasons = [...new Set(omitted.map((o) => o.why))];
	if (truncated) reasons.push("more entries than are kept");
	return {
		paths: omitted.slice(0, maxNamed).map((o) => displayPath(o.path)),
		count: omitted.length,
		...(reasons.length > 0 ? { why: reasons.join(", ") } : {}),
	};
}

/** The `folder_sync` event of a store that left files out for the cap. */
export function overCapEvent(scanned: ScanResult, omitted: FolderState["omitted"], maxBytes: number) {
	const what = scanned.truncated ? "the entries" : `${maxBytes} bytes of files`;
	return {
		code: "folder_too_large",
		error: `The session's folder holds more than ${what} a node keeps in the database for it (--workspace-sync-max-bytes): ${omitted.count}${scanned.truncated ? "+" : ""} files are left out and would be missing on a node that takes the session over`,
		bytes: scanned.bytes,
		maxBytes,
		omitted: omitted.count,
		paths: omitted.paths,
	};
}

/** The `folder_sync` event of a store that failed. */
export function failedEvent(detail: string, maxBytes: number) {
	return {
		code: "folder_sync_failed",
		error: `The session's folder could not be stored in the database: ${detail}; a node taking the session over finds it as of the last store`,
		bytes: null,
		maxBytes,
		omitted: 0,
		paths: [],
	};
}

/** A gateway event on the session's stream (`folder_sync`, `folder_restore`). */
export function emit(session: Session, type: string, fields: Record<string, unknown>): void {
	session.events.append(type, JSON.stringify({ type, sessionId: session.id, ...fields }));
}
