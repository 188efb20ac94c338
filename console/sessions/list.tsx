import { useCallback, useEffect, useState } from "preact/hooks";
import { type ApiError, get, post, seg } from "../api/client.ts";
import type { Session, SessionList, Whoami } from "../api/types.ts";
import { can } from "../auth/scopes.ts";
import { sessionHref } from "../router.ts";
import { StatusBadge } from "./status.tsx";
import { Ago, useNow } from "./time.tsx";

const pollMs = 3000;
/** Sessions per page of the list (the API's default): "Show more" adds a page. */
export const pageSize = 100;

/** The first `pages` pages of sessions, and whether more follow. */
async function firstPages(pages: number): Promise<{ sessions: Session[]; hasMore: boolean }> {
	const sessions: Session[] = [];
	let cursor: string | null = null;
	for (let i = 0; i < pages; i++) {
		const query = new URLSearchParams({ limit: String(pageSize), ...(cursor !== null && { cursor }) });
		const page: SessionList = await get<SessionList>(`/v1/sessions?${query}`);
		sessions.push(...page.sessions);
		cursor = page.nextCursor;
		if (cursor === null) break;
	}
	return { sessions, hasMore: cursor !== null };
}

/** The status filter: what a person looks for, each a test on a session. */
export const filters = {
	all: { label: "All sessions", test: () => true },
	answer: {
		label: "Waiting for an answer",
		test: (s: Session) => s.pendingApprovals > 0 || s.pendingToolCalls > 0 || s.status === "waiting",
	},
	running: { label: "Running", test: (s: Session) => s.status === "running" || s.status === "starting" },
	idle: { label: "Idle", test: (s: Session) => s.status === "idle" },
	failed: { label: "Failed or crashed", test: (s: Session) => s.lastError !== null || s.status === "crashed" },
	stopped: { label: "Stopped or ended", test: (s: Session) => s.pid === null },
} satisfies Record<string, { label: string; test: (s: Session) => boolean }>;
type Filter = keyof typeof filters;

const newestFirst = (a: Session, b: Session) =>
	Date.parse(b.lastActivityAt) - Date.parse(a.lastActivityAt) || b.createdAt.localeCompare(a.createdAt);

export interface SessionsState {
	sessions?: Session[];
	hasMore: boolean;
	error?: string;
	/** The last poll got no answer from the gateway. */
	unreachable?: boolean;
	more: () => void;
	reload: () => void;
}

/** Every session the credential may see (cluster-wide, as the API lists them), polled, a page at a time. */
export function useSessions(me: Whoami): SessionsState {
	const [sessions, setSessions] = useState<Session[]>();
	const [pages, setPages] = useState(1);
	const [hasMore, setHasMore] = useState(false);
	const [error, setError] = useState<ApiError>();
	const reload = useCallback(() => {
		firstPages(pages)
			.then((list) => {
				setSessions(list.sessions.sort(newestFirst));
				setHasMore(list.hasMore);
				setError(undefined);
			})
			.catch((e: ApiError) => setError(e));
	}, [pages]);
	useEffect(() => {
		if (!can(me, "sessions:read")) return;
		reload();
		const timer = setInterval(reload, pollMs);
		return () => clearInterval(timer);
	}, [me, reload]);
	return {
		sessions,
		hasMore,
		error: error?.message,
		unreachable: error?.code === "unreachable",
		reload,
		more: () => setPages((n) => n + 1),
	};
}

/**
 * The sessions list: beside the open session on a desktop, the whole screen on a phone. Newest
 * activity first, each with its status, last activity and pending approvals; filtered by status.
 */
export function SessionsList(props: { me: Whoami; state: SessionsState; current?: string; page?: boolean }) {
	const { me, state, current } = props;
	// On a phone the list is the page: its heading is the page's.
	const Heading = props.page ? "h1" : "h2";
	const [filter, setFilter] = useState<Filter>("all");
	const now = useNow();
	const shown = state.sessions?.filter(filters[filter].test);
	return (
		<nav class="sidebar" aria-labelledby="sessions-title">
			<div class="side-head">
				<Heading id="sessions-title">Sessions</Heading>
				{can(me, "sessions:write") && (
					<a class="button primary" href="#/new">
						New session
					</a>
				)}
			</div>
			<label class="filter">
				<span>Show</span>
				<select value={filter} onChange={(e) => setFilter(e.currentTarget.value as Filter)}>
					{Object.entries(filters).map(([key, f]) => (
						<option key={key} value={key}>
							{f.label}
						</option>
					))}
				</select>
			</label>
			{/* A gateway that does not answer is the banner's to say, once. */}
			{state.error && !state.unreachable && (
				<p role="alert" class="error">
					{state.error}
				</p>
			)}
			{state.sessions?.length === 0 && <p class="muted">No sessions yet.</p>}
			{shown?.length === 0 && state.sessions?.length !== 0 && <p class="muted">None of them.</p>}
			<ul class="plain sessions">
				{shown?.map((s) => (
					<SessionRow key={s.id} session={s} me={me} now={now} current={s.id === current} onChange={state.reload} />
				))}
			</ul>
			{state.hasMore && (
				<button type="button" onClick={state.more}>
					Show more sessions
				</button>
			)}
		</nav>
	);
}

function SessionRow(props: { session: Session; me: Whoami; now: number; current: boolean; onChange: () => void }) {
	const { session, me } = props;
	const [busy, setBusy] = useState(false);
	const [error, setError] = useState<string>();
	const label = session.name ?? session.id;
	const stopped = session.pid === null && session.resumable;
	const resume = () => {
		setBusy(true);
		post(`/v1/sessions/${seg(session.id)}/resume`)
			.then(props.onChange)
			.catch((e: Error) => setError(e.message))
			.finally(() => setBusy(false));
	};
	return (
		<li class={props.current ? "current" : undefined}>
			<a href={sessionHref(session.id)} aria-current={props.current ? "page" : undefined}>
				<span class="name">{label}</span>
				<span class="line2">
					<StatusBadge status={session.status} failed={session.lastError !== null} />
					<Ago at={session.lastActivityAt} now={props.now} />
					{session.pendingApprovals > 0 && (
						<span class="badge warn solid">
							{session.pendingApprovals} pending
							<span class="sr"> approval{session.pendingApprovals === 1 ? "" : "s"}</span>
						</span>
					)}
					{session.pendingToolCalls > 0 && (
						<span class="badge warn solid">
							{session.pendingToolCalls} tool call{session.pendingToolCalls === 1 ? "" : "s"}
							<span class="sr"> waiting</span>
						</span>
					)}
					{session.lastError && (
						<span class="badge bad" title={session.lastError.message}>
							error
							<span class="sr">: {session.lastError.message}</span>
						</span>
					)}
				</span>
				<Preview session={session} />
			</a>
			{stopped && can(me, "sessions:write") && (
				<button type="button" class="small" disabled={busy} onClick={resume}>
					Resume <span class="sr">{label}</span>
				</button>
			)}
			{error && <p class="error">{error}</p>}
		</li>
	);
}

/** The last thing said in the session, or the command it runs now: what it is about, at a glance. */
function Preview({ session }: { session: Session }) {
	const p = session.preview;
	if (!p) return null;
	if (p.role === "tool")
		return (
			<span class="preview">
				<span class="sr">Running: </span>
				<code>{p.text}</code>
			</span>
		);
	return (
		<span class="preview">
			{p.role === "user" ? "You: " : ""}
			{p.text}
		</span>
	);
}
