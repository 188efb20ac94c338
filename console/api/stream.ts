import type { StreamEvent } from "../session/reducer.ts";
import { apiRoot, get, post, seg } from "./client.ts";
import { eventTypes } from "./event-types.ts";
import type { Session, StreamTicket } from "./types.ts";

/** How long a stream may be silent before the watchdog asks whether events were missed. */
const quietMs = 20_000;

export type Link = "connecting" | "live" | "reconnecting" | "ended";

export interface StreamHandlers {
	onEvents: (events: StreamEvent[]) => void;
	onLink: (link: Link) => void;
}

/**
 * A session's events through a stream ticket (the credential never goes into a URL). The browser
 * reconnects by itself with Last-Event-ID; when it gives up (CLOSED) or the gateway cut us off
 * (`dropped`), a fresh ticket resumes with ?after= the last id seen. A connection that died without
 * a word (EventSource cannot see the gateway's heartbeat comments) is found by a watchdog: quiet
 * for a while, yet the session's lastEventId moved on, and the stream is reopened from where it
 * stopped. Events are handed over once per animation frame, so a burst of deltas renders once.
 */
export function sessionStream(id: string, handlers: StreamHandlers, after = 0): () => void {
	let last = after;
	let source: EventSource | undefined;
	let stopped = false;
	let retry: ReturnType<typeof setTimeout> | undefined;
	let delay = 500;
	let batch: StreamEvent[] = [];
	let frame = 0;
	let heardAt = Date.now();
	// The log's last id when this connection joined: all it held up to there was replayed to us (an
	// event type this page does not listen for advances lastEventId without ever reaching us).
	let joinedAt = 0;
	const flush = () => {
		frame = 0;
		const events = batch;
		batch = [];
		if (events.length > 0) handlers.onEvents(events);
	};
	const onFrame = (type: string) => (e: MessageEvent<string>) => {
		const seq = Number(e.lastEventId);
		heardAt = Date.now();
		if (type === "dropped" || type === "shutdown") return reopen();
		if (type === "stream_open") {
			delay = 500;
			try {
				joinedAt = Number((JSON.parse(e.data) as { lastEventId?: number }).lastEventId ?? 0);
			} catch {
				joinedAt = 0;
			}
			handlers.onLink("live");
		}
		if (!Number.isFinite(seq) || e.lastEventId === "" || seq <= last) return;
		last = seq;
		let data: unknown;
		try {
			data = JSON.parse(e.data);
		} catch {
			return;
		}
		batch.push({ seq, type, data });
		// The session's pi exited now: its stream ends. An exit replayed from before (a hibernation
		// the session was resumed from) is history like any other event.
		if (type === "session_exit" && seq >= joinedAt) {
			flush();
			handlers.onLink("ended");
			return close();
		}
		frame ||= requestAnimationFrame(flush);
	};
	const close = () => {
		source?.close();
		source = undefined;
	};
	const reopen = () => {
		close();
		if (stopped) return;
		handlers.onLink("reconnecting");
		clearTimeout(retry);
		retry = setTimeout(connect, delay);
		delay = Math.min(delay * 2, 10_000);
	};
	const connect = async () => {
		if (stopped) return;
		let ticket: StreamTicket;
		try {
			ticket = await post<StreamTicket>(`/v1/sessions/${seg(id)}/events/ticket`);
		} catch {
			return reopen();
		}
		if (stopped) return;
		const url = new URL(apiRoot + ticket.eventsUrl);
		url.searchParams.set("after", String(last));
		const es = new EventSource(url);
		source = es;
		// EventSource has no catch-all for named events: one listener per type the spec's StreamEvent
		// lists (event-types.ts, generated from openapi.yaml by `npm run spec`).
		for (const type of eventTypes) es.addEventListener(type, onFrame(type) as EventListener);
		es.onerror = () => {
			if (es.readyState === EventSource.CLOSED) reopen();
			else handlers.onLink("reconnecting");
		};
	};
	const watchdog = setInterval(async () => {
		if (stopped || !source || Date.now() - heardAt < quietMs) return;
		const session = await get<Session>(`/v1/sessions/${seg(id)}`).catch(() => undefined);
		if (session && session.lastEventId > Math.max(last, joinedAt) && Date.now() - heardAt >= quietMs) reopen();
	}, quietMs / 2);
	handlers.onLink("connecting");
	void connect();
	return () => {
		stopped = true;
		clearInterval(watchdog);
		clearTimeout(retry);
		if (frame) cancelAnimationFrame(frame);
		close();
	};
}
