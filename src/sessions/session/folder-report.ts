/**
 * Cluster mode: what the node running a session found of its folder when it took the session over
 * from another node (src/cluster/folder-adoption.ts restores it from PostgreSQL): the session
 * view's `folderRestore`, and the `folder_restore` event when something is missing.
 */
export interface FolderRestoreReport {
	complete: boolean;
	at: string;
	/** The node that stored the copy restored (null: none was stored). */
	from: string | null;
	/** Files, folders and links restored. */
	restored: number;
	/** Paths that could not be restored (at most 100), and how many there are. */
	missing: string[];
	missingCount: number;
	/** Files of a shared folder that differ from the stored copy, kept as this node had them (at most 100). */
	kept: string[];
	detail: string | null;
}
