import { useCallback, useEffect, useReducer, useState } from "preact/hooks";
import { get, post, seg } from "../api/client.ts";
import { type Link, sessionStream } from "../api/stream.ts";
import type { Session, Whoami } from "../api/types.ts";
import { ApprovalWithContext } from "../approvals/inbox.tsx";
import type { Pending } from "../approvals/pending.ts";
import { can } from "../auth/scopes.ts";
import { StatusBadge } from "../sessions/status.tsx";
import { Changes } from "../workspace/changes.tsx";
import { Files } from "../workspace/files.tsx";
import { Composer } from "./composer.tsx";
import { Controls } from "./controls.tsx";
import { emptyTranscript, reduceAll, type StreamEvent } from "./reducer.ts";
import { TranscriptView } from "./transcript.tsx";
import { UiPanel } from "./ui-state.tsx";

const linkText: Record<Link, string> = {
	connecting: "Connecting…",
	live: "Live",
	reconnecting: "Reconnecting…",
	ended: "Stream ended",
};

/** One session: its live transcript, its dialogs with what the agent changed, the composer. */
export function SessionView({ id, me, pending }: { id: string; me: Whoami; pending: Pending }) {
	const [session, setSession] = useState<Session>();
	const [error, setError] = useState<string>();
	const [transcript, dispatch] = useReducer(reduceAll, emptyTranscript);
	const [link, setLink] = useState<Link>("connecting");
	const [epoch, setEpoch] = useState(0);
	const [tab, setTab] = useState<"transcript" | "files" | "changes">("transcript");
	const load = useCallback(() => {
		get<Session>(`/v1/sessions/${seg(id)}`)
			.then(setSession)
			.catch((e: Error) => setError(e.message));
	}, [id]);
	useEffect(load, [load]);
	const live = session !== undefined && session.pid !== null;
	useEffect(() => {
		if (!live) return;
		return sessionStream(id, {
			onEvents: (events: StreamEvent[]) => {
				dispatch(events);
				if (events.some((e) => e.type.startsWith("approval_"))) pending.refresh();
				if (events.some((e) => e.type === "session_status" || e.type === "session_exit")) load();
			},
			onLink: setLink,
		});
	}, [id, live, epoch]);
	if (error)
		return (
			<p role="alert" class="error">
				{error}
			</p>
		);
	if (!session) return <p class="muted">Loading…</p>;
	const status = transcript.status ?? session.status;
	const dialogs = pending.approvals.filter((a) => a.sessionId === id);
	const latestRun = transcript.runs.at(-1)?.runId;
	const resume = () =>
		post<Session>(`/v1/sessions/${seg(id)}/resume`)
			.then((s) => {
				setSession(s);
				setEpoch((n) => n + 1);
			})
			.catch((e: Error) => setError(e.message));
	return (
		<article class="session" aria-labelledby="session-title">
			<div class="bar">
				<h1 id="session-title">{session.name ?? session.id}</h1>
				<StatusBadge status={status} />
				<span class="muted" role="status">
					{live ? linkText[link] : "Not running"}
				</span>
			</div>
			{!live && session.resumable && can(me, "sessions:write") && (
				<button type="button" onClick={resume}>
					Resume session
				</button>
			)}
			{can(me, "approvals:read") && <UiPanel id={id} at={transcript.lastSeq} />}
			{dialogs.length > 0 && (
				<section aria-label="Waiting for an answer" class="dialogs">
					{dialogs.map((a) => (
						<ApprovalWithContext key={a.id} approval={a} me={me} onDone={pending.refresh} inSession />
					))}
				</section>
			)}
			<fieldset class="tabs">
				<legend class="sr">Show</legend>
				{(["transcript", "files", "changes"] as const).map((t) => (
					<button type="button" key={t} aria-pressed={tab === t} onClick={() => setTab(t)}>
						{t === "transcript" ? "Transcript" : t === "files" ? "Files" : "Changes"}
					</button>
				))}
			</fieldset>
			{tab === "transcript" && <TranscriptView transcript={transcript} />}
			{tab === "files" && <Files sessionId={id} />}
			{tab === "changes" && <RunChanges id={id} runs={transcript.runs.map((r) => r.runId)} latest={latestRun} />}
			{live && can(me, "sessions:write") && (
				<>
					<Composer id={id} running={status === "running" || status === "waiting"} />
					<Controls id={id} session={session} />
				</>
			)}
		</article>
	);
}

function RunChanges({ id, runs, latest }: { id: string; runs: string[]; latest?: string }) {
	const [runId, setRunId] = useState<string | undefined>(latest);
	return (
		<section aria-label="Changes">
			<label for="run-pick">Run</label>
			<select id="run-pick" value={runId ?? ""} onChange={(e) => setRunId(e.currentTarget.value || undefined)}>
				<option value="">Since the session started</option>
				{runs.map((r) => (
					<option key={r} value={r}>
						{r}
					</option>
				))}
			</select>
			<Changes sessionId={id} runId={runId} />
		</section>
	);
}
