import { useCallback, useEffect, useState } from "preact/hooks";
import { del, get, post, seg } from "../api/client.ts";
import type { Session, SessionList, Whoami } from "../api/types.ts";
import { can } from "../auth/scopes.ts";
import { sessionHref } from "../router.ts";
import { CreateSession } from "./create.tsx";
import { StatusBadge } from "./status.tsx";

const pollMs = 3000;

/** Every session the credential may see (cluster-wide, as the API lists them). */
export function SessionsScreen({ me }: { me: Whoami }) {
	const [sessions, setSessions] = useState<Session[]>();
	const [error, setError] = useState<string>();
	const load = useCallback(() => {
		get<SessionList>("/v1/sessions")
			.then((list) => {
				setSessions(list.sessions);
				setError(undefined);
			})
			.catch((e: Error) => setError(e.message));
	}, []);
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
