import { useCallback, useEffect, useReducer, useState } from "preact/hooks";
import { del, get, post, seg } from "../api/client.ts";
import { type Link, sessionStream } from "../api/stream.ts";
import type { Session, Whoami } from "../api/types.ts";
import { ApprovalWithContext } from "../approvals/inbox.tsx";
import type { Pending } from "../approvals/pending.ts";
import { ToolCallCard } from "../approvals/tool-call.tsx";
import { can } from "../auth/scopes.ts";
import { StatusBadge } from "../sessions/status.tsx";
import { Files } from "../workspace/files.tsx";
import { RunChanges, useReviewLink } from "../workspace/runs.tsx";
import { Composer } from "./composer.tsx";
import { Controls } from "./controls.tsx";
import { emptyTranscript, reduceAll, type StreamEvent } from "./reducer.ts";
import { Stopped } from "./stopped.tsx";
import { TranscriptView } from "./transcript.tsx";
import { UiPanel } from "./ui-state.tsx";

const linkText: Record<Link, string> = {
	connecting: "Connecting…",
	live: "Live",
	reconnecting: "Reconnecting…",
	ended: "Stream ended",
};

/** One session: its live conversation, its dialogs with what the agent changed, the composer at hand. */
export function SessionView(props: { id: string; me: Whoami; pending: Pending; wide: boolean; onChange: () => void }) {
	const { id, me, pending } = props;
	const [session, setSession] = useState<Session>();
	const [error, setError] = useState<string>();
	const [transcript, dispatch] = useReducer(reduceAll, emptyTranscript);
	const [link, setLink] = useState<Link>("connecting");
	const [epoch, setEpoch] = useState(0);
	const linked = useReviewLink();
	const [tab, setTab] = useState<"transcript" | "files" | "changes">(linked ? "changes" : "transcript");
	useEffect(() => void (linked && setTab("changes")), [linked]);
	const load = useCallback(() => {
		get<Session>(`/v1/sessions/${seg(id)}`)
			.then(setSession)
			.catch((e: Error) => setError(e.message));
	}, [id]);
	useEffect(load, [load]);
	const live = session !== undefined && session.pid !== null;
	const known = session !== undefined;
	useEffect(() => {
		// A session that does not run still has its earlier events in the gateway's log: they are
		// read too (a crashed session shows what it said before it stopped).
		if (!known) return;
		return sessionStream(id, {
			onEvents: (events: StreamEvent[]) => {
				dispatch(events);
				if (events.some((e) => e.type.startsWith("approval_") || e.type.startsWith("tool_call_"))) pending.refresh();
				// The session and the sidebar's line for it say the new status at once, not at the list's next poll.
				if (events.some((e) => e.type === "session_status" || e.type === "session_exit")) {
					load();
					props.onChange();
				}
			},
			onLink: setLink,
		});
	}, [id, known, live, epoch]);
	const back = !props.wide && can(me, "sessions:read") && (
		<a class="back" href="#/">
			← Sessions
		</a>
	);
	if (error)
		return (
			<>
				{back}
				<p role="alert" class="error">
					{error}
				</p>
			</>
		);
	if (!session) return <p class="muted">Loading…</p>;
	const status = transcript.status ?? session.status;
	// The stream knows best once it has spoken; before, the session's own record of its last run.
	const failure = transcript.lastSeq > 0 ? transcript.failure : (session.lastError ?? undefined);
	const dialogs = pending.approvals.filter((a) => a.sessionId === id);
	const calls = pending.toolCalls.filter((c) => c.sessionId === id);
	const name = session.name ?? session.id;
	const resume = () =>
		post<Session>(`/v1/sessions/${seg(id)}/resume`)
			.then((s) => {
				setSession(s);
				setEpoch((n) => n + 1);
				props.onChange();
			})
			.catch((e: Error) => setError(e.message));
	const remove = () => {
		if (!confirm(`Delete session ${name}? Its pi process stops.`)) return;
		del(`/v1/sessions/${seg(id)}`)
			.then(() => {
				props.onChange();
				location.hash = "#/";
			})
			.catch((e: Error) => setError(e.message));
	};
	// A dialog waits where the person's eyes are: docked above the composer, as the conversation scrolls.
	const waiting = (dialogs.length > 0 || calls.length > 0) && (
		<section aria-label="Waiting for an answer" class="dialogs">
			{dialogs.map((a) => (
				<ApprovalWithContext key={a.id} approval={a} me={me} onDone={pending.refresh} inSession sessionName={name} />
			))}
			{calls.map((c) => (
				<ToolCallCard key={c.id} call={c} me={me} onDone={pending.refresh} sessionName={name} />
			))}
		</section>
	);
	const composer = live && can(me, "sessions:write");
	return (
		<article class="session" aria-labelledby="session-title">
			<div class="session-head">
				{back}
				<div class="bar">
					<h1 id="session-title">{name}</h1>
					<StatusBadge status={status} failed={Boolean(failure)} />
					<span class="muted" role="status">
						{live ? linkText[link] : "Not running"}
					</span>
					<span class="grow" />
					{can(me, "sessions:write") && (
						<button type="button" class="danger small" onClick={remove}>
							Delete <span class="sr">{name}</span>
						</button>
					)}
				</div>
				<p class="meta">
					<code>{session.cwd}</code>
					{session.model && ` · ${session.model.provider}/${session.model.id}`}
					{session.node && ` · on ${session.node}`}
				</p>
				<fieldset class="tabs">
					<legend class="sr">Show</legend>
					{(["transcript", "files", "changes"] as const).map((t) => (
						<button type="button" key={t} aria-pressed={tab === t} onClick={() => setTab(t)}>
							{t === "transcript" ? "Conversation" : t === "files" ? "Files" : "Changes"}
						</button>
					))}
				</fieldset>
			</div>
			{can(me, "approvals:read") && <UiPanel id={id} at={transcript.lastSeq} />}
			{tab !== "transcript" && waiting}
			{tab === "transcript" && (
				<TranscriptView
					transcript={transcript}
					empty={
						live
							? undefined
							: "Nothing of this session is in the gateway's log (pi's session file keeps it: Resume reads it again)."
					}
				/>
			)}
			{tab === "transcript" && !live && (
				<Stopped session={session} exit={transcript.exit} mayResume={can(me, "sessions:write")} onResume={resume} />
			)}
			{tab === "files" && <Files sessionId={id} />}
			{tab === "changes" && <RunChanges key={linked} id={id} runs={transcript.runs} whole={linked > 0} />}
			{tab === "transcript" && (waiting || composer) && (
				<div class="dock">
					{waiting}
					{composer && (
						<Composer id={id} running={status === "running" || status === "waiting"}>
							<Controls id={id} session={session} />
						</Composer>
					)}
				</div>
			)}
		</article>
	);
}
