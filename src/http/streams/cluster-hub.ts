import { parseSse, type SseFrame } from "../../client/index.ts";
import type { Cluster } from "../../cluster/cluster.ts";
import type { SessionStatus } from "../../sessions/session/index.ts";
import type { Outbox } from "./sse.ts";
import { relayedFrame } from "./sse-frames.ts";

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
			// Read with the gateway's own client's parser; heartbeats (comments) stay behind: this stream has its own.
			const frames = parseSse(res.body);
			const first = await frames.next();
			clearTimeout(timer);
			const sessions = ((first.done ? undefined : dataOf(first.value))?.sessions as HubSession[] | undefined) ?? [];
			// When its stream ends (the node stopped), it may be followed again once it is back.
			const relayed = () => relay(frames, out).finally(() => followed.delete(peer.id));
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

async function relay(frames: AsyncGenerator<SseFrame>, out: Outbox): Promise<void> {
	try {
		for await (const frame of frames) {
			if (frame.event === "shutdown" || frame.event === "stream_open") continue; // that node's, not this stream's
			out.push(relayedFrame(frame), frame.id);
		}
	} catch {}
}

function dataOf(frame: SseFrame): Record<string, unknown> | undefined {
	try {
		return JSON.parse(frame.data) as Record<string, unknown>;
	} catch {
		return undefined;
	}
}
