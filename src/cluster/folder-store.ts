import type { FolderEntry, Manifest } from "../workspace/folder-scan.ts";

export interface FolderState {
	node: string;
	/** The workspace root (real path) of the node that stored it, and the folder's path below it. */
	root: string;
	rel: string;
	generation: number;
	files: number;
	bytes: number;
	/** Paths left out when it was stored (over the cap, unreadable), as people read them, and how many. */
	omitted: { paths: string[]; count: number; why?: string };
}

export interface StoredFolder {
	state: FolderState;
	entries: Manifest;
}

export interface FolderCommit {
	/** The generation the change was computed against (undefined: the first). */
	generation: number | undefined;
	root: string;
	rel: string;
	files: number;
	bytes: number;
	omitted: FolderState["omitted"];
	upserts: [string, FolderEntry][];
	deletes: string[];
	addRefs: Buffer[];
	dropRefs: Buffer[];
}

/** What a commit did: written (and the new generation), or refused. */
export type CommitResult =
	| { kind: "ok"; generation: number; bytes: number }
	| { kind: "stale" } // another node stored the folder since this one read it
	| { kind: "not_owner" }; // the session is not this node's (any more), or not stored yet

/**
 * Where sessions' folders are kept so they follow their session to another node (cluster mode;
 * src/store/postgres/folder-store.ts). Declared here, beside folder-sync.ts, its one user. Chunks
 * first, each on its own, then the manifest in one commit fenced like every write of a session.
 */
export interface FolderStore {
	state(id: string): Promise<FolderState | undefined>;
	load(id: string): Promise<StoredFolder | undefined>;
	/** Which of these chunks the store does not hold yet. */
	absent(hashes: Buffer[]): Promise<Buffer[]>;
	/** Stores chunks; returns the bytes sent. */
	put(chunks: { hash: Buffer; content: Buffer }[]): Promise<number>;
	fetch(hashes: string[]): Promise<Map<string, Buffer>>;
	commit(id: string, change: FolderCommit): Promise<CommitResult>;
	/** Removes chunks nobody holds; returns how many. */
	collect(): Promise<number>;
}
