import { useCallback, useEffect, useState } from "preact/hooks";
import { del, get, post, seg } from "../api/client.ts";
import type { Session, SessionList, Whoami } from "../api/types.ts";
import { can } from "../auth/scopes.ts";
import { sessionHref } from "../router.ts";
import { CreateSession } from "./create.tsx";
import { StatusBadge } from "./status.tsx";

const pollMs = 3000;
/** Sessions per page of the list (the API's default): "Show more" adds a page. */
export const pageSize = 100;

/** The first `pages` pages of sessions, oldest first, and whether more follow. */
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

/** Every session the credential may see (cluster-wide, as the API lists them), a page at a time. */
export function SessionsScreen({ me }: { me: Whoami }) {
	const [sessions, setSessions] = useState<Session[]>();
	const [pages, setPages] = useState(1);
	const [hasMore, setHasMore] = useState(false);
	const [error, setError] = useState<string>();
	const load = useCallback(() => {
		firstPages(pages)
			.then((list) => {
				setSessions(list.sessions);
				setHasMore(list.hasMore);
				setError(undefined);
			})
			.catch((e: Error) => setError(e.message));
	}, [pages]);
	useEffect(() => {
		if (!can(me, "sessions:read")) return;
		load();
		const timer = setInterval(load, pollMs);
		return () => clearInterval(timer);
	}, [me, load]);
	if (!can(me, "sessions:read"))
		return (
			<p>
				This credential answers approvals only: see <a href="#/approvals">Approvals</a>.
			</p>
		);
	return (
		<>
			{can(me, "sessions:write") && <CreateSession onCreated={(s) => (location.hash = sessionHref(s.id))} />}
			<section aria-labelledby="sessions-title">
				<h1 id="sessions-title">Sessions</h1>
				{error && (
					<p role="alert" class="error">
						{error}
					</p>
				)}
				{sessions?.length === 0 && <p class="muted">No sessions yet.</p>}
				<ul class="plain sessions">
					{sessions?.map((s) => (
						<SessionRow key={s.id} session={s} me={me} onChange={load} />
					))}
				</ul>
				{hasMore && (
					<button type="button" onClick={() => setPages((n) => n + 1)}>
						Show more sessions
					</button>
				)}
			</section>
		</>
	);
}

function SessionRow({ session, me, onChange }: { session: Session; me: Whoami; onChange: () => void }) {
	const [busy, setBusy] = useState(false);
	const [error, setError] = useState<string>();
	const act = (run: () => Promise<unknown>) => {
		setBusy(true);
		run()
			.then(onChange)
			.catch((e: Error) => setError(e.message))
			.finally(() => setBusy(false));
	};
	const label = session.name ?? session.id;
	const stopped = session.pid === null && session.resumable;
	return (
		<li class="card row-card">
			<div class="grow">
				<a href={sessionHref(session.id)}>{label}</a> <StatusBadge status={session.status} />{" "}
				{session.pendingApprovals > 0 && (
					<span class="badge warn">
						{session.pendingApprovals} pending approval{session.pendingApprovals === 1 ? "" : "s"}
					</span>
				)}
				<div class="meta">
					<code>{session.cwd}</code>
					{session.model && ` · ${session.model.provider}/${session.model.id}`}
					{session.node && ` · on ${session.node}`}
				</div>
				{error && <p class="error">{error}</p>}
			</div>
			{can(me, "sessions:write") && (
				<div class="row">
					{stopped && (
						<button
							type="button"
							disabled={busy}
							onClick={() => act(() => post(`/v1/sessions/${seg(session.id)}/resume`))}
						>
							Resume <span class="sr">{label}</span>
						</button>
					)}
					<button
						type="button"
						class="danger"
						disabled={busy}
						onClick={() => {
							if (confirm(`Delete session ${label}? Its pi process stops.`))
								act(() => del(`/v1/sessions/${seg(session.id)}`));
						}}
					>
						Delete <span class="sr">{label}</span>
					</button>
				</div>
			)}
		</li>
	);
}
