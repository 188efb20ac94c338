import type { Logger } from "pino";

/**
 * Polls until session `id` has an owner other than `from`, or none live (its lease ran out, or it
 * was given back), for at most `ms`: what a request does after its owner did not answer.
 */
export async function waitForMove(
	ownerState: (id: string) => Promise<{ owner: string | null; live: boolean | null } | undefined>,
	id: string,
	from: string,
	ms: number,
	signal: AbortSignal,
): Promise<boolean> {
	for (const until = Date.now() + ms; Date.now() < until && !signal.aborted; ) {
		const row = await ownerState(id);
		if (row && (row.owner !== from || !row.live)) return true;
		await new Promise((r) => setTimeout(r, 200));
	}
	return false;
}

/**
 * GETs `path` on each of `nodes` with `headers` (a forward: each answers with its own state only),
 * in parallel. A node that does not answer in 2.5 s is left out and named.
 */
export async function fanOut<T>(
	nodes: readonly { id: string; url: string }[],
	path: string,
	headers: Record<string, string>,
	logger: Logger,
): Promise<{ results: T[]; missing: string[] }> {
	const results: T[] = [];
	const missing: string[] = [];
	await Promise.all(
		nodes.map(async (n) => {
			try {
				const res = await fetch(new URL(path, n.url), { headers, signal: AbortSignal.timeout(2500) });
				if (!res.ok) throw new Error(`HTTP ${res.status}`);
				results.push((await res.json()) as T);
			} catch (error) {
				logger.warn({ peer: n.id, err: error }, "cluster: a node did not answer a fan-out");
				missing.push(n.id);
			}
		}),
	);
	return { results, missing };
}
