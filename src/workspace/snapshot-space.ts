import { lstat } from "node:fs/promises";
import { join } from "node:path";
import { type GitRepo, git, objectId, repoUsage, unstaged } from "./git.ts";

/** What a shadow repository may hold, and when its loose objects are packed and the unneeded pruned. */
export interface SnapshotLimits {
	/** Bytes of the repository at most (--workspace-max-snapshot-bytes): a snapshot that would pass it is refused. */
	maxBytes: number;
	/** Loose objects past this many bytes (or `pruneLooseObjects` objects) are packed at the next settle. */
	pruneLooseBytes: number;
	pruneLooseObjects: number;
}

export const defaultSnapshotLimits: SnapshotLimits = {
	maxBytes: 1024 * 1024 * 1024,
	pruneLooseBytes: 32 * 1024 * 1024,
	pruneLooseObjects: 5000,
};

/** A snapshot refused because the shadow repository would pass --workspace-max-snapshot-bytes. */
export class SnapshotLimitError extends Error {}

/**
 * Refuses the snapshot (before git stores a byte) when the files it would add — changed and new
 * ones, ignored or not, counted uncompressed — would take the repository past its cap, after a
 * prune of what nothing needs (when there are loose objects, or `dropped`: runs left the manifest).
 * So one run that writes a huge file costs the data dir nothing.
 */
export async function assertFits(
	repo: GitRepo,
	maxBytes: number,
	timeoutMs: number,
	dropped: boolean,
	prune: () => Promise<void>,
): Promise<void> {
	let pending = 0;
	for (const path of await unstaged(repo, timeoutMs)) {
		pending += await lstat(join(repo.workTree, path)).then(
			(stat) => (stat.isFile() ? stat.size : 0),
			() => 0,
		);
		if (pending > maxBytes) break;
	}
	if (pending === 0) return;
	let usage = await repoUsage(repo, timeoutMs);
	if (usage.bytes + pending > maxBytes && (usage.looseObjects > 0 || dropped)) {
		await prune();
		usage = await repoUsage(repo, timeoutMs);
	}
	if (usage.bytes + pending > maxBytes)
		throw new SnapshotLimitError(
			`Snapshots of this session stopped: the folder's changes (${mib(pending)}) would take its shadow repository (${mib(usage.bytes)}) past --workspace-max-snapshot-bytes (${mib(maxBytes)})`,
		);
}

/**
 * Keeps only what the `wanted` trees reach, each held by a ref `refs/keep/<tree>`; then everything
 * reachable (and the shadow index) is packed into one pack, with deltas, and the rest removed.
 */
export async function keepOnly(repo: GitRepo, wanted: Set<string>, timeoutMs: number): Promise<void> {
	const options = { timeoutMs };
	const { out } = await git(repo, ["for-each-ref", "--format=%(objectname)", "refs/keep/"], options);
	const held = new Set(out.toString("utf8").split("\n").filter(Boolean));
	for (const tree of wanted)
		if (!held.has(tree))
			// A tree already gone (a snapshot that never finished) holds nothing.
			await git(repo, ["update-ref", `refs/keep/${tree}`, tree], options).catch(() => {});
	for (const tree of held)
		if (!wanted.has(tree) && objectId.test(tree)) await git(repo, ["update-ref", "-d", `refs/keep/${tree}`], options);
	// Packing rewrites the whole repository: it gets longer than one snapshot.
	const long = { timeoutMs: timeoutMs * 4 };
	await git(repo, ["repack", "-a", "-d", "-q"], long);
	await git(repo, ["prune", "--expire=now"], long);
}

const mib = (bytes: number) => `${(bytes / (1024 * 1024)).toFixed(1)} MiB`;
