import type { Cluster } from "../../cluster/cluster.ts";
import type { SessionStatus } from "../../sessions/session/index.ts";
import type { Outbox } from "./sse.ts";

/** A session as `stream_open` of GET /v1/events lists it. */
export interface HubSession {
	id: string;
	lastEventId: number;
	firstAvailable: number;
	status: SessionStatus;
}

/** How long the other nodes get to open their part of the stream. */
const openTimeoutMs = 3000;

/** How often the stream looks for nodes that joined since it opened. */
const rescanMs = 2000;

/**
 * Cluster mode: the all-sessions stream of one node, fed also by every other live node's own
 * (asked with the caller's credentials and query: each filters by principal and `types` as it
 * would). The `stream_open` frames of the nodes live at the start are merged into this one's
 * session list; after that their frames pass through unchanged (an id `<session>:<seq>` names one
 * event in the whole cluster). A node that joins later is followed from when it is seen (within
 * a renewal period and two seconds); its sessions were not in `stream_open`.
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
	const followed = new Set<string>();
	/** Opens one node's stream; resolves with its stream_open's data and the rest of its frames. */
	const open = async (peer: { id: string; url: string }) => {
		followed.add(peer.id);
		// A node that does not answer in time is left out; once it answers, the stream has no deadline.
		const abort = new AbortController();
		const timer = setTimeout(() => abort.abort(), openTimeoutMs);
		const stop = () => abort.abort();
		controller.signal.addEventListener("abort", stop, { once: true });
		try {
			const res = await fetch(new URL(incoming.pathname + incoming.search, peer.url), {
				headers,
				signal: abort.signal,
			});
			if (!res.ok || !res.body) throw new Error(`HTTP ${res.status}`);
			const blocks = splitBlocks(res.body.getReader(), abort.signal);
			const first = await blocks.next();
			clearTimeout(timer);
			const sessions = ((first.done ? undefined : dataOf(first.value))?.sessions as HubSession[] | undefined) ?? [];
			// When its stream ends (the node stopped), it may be followed again once it is back.
			const relayed = () => relay(blocks, out).finally(() => followed.delete(peer.id));
			return { sessions, relayed };
		} catch {
			clearTimeout(timer);
			controller.signal.removeEventListener("abort", stop);
			followed.delete(peer.id);
			return undefined;
		}
	};
	const live = () => cluster.nodes.filter((n) => n.alive && n.id !== cluster.node && !followed.has(n.id));
	const opened = (await Promise.all(live().map(open))).filter((o) => o !== undefined);
	let rescan: NodeJS.Timeout | undefined;
	return {
		sessions: opened.flatMap((o) => o.sessions),
		// After this stream's own stream_open: the rest is relayed as it comes, until either side ends.
		start: () => {
			for (const o of opened) void o.relayed();
			rescan = setInterval(() => {
				for (const peer of live()) void open(peer).then((o) => o?.relayed());
			}, rescanMs);
			rescan.unref();
		},
		stop: () => {
			clearInterval(rescan);
			controller.abort();
		},
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
