import type { Cluster } from "../../cluster/cluster.ts";
import type { SessionStatus } from "../../sessions/session.ts";
import type { Outbox } from "../sse.ts";

/** A session as `stream_open` of GET /v1/events lists it. */
export interface HubSession {
	id: string;
	lastEventId: number;
	firstAvailable: number;
	status: SessionStatus;
}

/** How long the other nodes get to open their part of the stream. */
const openTimeoutMs = 3000;

/**
 * Cluster mode: the all-sessions stream of one node, fed also by every other live node's own
 * (asked with the caller's credentials and query: each filters by principal and `types` as it
 * would). Their `stream_open` frames are merged into this one's session list; after that their
 * frames pass through unchanged (an id `<session>:<seq>` names one event in the whole cluster).
 * A node that joins later, or stops meanwhile, is not followed: sessions that move reach the
 * stream through the node that takes them only if that node was followed from the start.
 */
export async function followPeers(
	cluster: Cluster,
	request: Request,
	out: Outbox,
): Promise<{ sessions: HubSession[]; start: () => void; stop: () => void }> {
	const controller = new AbortController();
	const incoming = new URL(request.url);
	const headers: Record<string, string> = { ...cluster.forwardHeaders, accept: "text/event-stream" };
	const authorization = request.headers.get("authorization");
	if (authorization) headers.authorization = authorization;
	const peers = cluster.nodes.filter((n) => n.alive && n.id !== cluster.node);
	const streams: AsyncGenerator<string>[] = [];
	const opened = await Promise.all(
		peers.map(async (peer) => {
			try {
				const res = await fetch(new URL(incoming.pathname + incoming.search, peer.url), {
					headers,
					signal: AbortSignal.any([controller.signal, AbortSignal.timeout(openTimeoutMs)]),
				});
				if (!res.ok || !res.body) return [];
				const blocks = splitBlocks(res.body.getReader(), controller.signal);
				const first = await blocks.next();
				const open = first.done ? undefined : dataOf(first.value);
				streams.push(blocks);
				return (open?.sessions as HubSession[] | undefined) ?? [];
			} catch {
				return [];
			}
		}),
	);
	return {
		sessions: opened.flat(),
		// After this stream's own stream_open: the rest is relayed as it comes, until either side ends.
		start: () => {
			for (const blocks of streams) void relay(blocks, out);
		},
		stop: () => controller.abort(),
	};
}

async function relay(blocks: AsyncGenerator<string>, out: Outbox): Promise<void> {
	try {
		for await (const block of blocks) {
			if (block.startsWith(":")) continue; // heartbeats: this stream has its own
			const event = /^event: (.*)$/m.exec(block)?.[1];
			if (event === "shutdown" || event === "stream_open") continue; // that node's, not this stream's
			const id = /^id: (.*)$/m.exec(block)?.[1];
			out.push(`${block}\n\n`, id);
		}
	} catch {}
}

/** SSE blocks (the text between blank lines) of a byte stream. */
async function* splitBlocks(reader: ReadableStreamDefaultReader<Uint8Array>, signal: AbortSignal) {
	const decoder = new TextDecoder();
	let buffer = "";
	signal.addEventListener("abort", () => void reader.cancel().catch(() => {}), { once: true });
	for (;;) {
		const { done, value } = await reader.read();
		if (done) return;
		buffer += decoder.decode(value, { stream: true });
		for (let end = buffer.indexOf("\n\n"); end !== -1; end = buffer.indexOf("\n\n")) {
			yield buffer.slice(0, end);
			buffer = buffer.slice(end + 2);
		}
	}
}

function dataOf(block: string): Record<string, unknown> | undefined {
	const data = block
		.split("\n")
		.filter((line) => line.startsWith("data:"))
		.map((line) => line.slice(5).replace(/^ /, ""))
		.join("\n");
	try {
		return JSON.parse(data) as Record<string, unknown>;
	} catch {
		return undefined;
	}
}
